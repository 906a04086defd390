//! Webhooks: buyers register HTTPS endpoints for catalog events
//! ([`model::EVENT_TYPES`]). This module holds the subscriptions: the
//! validated registration ([`model`]), storage within the caller's account
//! ([`service`]), the secret at rest ([`secret`]) and the key it is sealed
//! with ([`at_rest`]), and the operations ([`operations`]); events recorded
//! in the transaction of what they report ([`events`], the module
//! `webhook_events`) and delivered
//! through the outbox, one lane per subscription ([`delivery`]).

pub mod at_rest;
pub mod delivery;
pub mod model;
pub mod operations;
pub mod secret;
pub mod service;

/// Recording events (below this module: notifications record them too).
pub use crate::webhook_events as events;

use crate::ops::{OperationDef, def};

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[
    &def::<operations::CreateWebhookSubscription>(),
    &def::<operations::ListWebhookSubscriptions>(),
    &def::<operations::DeleteWebhookSubscription>(),
    &def::<operations::ListWebhookDeliveries>(),
];

/// The webhook queue's handler (its own outbound client, whose timeout
/// is the delivery timeout); `None` when the client cannot start.
pub fn register(
    config: &crate::config::Config,
) -> Option<std::sync::Arc<dyn crate::outbox::Handler>> {
    let mut tuning = config.webhook_delivery.clone();
    if let Some(secs) = config.webhook_timeout {
        tuning.timeout = std::time::Duration::from_secs(secs);
    }
    if let Some(days) = config.webhook_log_retention_days {
        tuning.retention = std::time::Duration::from_secs(days * 24 * 3600);
    }
    let options = crate::net::OutboundOptions {
        request_timeout: tuning.timeout,
        connect_timeout: tuning.timeout.min(std::time::Duration::from_secs(5)),
        user_agent: format!("agentic-api-webhooks/{}", env!("CARGO_PKG_VERSION")),
        ..Default::default()
    };
    let outbound = match crate::net::Outbound::start(config.url_policy(), options) {
        Ok(o) => o,
        Err(e) => {
            tracing::error!(error = %e, "cannot start the webhook client; webhooks are not delivered");
            return None;
        }
    };
    let deliveries = delivery::Deliveries::new(outbound, config.webhook_secret_key.clone(), tuning);
    Some(std::sync::Arc::new(deliveries))
}
