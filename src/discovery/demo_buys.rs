//! The built-in demo sellers' media buys, so `serve --demo` shows a campaign
//! going from discovery to live buys offline. Each demo seller keeps its
//! buys in memory (a restart forgets them, as a demo may) and answers the
//! AdCP 3.1 tasks `create_media_buy`, `get_media_buys`, `update_media_buy`
//! and `get_media_buy_delivery` as a real seller would (and
//! `sync_creatives`, approving every creative at once), deterministically
//! by product:
//!
//! - [`SUBMITTED`] products need the seller's approval: the create answers
//!   `submitted` with a task id, and asking again with the same
//!   idempotency key (the server's poller does) finds the buy made once
//!   the approval time has passed (10 s at delay scale 1);
//! - [`REJECTED`] products are sold out for any flight: refused;
//! - every other product is accepted as `pending_creatives` (no creative
//!   has been sent yet).
//!
//! A repeated idempotency key returns the first answer and makes nothing.
//!
//! Delivery: every made buy reports each UTC day from the day it was made
//! to today (at most the last 30), as if the seller's house creative ran:
//! a fixed figure per buy and day (8,000 to 11,999 impressions, at the
//! buy's CPM or 12.00, a click per 400 impressions, a completed view per
//! 2 impressions for video products), on its package, per day; the same
//! day is reported again with the same figures.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

/// Products that answer asynchronously (sales approval).
pub const SUBMITTED: &[&str] = &[
    "md_homepage_takeover",
    "lm_ctv_live_sports",
    "at_london_transit",
];
/// Products refused as sold out.
pub const REJECTED: &[&str] = &["tw_podcast_host_read", "at_uk_billboards"];
/// How long a submitted buy waits for approval at delay scale 1.
const APPROVAL: Duration = Duration::from_secs(10);

struct Buy {
    id: String,
    product_id: String,
    status: String,
    before_pause: Option<String>,
    revision: i64,
    currency: String,
    budget: f64,
    /// Submitted: when it is approved.
    approved_at: Option<Instant>,
    task_id: Option<String>,
    package: Value,
    /// The UTC day it was made: its delivery starts there.
    made_on: chrono::NaiveDate,
}

/// One demo seller's buys.
pub struct DemoBuys {
    prefix: &'static str,
    approval: Duration,
    /// The currency of each pricing option of the seller's catalogue.
    currencies: HashMap<String, String>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u64,
    /// By idempotency key: refusals are answered again too.
    by_key: HashMap<String, Result<String, Value>>,
    buys: HashMap<String, Buy>,
    updates: HashMap<String, Value>,
    /// Synced creatives by creative id: the content last received.
    creatives: HashMap<String, Value>,
}

impl DemoBuys {
    pub fn new(
        prefix: &'static str,
        delay_scale: f64,
        currencies: HashMap<String, String>,
    ) -> Self {
        let scale = if delay_scale.is_finite() && delay_scale > 0.0 {
            delay_scale.min(1000.0)
        } else {
            0.0
        };
        DemoBuys {
            prefix,
            approval: APPROVAL.mul_f64(scale),
            currencies,
            state: Mutex::new(State::default()),
        }
    }

    /// One task's answer payload; `None` for a task the seller does not take.
    pub fn answer(&self, task: &str, args: &Map<String, Value>) -> Option<Value> {
        match task {
            "create_media_buy" => Some(self.create(args)),
            "get_media_buys" => Some(self.get(args)),
            "update_media_buy" => Some(self.update(args)),
            "get_media_buy_delivery" => Some(self.delivery(args)),
            "sync_creatives" => Some(self.sync_creatives(args)),
            _ => None,
        }
    }

    fn create(&self, args: &Map<String, Value>) -> Value {
        let key = args
            .get("idempotency_key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let package = args
            .get("packages")
            .and_then(|p| p.get(0))
            .cloned()
            .unwrap_or(Value::Null);
        let product_id = package
            .get("product_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if key.len() < 16 || product_id.is_empty() {
            return failed(
                "INVALID_REQUEST",
                "idempotency_key and one package with a product_id are required",
            );
        }
        let mut st = self.state.lock();
        if let Some(earlier) = st.by_key.get(key).cloned() {
            return match earlier {
                Err(refusal) => refusal,
                Ok(id) => {
                    let buy = st.buys.get_mut(&id).map(|b| {
                        if b.approved_at.is_some_and(|at| Instant::now() >= at) {
                            b.approved_at = None;
                            b.status = "pending_creatives".into();
                        }
                        answer(b)
                    });
                    let mut a = buy.unwrap_or(Value::Null);
                    a["replayed"] = json!(true);
                    a
                }
            };
        }
        if REJECTED.contains(&product_id) {
            let refusal = failed("PRODUCT_UNAVAILABLE", "sold out for the requested flight");
            st.by_key.insert(key.to_string(), Err(refusal.clone()));
            return refusal;
        }
        st.next += 1;
        let n = st.next;
        let submitted = SUBMITTED.contains(&product_id);
        let buy = Buy {
            id: format!("{}_mb_{n:04}", self.prefix),
            product_id: product_id.to_string(),
            status: if submitted {
                "submitted"
            } else {
                "pending_creatives"
            }
            .into(),
            before_pause: None,
            revision: 1,
            currency: package
                .get("pricing_option_id")
                .and_then(Value::as_str)
                .and_then(|o| self.currencies.get(o))
                .cloned()
                .unwrap_or_else(|| "USD".into()),
            budget: package.get("budget").and_then(Value::as_f64).unwrap_or(0.0),
            approved_at: submitted.then(|| Instant::now() + self.approval),
            task_id: submitted.then(|| format!("{}_task_{n:04}", self.prefix)),
            package,
            made_on: chrono::Utc::now().date_naive(),
        };
        let a = answer(&buy);
        st.by_key.insert(key.to_string(), Ok(buy.id.clone()));
        st.buys.insert(buy.id.clone(), buy);
        a
    }

    fn get(&self, args: &Map<String, Value>) -> Value {
        let st = self.state.lock();
        let ids: Vec<&str> = args
            .get("media_buy_ids")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let mut found = Vec::new();
        let mut errors = Vec::new();
        for id in ids {
            match st
                .buys
                .get(id)
                .filter(|b| b.task_id.is_none() || b.approved_at.is_none())
            {
                Some(b) => found.push(json!({
                    "media_buy_id": b.id, "status": b.status, "currency": b.currency,
                    "total_budget": b.budget, "confirmed_at": "2026-01-01T00:00:00Z",
                    "revision": b.revision, "packages": [package(b)],
                })),
                None => errors.push(
                    json!({"code": "MEDIA_BUY_NOT_FOUND", "message": format!("no media buy {id}")}),
                ),
            }
        }
        let mut out = json!({"status": "completed", "media_buys": found});
        if !errors.is_empty() {
            out["errors"] = Value::Array(errors);
        }
        out
    }

    /// Each named buy's days so far (see the module's notes).
    fn delivery(&self, args: &Map<String, Value>) -> Value {
        let st = self.state.lock();
        let today = chrono::Utc::now().date_naive();
        let deliveries: Vec<Value> = args
            .get("media_buy_ids")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .filter_map(|id| st.buys.get(id))
            .map(|b| delivery(b, today))
            .collect();
        json!({"status": "completed", "media_buy_deliveries": deliveries})
    }

    fn update(&self, args: &Map<String, Value>) -> Value {
        let key = args
            .get("idempotency_key")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut st = self.state.lock();
        if let Some(earlier) = st.updates.get(&key) {
            return earlier.clone();
        }
        let id = args
            .get("media_buy_id")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(b) = st.buys.get_mut(id) else {
            return failed("MEDIA_BUY_NOT_FOUND", &format!("no media buy {id}"));
        };
        match args.get("paused").and_then(Value::as_bool) {
            Some(true) if b.status != "paused" => {
                b.before_pause = Some(std::mem::replace(&mut b.status, "paused".into()));
                b.revision += 1;
            }
            Some(false) if b.status == "paused" => {
                b.status = b.before_pause.take().unwrap_or_else(|| "active".into());
                b.revision += 1;
            }
            _ => {}
        }
        let a = json!({"status": "completed", "media_buy_id": b.id, "media_buy_status": b.status, "revision": b.revision});
        st.updates.insert(key, a.clone());
        a
    }
}

/// A buy's report up to `today`: nothing while it awaits approval.
fn delivery(b: &Buy, today: chrono::NaiveDate) -> Value {
    let made = b.approved_at.is_none() && !matches!(b.status.as_str(), "submitted" | "rejected");
    let first = b.made_on.max(today - chrono::Duration::days(29));
    let seed: u64 = b.id.bytes().map(u64::from).sum();
    let cpm = b
        .package
        .get("bid_price")
        .and_then(Value::as_f64)
        .filter(|p| *p > 0.0)
        .unwrap_or(12.0);
    let video = b.product_id.contains("ctv") || b.product_id.contains("video");
    let mut days = Vec::new();
    let mut day = first;
    while made && day <= today {
        let n = u64::try_from(chrono::Datelike::num_days_from_ce(&day)).unwrap_or(0);
        let impressions = 8_000 + (seed * 37 + n * 101) % 4_000;
        let spend = (impressions as f64 * cpm / 1000.0 * 100.0).round() / 100.0;
        let mut d = json!({"date": day.to_string(), "impressions": impressions, "spend": spend,
                           "clicks": impressions / 400});
        if video {
            d["completed_views"] = json!(impressions / 2);
        }
        days.push(d);
        day += chrono::Duration::days(1);
    }
    let sum = |k: &str| days.iter().filter_map(|d| d[k].as_f64()).sum::<f64>();
    let totals = json!({"impressions": sum("impressions") as u64, "spend": (sum("spend") * 100.0).round() / 100.0,
                        "clicks": sum("clicks") as u64});
    json!({
        "media_buy_id": b.id, "status": b.status, "currency": b.currency,
        "totals": totals,
        "by_package": [{"package_id": format!("{}_p1", b.id), "impressions": totals["impressions"],
                        "spend": totals["spend"], "clicks": totals["clicks"], "daily_breakdown": days}],
    })
}

impl DemoBuys {
    /// AdCP `sync_creatives`: each creative `created`, `updated` (its
    /// content changed) or `unchanged`, approved at once (a demo has no
    /// review desk); an assignment to a package that is not one of this
    /// seller's buys is an assignment error. Nothing else changes.
    fn sync_creatives(&self, args: &Map<String, Value>) -> Value {
        let Some(list) = args.get("creatives").and_then(Value::as_array) else {
            return failed("INVALID_REQUEST", "creatives is required");
        };
        let dry_run = args.get("dry_run").and_then(Value::as_bool) == Some(true);
        let assignments = args
            .get("assignments")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let mut st = self.state.lock();
        let packages: Vec<String> = st.buys.values().map(|b| format!("{}_p1", b.id)).collect();
        let mut out = Vec::with_capacity(list.len());
        for c in list {
            let Some(id) = c.get("creative_id").and_then(Value::as_str) else {
                continue;
            };
            let action = match st.creatives.get(id) {
                None => "created",
                Some(before) if before == c => "unchanged",
                Some(_) => "updated",
            };
            if !dry_run {
                st.creatives.insert(id.to_string(), c.clone());
            }
            let mut assigned = Vec::new();
            let mut errors = Map::new();
            for a in assignments.iter().filter(|a| a["creative_id"] == id) {
                let package = a["package_id"].as_str().unwrap_or_default().to_string();
                if packages.contains(&package) {
                    assigned.push(package);
                } else {
                    errors.insert(package, json!("no such package at this seller"));
                }
            }
            let mut r = json!({"creative_id": id, "action": action, "status": "approved",
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
        answer
    }
}

fn package(b: &Buy) -> Value {
    json!({
        "package_id": format!("{}_p1", b.id),
        "product_id": b.product_id,
        "budget": b.budget,
        "pricing_option_id": b.package.get("pricing_option_id"),
    })
}

fn answer(b: &Buy) -> Value {
    if let (Some(task), Some(_)) = (&b.task_id, b.approved_at) {
        return json!({
            "status": "submitted",
            "task_id": task,
            "message": "Awaiting approval by the sales team.",
        });
    }
    json!({
        "status": "completed",
        "media_buy_id": b.id,
        "media_buy_status": b.status,
        "confirmed_at": "2026-01-01T00:00:00Z",
        "revision": b.revision,
        "currency": b.currency,
        "total_budget": b.budget,
        "packages": [package(b)],
    })
}

fn failed(code: &str, message: &str) -> Value {
    json!({"status": "failed", "errors": [{"code": code, "message": message}]})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn creatives_are_created_then_unchanged_or_updated_and_approved() {
        let d = DemoBuys::new("md", 0.0, HashMap::new());
        let made = d.create(&args(json!({"idempotency_key": "key-0000000000000001",
            "packages": [{"product_id": "md_display_ros", "budget": 10.0}]})));
        let package = format!("{}_p1", made["media_buy_id"].as_str().unwrap());
        let sync = |name: &str, dry_run: bool| {
            d.sync_creatives(&args(json!({
                "creatives": [{"creative_id": "cr_1", "name": name, "assets": {}}],
                "assignments": [{"creative_id": "cr_1", "package_id": package},
                                {"creative_id": "cr_1", "package_id": "nope_p1"}],
                "dry_run": dry_run,
            })))
        };
        let first = sync("A", true);
        assert_eq!(first["dry_run"], true);
        assert_eq!(first["creatives"][0]["action"], "created");
        let first = sync("A", false);
        assert_eq!(
            first["creatives"][0]["action"], "created",
            "a dry run stores nothing"
        );
        assert_eq!(first["creatives"][0]["status"], "approved");
        assert_eq!(first["creatives"][0]["assigned_to"], json!([package]));
        assert!(first["creatives"][0]["assignment_errors"]["nope_p1"].is_string());
        assert_eq!(sync("A", false)["creatives"][0]["action"], "unchanged");
        assert_eq!(sync("B", false)["creatives"][0]["action"], "updated");
        assert!(d.sync_creatives(&Map::new())["errors"].is_array());
    }

    #[test]
    fn accepts_rejects_and_approves_by_product_once_per_key() {
        let d = DemoBuys::new("md", 0.0, HashMap::new());
        let create = |key: &str, product: &str| {
            d.create(&args(json!({"idempotency_key": key, "packages": [{"product_id": product, "budget": 10.0}]})))
        };
        let ok = create("key-0000000000000001", "md_display_ros");
        assert_eq!(ok["media_buy_status"], "pending_creatives");
        let again = create("key-0000000000000001", "md_display_ros");
        assert_eq!(again["media_buy_id"], ok["media_buy_id"]);
        assert_eq!(again["replayed"], true);
        let no = create("key-0000000000000002", "tw_podcast_host_read");
        assert_eq!(no["errors"][0]["code"], "PRODUCT_UNAVAILABLE");
        let later = create("key-0000000000000003", "md_homepage_takeover");
        assert_eq!(later["status"], "submitted");
        // Approval takes no time at scale 0: asked again, it is made.
        let made = create("key-0000000000000003", "md_homepage_takeover");
        assert_eq!(made["media_buy_status"], "pending_creatives");
        assert_eq!(d.state.lock().buys.len(), 2);
        let id = made["media_buy_id"].as_str().unwrap();
        let paused = d.update(&args(
            json!({"idempotency_key": "u-00000000000000001", "media_buy_id": id, "paused": true}),
        ));
        assert_eq!(paused["media_buy_status"], "paused");
        let got = d.get(&args(json!({"media_buy_ids": [id, "nope"]})));
        assert_eq!(got["media_buys"][0]["status"], "paused");
        assert_eq!(got["errors"][0]["code"], "MEDIA_BUY_NOT_FOUND");
    }
}
