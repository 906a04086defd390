//! A targeting code (country, region, metro, postal code, language, ...)
//! and the set that deduplicates and matches codes. A large `constraints`
//! object carries hundreds of codes, each a few bytes: a code of up to 15
//! bytes (every valid one) is kept inline as the 16 bytes of its integer
//! key, so it needs no allocation, sets hash it as an integer, and it is
//! copied as two words.

use std::fmt;
use std::hash::BuildHasher;
use std::ops::Deref;
use std::sync::LazyLock;

use foldhash::{HashSet, HashSetExt};
use serde::{Deserialize, Serialize};

/// A normalised code.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Code(Repr);

// A text has exactly one representation (inline iff at most 15 bytes), so
// the derived equality and hash are the text's.
#[derive(Clone, PartialEq, Eq, Hash)]
enum Repr {
    /// The code's key as bytes (see [`key`]): its bytes, zeros, and its
    /// length in the last byte. Built in registers from two word reads of
    /// the text and stored whole.
    Short(Block),
    Long(Box<str>),
}

/// Word-aligned, so the key's two words are read where a move of a code
/// wrote them: a read across two recent writes waits for both to retire
/// (a store-forwarding stall, measured as most of a set insert's time).
#[derive(Clone, PartialEq, Eq, Hash)]
#[repr(C, align(8))]
struct Block([u8; 16]);

impl Block {
    #[inline]
    fn key(&self) -> u128 {
        let lo = u64::from_le_bytes(*self.0.first_chunk::<8>().unwrap_or(&[0; 8]));
        let hi = u64::from_le_bytes(*self.0.last_chunk::<8>().unwrap_or(&[0; 8]));
        u128::from(lo) | (u128::from(hi) << 64)
    }
}

/// `b` in every byte of a word.
pub(super) const fn splat(b: u8) -> u64 {
    0x0101_0101_0101_0101 * b as u64
}

/// The bytes of `b` (at most 15 of them) as two little-endian words, read
/// as two overlapping loads shifted so no byte counts twice.
#[inline(always)]
fn words(b: &[u8]) -> Option<(u64, u64)> {
    let n = b.len();
    Some(match n {
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
    })
}

#[inline(always)]
fn pack(lo: u64, hi: u64, n: usize) -> u128 {
    u128::from(lo) | (u128::from(hi) << 64) | ((n as u128) << 120)
}

/// `w` with the ASCII letters from `first` (`a` or `A`) on switched to the
/// other case, eight bytes at a time; any other byte is kept.
#[inline(always)]
fn switch_case(w: u64, first: u8) -> u64 {
    let low7 = w & splat(0x7f);
    // A byte's top bit: at least `first`, at least `first + 26`; neither sum
    // carries into the next byte.
    let from = low7 + splat(0x80 - first);
    let past = low7 + splat(0x80 - (first + 26));
    let letters = from & !past & !w & splat(0x80);
    w ^ (letters >> 2)
}

/// Whether a word has a byte below `m` (at most 0x80).
#[inline(always)]
fn has_below(w: u64, m: u8) -> bool {
    w.wrapping_sub(splat(m)) & !w & splat(0x80) != 0
}

/// Whether one of the first `n` bytes of the words `(lo, hi)` is below
/// `below` (at most 0x80), eight at a time.
#[inline(always)]
fn has_byte_below(lo: u64, hi: u64, n: usize, below: u8) -> bool {
    let keep = |n: usize| match n {
        0 => 0,
        1..=7 => (1u64 << (8 * n)) - 1,
        _ => u64::MAX,
    };
    [(lo, keep(n)), (hi, keep(n.saturating_sub(8)))]
        .into_iter()
        .any(|(w, keep)| {
            // Bytes past the code are made a harmless `A`.
            let w = (w & keep) | (splat(b'A') & !keep);
            has_below(w, below)
        })
}

/// A code of at most 15 bytes as one integer: its bytes in order from the
/// lowest, then its length in the top byte, so two codes are equal exactly
/// when their keys are.
pub fn key(s: &str) -> Option<u128> {
    words(s.as_bytes()).map(|(lo, hi)| pack(lo, hi, s.len()))
}

impl Code {
    /// The inline code of `n` bytes whose words are `(lo, hi)`.
    #[inline(always)]
    fn short(lo: u64, hi: u64, n: usize) -> Code {
        Code(Repr::Short(Block(pack(lo, hi, n).to_le_bytes())))
    }

    fn inline(s: &str, case: Option<u8>) -> Option<Code> {
        let (mut lo, mut hi) = words(s.as_bytes())?;
        if let Some(first) = case {
            (lo, hi) = (switch_case(lo, first), switch_case(hi, first));
        }
        Some(Code::short(lo, hi, s.len()))
    }

    /// `s` in ASCII upper case, when it is at most 15 bytes with no space,
    /// control or ASCII whitespace byte: checked on the words it is built
    /// from, with no pass over the text.
    #[inline]
    pub fn upper_unspaced(s: &str) -> Option<Code> {
        let (lo, hi) = words(s.as_bytes())?;
        if has_byte_below(lo, hi, s.len(), 0x21) {
            return None;
        }
        let (lo, hi) = (switch_case(lo, b'a'), switch_case(hi, b'a'));
        Some(Code::short(lo, hi, s.len()))
    }

    pub fn new(s: &str) -> Code {
        Code::inline(s, None).unwrap_or_else(|| Code(Repr::Long(s.into())))
    }

    /// `s` in ASCII upper case (every code system is ASCII; other
    /// characters are kept and fail the system's check).
    #[inline]
    pub fn upper(s: &str) -> Code {
        Code::inline(s, Some(b'a'))
            .unwrap_or_else(|| Code(Repr::Long(s.to_ascii_uppercase().into())))
    }

    /// `s` in ASCII lower case.
    pub fn lower(s: &str) -> Code {
        Code::inline(s, Some(b'A'))
            .unwrap_or_else(|| Code(Repr::Long(s.to_ascii_lowercase().into())))
    }

    pub fn as_bytes(&self) -> &[u8] {
        match &self.0 {
            Repr::Short(b) => &b.0[..usize::from(b.0[15])],
            Repr::Long(s) => s.as_bytes(),
        }
    }

    pub fn as_str(&self) -> &str {
        match &self.0 {
            // The bytes of a `str` cut at its end: always UTF-8.
            Repr::Short(_) => std::str::from_utf8(self.as_bytes()).unwrap_or_default(),
            Repr::Long(s) => s,
        }
    }

    /// The key of a code of at most 15 bytes (see [`key`]), for free.
    pub fn key(&self) -> Option<u128> {
        match &self.0 {
            Repr::Short(b) => Some(b.key()),
            Repr::Long(_) => None,
        }
    }

    /// An inline code's 16 bytes and its length, for copying as a block
    /// into a JSON string, when every byte is ASCII from the space on,
    /// other than `"` and `\` (nothing serde would escape).
    #[inline]
    pub fn json_block(&self) -> Option<(&[u8; 16], usize)> {
        match &self.0 {
            Repr::Short(b) => {
                let n = b.0[15];
                (!json_special(&b.0, n)).then_some((&b.0, usize::from(n)))
            }
            Repr::Long(_) => None,
        }
    }
}

/// Whether one of a block's first `n` bytes may not stand in a JSON string
/// as it is: below the space, not ASCII, `"` or `\`. One pass of byte
/// operations over the fixed 16 bytes, which the compiler turns into a few
/// vector instructions.
#[inline(always)]
fn json_special(b: &[u8; 16], n: u8) -> bool {
    let mut any = 0u8;
    for (i, &c) in (0u8..).zip(b) {
        let special = c.wrapping_sub(0x20) >= 0x60 || c == b'"' || c == b'\\';
        any |= u8::from(special & (i < n));
    }
    any != 0
}

/// One bit per byte of `w`: whether it is an ASCII digit.
#[inline(always)]
fn digit_bits(w: u64) -> u16 {
    let low7 = w & splat(0x7f);
    // A byte's top bit: at least `0`, past `9`; neither sum carries.
    let from = low7 + splat(0x80 - b'0');
    let past = low7 + splat(0x80 - b'9' - 1);
    let tops = from & !past & !w & splat(0x80);
    // Gathers the eight top bits into the top byte, byte `i` to bit `i`.
    ((tops >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u16
}

impl Code {
    /// `s` as a code, when it is `len` bytes and its digits are exactly
    /// those `digits` marks (bit `i`: byte `i`). Checked on the two words
    /// the code is built from, with no pass over its bytes: the digit
    /// formats' already-canonical codes, most postal codes.
    #[inline]
    pub fn with_digits(s: &str, len: usize, digits: u16) -> Option<Code> {
        if s.len() != len {
            return None;
        }
        let (lo, hi) = words(s.as_bytes())?;
        (digit_bits(lo) | (digit_bits(hi) << 8) == digits).then(|| Code::short(lo, hi, len))
    }

    /// This code's first `n` bytes (a ZIP+4's ZIP, a Canadian code's FSA),
    /// cut from its key with no text made; `None` when it is shorter, or
    /// where `n` is not a character boundary, as `str::get` has it.
    pub fn prefix(&self, n: usize) -> Option<Code> {
        match &self.0 {
            Repr::Short(b) => {
                let len = usize::from(b.0[15]);
                let inside_char = n < len && b.0[n] & 0xc0 == 0x80;
                if n > len || inside_char {
                    return None;
                }
                let k = b.key() & ((1u128 << (8 * n)) - 1);
                Some(Code::short(k as u64, (k >> 64) as u64, n))
            }
            Repr::Long(s) => s.get(..n).map(Code::new),
        }
    }
}

impl Default for Code {
    fn default() -> Code {
        Code::new("")
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
        Code::inline(&s, None).unwrap_or_else(|| Code(Repr::Long(s.into_boxed_str())))
    }
}

impl From<Code> for String {
    fn from(c: Code) -> String {
        match c.0 {
            Repr::Long(s) => s.into(),
            Repr::Short(_) => c.as_str().to_string(),
        }
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
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<&str> for Code {
    fn eq(&self, other: &&str) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl PartialEq<String> for Code {
    fn eq(&self, other: &String) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

/// What a [`CodeSet`] holds and looks up: a code (its key is stored) or a
/// text (its key is computed).
pub trait Member {
    /// The integer key, or the text of a code too long for one.
    fn member(&self) -> Result<u128, &str>;
}

impl Member for Code {
    fn member(&self) -> Result<u128, &str> {
        match &self.0 {
            Repr::Short(b) => Ok(b.key()),
            Repr::Long(s) => Err(s),
        }
    }
}

impl Member for str {
    fn member(&self) -> Result<u128, &str> {
        key(self).ok_or(self)
    }
}

/// Integer keys by open addressing: linear probing in a power-of-two table
/// at most half full, hashed by one seeded multiply (hashbrown's general
/// machinery measured twice the cost per insert here). Key 0, the empty
/// code, marks a free slot, so it is kept as a flag. Up to [`SMALL`] keys
/// are first kept in a list, compared in turn, with no table.
#[derive(Default)]
struct Keys {
    /// The keys, while there is no table.
    small: [u128; SMALL],
    slots: Vec<u128>,
    len: usize,
    empty: bool,
}

/// Most lists are short (channels, countries, languages, an exclusion or
/// two): comparing a few integers beats allocating and hashing a table.
const SMALL: usize = 8;

/// Per-process random seeds: an outsider cannot choose colliding codes.
static SEEDS: LazyLock<(u64, u64)> = LazyLock::new(|| {
    let s = std::collections::hash_map::RandomState::new();
    (s.hash_one(0u8) | 1, s.hash_one(1u8) | 1)
});

impl Keys {
    fn with_capacity(n: usize) -> Keys {
        match n {
            0..=SMALL => Keys::default(),
            _ => Keys::table(n),
        }
    }

    /// A table for `n` keys from the start.
    fn table(n: usize) -> Keys {
        Keys {
            slots: vec![0; (2 * n).next_power_of_two().max(16)],
            ..Keys::default()
        }
    }

    /// Where `k` is, or the free slot where it would go.
    #[inline(always)]
    fn slot(slots: &[u128], k: u128) -> usize {
        let (a, b) = *SEEDS;
        let m = u128::from(k as u64 ^ a) * u128::from((k >> 64) as u64 ^ b);
        let h = (m as u64) ^ ((m >> 64) as u64);
        let mask = slots.len() - 1;
        let mut i = (h as usize) & mask;
        while slots[i] != 0 && slots[i] != k {
            i = (i + 1) & mask;
        }
        i
    }

    /// [`Keys::insert`]'s usual case, inlined into its callers' loops: a
    /// table with room, a key that is not the empty code.
    #[inline(always)]
    fn insert(&mut self, k: u128) -> bool {
        if k == 0 || 2 * (self.len + 1) > self.slots.len() {
            return self.insert_slow(k);
        }
        self.put(k)
    }

    /// Puts a non-zero `k` into a table with room for it.
    #[inline(always)]
    fn put(&mut self, k: u128) -> bool {
        let i = Keys::slot(&self.slots, k);
        if self.slots[i] == k {
            return false;
        }
        self.slots[i] = k;
        self.len += 1;
        true
    }

    /// The empty code, the small list, and a table that must be made or
    /// grown first.
    #[inline(never)]
    fn insert_slow(&mut self, k: u128) -> bool {
        if k == 0 {
            return !std::mem::replace(&mut self.empty, true);
        }
        if self.slots.is_empty() {
            if self.small.get(..self.len).is_some_and(|l| l.contains(&k)) {
                return false;
            }
            if let Some(free) = self.small.get_mut(self.len) {
                *free = k;
                self.len += 1;
                return true;
            }
            // The list is full: its keys move into a table.
            self.slots = vec![0; 4 * SMALL];
            for k in self.small {
                let i = Keys::slot(&self.slots, k);
                self.slots[i] = k;
            }
        }
        if 2 * (self.len + 1) > self.slots.len() {
            // The table stays a power of two: `slot` masks with its length.
            let size = (4 * (self.len + 1)).next_power_of_two().max(16);
            let old = std::mem::replace(&mut self.slots, vec![0; size]);
            for k in old.into_iter().filter(|&k| k != 0) {
                let i = Keys::slot(&self.slots, k);
                self.slots[i] = k;
            }
        }
        self.put(k)
    }

    fn contains(&self, k: u128) -> bool {
        match k {
            0 => self.empty,
            _ if self.slots.is_empty() => {
                self.small.get(..self.len).is_some_and(|l| l.contains(&k))
            }
            _ => self.slots[Keys::slot(&self.slots, k)] == k,
        }
    }
}

/// A fixed map from short codes' keys to positions (a vocabulary's
/// index), in the same table as [`CodeSet`]'s: a lookup is one multiply
/// and, mostly, one probe (a general hash map measured three times that).
#[derive(Default)]
pub struct KeyIndex {
    keys: Keys,
    /// The position of each slot's key.
    at: Vec<usize>,
    empty: Option<usize>,
}

impl fmt::Debug for KeyIndex {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "KeyIndex({} keys)", self.keys.len)
    }
}

impl KeyIndex {
    /// The index of `pairs`; a key given twice keeps its first position.
    pub fn new(pairs: &[(u128, usize)]) -> KeyIndex {
        let mut keys = Keys::table(pairs.len());
        for &(k, _) in pairs {
            keys.insert(k);
        }
        // The table is final now: each key's slot is where it stays.
        let mut at = vec![usize::MAX; keys.slots.len()];
        let mut empty = None;
        for &(k, i) in pairs.iter().rev() {
            match k {
                0 => empty = Some(i),
                _ => at[Keys::slot(&keys.slots, k)] = i,
            }
        }
        KeyIndex { keys, at, empty }
    }

    /// Whether `k` is indexed: the keys alone, without the positions'
    /// memory.
    pub fn contains(&self, k: u128) -> bool {
        self.keys.contains(k)
    }

    pub fn get(&self, k: u128) -> Option<usize> {
        match k {
            0 => self.empty,
            _ if self.keys.slots.is_empty() => None,
            _ => {
                let i = Keys::slot(&self.keys.slots, k);
                (self.keys.slots[i] == k).then(|| self.at[i])
            }
        }
    }
}

/// A set of codes: short ones (every real code) as integer keys, any
/// longer one as text.
#[derive(Default)]
pub struct CodeSet {
    short: Keys,
    long: HashSet<String>,
}

impl CodeSet {
    pub fn with_capacity(n: usize) -> CodeSet {
        CodeSet {
            short: Keys::with_capacity(n),
            long: HashSet::new(),
        }
    }

    /// Adds `c`; false when it was there already.
    pub fn insert<M: Member + ?Sized>(&mut self, c: &M) -> bool {
        match c.member() {
            Ok(k) => self.short.insert(k),
            Err(s) if self.long.contains(s) => false,
            Err(s) => self.long.insert(s.to_string()),
        }
    }

    pub fn contains<M: Member + ?Sized>(&self, c: &M) -> bool {
        match c.member() {
            Ok(k) => self.short.contains(k),
            Err(s) => self.long.contains(s),
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
        assert!(!set.contains("") && set.insert("") && !set.insert("") && set.contains(""));
    }

    #[test]
    fn a_prefix_is_the_code_of_the_first_bytes() {
        for text in [
            "",
            "94105-1234",
            "SW1A 1AA",
            "exactly-15-byte",
            "K1A é1",
            "a much longer Code, é",
        ] {
            for n in 0..=text.len() + 1 {
                let want = text.get(..n).map(Code::new);
                assert_eq!(Code::new(text).prefix(n), want, "{text:?} cut at {n}");
                if let Some(p) = Code::new(text).prefix(n) {
                    assert_eq!(p.key(), key(p.as_str()), "{text:?} cut at {n}");
                }
            }
        }
    }

    #[test]
    fn a_code_reads_back_as_its_text() {
        for text in [
            "",
            "us",
            "94105-1234",
            "K1A é",
            "sw1a 1aa",
            "exactly-15-byte",
            "sixteen-byte-txt",
            "a much longer Code, é",
        ] {
            let c = Code::new(text);
            assert_eq!(c.as_str(), text);
            assert_eq!(c, Code::from(text.to_string()));
            assert_eq!(Code::upper(text).as_str(), text.to_ascii_uppercase());
            assert_eq!(Code::lower(text).as_str(), text.to_ascii_lowercase());
            let json = serde_json::to_string(&c).unwrap();
            assert_eq!(serde_json::from_str::<Code>(&json).unwrap(), c);
        }
    }

    #[test]
    fn case_switches_bytewise_as_std_does() {
        // Every byte value, beside neighbours that could carry into it.
        for b in 0..=255u8 {
            for n in [0x00, 0x7a, 0x80, 0xff] {
                let w = u64::from_le_bytes([n, b, n, b, b, n, 0x61, b]);
                let bytes = w.to_le_bytes();
                let up = u64::from_le_bytes(bytes.map(|x| x.to_ascii_uppercase()));
                let down = u64::from_le_bytes(bytes.map(|x| x.to_ascii_lowercase()));
                assert_eq!(switch_case(w, b'a'), up, "{b:#x} by {n:#x}");
                assert_eq!(switch_case(w, b'A'), down, "{b:#x} by {n:#x}");
            }
        }
    }

    #[test]
    fn digits_are_told_apart_from_every_other_byte() {
        // Every byte value at every position of codes of several lengths.
        for n in [1, 4, 5, 8, 9, 10, 15, 16] {
            let base = "0123456789012345678".get(..n).unwrap();
            for b in 0..=255u8 {
                for at in 0..n {
                    let mut t = base.as_bytes().to_vec();
                    t[at] = b;
                    // A byte that is not text on its own becomes U+FFFD.
                    let text = String::from_utf8_lossy(&t).into_owned();
                    let digits = text
                        .bytes()
                        .take(16)
                        .enumerate()
                        .filter(|(_, b)| b.is_ascii_digit())
                        .fold(0u16, |m, (i, _)| m | (1 << i));
                    let want = (text.len() <= 15).then(|| Code::new(&text));
                    assert_eq!(Code::with_digits(&text, text.len(), digits), want, "{t:?}");
                    let other = digits ^ (1 << at.min(15));
                    assert_eq!(Code::with_digits(&text, text.len(), other), None, "{t:?}");
                    assert_eq!(Code::with_digits(&text, text.len() + 1, digits), None);
                }
            }
        }
        assert_eq!(
            Code::with_digits("94105", 5, 0x1f),
            Some(Code::new("94105"))
        );
        assert_eq!(Code::with_digits("", 0, 0), Some(Code::new("")));
    }

    #[test]
    fn short_codes_are_inline_and_long_ones_are_not() {
        assert!(Code::new("123456789012345").key().is_some());
        assert!(Code::new("1234567890123456").key().is_none());
        assert_eq!(Code::upper("k1a 0b1").key(), key("K1A 0B1"));
        let ec1 = Code::new("EC1");
        let (block, n) = ec1.json_block().unwrap();
        assert_eq!((&block[..n], n), (&b"EC1"[..], 3));
        let fifteen = Code::new("ABCDEFGHIJKLMN-");
        assert_eq!(
            fifteen.json_block().map(|(b, n)| &b[..n]),
            Some(&b"ABCDEFGHIJKLMN-"[..])
        );
        // Escaped by serde, or (not ASCII) left to it.
        for other in ["E\"C", "E\\C", "E\nC", "\u{1f}", "é", "ABCDEFGHIJKLMN\""] {
            assert!(Code::new(other).json_block().is_none(), "{other:?}");
        }
        assert!(
            Code::new("a-code-longer-than-fifteen")
                .json_block()
                .is_none()
        );
        assert_eq!(Code::upper_unspaced("sw1a"), Some(Code::new("SW1A")));
        for spaced in ["sw1a 1aa", " m1", "m1 ", "m\t1", "m\u{1}1"] {
            assert_eq!(Code::upper_unspaced(spaced), None, "{spaced:?}");
        }
        assert_eq!(Code::default().as_str(), "");
    }

    #[test]
    fn an_index_finds_each_key_at_its_first_position() {
        let codes: Vec<String> = (0..300).map(|i| format!("{:03}", i * 3)).collect();
        let mut pairs: Vec<(u128, usize)> = codes
            .iter()
            .enumerate()
            .map(|(i, c)| (key(c).unwrap(), i))
            .collect();
        pairs.push((key("000").unwrap(), 999));
        pairs.push((key("").unwrap(), 7));
        let index = KeyIndex::new(&pairs);
        for (i, c) in codes.iter().enumerate() {
            assert_eq!(index.get(key(c).unwrap()), Some(i), "{c}");
        }
        assert_eq!(index.get(key("").unwrap()), Some(7));
        assert_eq!(index.get(key("001").unwrap()), None);
        assert_eq!(KeyIndex::default().get(key("US").unwrap()), None);
        assert_eq!(KeyIndex::default().get(0), None);
    }

    #[test]
    fn a_set_keeps_every_code_once_as_it_grows() {
        let codes: Vec<String> = (0..5000).map(|i| format!("{:05}", i * 7)).collect();
        // From the short list, past it into a table, and growing.
        let mut set = CodeSet::with_capacity(4);
        for (n, c) in codes.iter().enumerate().take(2 * SMALL) {
            assert!(set.insert(c.as_str()), "{c}");
            for (m, d) in codes.iter().enumerate().take(2 * SMALL + 1) {
                assert_eq!(set.contains(d.as_str()), m <= n, "{d} after {n}");
            }
        }
        let mut set = CodeSet::with_capacity(4);
        for c in &codes {
            assert!(set.insert(c.as_str()), "{c}");
        }
        for c in &codes {
            assert!(!set.insert(c.as_str()) && set.contains(c.as_str()), "{c}");
        }
        assert!(!set.contains("00001") && !set.contains("0"));
        assert!(!CodeSet::default().contains("US"));
    }
}
