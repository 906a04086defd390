//! A campaign's constraints through the targeting vocabularies: validated
//! and normalised on the way in, effective targeting and metro names on
//! the way out.

use serde_json::{Value, json};

use crate::buyer::targeting::{Constraints, metro_name, parse_constraints};
use crate::error::Issues;

/// The constraints, validated (every problem at its `constraints.…` path)
/// and normalised; `{}` clears.
pub fn constraints(v: &Value, issues: &mut Issues) -> Value {
    parse_constraints(v, "constraints", issues)
        .and_then(|c| serde_json::to_value(c).ok())
        .unwrap_or_else(|| json!({}))
}

fn stored(v: &Value) -> Constraints {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

/// What the campaign targets once its include and exclude lists combine.
pub fn effective(constraints: &Value) -> Value {
    serde_json::to_value(stored(constraints).effective(None)).unwrap_or_else(|_| json!({}))
}

/// `[{system, code, name}]` for the metros under `key` (`geo_metros` or
/// `geo_metros_exclude`); `name` is null for a code without a label.
pub fn metro_names(constraints: &Value, key: &str) -> Value {
    let c = stored(constraints);
    let areas = if key == "geo_metros_exclude" {
        &c.geo_metros_exclude
    } else {
        &c.geo_metros
    };
    Value::Array(
        areas
            .iter()
            .flat_map(|a| {
                a.values.iter().map(move |code| {
                    json!({"system": a.system, "code": code, "name": metro_name(&a.system, code)})
                })
            })
            .collect(),
    )
}
