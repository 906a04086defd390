//! Validated domain types: parse once at the boundary, then trust.

mod email;
mod phone;
mod role;
mod url;

pub use email::Email;
pub use phone::E164;
pub use role::{Permission, Role};
pub use url::{OutboundUrl, UrlPolicy, is_public_ip};
