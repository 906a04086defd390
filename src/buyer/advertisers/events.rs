//! What an advertiser's change announces on the bus: `advertiser.changed`
//! (key: the advertiser id), after its commit. Caches of what depends on
//! an advertiser's fields (reports date days in its time zone) listen.

use crate::bus::BusEvent;

pub const CHANGED: &str = "advertiser.changed";

pub fn changed(account_id: &str, advertiser_id: &str) -> BusEvent {
    BusEvent::new(CHANGED, account_id, advertiser_id, serde_json::Value::Null)
}
