use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

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
/// documentation ranges: addresses an outbound call must never reach. An
/// IPv6 address that carries an IPv4 one (mapped, compatible, NAT64, 6to4)
/// is judged by the IPv4 address, since that is where the packet ends up.
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
        IpAddr::V6(v6) => match carried_ipv4(v6) {
            Carried::V4(v4) => is_public_ip(IpAddr::V4(v4)),
            Carried::Unknown => false,
            Carried::None => {
                let [seg0, seg1, ..] = v6.segments();
                !(v6.is_multicast()
                    || (seg0 & 0xfe00) == 0xfc00
                    || (seg0 & 0xffc0) == 0xfe80
                    || (seg0 == 0x2001 && seg1 == 0x0db8))
            }
        },
    }
}

/// What an IPv6 address says about an IPv4 destination.
enum Carried {
    /// A native IPv6 address.
    None,
    /// Traffic to it reaches this IPv4 address.
    V4(Ipv4Addr),
    /// It tunnels to an IPv4 address that cannot be judged from the
    /// address alone.
    Unknown,
}

fn carried_ipv4(v6: Ipv6Addr) -> Carried {
    let bits = u128::from(v6);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    let seg = v6.segments();
    match seg {
        // `::ffff:a.b.c.d` (mapped), `::ffff:0:a.b.c.d` (SIIT, RFC 6145) and
        // `::a.b.c.d` (IPv4-compatible, deprecated; `::` and `::1` fall here
        // as 0.0.0.0 and 0.0.0.1, both refused).
        [0, 0, 0, 0, 0, 0 | 0xffff, _, _] | [0, 0, 0, 0, 0xffff, 0, _, _] => Carried::V4(low32),
        // NAT64's well-known prefix (RFC 6052): the last 32 bits.
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Carried::V4(low32),
        // NAT64's local-use prefix (RFC 8215): the operator picks the
        // prefix length, so where the IPv4 address sits is unknown.
        [0x64, 0xff9b, 1, ..] => Carried::Unknown,
        // 6to4 (RFC 3056): the relay's IPv4 address in bits 16..48.
        [0x2002, hi, lo, ..] => Carried::V4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))),
        // Teredo (RFC 4380): the server's address is in clear, the client's
        // obfuscated, and the relay is whoever answers; refused outright.
        [0x2001, 0, ..] => Carried::Unknown,
        _ => Carried::None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn public(s: &str) -> bool {
        is_public_ip(s.parse().unwrap())
    }

    #[test]
    fn ipv6_addresses_carrying_ipv4_are_judged_by_the_ipv4_address() {
        for private in [
            "::1",
            "::",
            "::127.0.0.1",
            "::10.0.0.1",
            "::ffff:169.254.169.254",
            "::ffff:0:127.0.0.1",
            "64:ff9b::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "64:ff9b::192.168.1.1",
            "2002:7f00:1::",
            "2002:a9fe:a9fe::1",
            "2002:c0a8:101:1::1",
            "64:ff9b:1::8.8.8.8",
            "64:ff9b:1:808:8:800::",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001::1",
        ] {
            assert!(!public(private), "{private} must be refused");
        }
        for ok in [
            "::8.8.8.8",
            "::ffff:8.8.8.8",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
        ] {
            assert!(public(ok), "{ok} is public");
        }
    }
}
