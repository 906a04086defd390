//! A direct reader for the usual shape of a `validate_targeting` body:
//! `{"constraints": {...}}` whose known keys hold arrays of plain strings
//! or of area objects, with no escapes. It builds the same [`Raw`] that
//! serde's reader builds, borrowing every string, in one pass over the
//! bytes and without a visitor call per element: on a body of hundreds of
//! short codes it raised validations/s by about a tenth (BENCHMARKS.md,
//! campaign-validate, fifth measurement). Anything else (an escape, a wrong
//! shape, an unknown key, malformed JSON) makes it give up, and the caller
//! reads the body through serde, which reports each problem at its path.

use std::borrow::Cow;

use super::code::splat;
use super::constraints::FIELDS;
use super::raw::{AREA_KEYS, Area, AreaObj, Field, List, Raw, Str};

/// The constraints under `key`, the only member of the object that is the
/// whole of `text`; `None` when the text is not of the usual shape.
pub fn wrapped<'a>(text: &'a str, key: &str) -> Option<Raw<'a>> {
    let mut s = Scan { text, i: 0 };
    let mut out = None;
    s.object(|s, k| {
        // Another key, or the key twice, is serde's to report.
        if k != key || out.is_some() {
            return None;
        }
        out = Some(s.constraints()?);
        Some(())
    })?;
    s.ws();
    (s.i == text.len()).then_some(())?;
    out
}

/// A top bit set in each byte of `w` that ends a plain string (a quote,
/// a backslash, a control byte). Every such byte is marked, and the lowest
/// mark is always one; a borrow from a marked byte can also mark the byte
/// above it when that is a quote or `#`.
#[inline(always)]
fn stops(w: u64) -> u64 {
    let zero = |x: u64| x.wrapping_sub(splat(1)) & !x;
    let control = w.wrapping_sub(splat(0x20)) & !w;
    (zero(w ^ splat(b'"')) | zero(w ^ splat(b'\\')) | control) & splat(0x80)
}

struct Scan<'a> {
    text: &'a str,
    i: usize,
}

impl<'a> Scan<'a> {
    fn ws(&mut self) {
        let b = self.text.as_bytes();
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = b.get(self.i) {
            self.i += 1;
        }
    }

    /// Skips whitespace, then `c` if it comes next.
    fn eat(&mut self, c: u8) -> bool {
        self.ws();
        let hit = self.text.as_bytes().get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    /// A string with no escape (and no raw control character, which JSON
    /// forbids), borrowed.
    fn string(&mut self) -> Option<&'a str> {
        if !self.eat(b'"') {
            return None;
        }
        let b = self.text.as_bytes();
        let start = self.i;
        let mut end = start;
        loop {
            match *b.get(end)? {
                b'"' => break,
                b'\\' | 0..0x20 => return None,
                _ => end += 1,
            }
        }
        self.i = end + 1;
        // Both ends sit next to an ASCII quote: character boundaries.
        self.text.get(start..end)
    }

    /// `[item, ...]`.
    fn array<T>(&mut self, item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.array_with(item, |_, _| {})
    }

    /// `[item, ...]`, where `more` may take the items that follow each one
    /// read by `item` (a faster way for the usual case) before a comma.
    fn array_with<T>(
        &mut self,
        mut item: impl FnMut(&mut Self) -> Option<T>,
        mut more: impl FnMut(&mut Self, &mut Vec<T>),
    ) -> Option<Vec<T>> {
        if !self.eat(b'[') {
            return None;
        }
        // The capacity serde's reader starts with (JSON gives no length).
        let mut out = Vec::with_capacity(16);
        if self.eat(b']') {
            return Some(out);
        }
        loop {
            out.push(item(self)?);
            more(self, &mut out);
            if !self.eat(b',') {
                return self.eat(b']').then_some(out);
            }
        }
    }

    /// `{"key": value, ...}`, each value read by `member`.
    fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        if !self.eat(b'{') {
            return None;
        }
        if self.eat(b'}') {
            return Some(());
        }
        loop {
            let k = self.string()?;
            if !self.eat(b':') {
                return None;
            }
            member(self, k)?;
            if !self.eat(b',') {
                return self.eat(b'}').then_some(());
            }
        }
    }

    fn strings(&mut self) -> Option<List<Str<'a>>> {
        self.array_with(
            |s| s.string().map(|v| Str::Ok(Cow::Borrowed(v))),
            Self::compact_strings,
        )
        .map(List::Ok)
    }

    /// The strings that follow as `,"code"` with the code's end in the same
    /// sixteen bytes (a code of up to 13): one read of two words each, where
    /// the general way takes a read per byte, each waiting on the one
    /// before. Stops at anything else (the general way then reads it).
    fn compact_strings(&mut self, out: &mut Vec<Str<'a>>) {
        let b = self.text.as_bytes();
        while let Some(w) = b.get(self.i..).and_then(|r| r.first_chunk::<16>()) {
            let w = u128::from_le_bytes(*w);
            let (lo, hi) = (w as u64, (w >> 64) as u64);
            if lo as u16 != u16::from_le_bytes(*b",\"") {
                return;
            }
            // Past the comma and the opening quote. A mark above that quote
            // may be false (see `stops`), so the byte found is checked; the
            // second word's lowest mark is a true one.
            let first = stops(lo) & !0xffff;
            let at = match (first, stops(hi)) {
                (0, 0) => return,
                (0, second) => 8 + second.trailing_zeros() / 8,
                (first, _) => first.trailing_zeros() / 8,
            };
            let end = self.i + at as usize;
            if b.get(end) != Some(&b'"') {
                return;
            }
            // Both ends sit next to an ASCII quote: character boundaries.
            let Some(s) = self.text.get(self.i + 2..end) else {
                return;
            };
            out.push(Str::Ok(Cow::Borrowed(s)));
            self.i = end + 1;
        }
    }

    fn area(&mut self) -> Option<Area<'a>> {
        let mut obj = AreaObj::default();
        let text = |s: &mut Self| s.string().map(|v| Some(Str::Ok(Cow::Borrowed(v))));
        self.object(|s, k| {
            match k {
                "country" => obj.country = text(s)?,
                "system" => obj.system = text(s)?,
                "values" => obj.values = Some(s.strings()?),
                _ => return None,
            }
            Some(())
        })?;
        Some(Area::Obj(obj))
    }

    fn constraints(&mut self) -> Option<Raw<'a>> {
        let mut fields = Vec::new();
        self.object(|s, k| {
            let field = if AREA_KEYS.contains(&k) {
                Field::Areas(List::Ok(s.array(Self::area)?))
            } else if FIELDS.contains(&k) {
                Field::Strings(s.strings()?)
            } else {
                return None;
            };
            fields.push((Cow::Borrowed(k), field));
            Some(())
        })?;
        Some(Raw::Obj(fields))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Body<'a> {
        #[serde(borrow)]
        constraints: Raw<'a>,
    }

    /// What serde's reader makes of `text`, as text; `None` if it fails.
    fn by_serde(text: &str) -> Option<String> {
        serde_json::from_str::<Body>(text)
            .ok()
            .map(|b| format!("{:?}", b.constraints))
    }

    #[test]
    fn reads_the_usual_shape_exactly_as_serde_does() {
        for text in [
            r#"{"constraints":{}}"#,
            " \n{ \"constraints\" :\t{ \"geo_countries\" : [ \"US\" , \"gb\" ] } } \r\n",
            r#"{"constraints":{"geo_countries":[],"language":["en","é"],"channels":["display"]}}"#,
            r#"{"constraints":{"geo_metros":[{"system":"nielsen_dma","values":["501","803"]}],
                "geo_postal_areas":[{"country":"US","system":"zip","values":["94105"]},{}],
                "geo_postal_areas_exclude":[{"system":"gb_outward","values":[]}],
                "geo_countries":["US"],"geo_countries":["CA"],"countries":["FR"]}}"#,
            r#"{"constraints":{"geo_metros":[],"device_type":["ctv"],"device_type_exclude":[""]}}"#,
            r#"{"constraints":{"language":["exactly8","a code longer than sixteen bytes, é ü","1234567"]}}"#,
        ] {
            let scanned = wrapped(text, "constraints").map(|r| format!("{r:?}"));
            assert!(scanned.is_some(), "{text}");
            assert_eq!(scanned, by_serde(text), "{text}");
        }
    }

    #[test]
    fn a_string_ends_at_its_first_quote_backslash_or_control_byte() {
        // Every ASCII byte and a two-byte character, at every position of
        // strings shorter and longer than a word, first in a list and after
        // another string.
        let mut odd: Vec<String> = (0..0x80u8).map(|b| char::from(b).to_string()).collect();
        odd.push("é".into());
        for n in 1..20 {
            for at in 0..n {
                for c in &odd {
                    let code = format!("{}{c}{}", "a".repeat(at), "b".repeat(n - at - 1));
                    for list in [
                        format!(r#""{code}","en""#),
                        format!(r#""en","{code}","fr""#),
                    ] {
                        let text = format!(r#"{{"constraints":{{"language":[{list}]}}}}"#);
                        let scanned = wrapped(&text, "constraints").map(|r| format!("{r:?}"));
                        let plain = !matches!(c.as_bytes()[0], b'"' | b'\\' | 0..0x20);
                        assert_eq!(scanned.is_some(), plain, "{text:?}");
                        if plain {
                            assert_eq!(scanned, by_serde(&text), "{text:?}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn gives_anything_else_to_serde() {
        for text in [
            "",
            "[]",
            r#"{}"#,
            r#"{"constraints":{}} x"#,
            r#"{"constraints":{},"constraints":{}}"#,
            r#"{"constraints":{},"extra":1}"#,
            r#"{"constraints":[]}"#,
            r#"{"constraints":{"geo_countries":["U\u0053"]}}"#,
            r#"{"constraints":{"geo_countries":["US",]}}"#,
            r#"{"constraints":{"geo_countries":["US" "GB"]}}"#,
            r#"{"constraints":{"geo_countries":["US"],}}"#,
            r#"{"constraints":{"geo_countries":"US"}}"#,
            r#"{"constraints":{"geo_countries":[7]}}"#,
            r#"{"constraints":{"geo_countries":[null]}}"#,
            r#"{"constraints":{"mystery":[]}}"#,
            r#"{"constraints":{"geo_metros":["501"]}}"#,
            r#"{"constraints":{"geo_metros":[{"system":"nielsen_dma","x":1}]}}"#,
            r#"{"constraints":{"geo_metros":[{"system":["nielsen_dma"]}]}}"#,
            r#"{"constraints":{"geo_metros":[{"values":"501"}]}}"#,
            "{\"constraints\":{\"geo_countries\":[\"U\tS\"]}}",
            "{\"constraints\":{\"geo_countries\":[\"0123456789\u{1f}\"]}}",
            r#"{"constraints":{"geo_countries":["0123456789\u0041"]}}"#,
            r#"{"constraints":{"geo_countries":["01234567\"]}}"#,
            r#"{"constraints":{"geo_countries":["US"]"#,
            r#"{"constraints":{"geo_countries":["US"#,
            r#"{"constraints":{"geo_countries" ["US"]}}"#,
        ] {
            assert!(wrapped(text, "constraints").is_none(), "{text}");
        }
    }
}
