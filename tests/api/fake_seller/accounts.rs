//! The fake seller's AdCP account tasks: `list_accounts` answers the
//! behaviour's accounts; `sync_accounts` answers each entry with a
//! predictable id, `created` the first time and `unchanged` after, and
//! stores nothing on a dry run.

use serde_json::{Value, json};

use super::{Behaviour, State};

/// The id the fake gives the account of `brand` run by `operator`.
pub fn account_id(brand: &str, operator: &str, sandbox: bool) -> String {
    let sbx = if sandbox { "_sandbox" } else { "" };
    format!(
        "acc_{}_{}{sbx}",
        brand.replace('.', "_"),
        operator.replace('.', "_")
    )
}

pub(super) fn sync(state: &State, b: &Behaviour, args: &Value) -> Value {
    let dry_run = args["dry_run"].as_bool().unwrap_or(false);
    let mut out = Vec::new();
    for e in args["accounts"].as_array().into_iter().flatten() {
        let brand = e["brand"]["domain"].as_str().unwrap_or_default();
        let operator = e["operator"].as_str().unwrap_or_default();
        let sandbox = e["sandbox"].as_bool().unwrap_or(false);
        let id = account_id(brand, operator, sandbox);
        let mut synced = state.synced.lock();
        let action = if synced.contains(&id) {
            "unchanged"
        } else {
            "created"
        };
        if !dry_run {
            synced.insert(id.clone());
        }
        let mut a = json!({
            "account_id": id,
            "brand": {"domain": brand},
            "operator": operator,
            "name": format!("{brand} via {operator}"),
            "action": action,
            "status": b.sync_status,
            "billing": e["billing"],
        });
        if sandbox {
            a["sandbox"] = json!(true);
        }
        out.push(a);
    }
    let mut answer = json!({"accounts": out});
    if dry_run {
        answer["dry_run"] = json!(true);
    }
    answer
}
