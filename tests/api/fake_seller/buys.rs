//! The fake seller's media buys: AdCP 3.1 `create_media_buy`,
//! `get_media_buys`, `get_media_buy_delivery` and `update_media_buy`, the
//! signed push-notification callback a seller sends when a submitted buy
//! settles, and helpers to sign and send such callbacks by hand (for tests
//! of the server's receiver).
//!
//! The wire shapes follow the AdCP 3.1 schemas: answers carry the fields
//! those schemas require, and little more.

use std::collections::HashMap;
use std::time::Duration;

use actix_web::web;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

use super::{Behaviour, FakeSeller, State};

/// How the fake answers `create_media_buy` for one product (see
/// [`Behaviour::buys`]).
#[derive(Clone, Debug, PartialEq)]
pub enum BuyOutcome {
    /// Created at once, in this AdCP media-buy status (`active`,
    /// `pending_creatives`, `pending_start`, ...).
    Accept { status: &'static str },
    /// Refused: `{status: "failed", errors: [{code, message}]}` with
    /// `isError: true`, as AdCP sellers answer. Nothing is created.
    Reject {
        code: &'static str,
        message: &'static str,
    },
    /// `{status: "submitted", task_id}` now; after `after`, a signed callback
    /// to the request's `push_notification_config.url` settles the task with
    /// `then`: `completed` with the created buy, or `failed` with its errors.
    /// With `then: Hang` the seller never calls back.
    Submitted {
        then: Box<BuyOutcome>,
        after: Duration,
    },
    /// Never answers; nothing is created, so a retry is decided afresh.
    Hang,
    /// The first distinct create this fake sees succeeds (`active`); every
    /// later distinct one is rejected with `PRODUCT_UNAVAILABLE`: a buy that
    /// fails half way through a cart.
    FailOnSecond,
}

impl BuyOutcome {
    pub fn submitted(then: BuyOutcome, after: Duration) -> BuyOutcome {
        BuyOutcome::Submitted {
            then: Box::new(then),
            after,
        }
    }
}

/// One distinct `create_media_buy` (one idempotency key) as the fake keeps it.
#[derive(Clone, Debug)]
pub struct Buy {
    /// The seller's `media_buy_id` (`sb_<n>`): `None` while its task is
    /// submitted, or when it was rejected.
    pub id: Option<String>,
    pub key: String,
    /// The product of the first package.
    pub product_id: String,
    /// The AdCP media-buy status; `submitted` while its task runs,
    /// `rejected` when refused.
    pub status: String,
    /// Starts at 1; each effective `update_media_buy` adds one.
    pub revision: i64,
    pub task_id: Option<String>,
    /// The create request's arguments, as received.
    pub arguments: Value,
    /// What a create with this key answers (`structuredContent`, then with
    /// `replayed: true`): the first answer, or the task's result once a
    /// submitted buy settled (AdCP: "the seller returns the existing media
    /// buy").
    pub answer: Value,
    pub is_error: bool,
    /// The success payload once created: the base of `get_media_buys`.
    created: Option<Value>,
    /// The status a paused buy resumes to.
    resume_to: Option<String>,
}

/// A callback the fake sent for a submitted buy.
#[derive(Clone, Debug)]
pub struct Callback {
    pub url: String,
    /// The exact bytes sent, and as JSON.
    pub raw: Vec<u8>,
    pub body: Value,
    pub timestamp: i64,
    /// `X-ADCP-Signature` (absent when the request asked for no HMAC).
    pub signature: Option<String>,
    /// The receiver's answer; `None` when it could not be reached.
    pub status: Option<u16>,
}

/// The fake's media-buy state.
#[derive(Default)]
pub(super) struct Ledger {
    pub(super) buys: Vec<Buy>,
    /// Seller ids issued so far (`sb_<n>`).
    created: usize,
    tasks: usize,
    /// `update_media_buy` answers by idempotency key: (payload, is_error).
    updates: HashMap<String, (Value, bool)>,
    /// `get_media_buys` calls naming each buy id.
    status_calls: HashMap<String, usize>,
    /// `get_media_buy_delivery` calls naming each buy id.
    delivery_calls: HashMap<String, usize>,
    /// Scripted `media_buy_deliveries[]` entries by buy id, answered in
    /// place of the default.
    reports: HashMap<String, Value>,
    callbacks: Vec<Callback>,
}

/// What a create comes to, decided when it arrives.
#[derive(Clone, Copy)]
enum Verdict {
    Accept(&'static str),
    Reject(&'static str, &'static str),
    Hang,
}

/// The verdict for `outcome` and, for a submitted task, how long until the
/// seller calls back (nested `Submitted`s add up).
fn decide(outcome: &BuyOutcome, first: bool) -> (Verdict, Option<Duration>) {
    match outcome {
        BuyOutcome::Accept { status } => (Verdict::Accept(status), None),
        BuyOutcome::Reject { code, message } => (Verdict::Reject(code, message), None),
        BuyOutcome::Hang => (Verdict::Hang, None),
        BuyOutcome::FailOnSecond if first => (Verdict::Accept("active"), None),
        BuyOutcome::FailOnSecond => (
            Verdict::Reject("PRODUCT_UNAVAILABLE", "No more inventory for this flight"),
            None,
        ),
        BuyOutcome::Submitted { then, after } => {
            let (verdict, inner) = decide(then, first);
            (verdict, Some(*after + inner.unwrap_or_default()))
        }
    }
}

/// A refusal: the task `failed` with these errors.
fn errors(code: &str, message: &str) -> Value {
    json!({"status": "failed", "errors": [{"code": code, "message": message}]})
}

/// The top-level `status`: AdCP 3.1's protocol envelope requires the task
/// status there (`completed`) and the buy's in `media_buy_status`; sellers
/// before 3.1 put the buy's status there ([`Behaviour::legacy_status`]).
fn envelope_status(status: &str, legacy: bool) -> &str {
    if legacy { status } else { "completed" }
}

/// An earlier answer, served again for a repeated idempotency key, marked
/// as AdCP marks replays from its idempotency cache.
fn replayed(answer: &Value) -> Value {
    let mut answer = answer.clone();
    answer["replayed"] = json!(true);
    answer
}

fn now() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The currency of the product's pricing option, from the products the fake
/// offers (EUR when it offers no such option).
fn currency(b: &Behaviour, product_id: &str, pricing_option_id: &str) -> String {
    b.products
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["product_id"] == product_id)
        .flat_map(|p| p["pricing_options"].as_array().into_iter().flatten())
        .find(|o| o["pricing_option_id"] == pricing_option_id)
        .and_then(|o| o["currency"].as_str())
        .unwrap_or("EUR")
        .to_string()
}

/// The create success payload: the buy, its status in `media_buy_status`
/// (and `status`, see [`envelope_status`]), and one package per requested
/// package echoing product, pricing option, budget and the buyer's context.
fn success(id: &str, status: &str, args: &Value, currency: &str, legacy: bool) -> Value {
    let requested = args["packages"].as_array().cloned().unwrap_or_default();
    let packages: Vec<Value> = requested
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let mut package = json!({
                "package_id": format!("{id}_p{}", i + 1),
                "product_id": p["product_id"],
                "pricing_option_id": p["pricing_option_id"],
                "budget": p["budget"],
            });
            for echoed in ["bid_price", "pacing", "context"] {
                if !p[echoed].is_null() {
                    package[echoed] = p[echoed].clone();
                }
            }
            package
        })
        .collect();
    let total: f64 = requested.iter().filter_map(|p| p["budget"].as_f64()).sum();
    let mut payload = json!({
        "media_buy_id": id,
        "status": envelope_status(status, legacy),
        "media_buy_status": status,
        "confirmed_at": now(),
        "revision": 1,
        "currency": currency,
        "total_budget": total,
        "packages": packages,
    });
    if !args["context"].is_null() {
        payload["context"] = args["context"].clone();
    }
    payload
}

/// An AdCP `idempotency_key` (`^[A-Za-z0-9_.:-]{16,255}$`), or `None`.
fn key(args: &Value) -> Option<String> {
    let key = args["idempotency_key"].as_str()?;
    let valid = (16..=255).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.:-".contains(c));
    valid.then(|| key.to_string())
}

/// `create_media_buy`: the payload and `isError`, or `None` to never answer.
pub(super) fn create(
    state: &web::Data<State>,
    b: &Behaviour,
    args: &Value,
) -> Option<(Value, bool)> {
    let Some(key) = key(args) else {
        let e = errors(
            "VALIDATION_ERROR",
            "idempotency_key: 16 to 255 of [A-Za-z0-9_.:-]",
        );
        return Some((e, true));
    };
    let mut ledger = state.buys.lock();
    if let Some(earlier) = ledger.buys.iter().find(|x| x.key == key) {
        return Some((replayed(&earlier.answer), earlier.is_error));
    }
    let package = &args["packages"][0];
    // A proposal's buy is known by the proposal (the seller derives its
    // packages).
    let product_id = args["proposal_id"]
        .as_str()
        .or(package["product_id"].as_str())
        .unwrap_or("")
        .to_string();
    let outcome = b.buys.get(&product_id).unwrap_or(&b.default_buy);
    let (verdict, after) = decide(outcome, ledger.buys.is_empty());
    let mut buy = Buy {
        id: None,
        key,
        product_id: product_id.clone(),
        status: String::new(),
        revision: 1,
        task_id: None,
        arguments: args.clone(),
        answer: Value::Null,
        is_error: false,
        created: None,
        resume_to: None,
    };
    let currency = match args["total_budget"]["currency"].as_str() {
        Some(c) => c.to_string(),
        None => currency(
            b,
            &product_id,
            package["pricing_option_id"].as_str().unwrap_or(""),
        ),
    };
    match (verdict, after) {
        (Verdict::Hang, None) => return None,
        (_, Some(after)) => {
            ledger.tasks += 1;
            let task_id = format!("task_{}", ledger.tasks);
            buy.status = "submitted".into();
            buy.answer = json!({"status": "submitted", "task_id": task_id});
            buy.task_id = Some(task_id.clone());
            if !matches!(verdict, Verdict::Hang) {
                let state = state.clone();
                let key = buy.key.clone();
                let legacy = b.legacy_status;
                actix_rt::spawn(async move {
                    actix_rt::time::sleep(after).await;
                    settle(&state, &key, verdict, &currency, legacy).await;
                });
            }
        }
        (Verdict::Reject(code, message), None) => {
            buy.status = "rejected".into();
            buy.answer = errors(code, message);
            buy.is_error = true;
        }
        (Verdict::Accept(status), None) => {
            ledger.created += 1;
            let id = format!("sb_{}", ledger.created);
            let payload = success(&id, status, args, &currency, b.legacy_status);
            buy.id = Some(id);
            buy.status = status.into();
            buy.answer = payload.clone();
            buy.created = Some(payload);
        }
    }
    let answer = (buy.answer.clone(), buy.is_error);
    ledger.buys.push(buy);
    Some(answer)
}

/// Settles a submitted buy and calls back: `completed` with the created buy,
/// or `failed` with the errors.
async fn settle(state: &State, key: &str, verdict: Verdict, currency: &str, legacy: bool) {
    let (config, body) = {
        let ledger = &mut *state.buys.lock();
        let n = ledger.created + 1;
        let Some(buy) = ledger.buys.iter_mut().find(|x| x.key == key) else {
            return;
        };
        let (status, result) = match verdict {
            Verdict::Accept(status) => {
                let id = format!("sb_{n}");
                let payload = success(&id, status, &buy.arguments, currency, legacy);
                buy.id = Some(id);
                buy.status = status.into();
                buy.created = Some(payload.clone());
                ("completed", payload)
            }
            Verdict::Reject(code, message) => {
                buy.status = "rejected".into();
                buy.is_error = true;
                ("failed", errors(code, message))
            }
            Verdict::Hang => return,
        };
        buy.answer = result.clone();
        let config = buy.arguments["push_notification_config"].clone();
        let task_id = buy.task_id.clone().unwrap_or_default();
        let operation_id = config["operation_id"].as_str().unwrap_or("").to_string();
        if buy.id.is_some() {
            ledger.created = n;
        }
        (
            config,
            webhook_payload(&operation_id, &task_id, status, result),
        )
    };
    deliver(state, &config, &body).await;
}

/// Sends `body` to the config's URL as the request asked: HMAC-signed with
/// its credentials (the legacy AdCP scheme the contract uses), as a Bearer
/// token, or unsigned; the attempt is recorded.
async fn deliver(state: &State, config: &Value, body: &Value) {
    let url = config["url"].as_str().unwrap_or("").to_string();
    let raw = serde_json::to_vec(body).unwrap();
    let timestamp = chrono::Utc::now().timestamp();
    let auth = &config["authentication"];
    let credentials = auth["credentials"].as_str().unwrap_or("");
    let scheme = |name: &str| {
        auth["schemes"]
            .as_array()
            .is_some_and(|s| s.iter().any(|x| x == name))
    };
    let signature = scheme("HMAC-SHA256").then(|| sign_callback(credentials, timestamp, &raw));
    let bearer = scheme("Bearer").then(|| format!("Bearer {credentials}"));
    let status = send(&url, &raw, timestamp, signature.as_deref(), bearer).await;
    state.buys.lock().callbacks.push(Callback {
        url,
        body: body.clone(),
        raw,
        timestamp,
        signature,
        status,
    });
}

async fn send(
    url: &str,
    raw: &[u8],
    timestamp: i64,
    signature: Option<&str>,
    bearer: Option<String>,
) -> Option<u16> {
    let mut req = awc::Client::default()
        .post(url)
        .insert_header(("Content-Type", "application/json"));
    if let Some(signature) = signature {
        req = req
            .insert_header(("X-ADCP-Signature", signature))
            .insert_header(("X-ADCP-Timestamp", timestamp.to_string()));
    }
    if let Some(bearer) = bearer {
        req = req.insert_header(("Authorization", bearer));
    }
    let res = req.send_body(raw.to_vec()).await.ok()?;
    Some(res.status().as_u16())
}

/// `get_media_buys`: the named buys (all created ones when none are named)
/// with their current status and revision; unknown ids are
/// `MEDIA_BUY_NOT_FOUND` errors beside them.
pub(super) fn get(state: &State, args: &Value) -> Value {
    let mut ledger = state.buys.lock();
    let ids: Vec<String> = match args["media_buy_ids"].as_array() {
        Some(ids) => ids
            .iter()
            .filter_map(|i| i.as_str().map(String::from))
            .collect(),
        None => ledger.buys.iter().filter_map(|x| x.id.clone()).collect(),
    };
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for id in ids {
        *ledger.status_calls.entry(id.clone()).or_default() += 1;
        let buy = ledger.buys.iter().find(|x| x.id.as_deref() == Some(&id));
        let Some((buy, created)) = buy.and_then(|x| Some((x, x.created.as_ref()?))) else {
            missing.push(
                json!({"code": "MEDIA_BUY_NOT_FOUND", "message": format!("No media buy {id}")}),
            );
            continue;
        };
        let mut entry = json!({"media_buy_id": id, "status": buy.status, "revision": buy.revision});
        for field in ["currency", "total_budget", "confirmed_at", "packages"] {
            entry[field] = created[field].clone();
        }
        found.push(entry);
    }
    let mut payload = json!({"status": "completed", "media_buys": found});
    if !missing.is_empty() {
        payload["errors"] = json!(missing);
    }
    payload
}

/// `get_media_buy_delivery`: each named buy the seller made, with 1,000
/// impressions (5.00 spent) more at each call naming it, one package.
pub(super) fn delivery(state: &State, args: &Value) -> Value {
    let mut ledger = state.buys.lock();
    let ids: Vec<String> = args["media_buy_ids"]
        .as_array()
        .map(|ids| {
            ids.iter()
                .filter_map(|i| i.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let mut deliveries = Vec::new();
    for id in ids {
        let calls = {
            let n = ledger.delivery_calls.entry(id.clone()).or_default();
            *n += 1;
            *n as u64
        };
        let Some(buy) = ledger.buys.iter().find(|x| x.id.as_deref() == Some(&id)) else {
            continue;
        };
        if let Some(report) = ledger.reports.get(&id) {
            let mut entry = report.clone();
            entry["media_buy_id"] = json!(id);
            entry["status"] = json!(buy.status);
            deliveries.push(entry);
            continue;
        }
        let impressions = 1_000 * calls;
        let spend = 5.0 * calls as f64;
        let package_id = buy
            .created
            .as_ref()
            .map_or(Value::Null, |c| c["packages"][0]["package_id"].clone());
        deliveries.push(json!({
            "media_buy_id": id, "status": buy.status,
            "totals": {"impressions": impressions, "spend": spend, "clicks": calls},
            "by_package": [{"package_id": package_id, "impressions": impressions, "spend": spend,
                            "pacing_index": 1.0}],
            "daily_breakdown": [{"date": "2026-12-01", "impressions": impressions, "spend": spend}],
        }));
    }
    json!({
        "reporting_period": {"start": "2026-12-01T00:00:00Z", "end": now()},
        "currency": "USD",
        "media_buy_deliveries": deliveries,
    })
}

/// `update_media_buy` with `paused`: pauses, or resumes to the status before
/// the pause; an effective change adds one to the revision. A repeated
/// idempotency key answers as the first time (`replayed: true`) and changes
/// nothing.
pub(super) fn update(state: &State, b: &Behaviour, args: &Value) -> (Value, bool) {
    let Some(key) = key(args) else {
        let e = errors(
            "VALIDATION_ERROR",
            "idempotency_key: 16 to 255 of [A-Za-z0-9_.:-]",
        );
        return (e, true);
    };
    let mut ledger = state.buys.lock();
    if let Some((answer, is_error)) = ledger.updates.get(&key) {
        return (replayed(answer), *is_error);
    }
    let id = args["media_buy_id"].as_str().unwrap_or("");
    let answer = match ledger.buys.iter_mut().find(|x| x.id.as_deref() == Some(id)) {
        None => (
            errors("MEDIA_BUY_NOT_FOUND", &format!("No media buy {id}")),
            true,
        ),
        Some(buy) => {
            match args["paused"].as_bool() {
                Some(true) if buy.status != "paused" => {
                    buy.resume_to = Some(std::mem::replace(&mut buy.status, "paused".into()));
                    buy.revision += 1;
                }
                Some(false) if buy.status == "paused" => {
                    buy.status = buy.resume_to.take().unwrap_or_else(|| "active".into());
                    buy.revision += 1;
                }
                _ => {}
            }
            let payload = json!({
                "media_buy_id": id,
                "status": envelope_status(&buy.status, b.legacy_status),
                "media_buy_status": buy.status,
                "revision": buy.revision,
            });
            (payload, false)
        }
    };
    ledger.updates.insert(key, answer.clone());
    answer
}

impl FakeSeller {
    /// Every distinct create (one per idempotency key), in arrival order,
    /// rejected ones included.
    pub fn buys(&self) -> Vec<Buy> {
        self.state.buys.lock().buys.clone()
    }

    /// From now on, `get_media_buy_delivery` answers `entry` (its
    /// `media_buy_id` and `status` filled in) for the buy with this seller id.
    pub fn set_report(&self, id: &str, entry: Value) {
        self.state.buys.lock().reports.insert(id.to_string(), entry);
    }

    /// The buy with this seller id.
    pub fn buy(&self, id: &str) -> Option<Buy> {
        let ledger = self.state.buys.lock();
        ledger
            .buys
            .iter()
            .find(|x| x.id.as_deref() == Some(id))
            .cloned()
    }

    /// Media buys the seller created (issued an id for).
    pub fn created_count(&self) -> usize {
        self.state.buys.lock().created
    }

    /// Moves a buy to `status` as the seller would on its own (approval,
    /// flight start, ...); the revision is left alone.
    pub fn set_buy_status(&self, id: &str, status: &str) {
        let mut ledger = self.state.buys.lock();
        let buy = ledger
            .buys
            .iter_mut()
            .find(|x| x.id.as_deref() == Some(id))
            .unwrap_or_else(|| panic!("no media buy {id}"));
        buy.status = status.into();
    }

    /// How many `get_media_buys` calls named this buy id.
    pub fn status_calls(&self, id: &str) -> usize {
        let ledger = self.state.buys.lock();
        ledger.status_calls.get(id).copied().unwrap_or(0)
    }

    /// How many `get_media_buy_delivery` calls named this buy id.
    pub fn delivery_calls(&self, id: &str) -> usize {
        let ledger = self.state.buys.lock();
        ledger.delivery_calls.get(id).copied().unwrap_or(0)
    }

    /// Callbacks sent so far, in order.
    pub fn callbacks(&self) -> Vec<Callback> {
        self.state.buys.lock().callbacks.clone()
    }

    /// Waits until at least `n` callbacks were sent (a bound on a hang, not
    /// a timing assertion).
    pub async fn wait_for_callbacks(&self, n: usize) -> Vec<Callback> {
        for _ in 0..3000 {
            let sent = self.callbacks();
            if sent.len() >= n {
                return sent;
            }
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("expected {n} callbacks, got {}", self.callbacks().len());
    }
}

/// An AdCP `mcp-webhook-payload` for a `create_media_buy` task, with a fresh
/// `idempotency_key` (one per event: send the same bytes again to replay it).
pub fn webhook_payload(operation_id: &str, task_id: &str, status: &str, result: Value) -> Value {
    json!({
        "idempotency_key": uuid::Uuid::new_v4().to_string(),
        "notification_id": format!("{task_id}.{status}"),
        "operation_id": operation_id,
        "task_id": task_id,
        "task_type": "create_media_buy",
        "protocol": "media-buy",
        "status": status,
        "timestamp": now(),
        "result": result,
    })
}

/// The `X-ADCP-Signature` value for `body` sent at `timestamp` (unix
/// seconds): `sha256=` and the lowercase hex HMAC-SHA256 of
/// `"{timestamp}.{body}"` under `secret`, as AdCP's legacy webhook scheme
/// (adcp/signing/webhook_hmac.py).
pub fn sign_callback(secret: &str, timestamp: i64, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("{timestamp}.").as_bytes());
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

/// POSTs `body` to `url` signed with `secret` at `timestamp`, as a seller
/// would; the answer's status. A wrong secret, an old timestamp or the same
/// body twice make bad, stale and replayed callbacks.
pub async fn post_callback(url: &str, secret: &str, body: &[u8], timestamp: i64) -> u16 {
    let signature = sign_callback(secret, timestamp, body);
    send(url, body, timestamp, Some(&signature), None)
        .await
        .unwrap_or_else(|| panic!("callback receiver {url} unreachable"))
}
