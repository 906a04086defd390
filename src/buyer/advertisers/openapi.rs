//! Vocabularies the derive cannot express, added to the OpenAPI document:
//! the real ISO 4217, ISO 3166-1 and IANA lists, AdCP channels and the
//! small enums, so generated clients and fuzzers send what the server
//! accepts.

use iso_currency::IntoEnumIterator;
use serde_json::{Value, json};

use super::model::{APPLY_MODES, BILLING_TYPES, CAP_UNITS, CHANNELS};

/// A domain as `brands::parse_domain` accepts it (any case).
const DOMAIN_PATTERN: &str = r"^(?=.{1,253}$)([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)+([A-Za-z]{2,63}|xn--[A-Za-z0-9-]{1,59})$";

fn currencies() -> Vec<Value> {
    iso_currency::Currency::iter()
        .map(|c| Value::from(c.code()))
        .collect()
}

fn countries() -> Vec<Value> {
    isocountry::CountryCode::iter_alpha2()
        .map(|c| Value::from(c.alpha2()))
        .collect()
}

fn timezones() -> Vec<Value> {
    chrono_tz::TZ_VARIANTS
        .iter()
        .map(|tz| Value::from(tz.name()))
        .collect()
}

fn strings(list: &[&str]) -> Vec<Value> {
    list.iter().map(|s| Value::from(*s)).collect()
}

/// Restricts a property (or its array items) to `values`, keeping `null`
/// allowed where the property is nullable.
fn restrict(prop: &mut Value, values: Vec<Value>) {
    if !prop.is_object() {
        return;
    }
    if prop["items"].is_object() {
        prop["items"]["enum"] = Value::Array(values);
        return;
    }
    let nullable = prop["type"]
        .as_array()
        .is_some_and(|t| t.contains(&json!("null")));
    let mut values = values;
    if nullable {
        values.push(Value::Null);
    }
    prop["enum"] = Value::Array(values);
}

pub fn document(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    for body in ["AdvertiserCreate", "AdvertiserUpdate"] {
        let props = &mut schemas[body]["properties"];
        if !props.is_object() {
            continue;
        }
        restrict(&mut props["primaryCurrency"], currencies());
        restrict(&mut props["brandCountries"], countries());
        restrict(&mut props["preferredTimezone"], timezones());
        restrict(&mut props["channels"], strings(CHANNELS));
        restrict(&mut props["optimizationApplyMode"], strings(APPLY_MODES));
        props["brand"]["pattern"] = json!(DOMAIN_PATTERN);
        props["name"]["pattern"] = json!(r"\S");
        // Keys must be unique too, which JSON Schema cannot say per property.
        props["utmConfig"]["uniqueItems"] = json!(true);
    }
    // Required on create: never null there.
    for field in ["name", "brand", "primaryCurrency"] {
        let prop = &mut schemas["AdvertiserCreate"]["properties"][field];
        if prop.is_object() {
            prop["type"] = json!("string");
            if let Some(values) = prop["enum"].as_array_mut() {
                values.retain(|v| !v.is_null());
            }
        }
    }
    restrict(
        &mut schemas["CapWindowIn"]["properties"]["unit"],
        strings(CAP_UNITS),
    );
    restrict(
        &mut schemas["LinkedAccountIn"]["properties"]["billingType"],
        strings(BILLING_TYPES),
    );
    schemas["LinkedAccountIn"]["properties"]["sourceId"]["pattern"] = json!(r"\S");
    schemas["LinkedAccountIn"]["properties"]["accountId"]["pattern"] = json!(r"\S");
    schemas["UtmParam"]["properties"]["paramKey"]["pattern"] = json!("^[A-Za-z0-9_.-]{1,64}$");
    schemas["UtmParam"]["properties"]["paramValue"]["pattern"] = json!(r"\S");
}
