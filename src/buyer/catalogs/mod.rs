//! Per-advertiser catalogs (product feeds): synced from inline items or a
//! JSON/CSV feed URL into numbered versions, with health and sync status,
//! and activation plans (what changes downstream since the last executed
//! version) recorded as pending jobs.

pub mod feed;
pub mod model;
pub mod operations;
pub mod service;

use serde_json::{Value, json};

/// Vocabularies and optional bodies the derive cannot express, added to
/// the OpenAPI document.
pub fn document(doc: &mut Value) {
    let schemas = &mut doc["components"]["schemas"];
    let props = &mut schemas["CatalogIn"]["properties"];
    if props.is_object() {
        props["type"]["enum"] = json!(model::CATALOG_TYPES);
        props["format"]["enum"] = json!(model::FORMATS);
    }
    let base = "/api/v2/buyer/advertisers/{advertiserId}/catalogs/{catalogId}";
    for path in [
        "refresh",
        "activation-plan/preview",
        "activation-plan/execute",
    ] {
        let op = &mut doc["paths"][format!("{base}/{path}")]["post"];
        if op["requestBody"].is_object() {
            op["requestBody"]["required"] = Value::Bool(false);
        }
    }
}
