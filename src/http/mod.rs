//! HTTP plumbing shared by every domain: envelope, extractors, middleware.

pub mod auth;
pub mod client_ip;
pub mod cors;
pub mod envelope;
pub mod fallback;
pub mod json;
pub mod middleware;
pub mod operations;
pub mod query;
pub mod rate_limit;
pub mod state;

pub use auth::{Caller, StreamCaller};
pub use envelope::{ErrorEnvelope, ListMeta, PaginationMeta};
pub use query::ApiQuery;
pub use state::AppState;
