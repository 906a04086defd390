//! What a media buy's status change announces: the bus topic
//! `media_buy.status` (key: the media buy id) and the webhook event of the
//! same name to the subscriptions captured when the campaign's cart began.

use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Map, Value, json};

use entity::media_buy;

use crate::bus::BusEvent;

pub const PREFIX: &str = "media_buy.";
/// A media buy's status changed. Key: the media buy id.
pub const STATUS: &str = "media_buy.status";
/// The webhook event type (in the catalog, `webhooks::model::EVENT_TYPES`).
pub const WEBHOOK_EVENT: &str = "media_buy.status";

/// The webhook audience's scope: a campaign's buys.
pub fn webhook_scope(campaign_id: &str) -> String {
    format!("campaign:{campaign_id}")
}

/// The payload of the bus event and the webhook: the buy's status and
/// where it came from.
pub fn payload(b: &media_buy::Model) -> Map<String, Value> {
    let at = |t: DateTime<Utc>| t.to_rfc3339_opts(SecondsFormat::Millis, true);
    let Value::Object(m) = json!({
        "mediaBuyId": b.id,
        "campaignId": b.campaign_id,
        "advertiserId": b.advertiser_id,
        "storefrontId": b.storefront_id,
        "adcpMediaBuyId": b.adcp_media_buy_id,
        "internalStatus": b.status,
        "adcpStatus": b.adcp_status,
        "previousInternalStatus": b.previous_status,
        "previousAdcpStatus": b.previous_adcp_status,
        "statusChangedAt": at(b.status_changed_at),
    }) else {
        return Map::new();
    };
    m
}

pub fn status(b: &media_buy::Model) -> BusEvent {
    BusEvent::new(STATUS, &b.account_id, &b.id, Value::Object(payload(b)))
}
