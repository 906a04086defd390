//! The JSON of a `validate_targeting` answer, byte for byte what serde
//! writes, but cheaper: an answer repeats hundreds of codes, since the
//! effective targeting of constraints without a package mostly equals their
//! normalised lists. Each list is written once; an effective list equal to
//! its normalised one is sent as a shared slice of that text, not copied.
//! A code is written as it is when it needs no escaping (every valid code
//! is plain ASCII); anything else goes through serde.

use std::ops::Range;

use bytes::Bytes;

use super::code::Code;
use super::constraints::{Constraints, MetroArea, Part, PostalArea};
use super::operations::TargetingValidation;
use crate::ops::Rendered;

type Out = Vec<u8>;

fn string(out: &mut Out, s: &str) -> serde_json::Result<()> {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push(b'"');
        out.extend_from_slice(s.as_bytes());
        out.push(b'"');
        Ok(())
    } else {
        serde_json::to_writer(&mut *out, s)
    }
}

fn code(out: &mut Out, c: &Code) -> serde_json::Result<()> {
    match c.json_block() {
        Some((block, n)) => {
            // The whole block in one copy, then cut to the code's length.
            let at = out.len();
            out.push(b'"');
            out.extend_from_slice(block);
            out.truncate(at + 1 + n);
            out.push(b'"');
            Ok(())
        }
        _ => string(out, c),
    }
}

fn key(out: &mut Out, first: &mut bool, k: &str) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(k.as_bytes());
    out.extend_from_slice(b"\":");
}

fn codes(out: &mut Out, list: &[Code]) -> serde_json::Result<()> {
    out.push(b'[');
    let plain = plain_codes(out, list);
    for (i, c) in list.iter().enumerate().skip(plain) {
        if i > 0 {
            out.push(b',');
        }
        code(out, c)?;
    }
    out.push(b']');
    Ok(())
}

/// Room for a comma, a quoted short code and the spare bytes of its block.
const ROOM: usize = 19;

/// Writes the leading codes that are short and need no escaping (as a rule,
/// all of them) into room made for them at once: plain stores, with no
/// check of capacity per byte. Returns how many it wrote.
fn plain_codes(out: &mut Out, list: &[Code]) -> usize {
    let start = out.len();
    out.resize(start + ROOM * list.len(), 0);
    let mut at = start;
    let mut written = 0;
    for c in list {
        let (Some((block, n)), Some(room)) = (c.json_block(), out.get_mut(at..at + ROOM)) else {
            break;
        };
        // A comma before each but the first, overwritten by the quote then.
        room[0] = b',';
        let q = usize::from(written > 0);
        room[q] = b'"';
        room[q + 1..q + 17].copy_from_slice(block);
        room[(q + 1 + n).min(ROOM - 1)] = b'"';
        at += q + n + 2;
        written += 1;
    }
    out.truncate(at);
    written
}

/// The fields of an area: `country` (postal areas only), `system`, `values`.
type Fields<A> = fn(&A) -> (Option<&str>, &str, &[Code]);

/// One area's object; where its text lies.
fn area(
    out: &mut Out,
    (country, system, values): (Option<&str>, &str, &[Code]),
) -> serde_json::Result<Span> {
    let start = out.len();
    out.push(b'{');
    if let Some(country) = country {
        out.extend_from_slice(b"\"country\":");
        string(out, country)?;
        out.push(b',');
    }
    out.extend_from_slice(b"\"system\":");
    string(out, system)?;
    out.extend_from_slice(b",\"values\":");
    codes(out, values)?;
    out.push(b'}');
    Ok(Span {
        start,
        end: out.len(),
        codes: values.len(),
    })
}

fn areas<A>(
    out: &mut Out,
    list: &[A],
    fields: Fields<A>,
    mut written: impl FnMut(Option<&str>, &str, Span),
) -> serde_json::Result<()> {
    out.push(b'[');
    for (i, a) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let f = fields(a);
        let span = area(out, f)?;
        written(f.0, f.1, span);
    }
    out.push(b']');
    Ok(())
}

fn metro(a: &MetroArea) -> (Option<&str>, &str, &[Code]) {
    (None, &a.system, &a.values)
}

fn postal(a: &PostalArea) -> (Option<&str>, &str, &[Code]) {
    (Some(&a.country), &a.system, &a.values)
}

/// Writes `p`, telling `written` where each area's text lies.
fn part(
    out: &mut Out,
    p: Part,
    written: impl FnMut(Option<&str>, &str, Span),
) -> serde_json::Result<()> {
    match p {
        Part::Codes(l) => codes(out, l),
        Part::Metros(l) => areas(out, l, metro, written),
        Part::Postal(l) => areas(out, l, postal, written),
    }
}

/// Normalised constraints written as JSON, with where each list's text
/// lies and how many codes it holds.
pub struct Written {
    json: Bytes,
    lists: [Option<Span>; 13],
    /// Each area of the metro and postal lists: its list, key and text.
    areas: Vec<AreaSpan>,
}

struct AreaSpan {
    list: usize,
    // Codes, not strings: a country and a system are short, so inline.
    country: Option<Code>,
    system: Code,
    span: Span,
}

#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    codes: usize,
}

impl Span {
    fn text(self) -> Range<usize> {
        self.start..self.end
    }
}

fn count(p: Part) -> usize {
    match p {
        Part::Codes(l) => l.len(),
        Part::Metros(l) => l.iter().map(|a| a.values.len()).sum(),
        Part::Postal(l) => l.iter().map(|a| a.values.len()).sum(),
    }
}

/// Writes the normalised constraints (before their lists move into the
/// effective targeting).
pub fn constraints(c: &Constraints) -> serde_json::Result<Written> {
    let parts = c.parts();
    let codes: usize = parts.iter().map(|(_, p)| count(*p)).sum();
    let mut out = Vec::with_capacity(256 + codes * 12);
    let mut lists = [None; 13];
    let mut areas = Vec::new();
    let mut first = true;
    out.push(b'{');
    for (i, (name, p)) in parts.into_iter().enumerate() {
        if p.is_empty() {
            continue;
        }
        key(&mut out, &mut first, name);
        let start = out.len();
        part(&mut out, p, |country, system, span| {
            areas.push(AreaSpan {
                list: i,
                country: country.map(Code::new),
                system: Code::new(system),
                span,
            })
        })?;
        lists[i] = Some(Span {
            start,
            end: out.len(),
            codes: count(p),
        });
    }
    out.push(b'}');
    Ok(Written {
        json: out.into(),
        lists,
        areas,
    })
}

impl std::fmt::Debug for Written {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(&self.json))
    }
}

/// Serde's path (the operation itself renders with [`validation`]) reads
/// the text back as raw JSON.
impl serde::Serialize for Written {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::Error;
        let raw: &serde_json::value::RawValue =
            serde_json::from_slice(&self.json).map_err(S::Error::custom)?;
        raw.serialize(s)
    }
}

/// The answer as it is built: the text written for it, and the runs of
/// the written constraints it repeats, shared rather than copied.
struct Answer<'w> {
    json: &'w Bytes,
    /// New text, written in place by the same writers as the constraints.
    text: Vec<u8>,
    /// Where `text` not yet in a piece begins.
    open: usize,
    pieces: Vec<Piece>,
}

enum Piece {
    Text(Range<usize>),
    Shared(Range<usize>),
}

impl<'w> Answer<'w> {
    fn new(json: &'w Bytes) -> Answer<'w> {
        Answer {
            json,
            text: Vec::with_capacity(1024),
            open: 0,
            pieces: Vec::with_capacity(16),
        }
    }

    /// Repeats `run` of the written constraints. Runs that follow each
    /// other there, with only the same separators written between them
    /// here, become one piece.
    fn share(&mut self, run: Range<usize>) {
        if let Some(Piece::Shared(last)) = self.pieces.last_mut() {
            let between = self.json.get(last.end..run.start);
            if between == self.text.get(self.open..) {
                self.text.truncate(self.open);
                last.end = run.end;
                return;
            }
        }
        self.close_text();
        self.pieces.push(Piece::Shared(run));
    }

    /// The text written since the last piece becomes a piece.
    fn close_text(&mut self) {
        if self.open < self.text.len() {
            self.pieces.push(Piece::Text(self.open..self.text.len()));
            self.open = self.text.len();
        }
    }

    fn finish(mut self) -> Rendered {
        self.close_text();
        let text = Bytes::from(self.text);
        Rendered(
            self.pieces
                .into_iter()
                .map(|p| match p {
                    Piece::Text(r) => text.slice(r),
                    Piece::Shared(r) => self.json.slice(r),
                })
                .collect(),
        )
    }
}

impl Written {
    /// Writes the effective areas of list `list`, repeating each whose
    /// normalised area kept all of its codes. Effective areas come in the
    /// order of the normalised ones (some dropped), so one forward walk
    /// finds them.
    fn areas<A>(
        &self,
        out: &mut Answer,
        list: usize,
        areas: &[A],
        fields: Fields<A>,
    ) -> serde_json::Result<()> {
        let mut from = self.areas.partition_point(|a| a.list < list);
        out.text.push(b'[');
        for (i, a) in areas.iter().enumerate() {
            if i > 0 {
                out.text.push(b',');
            }
            let f @ (country, system, values) = fields(a);
            let found = self.areas[from..]
                .iter()
                .take_while(|a| a.list == list)
                .position(|a| a.country.as_deref() == country && a.system == *system);
            match found.map(|k| from + k) {
                Some(k) if self.areas[k].span.codes == values.len() => {
                    out.share(self.areas[k].span.text());
                    from = k + 1;
                }
                _ => {
                    area(&mut out.text, f)?;
                }
            }
        }
        out.text.push(b']');
        Ok(())
    }
}

/// The answer's JSON: the written constraints, then the effective
/// targeting, whose lists that equal the constraints' repeat their text.
pub fn validation(v: &TargetingValidation) -> serde_json::Result<Rendered> {
    let written = &v.constraints;
    let mut out = Answer::new(&written.json);
    out.text.extend_from_slice(if v.valid {
        b"{\"valid\":true,\"constraints\":"
    } else {
        b"{\"valid\":false,\"constraints\":"
    });
    out.share(0..written.json.len());
    out.text.extend_from_slice(b",\"effective\":{");
    let mut first = true;
    for (i, (name, p)) in v.effective.parts().into_iter().enumerate() {
        let Some(p) = p else { continue };
        key(&mut out.text, &mut first, name);
        // Without a package, each effective list is its normalised list
        // with some codes taken out, order kept: as many codes means the
        // same list, whose text is repeated.
        match (written.lists[i], p) {
            (Some(span), _) if span.codes == count(p) => out.share(span.text()),
            (_, Part::Metros(l)) => written.areas(&mut out, i, l, metro)?,
            (_, Part::Postal(l)) => written.areas(&mut out, i, l, postal)?,
            (_, Part::Codes(l)) => codes(&mut out.text, l)?,
        }
    }
    let text = &mut out.text;
    if !v.effective.unsatisfiable.is_empty() {
        key(text, &mut first, "unsatisfiable");
        serde_json::to_writer(&mut *text, &v.effective.unsatisfiable)?;
    }
    text.push(b'}');
    for (name, labels) in [
        ("geo_metro_names", &v.geo_metro_names),
        ("geo_metro_names_exclude", &v.geo_metro_names_exclude),
    ] {
        if !labels.is_empty() {
            text.extend_from_slice(b",\"");
            text.extend_from_slice(name.as_bytes());
            text.extend_from_slice(b"\":");
            serde_json::to_writer(&mut *text, labels)?;
        }
    }
    text.push(b'}');
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;
    use crate::buyer::targeting::constraints::{
        EffectiveTargeting, MetroLabel, metro_labels, parse_constraints,
    };
    use crate::error::Issues;

    /// The answer as the operation builds it, and as serde would write it
    /// from the normalised constraints and their effective targeting.
    fn both(constraints: serde_json::Value, names: bool) -> (Vec<u8>, String) {
        #[derive(serde::Serialize)]
        struct Serde<'a> {
            valid: bool,
            constraints: &'a Constraints,
            effective: EffectiveTargeting,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            geo_metro_names: Vec<MetroLabel>,
            #[serde(skip_serializing_if = "Vec::is_empty")]
            geo_metro_names_exclude: Vec<MetroLabel>,
        }
        let mut issues = Issues::default();
        let c = parse_constraints(&constraints, "constraints", &mut issues).unwrap();
        let labels = |areas| if names { metro_labels(areas) } else { vec![] };
        let serde = serde_json::to_string(&Serde {
            valid: true,
            constraints: &c,
            effective: c.effective(None),
            geo_metro_names: labels(&c.geo_metros),
            geo_metro_names_exclude: labels(&c.geo_metros_exclude),
        })
        .unwrap();
        let v = TargetingValidation {
            valid: true,
            geo_metro_names: labels(&c.geo_metros),
            geo_metro_names_exclude: labels(&c.geo_metros_exclude),
            constraints: super::constraints(&c).unwrap(),
            effective: c.into_effective(None),
        };
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            serde,
            "serde's own path"
        );
        (validation(&v).unwrap().joined().to_vec(), serde)
    }

    #[test]
    fn writes_what_serde_writes() {
        let cases = [
            json!({}),
            json!({"geo_countries": ["us"]}),
            json!({
                "channels": ["display", "ctv"],
                "countries": ["US", "CA", "GB"],
                "geo_countries_exclude": ["CA"],
                "geo_regions": ["US-CA", "CA-ON", "US-NY"],
                "geo_regions_exclude": ["US-NY"],
                "geo_metros": [{"system": "nielsen_dma", "values": ["501", "803"]}],
                "geo_metros_exclude": [{"system": "nielsen_dma", "values": ["803"]}],
                "geo_postal_areas": [
                    {"country": "US", "system": "zip", "values": ["94105", "10001"]},
                    {"country": "US", "system": "zip_plus_four", "values": ["10001-1234", "60601-0001"]},
                    {"country": "CA", "system": "fsa", "values": ["K1A"]},
                    {"country": "NL", "system": "postal_code", "values": ["1012 ab"]},
                ],
                "geo_postal_areas_exclude": [{"country": "US", "system": "zip", "values": ["10001"]}],
                "language": ["EN", "fr"],
                "device_type": ["mobile", "ctv"],
                "device_type_exclude": ["ctv", "dooh"],
                "device_platform": ["ios"],
            }),
            // Everything excluded: empty include lists and `unsatisfiable`.
            json!({
                "device_type": ["ctv"],
                "device_type_exclude": ["ctv"],
                "geo_countries": ["US"],
                "geo_countries_exclude": ["US"],
            }),
        ];
        for case in cases {
            for names in [false, true] {
                let (ours, serde) = both(case.clone(), names);
                assert_eq!(String::from_utf8(ours).unwrap(), serde, "for {case}");
            }
        }
    }

    #[test]
    fn effective_lists_that_kept_their_codes_share_the_constraints_text() {
        let answer = |constraints: serde_json::Value| {
            let mut issues = Issues::default();
            let c = parse_constraints(&constraints, "constraints", &mut issues).unwrap();
            let v = TargetingValidation {
                valid: true,
                constraints: super::constraints(&c).unwrap(),
                effective: c.into_effective(None),
                geo_metro_names: vec![],
                geo_metro_names_exclude: vec![],
            };
            let written = v.constraints.json.clone();
            let pieces = validation(&v).unwrap().0;
            // Which pieces are slices of the constraints' text, not copies.
            let range = written.as_ptr_range();
            let shared: Vec<bool> = pieces
                .iter()
                .map(|p| !p.is_empty() && range.contains(&p.as_ptr()))
                .collect();
            (pieces.len(), shared)
        };
        let postal = json!([
            {"country": "US", "system": "zip", "values": ["94105", "10001", "60601"]},
            {"country": "GB", "system": "outward", "values": ["EC1", "M1"]},
        ]);
        // Nothing taken out: the constraints, then every effective list in
        // one slice of them.
        let (n, shared) = answer(json!({
            "channels": ["display"],
            "geo_metros": [{"system": "nielsen_dma", "values": ["501", "803"]}],
            "geo_postal_areas": postal,
            "language": ["en"],
        }));
        assert_eq!((n, shared), (5, vec![false, true, false, true, false]));
        // One area loses a code: it is written, the other areas and lists
        // are still shared.
        let (n, shared) = answer(json!({
            "channels": ["display"],
            "geo_postal_areas": postal,
            "geo_postal_areas_exclude": [{"country": "US", "system": "zip", "values": ["10001"]}],
            "language": ["en"],
        }));
        assert!(n > 5, "{n} pieces");
        assert_eq!(shared.iter().filter(|s| **s).count(), 3, "{shared:?}");
    }

    #[test]
    fn lists_of_codes_of_every_length_are_written_as_serde_writes_them() {
        let text = "0123456789ABCDEFGHIJ";
        let mut all: Vec<Code> = (0..=text.len()).map(|n| Code::new(&text[..n])).collect();
        // Past one that needs escaping, the rest are written the plain way.
        all.extend(["a\"b", "c", "d\n", "é", "g\\h", "ef"].map(Code::new));
        for list in [
            &all[..0],
            &all[..1],
            &all[3..4],
            &all[..],
            &all[14..],
            &all[21..],
        ] {
            let mut out = b"x".to_vec();
            codes(&mut out, list).unwrap();
            let want = [&b"x"[..], &serde_json::to_vec(list).unwrap()].concat();
            assert_eq!(
                String::from_utf8(out).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    #[test]
    fn a_code_that_needs_escaping_is_escaped() {
        let mut out = Vec::new();
        codes(&mut out, &[Code::new("a\"b\\c\n"), Code::new("é")]).unwrap();
        let back: Vec<String> = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, vec!["a\"b\\c\n", "é"]);
    }
}
