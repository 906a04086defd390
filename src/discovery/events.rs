//! Discovery's bus topics. A revision is persisted first, then announced;
//! receivers read what they need from the database (revisions can be large).

use serde_json::json;

use crate::bus::BusEvent;

pub const PREFIX: &str = "discovery.";
/// A session published a revision. Key: the discovery id.
pub const REVISION: &str = "discovery.revision";

pub fn revision(account_id: &str, id: &str, revision: i64, complete: bool) -> BusEvent {
    BusEvent::new(
        REVISION,
        account_id,
        id,
        json!({ "revision": revision, "resultsComplete": complete }),
    )
}
