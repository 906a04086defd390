//! Shared assistant conversations: rooms with a gap-free message sequence,
//! SSE streams with resume and presence, and the account's sharing default.

pub mod list_cache;
pub mod model;
pub mod presence;
pub mod room;
pub mod routes;
pub mod service;
pub mod settings;
pub mod stream;

pub use room::Rooms;

pub fn configure(cfg: &mut utoipa_actix_web::service_config::ServiceConfig) {
    routes::configure(cfg);
    settings::configure(cfg);
}
