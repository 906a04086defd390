//! Postal areas: which system each country uses (a wrong system fails
//! validation), the code format of each system, and the deprecated
//! country-fused system names of legacy `{system, values}` areas.

/// The systems a country accepts, as the spec pairs them.
pub fn systems_for(country: &str) -> &'static [&'static str] {
    match country {
        "US" => &["zip", "zip_plus_four"],
        "GB" => &["outward", "full"],
        "CA" => &["fsa", "full"],
        "DE" | "CH" | "AT" => &["plz"],
        "FR" => &["code_postal"],
        "AU" => &["postcode"],
        "BR" => &["cep"],
        "IN" => &["pin"],
        // ZA and every other country.
        _ => &["postal_code"],
    }
}

/// Every system name the pairing table uses.
pub const SYSTEMS: &[&str] = &[
    "zip",
    "zip_plus_four",
    "outward",
    "full",
    "fsa",
    "plz",
    "code_postal",
    "postcode",
    "cep",
    "pin",
    "postal_code",
];

/// Deprecated country-fused systems (AdCP's earlier `postal_areas` names),
/// accepted only in legacy areas without `country`, and their
/// `(country, system)`.
pub const LEGACY_SYSTEMS: &[(&str, &str, &str)] = &[
    ("us_zip", "US", "zip"),
    ("us_zip_plus_four", "US", "zip_plus_four"),
    ("gb_outward", "GB", "outward"),
    ("gb_full", "GB", "full"),
    ("ca_fsa", "CA", "fsa"),
    ("ca_full", "CA", "full"),
    ("de_plz", "DE", "plz"),
    ("ch_plz", "CH", "plz"),
    ("at_plz", "AT", "plz"),
    ("fr_code_postal", "FR", "code_postal"),
    ("au_postcode", "AU", "postcode"),
];

/// The `(country, system)` of a deprecated fused system name.
pub fn legacy(system: &str) -> Option<(&'static str, &'static str)> {
    LEGACY_SYSTEMS
        .iter()
        .find(|(name, _, _)| *name == system)
        .map(|(_, c, s)| (*c, *s))
}

fn digits(s: &[u8], n: usize) -> bool {
    s.len() == n && s.iter().all(u8::is_ascii_digit)
}

/// `a` digits and `b` digits, with or without one hyphen between them;
/// canonically with it.
fn hyphenated(s: &str, a: usize, b: usize) -> Option<String> {
    let (head, tail) = match s.split_once('-') {
        Some(parts) => parts,
        None if s.len() == a + b => s.split_at_checked(a)?,
        None => return None,
    };
    (digits(head.as_bytes(), a) && digits(tail.as_bytes(), b)).then(|| format!("{head}-{tail}"))
}

/// A full code whose two parts pass `valid`, as `outward inward`.
fn spaced(s: &str, valid: impl Fn(&[u8], &[u8]) -> bool) -> Option<String> {
    let (outward, inward) = split_full(s.as_bytes()).filter(|(o, i)| valid(o, i))?;
    // Both parts are ASCII (the checks pass nothing else).
    let (outward, inward) = (
        std::str::from_utf8(outward).ok()?,
        std::str::from_utf8(inward).ok()?,
    );
    Some(format!("{outward} {inward}"))
}

/// Upper case, spaces collapsed to one, trimmed.
fn tidy(raw: &str) -> String {
    let tidy = !raw.starts_with(' ')
        && !raw.ends_with(' ')
        && !raw.contains("  ")
        && !raw.bytes().any(|b| b != b' ' && b.is_ascii_whitespace());
    if tidy {
        raw.to_ascii_uppercase()
    } else {
        raw.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_ascii_uppercase()
    }
}

/// A GB outward code: area (1-2 letters), district (a digit, then an
/// optional digit or letter), e.g. `M1`, `B33`, `SW1A`.
fn gb_outward(b: &[u8]) -> bool {
    let letters = b.iter().take_while(|c| c.is_ascii_uppercase()).count();
    if !(1..=2).contains(&letters) {
        return false;
    }
    let rest = &b[letters..];
    matches!(rest.len(), 1 | 2)
        && rest[0].is_ascii_digit()
        && rest[1..].iter().all(|c| c.is_ascii_alphanumeric())
}

/// A GB inward code: a digit and two letters (never C, I, K, M, O, V).
fn gb_inward(b: &[u8]) -> bool {
    b.len() == 3
        && b[0].is_ascii_digit()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_uppercase() && !b"CIKMOV".contains(c))
}

/// A Canadian FSA: letter (not D F I O Q U W Z), digit, letter (not D F I O Q U).
fn ca_fsa(b: &[u8]) -> bool {
    b.len() == 3
        && b[0].is_ascii_uppercase()
        && !b"DFIOQUWZ".contains(&b[0])
        && b[1].is_ascii_digit()
        && b[2].is_ascii_uppercase()
        && !b"DFIOQU".contains(&b[2])
}

/// A Canadian LDU: digit, letter (not D F I O Q U), digit.
fn ca_ldu(b: &[u8]) -> bool {
    b.len() == 3
        && b[0].is_ascii_digit()
        && b[1].is_ascii_uppercase()
        && !b"DFIOQU".contains(&b[1])
        && b[2].is_ascii_digit()
}

/// Splits a full code into outward and inward parts, with or without the
/// space (the inward part is always the last three characters).
fn split_full(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let space = s.iter().position(|&c| c == b' ');
    if s.len() - usize::from(space.is_some()) < 5 {
        return None;
    }
    match space {
        Some(i) => Some((&s[..i], &s[i + 1..])),
        None => Some(s.split_at(s.len() - 3)),
    }
}

/// A full UK postcode's outward and inward parts (`GIR 0AA` included).
fn gb_full(outward: &[u8], inward: &[u8]) -> bool {
    (gb_outward(outward) || outward == b"GIR") && gb_inward(inward)
}

/// A full Canadian postal code's FSA and LDU.
fn ca_full(fsa: &[u8], ldu: &[u8]) -> bool {
    ca_fsa(fsa) && ca_ldu(ldu)
}

/// Any other country's code: 1 to 10 letters, digits, spaces or hyphens.
fn other(b: &[u8]) -> bool {
    b.len() <= 10
        && b.iter().any(u8::is_ascii_alphanumeric)
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b' ' || *c == b'-')
}

/// The code format of a valid (country, system) pair, found once per area
/// rather than once per code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Zip,
    ZipPlusFour,
    GbOutward,
    GbFull,
    CaFsa,
    CaFull,
    /// Germany's five digits.
    PlzDe,
    /// Switzerland's and Austria's four digits.
    Plz4,
    CodePostal,
    Postcode,
    Cep,
    Pin,
    /// Every other country's `postal_code`.
    Other,
}

impl Format {
    /// The format of `system` in `country`, a pair that [`systems_for`] allows.
    pub fn of(country: &str, system: &str) -> Format {
        match (country, system) {
            (_, "zip") => Format::Zip,
            (_, "zip_plus_four") => Format::ZipPlusFour,
            (_, "outward") => Format::GbOutward,
            ("GB", "full") => Format::GbFull,
            (_, "fsa") => Format::CaFsa,
            (_, "full") => Format::CaFull,
            ("DE", "plz") => Format::PlzDe,
            (_, "plz") => Format::Plz4,
            (_, "code_postal") => Format::CodePostal,
            (_, "postcode") => Format::Postcode,
            (_, "cep") => Format::Cep,
            (_, "pin") => Format::Pin,
            _ => Format::Other,
        }
    }

    /// Checks one code and returns its canonical form (upper case, one
    /// space, a hyphen where the format has one), or what a valid code
    /// looks like.
    pub fn normalize(self, raw: &str) -> Result<String, String> {
        let s = tidy(raw);
        let b = s.as_bytes();
        // Every format is ASCII; checking first keeps the byte slicing below safe.
        if !b.is_ascii() {
            return Err(format!("must be {}", self.expected()));
        }
        let ok = match self {
            Format::Zip | Format::PlzDe | Format::CodePostal => digits(b, 5).then_some(s),
            Format::Plz4 | Format::Postcode => digits(b, 4).then_some(s),
            Format::ZipPlusFour => hyphenated(&s, 5, 4),
            Format::GbOutward => gb_outward(b).then_some(s),
            Format::GbFull => spaced(&s, gb_full),
            Format::CaFsa => ca_fsa(b).then_some(s),
            Format::CaFull => spaced(&s, ca_full),
            Format::Cep => hyphenated(&s, 5, 3),
            Format::Pin => (digits(b, 6) && b[0] != b'0').then_some(s),
            Format::Other => other(b).then_some(s),
        };
        ok.ok_or_else(|| format!("must be {}", self.expected()))
    }

    /// What a code looks like, for messages.
    pub fn expected(self) -> &'static str {
        match self {
            Format::Zip => "a 5-digit ZIP code such as 94105",
            Format::ZipPlusFour => "a ZIP+4 code such as 94105-1234",
            Format::GbOutward => "a UK outward code such as SW1A or M1",
            Format::GbFull => "a full UK postcode such as SW1A 1AA",
            Format::CaFsa => "a Canadian forward sortation area such as K1A",
            Format::CaFull => "a full Canadian postal code such as K1A 0B1",
            Format::PlzDe => "a 5-digit Postleitzahl such as 10115",
            Format::Plz4 => "a 4-digit Postleitzahl such as 8001",
            Format::CodePostal => "a 5-digit code postal such as 75001",
            Format::Postcode => "a 4-digit postcode such as 2000",
            Format::Cep => "an 8-digit CEP such as 01310-100",
            Format::Pin => "a 6-digit PIN code not starting with 0, such as 110001",
            Format::Other => "1 to 10 letters, digits, spaces or hyphens",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_and_canonical_forms() {
        let ok = |c, s, v| Format::of(c, s).normalize(v).ok();
        assert_eq!(ok("US", "zip", "94105"), Some("94105".into()));
        assert_eq!(ok("US", "zip", "9410"), None);
        assert_eq!(
            ok("US", "zip_plus_four", "941051234"),
            Some("94105-1234".into())
        );
        assert_eq!(ok("US", "zip_plus_four", "9410-51234"), None);
        assert_eq!(ok("GB", "outward", "sw1a"), Some("SW1A".into()));
        assert_eq!(ok("GB", "outward", "M1"), Some("M1".into()));
        assert_eq!(ok("GB", "outward", "1SW"), None);
        assert_eq!(ok("GB", "full", "sw1a1aa"), Some("SW1A 1AA".into()));
        assert_eq!(ok("GB", "full", "SW1A 1CA"), None);
        assert_eq!(ok("CA", "fsa", "k1a"), Some("K1A".into()));
        assert_eq!(ok("CA", "fsa", "D1A"), None);
        assert_eq!(ok("CA", "full", "K1A0B1"), Some("K1A 0B1".into()));
        assert_eq!(ok("DE", "plz", "10115"), Some("10115".into()));
        assert_eq!(ok("DE", "plz", "8001"), None);
        assert_eq!(ok("CH", "plz", "8001"), Some("8001".into()));
        assert_eq!(ok("AT", "plz", "10115"), None);
        assert_eq!(ok("BR", "cep", "01310100"), Some("01310-100".into()));
        assert_eq!(ok("BR", "cep", "01310-100"), Some("01310-100".into()));
        assert_eq!(ok("IN", "pin", "011000"), None);
        assert_eq!(ok("ZA", "postal_code", "0001"), Some("0001".into()));
        assert_eq!(ok("NL", "postal_code", "1012 ab"), Some("1012 AB".into()));
        assert_eq!(ok("NL", "postal_code", "1012_AB"), None);
        assert_eq!(ok("NL", "postal_code", "12345678901"), None);
        assert_eq!(ok("US", "zip_plus_four", "94105-1234-"), None);
        assert_eq!(ok("GB", "full", "SW1A1Aé"), None);
        assert_eq!(ok("US", "zip_plus_four", "9410é1234"), None);
    }
}
