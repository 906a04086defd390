//! The fake seller's AdCP 3.1 `sync_creatives`: each creative `created`
//! the first time, `unchanged` when sent again as it was, `updated`
//! otherwise, in the behaviour's review status; assignments to packages
//! this seller never made are assignment errors. A dry run stores nothing.
//! Every call's arguments are kept for tests to read.

use serde_json::{Map, Value, json};

use super::{Behaviour, FakeSeller, State};

pub(super) fn sync(state: &State, b: &Behaviour, args: &Value) -> (Value, bool) {
    state.creative_syncs.lock().push(args.clone());
    if let Some(e) = &b.creative_error {
        return (json!({"errors": [e]}), true);
    }
    let dry_run = args["dry_run"].as_bool().unwrap_or(false);
    let packages: Vec<String> = state
        .buys
        .lock()
        .buys
        .iter()
        .filter_map(|buy| buy.id.clone())
        .map(|id| format!("{id}_p1"))
        .collect();
    let mut stored = state.creatives.lock();
    let mut out = Vec::new();
    for c in args["creatives"].as_array().into_iter().flatten() {
        let id = c["creative_id"].as_str().unwrap_or_default().to_string();
        let action = match stored.get(&id) {
            None => "created",
            Some(before) if before == c => "unchanged",
            Some(_) => "updated",
        };
        if !dry_run {
            stored.insert(id.clone(), c.clone());
        }
        let mut assigned = Vec::new();
        let mut errors = Map::new();
        for a in args["assignments"].as_array().into_iter().flatten() {
            if a["creative_id"] != id.as_str() {
                continue;
            }
            let p = a["package_id"].as_str().unwrap_or_default().to_string();
            if packages.contains(&p) {
                assigned.push(p);
            } else {
                errors.insert(p, json!("unknown package"));
            }
        }
        let mut r = json!({"creative_id": id, "action": action, "status": b.creative_status,
                           "assigned_to": assigned});
        if !errors.is_empty() {
            r["assignment_errors"] = Value::Object(errors);
        }
        out.push(r);
    }
    let mut answer = json!({"creatives": out});
    if dry_run {
        answer["dry_run"] = json!(true);
    }
    (answer, false)
}

impl FakeSeller {
    /// The arguments of every `sync_creatives` call received, in order.
    pub fn creative_syncs(&self) -> Vec<Value> {
        self.state.creative_syncs.lock().clone()
    }
}
