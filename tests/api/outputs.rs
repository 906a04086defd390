//! Every operation's answer matches its declared output schema (the
//! `outputSchema` of its MCP tool): each 2xx a test gets from an
//! operation's REST route is checked, so every test that calls one checks
//! the schema too.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};

use actix_web::http::Method;

use agentic_api::app::OPERATIONS;
use agentic_api::ops::OperationDef;

use crate::helpers::Resp;

/// The operation served at `verb path` (a path under `/api/v2`): of those
/// whose template fits, the one with most fixed segments.
fn operation_at(verb: &str, path: &str) -> Option<&'static OperationDef> {
    let segments: Vec<&str> = path.split('/').collect();
    OPERATIONS
        .iter()
        .filter(|d| d.verb.as_str() == verb)
        .filter(|d| {
            let template: Vec<&str> = d.path.split('/').collect();
            template.len() == segments.len()
                && template
                    .iter()
                    .zip(&segments)
                    .all(|(t, s)| t == s || (t.starts_with('{') && !s.is_empty()))
        })
        .max_by_key(|d| d.path.split('/').filter(|t| !t.starts_with('{')).count())
}

type Validators = HashMap<&'static str, Arc<jsonschema::Validator>>;

fn validator(def: &'static OperationDef) -> Arc<jsonschema::Validator> {
    static VALIDATORS: LazyLock<Mutex<Validators>> = LazyLock::new(Default::default);
    let mut all = VALIDATORS.lock().unwrap();
    all.entry(def.name)
        .or_insert_with(|| {
            let schema = (def.output_schema)();
            Arc::new(jsonschema::draft202012::new(&schema).unwrap_or_else(|e| {
                panic!("{}: the output schema does not compile: {e}", def.name)
            }))
        })
        .clone()
}

/// A successful envelope from an operation's route has `data` as its
/// output schema describes.
#[track_caller]
pub fn assert_described(method: &Method, path: &str, resp: &Resp) {
    let Some(route) = path
        .split(['?', '#'])
        .next()
        .and_then(|p| p.strip_prefix("/api/v2"))
    else {
        return;
    };
    if !resp.status.is_success() || resp.body.get("data").is_none() {
        return;
    }
    let Some(def) = operation_at(method.as_str(), route) else {
        return;
    };
    let data = &resp.body["data"];
    let errors: Vec<String> = validator(def)
        .iter_errors(data)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{method} {path}: the data does not match {}'s output schema: {errors:#?}\n{data}",
        def.name
    );
}
