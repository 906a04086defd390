use std::fmt;

/// A valid telephone number in E.164 form (`+` and digits).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct E164(String);

impl E164 {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let bad = || format!("'{s}' is not an E.164 telephone number (e.g. +14155550123)");
        if !s.starts_with('+') || !s[1..].chars().all(|c| c.is_ascii_digit()) || s.len() > 16 {
            return Err(bad());
        }
        let number = phonenumber::parse(None, s).map_err(|_| bad())?;
        if !phonenumber::is_valid(&number) {
            return Err(bad());
        }
        Ok(E164(
            number.format().mode(phonenumber::Mode::E164).to_string(),
        ))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for E164 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
