//! The one SSE machinery behind every live stream (conversation rooms,
//! discovery sessions):
//! - [`actor`]: the stream actor, one per live resource: members, the
//!   keep-alive tick, maximum duration, credential revocation and expiry,
//!   the re-check, failure and idle stop; a [`Domain`] adds what the
//!   stream carries;
//! - [`hub`]: this instance's actors of one kind: join, leave, the bus
//!   sink, shutdown;
//! - [`frame`]: each event is encoded once into an SSE frame, shared by
//!   every subscriber;
//! - [`fanout`]: a live actor's subscribers, each with a bounded buffer
//!   filled only with `try_send`, cut off with `SLOW_CONSUMER` when full;
//! - [`registry`]: the live actors of one kind on this instance, by key;
//! - [`body`]: one subscriber's response body: prologue, resume replay
//!   paged by rows and bytes, then live frames de-duplicated by id, ending
//!   with the `error` frame that closed it;
//! - [`StreamError`]: why a stream was closed.
//!
//! Keep-alives, the maximum duration and shutdown are enforced by the
//! owning actor on its tick (credential expiry by one timer per actor, set
//! to the earliest), not by a timer per connection, which keeps an idle
//! stream small.

pub mod actor;
pub mod body;
pub mod fanout;
pub mod frame;
pub mod hub;
pub mod registry;
pub mod resume;

use serde::Serialize;

pub(crate) use actor::tuning_from;
pub use actor::{Ctx, Domain, Fail, Member, StreamActor, Tuning};
pub use body::{ReplayPage, ReplaySource, response};
pub use fanout::{Item, Subscribers, Subscription};
pub use frame::Frame;
pub use hub::Hub;
pub use registry::Registry;
pub use resume::Resume;

/// Why a stream was closed: sent to the client as the `error` event.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StreamError {
    pub code: &'static str,
    pub message: String,
    pub status: u16,
}

impl StreamError {
    pub fn slow_consumer() -> Self {
        StreamError {
            code: "SLOW_CONSUMER",
            message: "the stream fell too far behind; reconnect with Last-Event-ID or after set to the last sequence received".into(),
            status: 503,
        }
    }

    pub fn database_unavailable() -> Self {
        StreamError {
            code: "SERVICE_UNAVAILABLE",
            message: "the database is unreachable; reconnect from the last sequence received"
                .into(),
            status: 503,
        }
    }

    pub fn shutting_down() -> Self {
        StreamError {
            code: "SERVICE_UNAVAILABLE",
            message: "the server is shutting down; reconnect from the last sequence received"
                .into(),
            status: 503,
        }
    }

    pub fn max_duration() -> Self {
        StreamError {
            code: "STREAM_MAX_DURATION",
            message:
                "the stream reached its maximum duration; reconnect from the last sequence received"
                    .into(),
            status: 503,
        }
    }

    pub fn revoked() -> Self {
        StreamError {
            code: "UNAUTHORIZED",
            message: "the credential of this stream was revoked".into(),
            status: 401,
        }
    }

    /// The OAuth access token that opened the stream expired: the client
    /// reconnects with a fresh one.
    pub fn credential_expired() -> Self {
        StreamError {
            code: "UNAUTHORIZED",
            message: "the access token of this stream expired; reconnect with a fresh token".into(),
            status: 401,
        }
    }

    pub fn not_found(what: &str) -> Self {
        StreamError {
            code: "NOT_FOUND",
            message: format!("{what} not found"),
            status: 404,
        }
    }

    /// The `error` frame.
    pub fn frame(&self) -> Frame {
        let data = serde_json::to_string(self).unwrap_or_else(|_| "{}".into());
        Frame::event("error", None, &data)
    }
}
