//! Product discovery from seller agents (AdCP over MCP): the registered
//! storefronts ([`storefronts`]), the client that asks one seller
//! ([`seller`]), which seller answers a storefront ([`sellers`]; built-in
//! demo sellers in [`demo_sellers`]), and
//! discovery sessions: one actor per session ([`session`]) that asks every
//! storefront concurrently and persists each answer as the next revision
//! ([`service`]) before broadcasting it to SSE subscribers ([`routes`]) and
//! other instances (the bus, [`events`]).

pub mod agent_view;
pub mod demo_accounts;
pub mod demo_buys;
pub mod demo_sellers;
pub mod events;
pub mod model;
pub mod operations;
pub mod routes;
pub mod selection;
pub mod seller;
pub mod sellers;
pub mod service;
pub mod session;
pub mod storefronts;

use std::sync::Arc;

use crate::ops::{OperationDef, def};

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[
    &def::<storefronts::ListStorefronts>(),
    &def::<operations::DiscoverProducts>(),
    &def::<operations::BrowseDiscovery>(),
    &def::<selection::ListDiscoveryProducts>(),
    &def::<selection::AddDiscoveryProducts>(),
    &def::<selection::RemoveDiscoveryProducts>(),
    &def::<selection::SaveDiscoveryProposal>(),
    &def::<agent_view::GetProducts>(),
];

/// Starts this domain's handles: the seller client (one outbound worker and
/// the sellers' MCP sessions), the seller directory and the sessions,
/// fetched with `ctx.get::<T>()`.
pub fn register(
    handles: &mut crate::ops::context::Handles,
    db: &sea_orm::DatabaseConnection,
    writes: &crate::db::WriteGate,
    bus: &crate::bus::EventBus,
    config: &crate::config::Config,
    shutdown: &tokio_util::sync::CancellationToken,
) {
    let mut tuning = config.discovery.clone();
    if let Some(secs) = config.lease_seconds {
        (tuning.lease, tuning.sweep) = crate::config::lease_and_sweep(secs, tuning.sweep);
    }
    if let Some(secs) = config.discovery_timeout {
        tuning.storefront_timeout = std::time::Duration::from_secs(secs);
    }
    // One bound for a seller's call, the handshake included.
    let options = seller::SellerOptions {
        call_timeout: tuning.storefront_timeout,
        ..seller::SellerOptions::default()
    };
    let client = match seller::SellerClient::start(config.url_policy(), options) {
        Ok(client) => client,
        // Only thread creation can fail; discovery then answers 500.
        Err(e) => {
            tracing::error!(error = %e, "cannot start the seller client");
            return;
        }
    };
    let sellers = sellers::Sellers::with_demo_sellers(
        Arc::new(client.clone()),
        config.demo_seller_delay_scale,
    );
    let sessions = session::Sessions::new(
        db.clone(),
        writes.clone(),
        bus.clone(),
        tuning,
        sellers.clone(),
        shutdown.clone(),
    );
    handles.insert(client);
    handles.insert(sellers);
    handles.insert(sessions);
}

/// Routes that are not operations: the event stream.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    routes::configure(cfg);
}
