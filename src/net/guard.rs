//! The SSRF guard: a TCP connector for awc that decides which addresses may
//! be dialled. It resolves names itself (actix-tls would skip a custom
//! resolver for IP literals and pre-resolved addresses), drops every address
//! that is not public unless the policy allows insecure URLs, and refuses the
//! connection when none is left. Nothing is sent to a refused address.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::rc::Rc;

use actix_service::Service;
use actix_tls::connect::{
    ConnectError, ConnectInfo, Connection, ConnectorService, Resolver as TlsResolver,
};
use awc::http::Uri;
use futures_util::future::LocalBoxFuture;

use crate::types::{UrlPolicy, is_public_ip};

/// A refused connection: the host and the addresses that were not allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused {
    pub host: String,
    pub addrs: Vec<IpAddr>,
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let addrs: Vec<String> = self.addrs.iter().map(IpAddr::to_string).collect();
        write!(
            f,
            "refused to connect to '{}': not a public address ({})",
            self.host,
            addrs.join(", ")
        )
    }
}

impl std::error::Error for Refused {}

/// Name resolution used by the guard.
pub trait GuardedResolve {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, std::io::Result<Vec<SocketAddr>>>;
}

/// The operating system's resolver (getaddrinfo on a blocking thread).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

impl GuardedResolve for SystemResolver {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// awc's TCP connector with the guard in front of it.
#[derive(Clone)]
pub struct GuardedTcp {
    policy: UrlPolicy,
    resolver: Rc<dyn GuardedResolve>,
    tcp: ConnectorService,
}

impl GuardedTcp {
    pub fn new(policy: UrlPolicy, resolver: impl GuardedResolve + 'static) -> Self {
        GuardedTcp {
            policy,
            resolver: Rc::new(resolver),
            // Every request reaches it with its addresses set, so its own
            // resolver never runs.
            tcp: actix_tls::connect::Connector::new(TlsResolver::default()).service(),
        }
    }
}

/// The addresses a request would dial: pre-resolved ones, an IP literal, or
/// the resolver's answer.
async fn candidates(
    req: &ConnectInfo<Uri>,
    resolver: &dyn GuardedResolve,
) -> Result<Vec<SocketAddr>, ConnectError> {
    let given: Vec<SocketAddr> = req.addrs().collect();
    if !given.is_empty() {
        return Ok(given);
    }
    let host = req.hostname().trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, req.port())]);
    }
    let addrs = resolver
        .lookup(host, req.port())
        .await
        .map_err(|e| ConnectError::Resolver(Box::new(e)))?;
    if addrs.is_empty() {
        return Err(ConnectError::NoRecords);
    }
    Ok(addrs)
}

/// Keeps the addresses the policy allows; refuses when none is left.
pub fn allowed(
    host: &str,
    addrs: Vec<SocketAddr>,
    policy: UrlPolicy,
) -> Result<Vec<SocketAddr>, Refused> {
    if policy.allow_insecure {
        return Ok(addrs);
    }
    let (public, private): (Vec<SocketAddr>, Vec<SocketAddr>) =
        addrs.into_iter().partition(|a| is_public_ip(a.ip()));
    if public.is_empty() {
        return Err(Refused {
            host: host.to_string(),
            addrs: private.iter().map(SocketAddr::ip).collect(),
        });
    }
    if !private.is_empty() {
        tracing::debug!(host, ?private, "outbound: non-public addresses skipped");
    }
    Ok(public)
}

impl Service<ConnectInfo<Uri>> for GuardedTcp {
    type Response = Connection<Uri, actix_rt::net::TcpStream>;
    type Error = ConnectError;
    type Future = LocalBoxFuture<'static, Result<Self::Response, ConnectError>>;

    actix_service::always_ready!();

    fn call(&self, req: ConnectInfo<Uri>) -> Self::Future {
        let policy = self.policy;
        let resolver = Rc::clone(&self.resolver);
        let tcp = self.tcp.clone();
        Box::pin(async move {
            let addrs = candidates(&req, resolver.as_ref()).await?;
            let host = req.hostname().to_string();
            let addrs = allowed(&host, addrs, policy).map_err(|refused| {
                tracing::warn!(%refused, "outbound connection refused by the SSRF guard");
                ConnectError::Resolver(Box::new(refused))
            })?;
            tcp.call(req.set_addrs(addrs)).await
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn sa(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn private_and_metadata_addresses_are_refused() {
        let strict = UrlPolicy {
            allow_insecure: false,
        };
        for a in [
            "127.0.0.1:443",
            "10.1.2.3:443",
            "169.254.169.254:80",
            "192.168.0.1:443",
            "[::1]:443",
            "[fd00::1]:443",
            "[::ffff:127.0.0.1]:443",
            "[::127.0.0.1]:443",
            "[64:ff9b::a9fe:a9fe]:80",
            "[64:ff9b:1::a00:1]:443",
            "[2002:c0a8:101::1]:443",
            "[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443",
        ] {
            let err = allowed("h", vec![sa(a)], strict).unwrap_err();
            assert_eq!(err.addrs, vec![sa(a).ip()]);
        }
    }

    #[test]
    fn only_public_addresses_are_kept() {
        let strict = UrlPolicy {
            allow_insecure: false,
        };
        let kept = allowed("h", vec![sa("10.0.0.1:443"), sa("8.8.8.8:443")], strict).unwrap();
        assert_eq!(kept, vec![sa("8.8.8.8:443")]);
        // NAT64 and 6to4 addresses of a public IPv4 host are public.
        let nat64 = vec![sa("[64:ff9b::808:808]:443"), sa("[2002:808:808::1]:443")];
        assert_eq!(allowed("h", nat64.clone(), strict).unwrap(), nat64);
    }

    #[test]
    fn the_insecure_policy_allows_loopback() {
        let dev = UrlPolicy {
            allow_insecure: true,
        };
        assert_eq!(
            allowed("h", vec![sa("127.0.0.1:8080")], dev).unwrap(),
            vec![sa("127.0.0.1:8080")]
        );
    }
}
