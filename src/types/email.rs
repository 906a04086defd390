use std::fmt;
use std::str::FromStr;

/// A syntactically valid e-mail address, lower-cased.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Email(String);

impl Email {
    pub fn parse(s: &str) -> Result<Self, String> {
        let s = s.trim();
        let addr = email_address::EmailAddress::from_str(s)
            .map_err(|e| format!("invalid email '{s}': {e}"))?;
        // Require a dotted domain: `user@localhost` is not an address we can mail.
        if !addr.domain().contains('.') {
            return Err(format!("invalid email '{s}': domain must be a full name"));
        }
        Ok(Email(addr.as_str().to_ascii_lowercase()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Email {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}
