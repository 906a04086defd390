//! The auth domain's bus topics: credentials that stop being valid, on
//! every instance at once (auth caches drop them, open streams close).

use crate::bus::BusEvent;

pub const PREFIX: &str = "auth.";
/// One API key was revoked; key = its id.
pub const KEY_REVOKED: &str = "auth.key_revoked";
/// Every key of a user was revoked, or the user removed; key = user id.
pub const USER_REVOKED: &str = "auth.user_revoked";
/// A user's profile changed (cached callers refresh); key = user id.
pub const USER_CHANGED: &str = "auth.user_changed";

pub fn key_revoked(account_id: &str, key_id: i64) -> BusEvent {
    BusEvent::new(
        KEY_REVOKED,
        account_id,
        key_id.to_string(),
        serde_json::Value::Null,
    )
}

pub fn user_revoked(account_id: &str, user_id: i64) -> BusEvent {
    BusEvent::new(
        USER_REVOKED,
        account_id,
        user_id.to_string(),
        serde_json::Value::Null,
    )
}

pub fn user_changed(account_id: &str, user_id: i64) -> BusEvent {
    BusEvent::new(
        USER_CHANGED,
        account_id,
        user_id.to_string(),
        serde_json::Value::Null,
    )
}
