//! The AdCP package a media buy sends: product, price and budget, the
//! campaign's effective targeting as the overlay, the advertiser's
//! frequency cap and utm parameters.

use serde_json::{Map, Value, json};

use entity::{advertiser, campaign};

use super::resolve::Resolved;
use crate::buyer::advertisers::model::FrequencyCap;
use crate::buyer::campaigns::model::Budget;
use crate::buyer::campaigns::service as campaigns;

/// The AdCP package a buy sends: its product, price and budget, the
/// campaign's effective targeting and the advertiser's first frequency cap
/// as the overlay, and the advertiser's utm parameters with this buy's
/// macros resolved (`{CREATIVE_ID}` stays for the creative).
pub fn package(
    media_buy_id: &str,
    campaign: &campaign::Model,
    advertiser: &advertiser::Model,
    r: &Resolved,
    budget: &Budget,
) -> Value {
    let package_id = package_id(media_buy_id);
    let mut p = Map::new();
    if let Some(id) = &r.product_id {
        p.insert("product_id".into(), json!(id));
    }
    if let Some(id) = &r.pricing_option_id {
        p.insert("pricing_option_id".into(), json!(id));
    }
    p.insert("budget".into(), json!(r.budget));
    if let Some(b) = r.bid_price {
        p.insert("bid_price".into(), json!(b));
    }
    p.insert("pacing".into(), json!(budget.pacing));
    let mut overlay = targeting_overlay(campaign);
    let caps: Vec<FrequencyCap> = crate::buyer::from_json(&advertiser.frequency_caps);
    if let Some(cap) = caps.first().and_then(frequency_cap) {
        overlay.insert("frequency_cap".into(), cap);
    }
    if !overlay.is_empty() {
        p.insert("targeting_overlay".into(), Value::Object(overlay));
    }
    p.insert(
        "context".into(),
        json!({"package_id": package_id, "media_buy_id": media_buy_id}),
    );
    let utm = crate::buyer::utm::effective(&advertiser.utm_config, campaign.utm_config.as_deref());
    let ids = crate::buyer::utm::Ids {
        campaign_id: Some(&campaign.id),
        media_buy_id: Some(media_buy_id),
        package_id: Some(&package_id),
        creative_id: None,
    };
    let utm: Map<String, Value> = crate::buyer::utm::resolve(&utm, ids)
        .into_iter()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let mut platform = Map::new();
    platform.insert("utm_parameters".into(), Value::Object(utm));
    if !r.placement_ids.is_empty() {
        platform.insert("placement_ids".into(), json!(r.placement_ids));
    }
    if caps.len() > 1 {
        platform.insert(
            "frequency_caps".into(),
            serde_json::to_value(&caps).unwrap_or(Value::Null),
        );
    }
    p.insert("ext".into(), json!({ "platform": platform }));
    Value::Object(p)
}

/// Our package id of a buy (one package per buy), for `{PACKAGE_ID}`.
pub fn package_id(media_buy_id: &str) -> String {
    format!("pkg_{}", media_buy_id.trim_start_matches("mb_"))
}

/// The AdCP targeting overlay's keys, from the campaign's effective
/// targeting (the same names).
const OVERLAY_KEYS: &[&str] = &[
    "geo_countries",
    "geo_countries_exclude",
    "geo_regions",
    "geo_regions_exclude",
    "geo_metros",
    "geo_metros_exclude",
    "geo_postal_areas",
    "geo_postal_areas_exclude",
    "language",
    "device_type",
    "device_type_exclude",
    "device_platform",
];

fn targeting_overlay(campaign: &campaign::Model) -> Map<String, Value> {
    let effective = campaigns::out(campaign.clone(), false).effective_targeting;
    let mut out = Map::new();
    if let Value::Object(m) = effective {
        for (k, v) in m {
            if OVERLAY_KEYS.contains(&k.as_str()) && !v.is_null() {
                out.insert(k, v);
            }
        }
    }
    out
}

/// An advertiser cap in AdCP's form (weeks and months in days).
fn frequency_cap(cap: &FrequencyCap) -> Option<Value> {
    let (interval, unit) = match cap.window.unit.as_str() {
        "minutes" | "hours" | "days" => (cap.window.interval, cap.window.unit.as_str()),
        "weeks" => (cap.window.interval * 7, "days"),
        "months" => (cap.window.interval * 30, "days"),
        _ => return None,
    };
    Some(json!({
        "max_impressions": cap.max_exposure,
        "per": "individuals",
        "window": {"interval": interval, "unit": unit},
    }))
}
