//! Vocabularies the derive cannot express, added to the OpenAPI document:
//! channels, device types and platforms, countries and languages as enums,
//! regions and metro codes as patterns (the region list is too long to
//! inline), so generated clients and fuzzers send what the server accepts.

use serde_json::{Value, json};

use super::constraints::{DEVICE_PLATFORMS, DEVICE_TYPES};
use super::{postal, vocab};
use crate::buyer::advertisers::model::CHANNELS;

fn strings<'a>(list: impl IntoIterator<Item = &'a str>) -> Value {
    Value::Array(list.into_iter().map(Value::from).collect())
}

/// Restricts the items of an array property.
fn items(prop: &mut Value, key: &str, value: Value) {
    if prop["items"].is_object() {
        prop["items"][key] = value;
    }
}

pub fn document(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    let countries = strings(vocab::COUNTRIES.entries.iter().map(|e| e.code));
    let languages = strings(vocab::LANGUAGES.entries.iter().map(|e| e.code));
    let props = &mut schemas["Constraints"]["properties"];
    if props.is_object() {
        items(
            &mut props["channels"],
            "enum",
            strings(CHANNELS.iter().copied()),
        );
        for k in ["geo_countries", "geo_countries_exclude"] {
            items(&mut props[k], "enum", countries.clone());
        }
        for k in ["geo_regions", "geo_regions_exclude"] {
            items(
                &mut props[k],
                "pattern",
                json!("^[A-Za-z]{2}-[A-Za-z0-9]{1,3}$"),
            );
        }
        items(&mut props["language"], "enum", languages);
        for k in ["device_type", "device_type_exclude"] {
            items(&mut props[k], "enum", strings(DEVICE_TYPES.iter().copied()));
        }
        items(
            &mut props["device_platform"],
            "enum",
            strings(DEVICE_PLATFORMS.iter().copied()),
        );
    }
    let metro = &mut schemas["MetroArea"]["properties"];
    if metro.is_object() {
        metro["system"]["enum"] = strings(vocab::METRO_SYSTEMS.iter().copied());
        items(&mut metro["values"], "pattern", json!("^[0-9]+$"));
        metro["values"]["minItems"] = json!(1);
    }
    let area = &mut schemas["PostalArea"]["properties"];
    if area.is_object() {
        area["country"]["enum"] = countries;
        area["system"]["enum"] = strings(postal::SYSTEMS.iter().copied());
        area["values"]["minItems"] = json!(1);
    }
}
