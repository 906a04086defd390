//! A secret from the environment (an API key sent as a bearer token):
//! never printed, not even by `Debug`.

/// One word of printable characters.
#[derive(Clone)]
pub struct Secret(pub(crate) String);

impl Secret {
    /// The value, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(..)")
    }
}

impl std::str::FromStr for Secret {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let s = s.trim();
        if s.is_empty() || s.chars().any(|c| c.is_control() || c == ' ') {
            return Err("the key must be one word of printable characters".into());
        }
        Ok(Secret(s.to_string()))
    }
}
