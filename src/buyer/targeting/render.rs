//! The JSON of a `validate_targeting` answer, byte for byte what serde
//! writes, but cheaper: an answer repeats hundreds of codes, since the
//! effective targeting of constraints without a package mostly equals their
//! normalised lists. Each list is written once; an effective list equal to
//! its normalised one is copied as text. A code is written as it is when it
//! needs no escaping (every valid code is plain ASCII); anything else goes
//! through serde.

use super::code::Code;
use super::constraints::{Constraints, MetroArea, Part, PostalArea};
use super::operations::TargetingValidation;

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
    for (i, c) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, c)?;
    }
    out.push(b']');
    Ok(())
}

fn areas<A>(
    out: &mut Out,
    list: &[A],
    fields: impl Fn(&A) -> (Option<&str>, &str, &[Code]),
) -> serde_json::Result<()> {
    out.push(b'[');
    for (i, area) in list.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        let (country, system, values) = fields(area);
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
    }
    out.push(b']');
    Ok(())
}

fn part(out: &mut Out, p: Part) -> serde_json::Result<()> {
    match p {
        Part::Codes(l) => codes(out, l),
        Part::Metros(l) => areas(out, l, |a: &MetroArea| {
            (None, a.system.as_str(), a.values.as_slice())
        }),
        Part::Postal(l) => areas(out, l, |a: &PostalArea| {
            (
                Some(a.country.as_str()),
                a.system.as_str(),
                a.values.as_slice(),
            )
        }),
    }
}

/// Normalised constraints written as JSON, with where each list's text
/// lies and how many codes it holds.
pub struct Written {
    json: Vec<u8>,
    lists: [Option<Span>; 13],
}

#[derive(Clone, Copy)]
struct Span {
    start: usize,
    end: usize,
    codes: usize,
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
    let mut first = true;
    out.push(b'{');
    for (i, (name, p)) in parts.into_iter().enumerate() {
        if p.is_empty() {
            continue;
        }
        key(&mut out, &mut first, name);
        let start = out.len();
        part(&mut out, p)?;
        lists[i] = Some(Span {
            start,
            end: out.len(),
            codes: count(p),
        });
    }
    out.push(b'}');
    Ok(Written { json: out, lists })
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

/// The answer's JSON.
pub fn validation(v: &TargetingValidation) -> serde_json::Result<Vec<u8>> {
    let written = &v.constraints;
    let mut out = Vec::with_capacity(512 + written.json.len() * 2);
    out.extend_from_slice(if v.valid {
        b"{\"valid\":true,\"constraints\":"
    } else {
        b"{\"valid\":false,\"constraints\":"
    });
    out.extend_from_slice(&written.json);
    out.extend_from_slice(b",\"effective\":{");
    let mut first = true;
    for (i, (name, p)) in v.effective.parts().into_iter().enumerate() {
        let Some(p) = p else { continue };
        key(&mut out, &mut first, name);
        // Without a package, each effective list is its normalised list
        // with some codes taken out, order kept: as many codes means the
        // same list, whose text is copied.
        match written.lists[i] {
            Some(span) if span.codes == count(p) => {
                out.extend_from_slice(&written.json[span.start..span.end])
            }
            _ => part(&mut out, p)?,
        }
    }
    if !v.effective.unsatisfiable.is_empty() {
        key(&mut out, &mut first, "unsatisfiable");
        serde_json::to_writer(&mut out, &v.effective.unsatisfiable)?;
    }
    out.push(b'}');
    for (name, labels) in [
        ("geo_metro_names", &v.geo_metro_names),
        ("geo_metro_names_exclude", &v.geo_metro_names_exclude),
    ] {
        if !labels.is_empty() {
            out.extend_from_slice(b",\"");
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
            serde_json::to_writer(&mut out, labels)?;
        }
    }
    out.push(b'}');
    Ok(out)
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
        (validation(&v).unwrap(), serde)
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
    fn a_code_that_needs_escaping_is_escaped() {
        let mut out = Vec::new();
        codes(&mut out, &[Code::new("a\"b\\c\n"), Code::new("é")]).unwrap();
        let back: Vec<String> = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, vec!["a\"b\\c\n", "é"]);
    }
}
