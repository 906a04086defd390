//! Product discovery from seller agents (AdCP over MCP). So far: the
//! registered storefronts ([`storefronts`]), the client that asks one
//! seller for products ([`seller`]), the directory that picks the seller for
//! a storefront ([`sellers`]) and the built-in demo sellers
//! ([`demo_sellers`]); the discovery session builds on them.

pub mod demo_sellers;
pub mod seller;
pub mod sellers;
pub mod storefronts;

use std::sync::Arc;

use crate::ops::{OperationDef, def};

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[&def::<storefronts::ListStorefronts>(
    &storefronts::__path_list_storefronts,
)];

/// Starts this domain's handles: the seller client (one outbound worker and
/// the sellers' MCP sessions), fetched with `ctx.get::<SellerClient>()`, and
/// the seller directory over it with the demo sellers, `ctx.get::<Sellers>()`.
/// The demo sellers are always there: only storefronts registered at their
/// reserved URLs (`serve --demo` does it) reach them.
pub fn register(handles: &mut crate::ops::context::Handles, config: &crate::config::Config) {
    match seller::SellerClient::start(config.url_policy(), seller::SellerOptions::default()) {
        Ok(client) => {
            handles.insert(sellers::Sellers::with_demo_sellers(
                Arc::new(client.clone()),
                config.demo_seller_delay_scale,
            ));
            handles.insert(client);
        }
        // Only thread creation can fail; discovery then answers 500.
        Err(e) => tracing::error!(error = %e, "cannot start the seller client"),
    }
}
