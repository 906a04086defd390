//! A targeting code (country, region, metro, postal code, language, ...)
//! and the set that deduplicates and matches codes. A large `constraints`
//! object carries hundreds of codes, each a few bytes: they are kept inline
//! rather than one heap string each, and sets compare them as integers.

use std::fmt;
use std::ops::Deref;

use foldhash::{HashSet, HashSetExt};
use serde::{Deserialize, Serialize};

/// A normalised code. A plain string underneath: an inline small-string
/// type measured slower here (building one byte by byte and then moving it
/// as words stalls store forwarding, and it is read back as `str` often).
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Code(String);

impl Code {
    pub fn new(s: &str) -> Code {
        Code(s.to_string())
    }

    /// `s` in ASCII upper case (every code system is ASCII; other
    /// characters are kept and fail the system's check).
    pub fn upper(s: &str) -> Code {
        Code(s.to_ascii_uppercase())
    }

    /// `s` in ASCII lower case.
    pub fn lower(s: &str) -> Code {
        Code(s.to_ascii_lowercase())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Serialize for Code {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Code {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Code, D::Error> {
        String::deserialize(d).map(Code::from)
    }
}

impl Deref for Code {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Code {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Code {
    fn from(s: &str) -> Code {
        Code::new(s)
    }
}

impl From<String> for Code {
    fn from(s: String) -> Code {
        Code(s)
    }
}

impl From<Code> for String {
    fn from(c: Code) -> String {
        c.0
    }
}

impl fmt::Debug for Code {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for Code {
    fn eq(&self, other: &str) -> bool {
        self.0.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.0.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<String> for Code {
    fn eq(&self, other: &String) -> bool {
        self.0.as_bytes() == other.as_bytes()
    }
}

/// A code of at most 15 bytes as one integer: its bytes in order from the
/// lowest, then its length in the top byte, so two codes are equal exactly
/// when their keys are.
pub fn key(s: &str) -> Option<u128> {
    let b = s.as_bytes();
    let n = b.len();
    // Read as two overlapping words, shifted so no byte counts twice: no
    // per-byte loop, and no bytes copied out to memory and read back as a
    // word (which stalls store forwarding).
    let (lo, hi): (u64, u64) = match n {
        0..=3 => (b.iter().rev().fold(0, |k, &x| (k << 8) | u64::from(x)), 0),
        4..=7 => {
            let head = u64::from(u32::from_le_bytes(*b.first_chunk::<4>()?));
            let tail = u64::from(u32::from_le_bytes(*b.last_chunk::<4>()?)) >> (8 * (8 - n));
            (head | (tail << 32), 0)
        }
        8..=15 => {
            let head = u64::from_le_bytes(*b.first_chunk::<8>()?);
            let tail = u64::from_le_bytes(*b.last_chunk::<8>()?);
            (head, tail.checked_shr(8 * (16 - n) as u32).unwrap_or(0))
        }
        _ => return None,
    };
    Some(u128::from(lo) | (u128::from(hi) << 64) | ((n as u128) << 120))
}

/// A set of codes: short ones (every real code) hashed as integers, any
/// longer one as text.
#[derive(Default)]
pub struct CodeSet {
    short: HashSet<u128>,
    long: HashSet<String>,
}

impl CodeSet {
    pub fn with_capacity(n: usize) -> CodeSet {
        CodeSet {
            short: HashSet::with_capacity(n),
            long: HashSet::new(),
        }
    }

    /// Adds `s`; false when it was there already.
    pub fn insert(&mut self, s: &str) -> bool {
        match key(s) {
            Some(k) => self.short.insert(k),
            None if self.long.contains(s) => false,
            None => self.long.insert(s.to_string()),
        }
    }

    pub fn contains(&self, s: &str) -> bool {
        match key(s) {
            Some(k) => self.short.contains(&k),
            None => self.long.contains(s),
        }
    }
}

impl<'a> FromIterator<&'a Code> for CodeSet {
    fn from_iter<I: IntoIterator<Item = &'a Code>>(iter: I) -> CodeSet {
        let iter = iter.into_iter();
        let mut set = CodeSet::with_capacity(iter.size_hint().0);
        for c in iter {
            set.insert(c);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_key_is_the_bytes_then_the_length() {
        let text = "0123456789abcdefg";
        for n in 0..=16 {
            let s = &text[..n];
            let mut want = (n as u128) << 120;
            for (i, b) in s.bytes().enumerate() {
                want |= u128::from(b) << (8 * i);
            }
            assert_eq!(key(s), (n <= 15).then_some(want), "{s:?}");
        }
    }

    #[test]
    fn keys_tell_codes_apart_exactly() {
        assert_eq!(key("US"), key("US"));
        assert_ne!(key("US"), key("US\0"));
        assert_ne!(key(""), key("\0"));
        assert_ne!(key("94105"), key("94105-1234"));
        assert!(key("123456789012345").is_some());
        assert!(key("1234567890123456").is_none());

        let (us, long) = (Code::new("US"), Code::new("a-code-longer-than-fifteen"));
        let mut set = CodeSet::default();
        assert!(set.insert(&us));
        assert!(!set.insert(&us));
        assert!(set.insert(&long));
        assert!(!set.insert(&long));
        assert!(set.contains(&Code::upper("us")) && set.contains(&long));
        assert!(!set.contains("GB") && !set.contains("a-code-longer-than-fifteeN"));
    }

    #[test]
    fn a_code_reads_back_as_its_text() {
        for text in ["", "us", "94105-1234", "K1A é"] {
            let c = Code::new(text);
            assert_eq!(c.as_str(), text);
            assert_eq!(c, Code::from(text.to_string()));
            assert_eq!(Code::upper(text).as_str(), text.to_ascii_uppercase());
            assert_eq!(Code::lower(text).as_str(), text.to_ascii_lowercase());
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Code>(&json).unwrap(), c);
        }
    }
}
