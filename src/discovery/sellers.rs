//! Which [`Seller`] answers for a storefront: a built-in one registered at
//! its URL (the demo sellers), otherwise the default MCP client.
//!
//! ```ignore
//! let seller = ctx.get::<Sellers>()?.for_storefront(&target);
//! let answer = seller.get_products(&target, &query).await?;
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use futures_util::future::BoxFuture;

use super::demo_sellers::{DEMO_HOST, DemoSeller};
use super::seller::{ProductQuery, Seller, SellerAnswer, SellerError, StorefrontTarget};

/// The seller directory. Cheap to clone (two reference counts); `Send +
/// Sync`, registered as a handle by [`super::register`].
#[derive(Clone)]
pub struct Sellers {
    default: Arc<dyn Seller>,
    built_in: Arc<HashMap<String, Arc<dyn Seller>>>,
}

impl fmt::Debug for Sellers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut urls: Vec<&String> = self.built_in.keys().collect();
        urls.sort();
        f.debug_struct("Sellers").field("built_in", &urls).finish()
    }
}

impl Sellers {
    /// Every storefront goes to `default` (the MCP client in production).
    pub fn new(default: Arc<dyn Seller>) -> Self {
        Sellers {
            default,
            built_in: Arc::new(HashMap::new()),
        }
    }

    /// `default`, plus the built-in demo sellers at their reserved URLs;
    /// `delay_scale` multiplies their answer delays (0 in tests).
    pub fn with_demo_sellers(default: Arc<dyn Seller>, delay_scale: f64) -> Self {
        DemoSeller::all(delay_scale)
            .into_iter()
            .fold(Sellers::new(default), |sellers, s| {
                let url = s.storefront().url();
                sellers.with(&url, Arc::new(s))
            })
    }

    /// Adds a built-in seller answering for the storefront at `url`. A URL
    /// that does not parse is ignored (built-in URLs are constants).
    pub fn with(mut self, url: &str, seller: Arc<dyn Seller>) -> Self {
        match url::Url::parse(url) {
            Ok(u) => {
                Arc::make_mut(&mut self.built_in).insert(key(&u), seller);
            }
            Err(e) => tracing::error!(url, error = %e, "built-in seller URL does not parse"),
        }
        self
    }

    /// The seller to ask for this storefront.
    pub fn for_storefront(&self, storefront: &StorefrontTarget) -> Arc<dyn Seller> {
        let url = storefront.url.url();
        if let Some(s) = self.built_in.get(&key(url)) {
            return Arc::clone(s);
        }
        // Nothing can answer on the reserved host: say so at once rather
        // than send a DNS query for a name that never resolves.
        if url.host_str() == Some(DEMO_HOST) {
            return Arc::new(NoBuiltIn);
        }
        Arc::clone(&self.default)
    }

    /// Whether a built-in seller answers at this URL.
    pub fn is_built_in(&self, storefront: &StorefrontTarget) -> bool {
        self.built_in.contains_key(&key(storefront.url.url()))
    }
}

/// Scheme, host, port and path, without a trailing `/` (`/mcp/` is `/mcp`,
/// as on MCP servers), query or fragment. The `url` crate has already
/// lower-cased the host.
fn key(url: &url::Url) -> String {
    let mut u = url.clone();
    u.set_query(None);
    u.set_fragment(None);
    u.as_str().trim_end_matches('/').to_string()
}

/// A reserved-host URL with no built-in seller behind it (a slug that was
/// renamed or mistyped).
struct NoBuiltIn;

impl Seller for NoBuiltIn {
    fn get_products<'a>(
        &'a self,
        storefront: &'a StorefrontTarget,
        _query: &'a ProductQuery,
    ) -> BoxFuture<'a, Result<SellerAnswer, SellerError>> {
        Box::pin(async move {
            Err(SellerError::Unreachable(format!(
                "no built-in seller answers at {} (the {DEMO_HOST} host is reserved for them)",
                storefront.url
            )))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::discovery::demo_sellers::STOREFRONTS;
    use crate::discovery::seller::{BuyingMode, ProductFilters};
    use crate::types::{OutboundUrl, UrlPolicy};

    /// Answers with one message naming itself.
    struct Named(&'static str);

    impl Seller for Named {
        fn get_products<'a>(
            &'a self,
            _storefront: &'a StorefrontTarget,
            _query: &'a ProductQuery,
        ) -> BoxFuture<'a, Result<SellerAnswer, SellerError>> {
            Box::pin(async move {
                Ok(SellerAnswer {
                    products: vec![],
                    dropped: vec![],
                    message: Some(self.0.into()),
                    incomplete_scopes: vec![],
                    proposals: vec![],
                })
            })
        }
    }

    fn target(url: &str) -> StorefrontTarget {
        StorefrontTarget {
            id: 7,
            name: "x".into(),
            url: OutboundUrl::parse(
                url,
                UrlPolicy {
                    allow_insecure: false,
                },
            )
            .unwrap(),
            auth_token: None,
        }
    }

    fn wholesale() -> ProductQuery {
        ProductQuery {
            mode: BuyingMode::Wholesale,
            brand: None,
            filters: ProductFilters::default(),
        }
    }

    #[test]
    fn built_in_urls_route_to_their_seller_and_others_to_the_default() {
        let default: Arc<dyn Seller> = Arc::new(Named("default"));
        let special: Arc<dyn Seller> = Arc::new(Named("special"));
        let sellers = Sellers::new(Arc::clone(&default))
            .with("https://sp.example.com/mcp", Arc::clone(&special));
        for url in [
            "https://sp.example.com/mcp",
            "https://SP.example.com/mcp/",
            "https://sp.example.com/mcp?x=1",
        ] {
            assert!(
                Arc::ptr_eq(&sellers.for_storefront(&target(url)), &special),
                "{url}"
            );
        }
        for url in [
            "https://sp.example.com/other",
            "https://sp.example.com:8443/mcp",
            "https://seller.example.com/mcp",
        ] {
            assert!(
                Arc::ptr_eq(&sellers.for_storefront(&target(url)), &default),
                "{url}"
            );
        }
        // Clones share the directory.
        let clone = sellers.clone();
        assert!(clone.is_built_in(&target("https://sp.example.com/mcp")));
        assert!(!clone.is_built_in(&target("https://seller.example.com/mcp")));
    }

    #[tokio::test]
    async fn demo_storefronts_reach_the_demo_sellers() {
        let default: Arc<dyn Seller> = Arc::new(Named("default"));
        let sellers = Sellers::with_demo_sellers(Arc::clone(&default), 0.0);
        for s in STOREFRONTS {
            let t = target(&s.url());
            assert!(sellers.is_built_in(&t), "{}", s.name);
            let answer = sellers
                .for_storefront(&t)
                .get_products(&t, &wholesale())
                .await
                .unwrap();
            assert!(!answer.products.is_empty(), "{}", s.name);
        }
        let other = target("https://seller.example.com/mcp");
        let answer = sellers
            .for_storefront(&other)
            .get_products(&other, &wholesale())
            .await
            .unwrap();
        assert_eq!(answer.message.as_deref(), Some("default"));

        // The reserved host never reaches the default client.
        let unknown = target(&format!("https://{DEMO_HOST}/renamed/mcp"));
        let err = sellers
            .for_storefront(&unknown)
            .get_products(&unknown, &wholesale())
            .await
            .unwrap_err();
        assert_eq!(err.code(), "SELLER_UNREACHABLE");
    }

    #[test]
    fn the_directory_is_send_sync_and_clone() {
        fn check<T: Send + Sync + Clone + 'static>() {}
        check::<Sellers>();
    }
}
