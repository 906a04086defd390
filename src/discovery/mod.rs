//! Product discovery from seller agents (AdCP over MCP). So far: the
//! registered storefronts ([`storefronts`]) and the client that asks one
//! seller for products ([`seller`]); the discovery session builds on both.

pub mod seller;
pub mod storefronts;

use crate::ops::{OperationDef, def};

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[&def::<storefronts::ListStorefronts>(
    &storefronts::__path_list_storefronts,
)];

/// Starts this domain's handles: the seller client (one outbound worker and
/// the sellers' MCP sessions), fetched with `ctx.get::<SellerClient>()`.
pub fn register(handles: &mut crate::ops::context::Handles, config: &crate::config::Config) {
    match seller::SellerClient::start(config.url_policy(), seller::SellerOptions::default()) {
        Ok(client) => handles.insert(client),
        // Only thread creation can fail; discovery then answers 500.
        Err(e) => tracing::error!(error = %e, "cannot start the seller client"),
    }
}
