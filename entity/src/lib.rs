//! sea-orm entities. Plain data: logic lives in the server's domain modules.

pub mod account;
pub mod api_key;
pub mod phone_line;
pub mod storefront;
pub mod user;
