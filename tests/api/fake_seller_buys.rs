//! The fake seller's media buys over real HTTP (MCP JSON-RPC posted
//! directly): idempotent creates, status reads, pause and resume, refusals,
//! and a submitted buy's signed callback to a receiver on 127.0.0.1.

use std::sync::Arc;
use std::time::Duration;

use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use hmac::{Hmac, KeyInit, Mac};
use parking_lot::Mutex;
use serde_json::{Value, json};
use sha2::Sha256;

use crate::fake_seller::{
    Behaviour, BuyOutcome, FakeSeller, post_callback, sign_callback, webhook_payload,
};

const SECRET: &str = "whsec-adcp-0123456789abcdef0123456789";

/// An MCP session with a seller: `initialize`, then tool calls.
struct Mcp {
    url: String,
    session: Option<String>,
    client: awc::Client,
}

impl Mcp {
    async fn open(seller: &FakeSeller) -> Mcp {
        let mut mcp = Mcp {
            url: seller.url(),
            session: None,
            client: awc::Client::default(),
        };
        let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "test", "version": "0"}}});
        let res = mcp.client.post(&mcp.url).send_json(&init).await.unwrap();
        mcp.session = res
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_string());
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let res = mcp.request().send_json(&note).await.unwrap();
        assert_eq!(res.status(), 202);
        mcp
    }

    fn request(&self) -> awc::ClientRequest {
        let mut req = self
            .client
            .post(&self.url)
            .insert_header(("Accept", "application/json, text/event-stream"));
        if let Some(s) = &self.session {
            req = req.insert_header(("Mcp-Session-Id", s.as_str()));
        }
        req
    }

    /// `tools/call`: the tool result (`structuredContent`, `isError`, ...).
    async fn call(&self, tool: &str, arguments: Value) -> Value {
        self.try_call(tool, arguments, Duration::from_secs(10))
            .await
            .expect("an answer")
    }

    /// `tools/call` given up after `wait`: `None` when no answer came.
    async fn try_call(&self, tool: &str, arguments: Value, wait: Duration) -> Option<Value> {
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}});
        let mut res = self.request().timeout(wait).send_json(&msg).await.ok()?;
        let body: Value = res.json().await.unwrap();
        Some(body["result"].clone())
    }
}

fn create_args(key: &str, product: &str, callback: &str) -> Value {
    json!({
        "idempotency_key": key,
        "account": {"brand": {"domain": "nike.com"}, "operator": "nike.com"},
        "brand": {"domain": "nike.com"},
        "start_time": "2026-07-01T00:00:00Z", "end_time": "2026-07-31T23:59:59Z",
        "packages": [{"product_id": product, "pricing_option_id": "po-1", "budget": 1000.0,
                      "pacing": "even", "context": {"package_id": "pkg_1"}}],
        "push_notification_config": {"url": callback, "operation_id": "mb_1",
            "authentication": {"schemes": ["HMAC-SHA256"], "credentials": SECRET}},
        "context": {"media_buy_id": "mb_1"},
    })
}

fn update_args(key: &str, id: &str, paused: bool) -> Value {
    json!({"idempotency_key": key, "media_buy_id": id, "paused": paused,
           "account": {"brand": {"domain": "nike.com"}, "operator": "nike.com"}})
}

/// What the receiver saw: `X-ADCP-Signature`, `X-ADCP-Timestamp`, raw body.
type Seen = Arc<Mutex<Vec<(Option<String>, Option<String>, Vec<u8>)>>>;

/// A callback receiver: records each request, answers 204.
struct Hooks {
    url: String,
    seen: Seen,
    handle: actix_web::dev::ServerHandle,
}

async fn hook(req: HttpRequest, body: web::Bytes, seen: web::Data<Seen>) -> HttpResponse {
    let h = |n: &str| {
        req.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let signature = h("x-adcp-signature");
    seen.lock()
        .push((signature, h("x-adcp-timestamp"), body.to_vec()));
    HttpResponse::NoContent().finish()
}

impl Hooks {
    async fn start() -> Hooks {
        let seen: Seen = Arc::default();
        let data = web::Data::new(Arc::clone(&seen));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::to(hook))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Hooks {
            url: format!("http://127.0.0.1:{port}/adcp/callbacks/1"),
            seen,
            handle,
        }
    }
}

impl Drop for Hooks {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

/// HMAC-SHA256 over `"{timestamp}.{body}"`, computed here rather than with
/// the fake's own signer.
fn verifies(signature: &str, timestamp: &str, body: &[u8]) -> bool {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET.as_bytes()).unwrap();
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    let hex = signature.strip_prefix("sha256=").unwrap();
    mac.verify_slice(&hex::decode(hex).unwrap()).is_ok()
}

#[actix_web::test]
async fn a_repeated_idempotency_key_creates_one_buy() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let mcp = Mcp::open(&seller).await;
    let args = create_args("0b4e9c1e-5f0a-4c39-9a43-1d2f3e4a5b6c", "ctv-1", "http://x");
    let first = mcp.call("create_media_buy", args.clone()).await;
    let again = mcp.call("create_media_buy", args.clone()).await;

    assert_eq!(first["isError"], false);
    let mut replay = again["structuredContent"].clone();
    assert_eq!(replay["replayed"], true);
    replay.as_object_mut().unwrap().remove("replayed");
    assert_eq!(first["structuredContent"], replay);
    let buy = &first["structuredContent"];
    assert_eq!(buy["media_buy_id"], "sb_1");
    // AdCP 3.1: the task's status on top, the buy's beside it.
    assert_eq!(buy["status"], "completed");
    assert_eq!(buy["media_buy_status"], "active");
    assert_eq!(buy["revision"], 1);
    assert_eq!(buy["currency"], "EUR");
    assert_eq!(buy["total_budget"], 1000.0);
    assert_eq!(buy["context"], json!({"media_buy_id": "mb_1"}));
    assert_eq!(
        buy["packages"],
        json!([{"package_id": "sb_1_p1", "product_id": "ctv-1", "pricing_option_id": "po-1",
                "budget": 1000.0, "pacing": "even", "context": {"package_id": "pkg_1"}}])
    );
    assert!(buy["confirmed_at"].is_string());

    assert_eq!(seller.created_count(), 1);
    let buys = seller.buys();
    assert_eq!(buys.len(), 1);
    assert_eq!(buys[0].id.as_deref(), Some("sb_1"));
    assert_eq!(buys[0].key, "0b4e9c1e-5f0a-4c39-9a43-1d2f3e4a5b6c");
    assert_eq!(buys[0].product_id, "ctv-1");
    assert_eq!(buys[0].arguments, args);

    // A new key is a new buy; a key AdCP would refuse is refused.
    let other = create_args("7d1c4d2e-2a8b-4f6e-b1c0-9e8d7c6b5a49", "olv-2", "http://x");
    let second = mcp.call("create_media_buy", other).await;
    assert_eq!(second["structuredContent"]["media_buy_id"], "sb_2");
    let bad = mcp
        .call("create_media_buy", create_args("short", "ctv-1", "x"))
        .await;
    assert_eq!(bad["isError"], true);
    assert_eq!(
        bad["structuredContent"]["errors"][0]["code"],
        "VALIDATION_ERROR"
    );
    assert_eq!(seller.created_count(), 2);
}

#[actix_web::test]
async fn buys_are_read_moved_paused_resumed_and_refused() {
    let seller = FakeSeller::start(Behaviour {
        default_buy: BuyOutcome::FailOnSecond,
        buys: [(
            "olv-2".to_string(),
            BuyOutcome::Accept {
                status: "pending_creatives",
            },
        )]
        .into(),
        ..Behaviour::default()
    })
    .await;
    let mcp = Mcp::open(&seller).await;
    let first = mcp
        .call(
            "create_media_buy",
            create_args("key-0000000000000001", "ctv-1", "x"),
        )
        .await;
    assert_eq!(first["structuredContent"]["media_buy_id"], "sb_1");
    let pending = mcp
        .call(
            "create_media_buy",
            create_args("key-0000000000000002", "olv-2", "x"),
        )
        .await;
    assert_eq!(
        pending["structuredContent"]["media_buy_status"],
        "pending_creatives"
    );
    // FailOnSecond: a later distinct create of that product is refused.
    let refused = mcp
        .call(
            "create_media_buy",
            create_args("key-0000000000000003", "ctv-1", "x"),
        )
        .await;
    assert_eq!(refused["isError"], true);
    assert_eq!(
        refused["structuredContent"],
        json!({"status": "failed", "errors": [{"code": "PRODUCT_UNAVAILABLE",
                           "message": "No more inventory for this flight"}]})
    );
    assert_eq!(seller.created_count(), 2);
    assert_eq!(seller.buys()[2].status, "rejected");
    assert_eq!(seller.buys()[2].id, None);

    // The seller moves a buy; get_media_buys reports it, unknown ids are errors.
    seller.set_buy_status("sb_2", "active");
    let got = mcp
        .call(
            "get_media_buys",
            json!({"media_buy_ids": ["sb_1", "sb_2", "sb_9"]}),
        )
        .await;
    let got = &got["structuredContent"];
    assert_eq!(got["status"], "completed");
    assert_eq!(got["media_buys"][0]["status"], "active");
    assert_eq!(got["media_buys"][1]["media_buy_id"], "sb_2");
    assert_eq!(got["media_buys"][1]["status"], "active");
    assert_eq!(got["media_buys"][1]["currency"], "EUR");
    assert_eq!(got["media_buys"][1]["total_budget"], 1000.0);
    assert_eq!(got["media_buys"][1]["revision"], 1);
    assert_eq!(got["errors"][0]["code"], "MEDIA_BUY_NOT_FOUND");
    assert_eq!(seller.status_calls("sb_2"), 1);
    assert_eq!(seller.status_calls("sb_3"), 0);

    // Pause (twice with one key: applied once), then resume to where it was.
    seller.set_buy_status("sb_2", "pending_start");
    let pause = update_args("upd-0000000000000001", "sb_2", true);
    let paused = mcp.call("update_media_buy", pause.clone()).await;
    let again = mcp.call("update_media_buy", pause).await;
    assert_eq!(
        paused["structuredContent"],
        json!({"media_buy_id": "sb_2", "status": "completed", "media_buy_status": "paused", "revision": 2})
    );
    assert_eq!(again["structuredContent"]["revision"], 2);
    assert_eq!(again["structuredContent"]["replayed"], true);
    // A seller from before AdCP 3.1 puts the buy's status on top.
    seller.set(|b| b.legacy_status = true);
    let resumed = mcp
        .call(
            "update_media_buy",
            update_args("upd-0000000000000002", "sb_2", false),
        )
        .await;
    assert_eq!(resumed["structuredContent"]["status"], "pending_start");
    assert_eq!(
        resumed["structuredContent"]["media_buy_status"],
        "pending_start"
    );
    assert_eq!(resumed["structuredContent"]["revision"], 3);
    assert_eq!(seller.buy("sb_2").unwrap().revision, 3);
    let missing = mcp
        .call(
            "update_media_buy",
            update_args("upd-0000000000000003", "sb_9", true),
        )
        .await;
    assert_eq!(missing["isError"], true);
}

#[actix_web::test]
async fn a_hang_creates_nothing_and_a_lost_answer_is_replayed() {
    let seller = FakeSeller::start(Behaviour {
        default_buy: BuyOutcome::Hang,
        ..Behaviour::default()
    })
    .await;
    let mcp = Mcp::open(&seller).await;
    let args = create_args("key-0000000000000001", "ctv-1", "x");
    let wait = Duration::from_millis(300);
    assert_eq!(
        mcp.try_call("create_media_buy", args.clone(), wait).await,
        None
    );
    assert!(seller.buys().is_empty());

    // The seller creates the buy, but its answer comes too late.
    seller.set(|b| {
        b.default_buy = BuyOutcome::Accept { status: "active" };
        b.delay = Duration::from_secs(2);
    });
    assert_eq!(
        mcp.try_call("create_media_buy", args.clone(), wait).await,
        None
    );
    assert_eq!(seller.created_count(), 1);
    // The retry with the same key gets that buy; no second one is made.
    seller.set(|b| b.delay = Duration::ZERO);
    let retry = mcp.call("create_media_buy", args).await;
    assert_eq!(retry["structuredContent"]["media_buy_id"], "sb_1");
    assert_eq!(seller.created_count(), 1);
}

#[actix_web::test]
async fn a_submitted_buy_calls_back_signed_with_the_requests_secret() {
    let hooks = Hooks::start().await;
    let seller = FakeSeller::start(Behaviour {
        default_buy: BuyOutcome::submitted(
            BuyOutcome::Accept {
                status: "pending_creatives",
            },
            Duration::from_millis(50),
        ),
        buys: [(
            "olv-2".to_string(),
            BuyOutcome::submitted(
                BuyOutcome::Reject {
                    code: "POLICY_VIOLATION",
                    message: "Category not accepted",
                },
                Duration::from_millis(50),
            ),
        )]
        .into(),
        ..Behaviour::default()
    })
    .await;
    let mcp = Mcp::open(&seller).await;
    let args = create_args("key-0000000000000001", "ctv-1", &hooks.url);
    let answer = mcp.call("create_media_buy", args.clone()).await;
    assert_eq!(
        answer["structuredContent"],
        json!({"status": "submitted", "task_id": "task_1"})
    );
    assert_eq!(seller.created_count(), 0, "not yet: the task is submitted");
    assert_eq!(seller.buys()[0].status, "submitted");

    let sent = seller.wait_for_callbacks(1).await;
    assert_eq!(sent[0].status, Some(204));
    let seen = hooks.seen.lock().clone();
    assert_eq!(seen.len(), 1);
    let (signature, timestamp, raw) = &seen[0];
    assert_eq!(raw, &sent[0].raw);
    assert!(verifies(
        signature.as_deref().unwrap(),
        timestamp.as_deref().unwrap(),
        raw
    ));
    let body: Value = serde_json::from_slice(raw).unwrap();
    assert_eq!(body["operation_id"], "mb_1");
    assert_eq!(body["task_id"], "task_1");
    assert_eq!(body["task_type"], "create_media_buy");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["result"]["media_buy_id"], "sb_1");
    assert_eq!(body["result"]["status"], "completed");
    assert_eq!(body["result"]["media_buy_status"], "pending_creatives");
    assert_eq!(body["result"]["context"], json!({"media_buy_id": "mb_1"}));
    assert_eq!(seller.created_count(), 1);
    assert_eq!(seller.buy("sb_1").unwrap().status, "pending_creatives");
    // Once settled, the same key answers with the buy.
    let replay = mcp.call("create_media_buy", args).await;
    assert_eq!(replay["structuredContent"]["media_buy_id"], "sb_1");
    assert_eq!(replay["structuredContent"]["replayed"], true);

    // A submitted buy the seller then refuses: a failed callback with errors.
    let refused = create_args("key-0000000000000002", "olv-2", &hooks.url);
    mcp.call("create_media_buy", refused).await;
    let sent = seller.wait_for_callbacks(2).await;
    assert_eq!(sent[1].body["status"], "failed");
    assert_eq!(sent[1].body["task_id"], "task_2");
    assert_eq!(
        sent[1].body["result"]["errors"][0]["code"],
        "POLICY_VIOLATION"
    );
    assert_eq!(seller.created_count(), 1);
}

#[actix_web::test]
async fn callbacks_can_be_signed_and_sent_by_hand() {
    // The vector from the AdCP Python SDK's signer
    // (adcp.webhooks.get_adcp_signed_headers_for_webhook).
    assert_eq!(
        sign_callback(
            SECRET,
            1_700_000_000,
            br#"{"task_id":"task_1","status":"completed"}"#
        ),
        "sha256=1037c3567d1f0b1308f096856b641d0d1d20e27d9141e729e058bfae90078f7c"
    );

    let hooks = Hooks::start().await;
    let body = webhook_payload(
        "mb_1",
        "task_1",
        "completed",
        json!({"media_buy_id": "sb_1"}),
    );
    let raw = serde_json::to_vec(&body).unwrap();
    let now = chrono::Utc::now().timestamp();
    assert_eq!(post_callback(&hooks.url, SECRET, &raw, now).await, 204);
    let seen = hooks.seen.lock().clone();
    let (signature, timestamp, sent) = &seen[0];
    assert_eq!(sent, &raw);
    assert_eq!(timestamp.as_deref(), Some(now.to_string().as_str()));
    assert!(verifies(
        signature.as_deref().unwrap(),
        &now.to_string(),
        &raw
    ));
}
