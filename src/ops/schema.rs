//! Self-contained JSON Schemas (2020-12) of operation parts and outputs.
//!
//! utoipa writes a named type it meets inside another as
//! `{"$ref": "#/components/schemas/Name"}`, the place an OpenAPI document
//! keeps it. A tool's schema is a document of its own, where that pointer
//! leads nowhere. So every schema made here carries the named types it
//! reaches in its own `$defs`, and its refs point there (`#/$defs/Name`);
//! schemas built from several parts hoist the parts' `$defs` to their root.

use std::collections::BTreeSet;

use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;

/// Where an OpenAPI document keeps named schemas.
pub const COMPONENTS: &str = "#/components/schemas/";
/// Where a self-contained schema keeps them.
pub const DEFS: &str = "#/$defs/";

/// `T`'s schema with the named types it reaches under `$defs`.
pub fn of<T: ToSchema + ?Sized>() -> Value {
    let mut named = Vec::new();
    T::schemas(&mut named);
    resolve(T::schema(), named)
}

/// `T`'s schema for the OpenAPI document: a type of this crate that is not
/// generic is named, i.e. the schema is a `$ref` to its name in `$defs`
/// (which `crate::openapi` turns into `#/components/schemas`); any other
/// (a list, a page, a primitive) is [`of`], written in place.
pub fn component<T: ToSchema + ?Sized>() -> Value {
    let rust = std::any::type_name::<T>();
    let own = rust.starts_with(concat!(env!("CARGO_CRATE_NAME"), "::")) && !rust.contains('<');
    if !own {
        return of::<T>();
    }
    let name = T::name().into_owned();
    let mut defs = Map::new();
    let mut schema = of::<T>();
    hoist(&mut schema, &mut defs);
    defs.insert(name.clone(), schema);
    with_defs(serde_json::json!({ "$ref": format!("{DEFS}{name}") }), defs)
}

/// `root` with its component refs pointing into its own `$defs`, which
/// hold those of `named` it reaches (directly or through one another).
pub fn resolve(root: RefOr<Schema>, named: Vec<(String, RefOr<Schema>)>) -> Value {
    let mut root = serde_json::to_value(root).unwrap_or_default();
    let mut defs = Map::new();
    for (name, schema) in named {
        if !defs.contains_key(&name) {
            let mut schema = serde_json::to_value(schema).unwrap_or_default();
            retarget(&mut schema);
            defs.insert(name, schema);
        }
    }
    retarget(&mut root);
    with_defs(root, defs)
}

/// Points component refs at `$defs`.
fn retarget(schema: &mut Value) {
    repoint(schema, COMPONENTS, DEFS);
}

/// Rewrites every `$ref` under `from` (e.g. [`DEFS`]) to the same name
/// under `to` (e.g. [`COMPONENTS`]).
pub fn repoint(schema: &mut Value, from: &str, to: &str) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(r)) = map.get_mut("$ref")
                && let Some(name) = r.strip_prefix(from)
            {
                *r = format!("{to}{name}");
            }
            map.values_mut().for_each(|v| repoint(v, from, to));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| repoint(v, from, to)),
        _ => {}
    }
}

/// Takes `schema`'s `$defs` (if any) into `defs`, the first of a name
/// winning: a name is one Rust type, as in the OpenAPI document.
pub fn hoist(schema: &mut Value, defs: &mut Map<String, Value>) {
    if let Some(Value::Object(own)) = schema.as_object_mut().and_then(|m| m.remove("$defs")) {
        for (name, def) in own {
            defs.entry(name).or_insert(def);
        }
    }
}

/// `schema` with those of `defs` it reaches as its `$defs` (none: no key).
pub fn with_defs(mut schema: Value, mut defs: Map<String, Value>) -> Value {
    hoist(&mut schema, &mut defs);
    let mut reached = BTreeSet::new();
    let mut todo = Vec::new();
    refs(&schema, &mut todo);
    while let Some(name) = todo.pop() {
        if reached.insert(name.clone())
            && let Some(def) = defs.get(&name)
        {
            refs(def, &mut todo);
        }
    }
    defs.retain(|name, _| reached.contains(name));
    if !defs.is_empty()
        && let Some(map) = schema.as_object_mut()
    {
        map.insert("$defs".into(), Value::Object(defs));
    }
    schema
}

/// The `$defs` names `schema` refers to.
fn refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix(DEFS))
            {
                out.push(name.to_string());
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

/// The subschema of `root` at `pointer` (e.g. `/properties/body`), with the
/// `$defs` of `root` it needs: a part that stands alone.
pub fn part(root: &Value, pointer: &str) -> Option<Value> {
    let sub = root.pointer(pointer)?.clone();
    let defs = root
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    Some(with_defs(sub, defs))
}

/// An object of the named `parts` (schema, required?), no other property.
pub fn object<'a>(parts: impl IntoIterator<Item = (&'a str, Value, bool)>) -> Value {
    let mut defs = Map::new();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for (name, mut schema, needed) in parts {
        hoist(&mut schema, &mut defs);
        if needed {
            required.push(Value::from(name));
        }
        properties.insert(name.into(), schema);
    }
    with_defs(
        serde_json::json!({
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": false,
        }),
        defs,
    )
}

/// A value matching one of `schemas` (the one schema if they are all the same).
pub fn any_of(schemas: impl IntoIterator<Item = Value>) -> Value {
    let mut defs = Map::new();
    let mut branches: Vec<Value> = Vec::new();
    for mut schema in schemas {
        hoist(&mut schema, &mut defs);
        if !branches.contains(&schema) {
            branches.push(schema);
        }
    }
    let schema = match <[Value; 1]>::try_from(branches) {
        Ok([one]) => one,
        Err(branches) => serde_json::json!({ "anyOf": branches }),
    };
    with_defs(schema, defs)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn schema(v: Value) -> RefOr<Schema> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn component_refs_become_defs_reached_from_the_root() {
        let root = schema(json!({"type": "object", "properties": {
            "a": {"$ref": "#/components/schemas/A"}}}));
        let named = vec![
            (
                "A".to_string(),
                schema(json!({"type": "object", "properties": {
                    "b": {"$ref": "#/components/schemas/B"}}})),
            ),
            ("B".to_string(), schema(json!({"type": "string"}))),
            ("Unused".to_string(), schema(json!({"type": "string"}))),
        ];
        let s = resolve(root, named);
        assert_eq!(s["properties"]["a"]["$ref"], "#/$defs/A");
        assert_eq!(s["$defs"]["A"]["properties"]["b"]["$ref"], "#/$defs/B");
        assert_eq!(s["$defs"]["B"]["type"], "string");
        assert!(s["$defs"].get("Unused").is_none());
    }

    #[test]
    fn parts_hoist_their_defs_and_a_part_keeps_what_it_needs() {
        let body = json!({"properties": {"x": {"$ref": "#/$defs/X"}},
                          "$defs": {"X": {"$ref": "#/$defs/Y"}, "Y": {"type": "integer"}}});
        let o = object([
            ("body", body, true),
            ("params", json!({"type": "object"}), false),
        ]);
        assert_eq!(o["required"], json!(["body"]));
        assert!(o["properties"]["body"].get("$defs").is_none());
        assert_eq!(o["$defs"]["Y"]["type"], "integer");
        let p = part(&o, "/properties/params").unwrap();
        assert!(p.get("$defs").is_none(), "{p}");
        let b = part(&o, "/properties/body").unwrap();
        assert_eq!(b["$defs"]["X"]["$ref"], "#/$defs/Y");
        assert_eq!(any_of([b.clone(), b.clone()]), b);
    }
}
