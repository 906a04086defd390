//! The targeting vocabularies, each from a maintained source rather than a
//! hand-typed list: ISO 3166-1 countries (`isocountry`), ISO 3166-2
//! subdivisions (`rust_iso3166`), ISO 639-1 languages (`isolang`) and the
//! 210 Nielsen DMA markets (`data/nielsen_dma.csv`, vendored with its source
//! noted in its header). Each is built once into hash tables, so every
//! validation lookup is O(1); fuzzy name resolution scans precomputed,
//! normalised names.

use std::sync::LazyLock;

/// The dimensions that can be listed and resolved by name.
pub const SYSTEMS: &[&str] = &["nielsen_dma", "countries", "regions", "languages"];

/// One code and its English label.
#[derive(Debug, Clone)]
pub struct Entry {
    pub code: &'static str,
    pub name: &'static str,
    /// The ISO 3166-1 country a region belongs to (regions only).
    pub country: Option<&'static str>,
    /// Normalised forms matched by `resolve` (see [`normalize`]): the full
    /// name, the name before its first comma ("New York" of "New York, NY")
    /// and each place a composite name mentions ("Dallas", "Ft Worth").
    pub(crate) full: String,
    pub(crate) head: String,
    pub(crate) parts: Vec<String>,
}

/// A vocabulary: entries sorted by code, with a code index.
#[derive(Debug)]
pub struct Vocab {
    pub entries: Vec<Entry>,
    by_code: foldhash::HashMap<&'static str, usize>,
}

impl Vocab {
    fn new(mut entries: Vec<Entry>) -> Vocab {
        entries.sort_by(|a, b| a.code.cmp(b.code));
        entries.dedup_by(|a, b| a.code == b.code);
        let by_code = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.code, i))
            .collect();
        Vocab { entries, by_code }
    }

    /// The entry of an exact (canonical-case) code.
    pub fn get(&self, code: &str) -> Option<&Entry> {
        self.by_code.get(code).and_then(|&i| self.entries.get(i))
    }

    pub fn contains(&self, code: &str) -> bool {
        self.by_code.contains_key(code)
    }
}

fn entry(code: &'static str, name: &'static str, country: Option<&'static str>) -> Entry {
    let full = normalize(name);
    let head_raw = name.split(',').next().unwrap_or(name);
    let head = normalize(head_raw);
    // Every place a market name mentions ("Joplin, MO-Pittsburg, KS" names
    // Joplin and Pittsburg); two-letter state qualifiers are not places.
    let mut parts: Vec<String> = name
        .split([',', '-', '&', '(', ')', '/'])
        .map(normalize)
        .filter(|p| p.len() > 2 && *p != head && *p != full)
        .collect();
    parts.sort();
    parts.dedup();
    Entry {
        code,
        name,
        country,
        full,
        head,
        parts,
    }
}

/// Lower case, punctuation to spaces, single spaces, and the abbreviations
/// market names use spelled one way ("Fort"/"Ft.", "Saint"/"St.").
pub fn normalize(s: &str) -> String {
    let lowered: String = s
        .chars()
        .map(|c| {
            if c.is_alphanumeric() {
                c.to_lowercase().next().unwrap_or(c)
            } else {
                ' '
            }
        })
        .collect();
    let mut out = String::with_capacity(lowered.len());
    for word in lowered.split_whitespace() {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(match word {
            "fort" => "ft",
            "saint" => "st",
            "mount" => "mt",
            w => w,
        });
    }
    out
}

/// The vendored DMA table (see its header for source, commit and licence).
const DMA_CSV: &str = include_str!("../../../data/nielsen_dma.csv");

pub static DMA: LazyLock<Vocab> = LazyLock::new(|| {
    let rows = DMA_CSV
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("code,"))
        .filter_map(|l| {
            let (code, rest) = l.split_once(',')?;
            let (_rank, name) = rest.split_once(',')?;
            Some(entry(code.trim(), name.trim(), None))
        })
        .collect();
    Vocab::new(rows)
});

pub static COUNTRIES: LazyLock<Vocab> = LazyLock::new(|| {
    Vocab::new(
        isocountry::CountryCode::iter()
            .map(|c| entry(c.alpha2(), c.name(), None))
            .collect(),
    )
});

pub static REGIONS: LazyLock<Vocab> = LazyLock::new(|| {
    Vocab::new(
        rust_iso3166::iso3166_2::SUBDIVISION_MAP
            .values()
            .map(|s| entry(s.code, s.name, Some(s.country_code)))
            .collect(),
    )
});

pub static LANGUAGES: LazyLock<Vocab> = LazyLock::new(|| {
    Vocab::new(
        isolang::languages()
            .filter_map(|l| Some(entry(l.to_639_1()?, l.to_name(), None)))
            .collect(),
    )
});

/// The vocabulary of a listable dimension.
pub fn vocab(system: &str) -> Option<&'static Vocab> {
    match system {
        "nielsen_dma" => Some(&DMA),
        "countries" => Some(&COUNTRIES),
        "regions" => Some(&REGIONS),
        "languages" => Some(&LANGUAGES),
        _ => None,
    }
}

/// An ISO 3166-1 alpha-2 code (upper case).
pub fn is_country(code: &str) -> bool {
    COUNTRIES.contains(code)
}

/// An ISO 3166-2 subdivision code such as `US-CA` (upper case).
pub fn is_region(code: &str) -> bool {
    REGIONS.contains(code)
}

/// An ISO 639-1 code (lower case).
pub fn is_language(code: &str) -> bool {
    LANGUAGES.contains(code)
}

/// A Nielsen DMA code such as `501`.
pub fn is_dma(code: &str) -> bool {
    DMA.contains(code)
}

/// Metro systems accepted in `geo_metros`; only Nielsen DMA has a vocabulary
/// here, so other systems are rejected rather than passed through unchecked.
pub const METRO_SYSTEMS: &[&str] = &["nielsen_dma"];

/// The label of a metro code, e.g. `metro_name("nielsen_dma", "501")` is
/// "New York, NY".
pub fn metro_name(system: &str, code: &str) -> Option<&'static str> {
    match system {
        "nielsen_dma" => DMA.get(code).map(|e| e.name),
        _ => None,
    }
}

/// Candidates at or above this confidence are returned by `resolve`.
pub const MIN_CONFIDENCE: f64 = 0.80;
/// Two or more candidates at or above this confidence make a resolution
/// ambiguous (unless exactly one matched exactly).
pub const HIGH_CONFIDENCE: f64 = 0.90;
/// At most this many candidates are returned.
pub const MAX_CANDIDATES: usize = 10;

/// A resolved candidate.
#[derive(Debug, Clone)]
pub struct Candidate {
    pub entry: &'static Entry,
    pub confidence: f64,
}

/// The result of resolving a name: candidates by falling confidence.
#[derive(Debug, Clone)]
pub struct Resolution {
    pub candidates: Vec<Candidate>,
    pub ambiguous: bool,
}

/// Matches `query` against a vocabulary's codes and names.
///
/// Confidence is 1.0 for the code itself, the full name or the name before
/// its comma ("New York" for "New York, NY"); 0.95 for a place a composite
/// name mentions ("Dallas" for "Dallas-Ft. Worth, TX"); otherwise the best
/// Jaro-Winkler similarity of the normalised query to those forms (places
/// scaled by 0.95), kept when at least [`MIN_CONFIDENCE`]. Two or more
/// candidates at or above [`HIGH_CONFIDENCE`] are ambiguous ("Portland":
/// Portland, OR and Portland-Auburn, ME); an exact match without such a
/// rival is returned alone.
pub fn resolve(vocab: &'static Vocab, query: &str, country: Option<&str>) -> Resolution {
    let q = normalize(query);
    if q.is_empty() {
        return Resolution {
            candidates: vec![],
            ambiguous: false,
        };
    }
    let upper = query.trim().to_uppercase();
    let mut scored: Vec<Candidate> = vocab
        .entries
        .iter()
        .filter(|e| country.is_none_or(|c| e.country == Some(c)))
        .filter_map(|e| {
            let confidence = score(e, &q, &upper);
            (confidence >= MIN_CONFIDENCE).then_some(Candidate {
                entry: e,
                confidence,
            })
        })
        .collect();
    scored.sort_by(|a, b| {
        b.confidence
            .total_cmp(&a.confidence)
            .then_with(|| a.entry.code.cmp(b.entry.code))
    });
    let high = scored
        .iter()
        .filter(|c| c.confidence >= HIGH_CONFIDENCE)
        .count();
    // An exact match with no close rival is the answer on its own.
    if high == 1 && scored.first().is_some_and(|c| c.confidence >= 1.0) {
        scored.truncate(1);
    }
    scored.truncate(MAX_CANDIDATES);
    Resolution {
        ambiguous: high > 1,
        candidates: scored,
    }
}

fn score(e: &Entry, q: &str, upper_query: &str) -> f64 {
    if e.code.eq_ignore_ascii_case(upper_query) || e.full == q || e.head == q {
        return 1.0;
    }
    if e.parts.iter().any(|p| p == q) {
        return 0.95;
    }
    let mut best = strsim::jaro_winkler(q, &e.full).max(strsim::jaro_winkler(q, &e.head));
    for p in &e.parts {
        best = best.max(strsim::jaro_winkler(q, p) * 0.95);
    }
    // Rounded so that equal matches compare equal and read cleanly.
    (best * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn the_vocabularies_are_complete() {
        assert_eq!(DMA.entries.len(), 210);
        assert_eq!(metro_name("nielsen_dma", "501"), Some("New York, NY"));
        assert_eq!(metro_name("nielsen_dma", "798"), Some("Glendive, MT"));
        assert!(COUNTRIES.entries.len() >= 249);
        assert!(is_country("US") && !is_country("XX"));
        assert!(is_region("US-CA") && is_region("GB-ENG") && !is_region("US-XX"));
        assert_eq!(REGIONS.get("US-CA").unwrap().country, Some("US"));
        assert!(LANGUAGES.entries.len() >= 180);
        assert!(is_language("en") && is_language("fr") && !is_language("xx"));
        // Every entry is found by its own code.
        for v in [&*DMA, &*COUNTRIES, &*REGIONS, &*LANGUAGES] {
            for e in &v.entries {
                assert_eq!(v.get(e.code).map(|f| f.code), Some(e.code));
            }
        }
        assert!(!is_country("") && !is_country("a-code-longer-than-fifteen"));
    }

    #[test]
    fn resolution_exact_fuzzy_ambiguous_and_none() {
        let r = resolve(&DMA, "New York", None);
        assert_eq!(r.candidates.len(), 1);
        assert_eq!(r.candidates[0].entry.code, "501");
        assert_eq!(r.candidates[0].confidence, 1.0);
        assert!(!r.ambiguous);

        let r = resolve(&DMA, "new yrok", None);
        assert_eq!(r.candidates[0].entry.code, "501");
        assert!(r.candidates[0].confidence < 1.0);

        let r = resolve(&DMA, "Portland", None);
        assert!(r.ambiguous, "{r:?}");
        let codes: Vec<_> = r.candidates.iter().map(|c| c.entry.code).collect();
        assert!(
            codes.contains(&"500") && codes.contains(&"820"),
            "{codes:?}"
        );

        let r = resolve(&DMA, "Fort Myers", None);
        assert_eq!(r.candidates[0].entry.code, "571");

        let r = resolve(&DMA, "Qwxz Vbnm", None);
        assert!(r.candidates.is_empty(), "{r:?}");
    }
}
