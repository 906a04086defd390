//! Settings of the HTTP edge: the CORS origins (`AGENTIC_CORS_ORIGINS`) and
//! the trusted proxies (`AGENTIC_TRUSTED_PROXIES`), parsed once at start-up.
//! The middleware that uses them is in `crate::http`.

use std::net::IpAddr;

use ipnet::IpNet;

/// The origins allowed cross-origin access: exact, serialized origins
/// (`https://app.example.com`, `http://127.0.0.1:3000`). Empty means none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AllowedOrigins(Vec<String>);

impl AllowedOrigins {
    pub fn none() -> Self {
        AllowedOrigins(Vec::new())
    }

    /// Parses a comma-separated list; blank entries are ignored, so an empty
    /// value means no cross-origin access.
    pub fn parse(list: &str) -> Result<Self, String> {
        let mut origins: Vec<String> = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let origin = parse_origin(entry)?;
            if !origins.contains(&origin) {
                origins.push(origin);
            }
        }
        Ok(AllowedOrigins(origins))
    }

    pub fn as_slice(&self) -> &[String] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl std::str::FromStr for AllowedOrigins {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        AllowedOrigins::parse(s)
    }
}

/// One origin exactly as a browser sends it in `Origin`: scheme, host and a
/// non-default port; nothing else. Anything that could never match is refused.
fn parse_origin(entry: &str) -> Result<String, String> {
    let bad = |why: &str| {
        Err(format!(
            "invalid CORS origin '{entry}': {why} (expected e.g. https://app.example.com)"
        ))
    };
    if entry == "*" {
        return bad("wildcards are not supported; list each origin");
    }
    let Ok(url) = url::Url::parse(entry) else {
        return bad("not an absolute URL");
    };
    if url.scheme() != "https" && url.scheme() != "http" {
        return bad("the scheme must be http or https");
    }
    if url.host().is_none() {
        return bad("a host is required");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return bad("credentials are not part of an origin");
    }
    if url.query().is_some() || url.fragment().is_some() {
        return bad("a query or fragment is not part of an origin");
    }
    let origin = url.origin().ascii_serialization();
    if origin != entry {
        if url.path() != "/" || entry.ends_with('/') {
            return bad("a path (even '/') is not part of an origin");
        }
        return bad(&format!(
            "browsers send it as '{origin}' (lowercase, default port omitted)"
        ));
    }
    Ok(origin)
}

/// `AGENTIC_TRUSTED_PROXIES`: the networks whose forwarding headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(pub Vec<IpNet>);

impl TrustedProxies {
    pub fn contains(&self, ip: &IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(ip))
    }
}

/// A comma-separated list of CIDRs or addresses; empty means none.
pub fn parse_trusted_proxies(s: &str) -> Result<TrustedProxies, String> {
    s.split(',')
        .filter(|entry| !entry.trim().is_empty())
        .map(parse_trusted)
        .collect::<Result<_, _>>()
        .map(TrustedProxies)
}

/// One entry: a CIDR (`10.0.0.0/8`, `2001:db8::/32`) or a single address.
pub fn parse_trusted(s: &str) -> Result<IpNet, String> {
    let s = s.trim();
    s.parse::<IpNet>()
        .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("`{s}` is neither a CIDR nor an IP address"))
}
