//! Shared assistant conversations: rooms with a gap-free message sequence,
//! SSE streams with resume and presence, and the account's sharing default.

pub mod events;
pub mod list_cache;
pub mod model;
pub mod operations;
pub mod presence;
pub mod room;
pub mod routes;
pub mod service;
pub mod stream;

pub use operations::OPERATIONS;
pub use room::Rooms;

use crate::error::ApiError;
use crate::ops::Ctx;

/// This instance's rooms, as registered at start.
pub fn rooms_handle(ctx: &Ctx) -> Result<&Rooms, ApiError> {
    ctx.get::<Rooms>()
}

/// Starts this domain's handles: the rooms and the list cache, both bus sinks.
pub fn register(
    handles: &mut crate::ops::context::Handles,
    db: &sea_orm::DatabaseConnection,
    bus: &crate::bus::EventBus,
    config: &crate::config::Config,
    shutdown: &tokio_util::sync::CancellationToken,
) {
    let rooms = Rooms::new(
        db.clone(),
        bus.clone(),
        config.rooms.clone(),
        shutdown.clone(),
    );
    let lists = list_cache::ListCache::new(config.rooms.presence_ttl(), bus.is_distributed());
    let sink: std::sync::Arc<dyn crate::bus::BusSink> = lists.clone();
    bus.subscribe(events::PREFIX, std::sync::Arc::downgrade(&sink));
    handles.insert(rooms);
    handles.insert(lists);
}

/// Routes that are not operations: the event stream.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    routes::configure(cfg);
}
