//! This domain's bus topics. Every event's key is the conversation uid
//! (`conversation.changed`: the account's lists changed, keyed by account).

use serde_json::json;

use crate::bus::BusEvent;

/// All of this domain's topics start with this.
pub const PREFIX: &str = "conversation.";
/// A message was committed: payload `{sequence}`, bulk = the ready-made
/// `message.created` data when it fits.
pub const MESSAGE: &str = "conversation.message";
/// Presence rows of the conversation changed on some instance.
pub const PRESENCE: &str = "conversation.presence";
/// Who may read the conversation changed: `{ownerUserId, sharingEnabled}`.
pub const ACCESS: &str = "conversation.access";
/// Part of an assistant answer being produced: payload = the
/// `message.delta` event's data. Not persisted: the answer's message is.
pub const DELTA: &str = "conversation.delta";
/// An assistant run changed status: payload = the `run.updated` data.
pub const RUN: &str = "conversation.run";
/// A conversation of the account was created or renamed.
pub const CHANGED: &str = "conversation.changed";

pub fn message(account_id: &str, uid: &str, sequence: i64, data: String) -> BusEvent {
    BusEvent::new(MESSAGE, account_id, uid, json!({ "sequence": sequence })).with_bulk(data)
}

pub fn presence(account_id: &str, uid: &str) -> BusEvent {
    BusEvent::new(PRESENCE, account_id, uid, serde_json::Value::Null)
}

pub fn access(account_id: &str, uid: &str, owner_user_id: i64, sharing_enabled: bool) -> BusEvent {
    BusEvent::new(
        ACCESS,
        account_id,
        uid,
        json!({ "ownerUserId": owner_user_id, "sharingEnabled": sharing_enabled }),
    )
}

pub fn changed(account_id: &str) -> BusEvent {
    BusEvent::new(CHANGED, account_id, account_id, serde_json::Value::Null)
}

/// `message.delta`: `{conversationUid, runId, index, delta}`.
pub fn delta(account_id: &str, uid: &str, run_id: &str, index: u64, delta: &str) -> BusEvent {
    BusEvent::new(
        DELTA,
        account_id,
        uid,
        json!({ "conversationUid": uid, "runId": run_id, "index": index, "delta": delta }),
    )
}

/// `run.updated`: `{conversationUid, run}`.
pub fn run(account_id: &str, uid: &str, run: serde_json::Value) -> BusEvent {
    BusEvent::new(
        RUN,
        account_id,
        uid,
        json!({ "conversationUid": uid, "run": run }),
    )
}
