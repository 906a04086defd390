//! Who the client is, for rate limits. Behind a load balancer the TCP peer is
//! the balancer; its forwarding headers are believed only when the peer is in
//! `AGENTIC_TRUSTED_PROXIES`, and then the client is the right-most address
//! that is not itself a trusted proxy (entries to its left are whatever the
//! client chose to send). `Forwarded` (RFC 7239) wins over `X-Forwarded-For`;
//! anything unparsable falls back to the peer.

use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use actix_web::http::header::{HeaderMap, HeaderName};

pub use crate::config::http::{TrustedProxies, parse_trusted, parse_trusted_proxies};

/// The client address behind `peer`, given the trusted proxies.
pub fn client_ip(trusted: &TrustedProxies, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
    let peer = peer.to_canonical();
    let is_trusted = |ip: &IpAddr| trusted.contains(ip);
    if !is_trusted(&peer) {
        return peer;
    }
    let hops = forwarded_hops(headers).or_else(|| x_forwarded_for_hops(headers));
    let Some(Some(hops)) = hops else {
        return peer;
    };
    for hop in hops.iter().rev() {
        match hop {
            Some(ip) if is_trusted(ip) => continue,
            Some(ip) => return *ip,
            // `unknown` or an obfuscated name: nothing to key on.
            None => return peer,
        }
    }
    // Every hop is a trusted proxy: the request began inside; the left-most
    // hop is its origin.
    hops.first().copied().flatten().unwrap_or(peer)
}

/// The rate-limit key of a client: IPv4 by address, IPv6 by its /64 (one
/// subscriber usually holds a whole /64, so per-address keys are free to vary).
pub fn bucket_key(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6(Ipv6Addr::from(u128::from(v6) & !(u64::MAX as u128))),
        v4 => v4,
    }
}

/// All values of a header as one comma-separated list (repeated headers
/// concatenate, RFC 9110 section 5.3); `None` if absent or not text.
fn joined(headers: &HeaderMap, name: &HeaderName) -> Option<Option<String>> {
    let mut values = headers.get_all(name).peekable();
    values.peek()?;
    Some(
        values
            .map(|v| v.to_str().ok())
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(",")),
    )
}

/// `None`: no `Forwarded` with a `for=`; `Some(None)`: malformed; else the
/// `for=` hops left to right (`None` for `unknown` and obfuscated names).
fn forwarded_hops(headers: &HeaderMap) -> Option<Option<Vec<Option<IpAddr>>>> {
    let value = match joined(headers, &actix_web::http::header::FORWARDED)? {
        Some(v) => v,
        None => return Some(None),
    };
    let mut hops = Vec::new();
    for element in rfc7239::parse(&value) {
        let Ok(element) = element else {
            return Some(None);
        };
        if let Some(node) = element.forwarded_for {
            hops.push(node.ip().map(|ip| ip.to_canonical()));
        }
    }
    if hops.is_empty() {
        None
    } else {
        Some(Some(hops))
    }
}

/// As [`forwarded_hops`], for `X-Forwarded-For: client, proxy1, proxy2`.
fn x_forwarded_for_hops(headers: &HeaderMap) -> Option<Option<Vec<Option<IpAddr>>>> {
    let name = HeaderName::from_static("x-forwarded-for");
    let value = match joined(headers, &name)? {
        Some(v) => v,
        None => return Some(None),
    };
    let hops = value
        .split(',')
        .map(|hop| {
            let hop = hop.trim();
            // Some balancers append the port (`203.0.113.7:41234`, `[2001:db8::1]:443`).
            hop.parse::<IpAddr>()
                .or_else(|_| hop.parse::<SocketAddr>().map(|s| s.ip()))
                .ok()
                .map(|ip| Some(ip.to_canonical()))
        })
        .collect::<Option<Vec<_>>>();
    Some(hops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bucket_keys_group_ipv6_by_64_and_keep_ipv4_whole() {
        let key = |s: &str| bucket_key(s.parse().unwrap_or(IpAddr::from([0, 0, 0, 0])));
        assert_eq!(key("2001:db8:1:2::a"), key("2001:db8:1:2:ffff::b"));
        assert_ne!(key("2001:db8:1:2::a"), key("2001:db8:1:3::a"));
        assert_ne!(key("192.0.2.1"), key("192.0.2.2"));
        assert_eq!(key("::ffff:192.0.2.1"), key("192.0.2.1"));
    }

    #[test]
    fn trusted_entries_are_cidrs_or_addresses() {
        assert!(parse_trusted(" 10.0.0.0/8").is_ok());
        assert!(parse_trusted("2001:db8::/32").is_ok());
        assert_eq!(parse_trusted("10.1.2.3").map(|n| n.prefix_len()), Ok(32));
        assert!(parse_trusted("10.0.0.0/33").is_err());
        assert!(parse_trusted("proxy.local").is_err());
        assert_eq!(parse_trusted_proxies(""), Ok(TrustedProxies::default()));
        assert_eq!(
            parse_trusted_proxies("10.0.0.0/8, ::1,").map(|t| t.0.len()),
            Ok(2)
        );
        assert!(parse_trusted_proxies("10.0.0.0/8,bad").is_err());
    }
}
