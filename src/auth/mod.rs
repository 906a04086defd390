//! Tenancy and credentials: accounts, users, API keys, the OAuth
//! authorization server, and the cached bearer-token lookup behind the
//! `Caller` extractor.

pub mod events;
pub mod keys;
pub mod oauth;
pub mod operations;
pub mod service;
pub mod stream_tokens;
pub mod tenancy;

pub use crate::caller::{AccountInfo, CallerInfo, UserInfo};
pub use service::AuthService;
