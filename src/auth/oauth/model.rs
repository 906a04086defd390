//! Validated OAuth inputs: scopes, redirect URIs, PKCE values, resources.
//! Everything a request names is parsed into one of these before use.

use std::net::IpAddr;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The scopes a client may ask for: the spec's `openid profile email`, and
/// the platform access of the grant (`platform:read`, `platform:write`).
pub const SUPPORTED_SCOPES: [&str; 5] =
    ["openid", "profile", "email", PLATFORM_READ, PLATFORM_WRITE];
/// The spec's scope: asked for when a request names none, and what the
/// protected resource metadata lists (MCP hosts ask for all it lists).
pub const DEFAULT_SCOPES: [&str; 3] = ["openid", "profile", "email"];
pub const PLATFORM_READ: &str = "platform:read";
pub const PLATFORM_WRITE: &str = "platform:write";

/// A set of supported scopes, kept in the order of `SUPPORTED_SCOPES`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scopes(Vec<&'static str>);

impl Scopes {
    fn of(names: &[&str]) -> Self {
        Scopes(
            SUPPORTED_SCOPES
                .iter()
                .copied()
                .filter(|s| names.contains(s))
                .collect(),
        )
    }

    /// The spec's `openid profile email`.
    pub fn default_request() -> Self {
        Self::of(&DEFAULT_SCOPES)
    }

    /// A `scope` parameter: absent or empty means the spec's default; an
    /// unknown scope is refused (its name is the error).
    pub fn parse(raw: Option<&str>) -> Result<Self, String> {
        let Some(raw) = raw.filter(|s| !s.trim().is_empty()) else {
            return Ok(Self::default_request());
        };
        let mut wanted = Vec::new();
        for name in raw.split(' ').filter(|s| !s.is_empty()) {
            match SUPPORTED_SCOPES.iter().find(|s| **s == name) {
                Some(s) => wanted.push(*s),
                None => return Err(name.to_string()),
            }
        }
        Ok(Self::of(&wanted))
    }

    /// Scopes as stored by this server (unknown names cannot be there; any
    /// that were are dropped rather than trusted).
    pub fn from_stored(raw: &str) -> Self {
        let names: Vec<&str> = raw.split(' ').collect();
        Self::of(&names)
    }

    pub fn contains(&self, scope: &str) -> bool {
        self.0.contains(&scope)
    }

    pub fn is_subset_of(&self, other: &Scopes) -> bool {
        self.0.iter().all(|s| other.0.contains(s))
    }

    /// Can a grant of these scopes be given write access? Not when the
    /// client asked for `platform:read` alone.
    pub fn may_write(&self) -> bool {
        self.contains(PLATFORM_WRITE) || !self.contains(PLATFORM_READ)
    }

    /// These scopes granted read-only: without `platform:write`, with
    /// `platform:read`.
    pub fn read_only(&self) -> Self {
        let mut names: Vec<&str> = self.iter().filter(|s| *s != PLATFORM_WRITE).collect();
        names.push(PLATFORM_READ);
        Self::of(&names)
    }

    /// The platform scopes of the set, which are the permissions of the
    /// grant's credential (none: the user's own access, as an API key made
    /// without `--permission`).
    pub fn platform(&self) -> Self {
        Self::of(&[PLATFORM_READ, PLATFORM_WRITE]).intersect(self)
    }

    /// `self` with the platform scopes of `granted` in place of its own.
    pub fn with_platform_of(&self, granted: &Scopes) -> Self {
        let mut names: Vec<&str> = self
            .iter()
            .filter(|s| !s.starts_with("platform:"))
            .collect();
        names.extend(granted.platform().iter());
        Self::of(&names)
    }

    fn intersect(&self, other: &Scopes) -> Self {
        Scopes(self.iter().filter(|s| other.contains(s)).collect())
    }

    pub fn iter(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.0.iter().copied()
    }

    pub fn to_param(&self) -> String {
        self.0.join(" ")
    }
}

/// A redirect URI a client may register: absolute, `https`, or `http` to a
/// loopback host only (RFC 8252 section 7.3); no fragment, no credentials.
/// Kept exactly as sent: authorization requests must repeat it verbatim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectUri(String);

pub const MAX_URI_LEN: usize = 2000;

impl RedirectUri {
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.is_empty() || raw.len() > MAX_URI_LEN {
            return Err(format!("must be 1 to {MAX_URI_LEN} characters"));
        }
        if raw.contains('#') {
            return Err("must not contain a fragment".into());
        }
        let url = url::Url::parse(raw).map_err(|e| format!("not an absolute URI: {e}"))?;
        if !url.username().is_empty() || url.password().is_some() {
            return Err("must not contain credentials".into());
        }
        match url.scheme() {
            "https" if url.host().is_some() => Ok(RedirectUri(raw.to_string())),
            "http" if is_loopback(&url) => Ok(RedirectUri(raw.to_string())),
            "http" => Err(
                "http is allowed only for loopback hosts (127.0.0.1, [::1], localhost); use https"
                    .into(),
            ),
            _ => Err("must be an https URI (or http to a loopback host)".into()),
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn into_string(self) -> String {
        self.0
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// What the consent page shows of a redirect URI: its host and port.
pub fn redirect_host(uri: &str) -> String {
    url::Url::parse(uri)
        .ok()
        .and_then(|u| {
            let host = u.host_str()?.to_string();
            Some(match u.port() {
                Some(p) => format!("{host}:{p}"),
                None => host,
            })
        })
        .unwrap_or_else(|| uri.to_string())
}

/// RFC 7636 section 4.1: 43 to 128 unreserved characters.
fn is_pkce_value(s: &str) -> bool {
    (43..=128).contains(&s.len())
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
}

/// A PKCE `code_challenge` sent with `code_challenge_method=S256`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeChallenge(String);

impl CodeChallenge {
    pub fn parse(raw: &str) -> Result<Self, String> {
        if is_pkce_value(raw) {
            Ok(CodeChallenge(raw.to_string()))
        } else {
            Err("code_challenge must be 43 to 128 characters of [A-Za-z0-9-._~]".into())
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Does `verifier` match the stored S256 `challenge`? (Constant time.)
pub fn pkce_matches(challenge: &str, verifier: &str) -> bool {
    if !is_pkce_value(verifier) {
        return false;
    }
    let computed = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
    computed.as_bytes().ct_eq(challenge.as_bytes()).into()
}

/// An RFC 8707 `resource`: an absolute URI without fragment naming this
/// server (its public URL or a path under it), so tokens are never issued
/// for somewhere else.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource(String);

impl Resource {
    pub fn parse(raw: &str, public_url: &str) -> Result<Self, String> {
        if raw.len() > MAX_URI_LEN || raw.contains('#') {
            return Err("resource must be an absolute URI without a fragment".into());
        }
        url::Url::parse(raw).map_err(|_| "resource must be an absolute URI".to_string())?;
        let ours = raw == public_url
            || raw
                .strip_prefix(public_url)
                .is_some_and(|rest| rest.starts_with('/'));
        if ours {
            Ok(Resource(raw.to_string()))
        } else {
            Err(format!(
                "resource must be this server ({public_url}) or a path under it"
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn scopes_default_to_the_specs_and_refuse_unknown_names() {
        assert_eq!(Scopes::parse(None).unwrap(), Scopes::default_request());
        assert_eq!(
            Scopes::parse(Some("")).unwrap().to_param(),
            "openid profile email"
        );
        assert_eq!(
            Scopes::parse(Some("email openid")).unwrap().to_param(),
            "openid email"
        );
        assert_eq!(Scopes::parse(Some("openid admin")).unwrap_err(), "admin");
        assert_eq!(
            Scopes::parse(Some("platform:admin")).unwrap_err(),
            "platform:admin"
        );
        assert!(
            Scopes::parse(Some("email"))
                .unwrap()
                .is_subset_of(&Scopes::default_request())
        );
        assert!(!Scopes::default_request().is_subset_of(&Scopes::parse(Some("email")).unwrap()));
    }

    #[test]
    fn platform_scopes_decide_what_a_grant_may_do() {
        let p = |s: &str| Scopes::parse(Some(s)).unwrap();
        assert_eq!(
            p("platform:write email platform:read").to_param(),
            "email platform:read platform:write"
        );
        assert!(p("openid").may_write());
        assert!(p("openid platform:write").may_write());
        assert!(p("platform:read platform:write").may_write());
        assert!(!p("openid platform:read").may_write());
        assert_eq!(
            p("openid email").read_only().to_param(),
            "openid email platform:read"
        );
        assert_eq!(
            p("openid platform:write").read_only().to_param(),
            "openid platform:read"
        );
        assert_eq!(p("openid email").platform().to_param(), "");
        assert_eq!(
            p("openid platform:write").platform().to_param(),
            "platform:write"
        );
        // A refresh may narrow the identity scopes, never the platform ones.
        assert_eq!(
            p("email platform:write")
                .with_platform_of(&p("openid email platform:read"))
                .to_param(),
            "email platform:read"
        );
    }

    #[test]
    fn redirect_uris_are_https_or_loopback_http_without_fragments() {
        for ok in [
            "https://agent.example.com/callback",
            "https://agent.example.com/cb?x=1",
            "http://127.0.0.1:8765/callback",
            "http://[::1]:9000/cb",
            "http://localhost:3000/cb",
        ] {
            assert_eq!(RedirectUri::parse(ok).unwrap().as_str(), ok);
        }
        for bad in [
            "http://agent.example.com/callback",
            "http://10.0.0.1/cb",
            "https://agent.example.com/cb#frag",
            "https://user:pw@agent.example.com/cb",
            "/relative",
            "javascript:alert(1)",
            "com.example.app:/cb",
            "",
        ] {
            assert!(RedirectUri::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn pkce_s256_matches_the_rfc_7636_example() {
        // RFC 7636 appendix B.
        let verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
        let challenge = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM";
        assert!(CodeChallenge::parse(challenge).is_ok());
        assert!(pkce_matches(challenge, verifier));
        assert!(!pkce_matches(challenge, &verifier.replace('d', "e")));
        assert!(!pkce_matches(challenge, "short"));
        assert!(CodeChallenge::parse("short").is_err());
    }

    #[test]
    fn resources_must_name_this_server() {
        let base = "https://api.example.com";
        assert!(Resource::parse("https://api.example.com", base).is_ok());
        assert!(Resource::parse("https://api.example.com/mcp/buyer", base).is_ok());
        assert!(Resource::parse("https://api.example.com.evil.com/mcp", base).is_err());
        assert!(Resource::parse("https://other.example.com/mcp", base).is_err());
        assert!(Resource::parse("https://api.example.com/mcp#x", base).is_err());
    }
}
