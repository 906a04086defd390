//! Notifications: what changed for a user, without polling. Each topic is
//! written where its change happens, in the same transaction (or, with no
//! transaction, by the code that makes the change once), one row per
//! recipient numbered by the account's sequence; after the commit a
//! `notification.created` bus event per recipient reaches every
//! instance's stream of that user (persist first, then broadcast).
//!
//! - [`topics`]: the topics and their audiences, the channels;
//! - [`service`]: writing ([`notify`], [`Notices`]), listing, reading,
//!   acknowledging (conditional updates);
//! - [`preferences`]: each user's channels per topic and e-mail address;
//! - [`operations`]: the REST operations (and their MCP tools);
//! - [`inbox`]: the live stream on the shared SSE hub.

pub mod inbox;
pub mod model;
pub mod operations;
pub mod preferences;
pub mod service;
pub mod topics;

pub use service::{New, Notices, notify};

use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<operations::ListNotifications>(),
    &def::<operations::GetNotification>(),
    &def::<operations::AcknowledgeNotifications>(),
    &def::<operations::GetNotificationPreferences>(),
    &def::<operations::UpdateNotificationPreferences>(),
];

/// The inboxes' hub, for the stream route.
pub fn register(
    handles: &mut crate::ops::context::Handles,
    db: &sea_orm::DatabaseConnection,
    bus: &crate::bus::EventBus,
    config: &crate::config::Config,
    shutdown: &tokio_util::sync::CancellationToken,
) {
    handles.insert(inbox::Inboxes::new(
        db,
        bus,
        (&config.rooms).into(),
        shutdown.clone(),
    ));
}

/// Routes that are not operations: the event stream.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    inbox::configure(cfg);
}
