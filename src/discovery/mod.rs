//! Product discovery from seller agents (AdCP over MCP). So far: the
//! client that asks one seller for products ([`seller`]); the discovery
//! session builds on it.

pub mod seller;

/// Starts this domain's handles: the seller client (one outbound worker and
/// the sellers' MCP sessions), fetched with `ctx.get::<SellerClient>()`.
pub fn register(handles: &mut crate::ops::context::Handles, config: &crate::config::Config) {
    match seller::SellerClient::start(config.url_policy(), seller::SellerOptions::default()) {
        Ok(client) => handles.insert(client),
        // Only thread creation can fail; discovery then answers 500.
        Err(e) => tracing::error!(error = %e, "cannot start the seller client"),
    }
}
