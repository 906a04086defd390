use std::fmt;
use std::net::IpAddr;

/// Whether plain `http://` and loopback/private hosts are allowed
/// (`AGENTIC_ALLOW_INSECURE_URLS`, for local development and tests only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlPolicy {
    pub allow_insecure: bool,
}

/// A URL the server may call out to: HTTPS to a public host, no embedded
/// credentials. The host is checked again at connect time by the callers
/// that resolve names (SSRF guard).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutboundUrl(url::Url);

impl OutboundUrl {
    pub fn parse(s: &str, policy: UrlPolicy) -> Result<Self, String> {
        let url = url::Url::parse(s.trim()).map_err(|e| format!("invalid URL '{s}': {e}"))?;
        match url.scheme() {
            "https" => {}
            "http" if policy.allow_insecure => {}
            _ => return Err(format!("URL '{s}' must use https")),
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!("URL '{s}' must not embed credentials"));
        }
        let host = url.host().ok_or_else(|| format!("URL '{s}' has no host"))?;
        if !policy.allow_insecure {
            let public = match host {
                url::Host::Ipv4(ip) => is_public_ip(IpAddr::V4(ip)),
                url::Host::Ipv6(ip) => is_public_ip(IpAddr::V6(ip)),
                url::Host::Domain(d) => {
                    let d = d.trim_end_matches('.').to_ascii_lowercase();
                    d.contains('.')
                        && !d.ends_with(".localhost")
                        && !d.ends_with(".local")
                        && !d.ends_with(".internal")
                }
            };
            if !public {
                return Err(format!("URL '{s}' must point to a public host"));
            }
        }
        Ok(OutboundUrl(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    pub fn url(&self) -> &url::Url {
        &self.0
    }
}

impl fmt::Display for OutboundUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.as_str())
    }
}

/// False for loopback, private, link-local, CGNAT, multicast, unspecified and
/// documentation ranges: addresses an outbound call must never reach.
pub fn is_public_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            !(v4.is_private()
                || v4.is_loopback()
                || v4.is_link_local()
                || v4.is_broadcast()
                || v4.is_documentation()
                || v4.is_unspecified()
                || v4.is_multicast()
                || o[0] == 0
                || (o[0] == 100 && (64..128).contains(&o[1]))
                || (o[0] == 198 && (o[1] == 18 || o[1] == 19))
                || o[0] >= 240)
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public_ip(IpAddr::V4(v4));
            }
            let seg0 = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (seg0 & 0xfe00) == 0xfc00
                || (seg0 & 0xffc0) == 0xfe80
                || seg0 == 0x2001 && v6.segments()[1] == 0x0db8)
        }
    }
}
