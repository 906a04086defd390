//! Media buys: the money path from a discovery session to live buys at AdCP
//! sales agents and back.
//!
//! - [`cart`]: `create_media_buys` stages selections of a session's
//!   products or proposals as DRAFT buys of a campaign (one buy, one
//!   package per selection) with the budget check; [`resolve`] checks each
//!   selection against the session, [`package`] builds what the seller is
//!   sent (the campaign's effective targeting, the advertiser's frequency
//!   cap and utm parameters).
//! - [`dispatch`]: executing claims DRAFT buys with the pricing and credit
//!   checks, sends them to their sellers concurrently (AdCP
//!   `create_media_buy`, one idempotency key per buy, so no retry, crash or
//!   second instance makes a second buy), and records every answer.
//! - [`outcome`]: what a seller said, applied with a fence (never
//!   backwards), announced on the bus (`media_buy.status`) and to webhook
//!   subscribers; a campaign launches once its cart is settled.
//! - [`callbacks`]: sellers' signed push notifications; [`secrets`]: each
//!   storefront's callback secret.
//! - [`poller`]: the supervised refresh of non-terminal buys, under a lease
//!   per buy; [`delivery`]: the sellers' delivery reports it pulls.
//! - [`operations`]: the registry entries; [`status`]: the reads.

pub mod admin;
pub mod auto_select;
pub mod callbacks;
pub mod cart;
pub mod delivery;
pub mod delivery_rows;
pub mod dispatch;
pub mod events;
pub mod model;
pub mod operations;
pub mod outcome;
pub mod package;
pub mod poller;
pub mod resolve;
pub mod secrets;
pub mod status;
pub mod storefront;

pub use operations::OPERATIONS;

/// Routes that are not operations: the sellers' callbacks.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    callbacks::configure(cfg);
}

/// The time between two refreshes of one buy (`AGENTIC_MEDIA_BUY_POLL_SECONDS`).
pub fn poll_every(ctx: &crate::ops::Ctx) -> std::time::Duration {
    std::time::Duration::from_secs(ctx.config.media_buy_poll_seconds)
}

/// The time between two delivery pulls of one live buy
/// (`AGENTIC_MEDIA_BUY_DELIVERY_SECONDS`).
pub fn delivery_every(ctx: &crate::ops::Ctx) -> std::time::Duration {
    std::time::Duration::from_secs(ctx.config.media_buy_delivery_seconds)
}

/// Starts this domain's background work: the poller, ticking every second
/// (or every poll interval, when that is shorter).
pub fn start(ctx: &crate::ops::Ctx) {
    let tick = poll_every(ctx).min(std::time::Duration::from_secs(1));
    poller::start(ctx, tick);
}
