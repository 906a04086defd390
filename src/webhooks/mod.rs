//! Webhooks (issue 10): buyers register HTTPS endpoints for catalog events
//! ([`model::EVENT_TYPES`]). This module holds the subscriptions: the
//! validated registration ([`model`]), storage within the caller's account
//! ([`service`]), the secret at rest ([`secret`]) and the operations
//! ([`operations`]). Delivery comes later.

pub mod model;
pub mod operations;
pub mod secret;
pub mod service;

use crate::ops::{OperationDef, def};

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[
    &def::<operations::CreateWebhookSubscription>(&operations::__path_create_webhook_subscription),
    &def::<operations::ListWebhookSubscriptions>(&operations::__path_list_webhook_subscriptions),
    &def::<operations::DeleteWebhookSubscription>(&operations::__path_delete_webhook_subscription),
];
