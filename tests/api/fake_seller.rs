//! Fake seller agents: a real HTTP server on 127.0.0.1, port 0, speaking MCP
//! Streamable HTTP (the wire format of the reference SDKs) with the AdCP
//! `get_products` tool, the media-buy tools (`create_media_buy`,
//! `get_media_buys`, `update_media_buy`, in [`buys`]) and the account tools
//! (`list_accounts`, `sync_accounts`, in [`accounts`]) and
//! `sync_creatives` (in [`creatives`]). Each behaviour a test
//! needs is a switch on [`Behaviour`]; every request is recorded.
#![allow(dead_code)]

mod accounts;
mod buys;
mod creatives;

// `Buy` and `Callback` are for tests that name them; not every build does.
#[allow(unused_imports)]
pub use buys::{Buy, BuyOutcome, Callback, post_callback, sign_callback, webhook_payload};

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use futures_util::StreamExt;
use parking_lot::Mutex;
use serde_json::{Value, json};

/// How the fake answers `tools/call`.
#[derive(Clone, Debug)]
pub struct Behaviour {
    /// The `products` array answered.
    pub products: Value,
    /// Answer with `text/event-stream` (a priming event, a log notification,
    /// then the response; the stream stays open) instead of JSON.
    pub sse: bool,
    /// Wait this long before answering a tool call. A media-buy tool acts
    /// first, then waits: with a client timeout shorter than this, the buy
    /// exists but its answer is lost, as when a seller's reply never arrives.
    pub delay: Duration,
    /// Never answer a tool call.
    pub hang: bool,
    /// `get_products` answers `isError: true` with this `adcp_error`.
    pub error: Option<Value>,
    /// Answer 404 to the first tool call that carries a session id, as a
    /// server that forgot the session.
    pub expire_session_once: bool,
    /// Answer 404 to every tool call with a session (a broken server).
    pub always_expire: bool,
    /// Require `Authorization: Bearer <token>`.
    pub token: Option<String>,
    /// Hand out `Mcp-Session-Id` (a stateless server does not).
    pub sessions: bool,
    /// The payload's `message`.
    pub message: Option<String>,
    /// Put the payload in `structuredContent`; otherwise only as JSON text.
    pub structured: bool,
    /// `create_media_buy`'s outcome by the product id of its (first) package.
    pub buys: HashMap<String, BuyOutcome>,
    /// The outcome for products not in `buys`.
    pub default_buy: BuyOutcome,
    /// Media-buy answers carry the buy's status in the top-level `status`
    /// as well as in `media_buy_status`, as sellers before AdCP 3.1 do; by
    /// default `status` is the task status (`completed`), as 3.1's protocol
    /// envelope requires.
    pub legacy_status: bool,
    /// AdCP `proposals[]` answered beside the products (none when empty);
    /// `create_media_buy` with a `proposal_id` takes its outcome from
    /// `buys` under that id.
    pub proposals: Value,
    /// `list_accounts`' `accounts` array.
    pub accounts: Value,
    /// The seller status `sync_accounts` gives each account.
    pub sync_status: &'static str,
    /// The review status `sync_creatives` gives each creative.
    pub creative_status: &'static str,
    /// `sync_creatives` answers `{errors: [this]}` (isError) instead.
    pub creative_error: Option<Value>,
}

impl Default for Behaviour {
    fn default() -> Self {
        Behaviour {
            products: json!([product("ctv-1", 30.0), product("olv-2", 12.5)]),
            sse: false,
            delay: Duration::ZERO,
            hang: false,
            error: None,
            expire_session_once: false,
            always_expire: false,
            token: None,
            sessions: true,
            message: None,
            structured: true,
            buys: HashMap::new(),
            default_buy: BuyOutcome::Accept { status: "active" },
            legacy_status: false,
            proposals: json!([]),
            accounts: json!([]),
            sync_status: "active",
            creative_status: "pending_review",
            creative_error: None,
        }
    }
}

/// Registers a storefront (as `admin register-storefront` does); its id.
pub async fn storefront(app: &crate::helpers::TestApp, name: &str, url: &str) -> i64 {
    use agentic_api::auth::tenancy::{self, NewStorefront};
    tenancy::register_storefront_with(
        &app.db,
        NewStorefront {
            name: name.into(),
            url: url.into(),
            auth_token: None,
        },
        app.config.url_policy(),
    )
    .await
    .unwrap()
}

/// A fake seller registered as a storefront.
pub async fn seller(app: &crate::helpers::TestApp, name: &str, b: Behaviour) -> (FakeSeller, i64) {
    let s = FakeSeller::start(b).await;
    let id = storefront(app, name, &s.url()).await;
    (s, id)
}

/// A seller that never answers, registered: a progressive session stays
/// active while it is held.
pub async fn hanging(app: &crate::helpers::TestApp) -> FakeSeller {
    let b = Behaviour {
        hang: true,
        ..Behaviour::default()
    };
    seller(app, "Hangs", b).await.0
}

/// A progressive discovery session of `t` for a new advertiser (its id).
pub async fn progressive_session(
    app: &crate::helpers::TestApp,
    t: &crate::helpers::Tenant,
) -> String {
    let adv = crate::helpers::advertiser(app, t).await;
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &t.key,
            &json!({"advertiserId": adv, "progressive": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data()["discoveryId"].as_str().unwrap().to_string()
}

/// A valid AdCP 3.1 product with one fixed CPM price in EUR.
pub fn product(id: &str, cpm: f64) -> Value {
    json!({
        "product_id": id,
        "name": format!("Product {id}"),
        "description": "Premium inventory",
        "delivery_type": "guaranteed",
        "publisher_properties": [{"publisher_domain": "news.example", "selection_type": "all"}],
        "format_ids": [{"agent_url": "https://creative.adcontextprotocol.org", "id": "video_30s"}],
        "pricing_options": [{"pricing_option_id": "po-1", "pricing_model": "cpm", "currency": "EUR", "fixed_price": cpm}],
        "brief_relevance": "Matches the brief",
        "placements": [{"kind": "seller_inline", "placement_id": "home", "mode": "targetable", "name": "Home"}],
        "reporting_capabilities": {"available_metrics": ["impressions"]},
    })
}

/// One request as the fake saw it.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    /// JSON-RPC method (empty for non-MCP paths).
    pub method: String,
    pub session: Option<String>,
    pub protocol_version: Option<String>,
    pub authorization: Option<String>,
    pub user_agent: Option<String>,
    pub accept: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct State {
    behaviour: Mutex<Behaviour>,
    seen: Mutex<Vec<Seen>>,
    live_sessions: Mutex<HashSet<String>>,
    expired_once: Mutex<bool>,
    buys: Mutex<buys::Ledger>,
    /// Account ids `sync_accounts` created.
    synced: Mutex<HashSet<String>>,
    /// `sync_creatives`: each call's arguments, and each creative as last
    /// received.
    creative_syncs: Mutex<Vec<Value>>,
    creatives: Mutex<HashMap<String, Value>>,
}

pub struct FakeSeller {
    /// `http://127.0.0.1:PORT`
    pub base: String,
    pub port: u16,
    state: Arc<State>,
    handle: ServerHandle,
}

impl Drop for FakeSeller {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

impl FakeSeller {
    pub async fn start(behaviour: Behaviour) -> FakeSeller {
        let state = Arc::new(State {
            behaviour: Mutex::new(behaviour),
            ..Default::default()
        });
        let data = web::Data::from(Arc::clone(&state));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/mcp", web::post().to(mcp))
                .route("/echo", web::get().to(echo))
                .route("/redirect", web::route().to(redirect))
                .route("/big", web::get().to(big))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .expect("bind fake seller");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        FakeSeller {
            base: format!("http://127.0.0.1:{port}"),
            port,
            state,
            handle,
        }
    }

    /// The MCP endpoint.
    pub fn url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn set(&self, change: impl FnOnce(&mut Behaviour)) {
        change(&mut self.state.behaviour.lock());
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().clone()
    }

    /// JSON-RPC methods received, in order.
    pub fn methods(&self) -> Vec<String> {
        self.seen().into_iter().map(|s| s.method).collect()
    }
}

fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn record(state: &State, req: &HttpRequest, method: &str, body: Value) {
    state.seen.lock().push(Seen {
        path: req.path().to_string(),
        method: method.to_string(),
        session: header(req, "mcp-session-id"),
        protocol_version: header(req, "mcp-protocol-version"),
        authorization: header(req, "authorization"),
        user_agent: header(req, "user-agent"),
        accept: header(req, "accept"),
        body,
    });
}

async fn mcp(state: web::Data<State>, req: HttpRequest, body: web::Bytes) -> HttpResponse {
    let msg: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let method = msg["method"].as_str().unwrap_or("").to_string();
    record(&state, &req, &method, msg.clone());
    let b = state.behaviour.lock().clone();
    if let Some(token) = &b.token
        && header(&req, "authorization").as_deref() != Some(&format!("Bearer {token}"))
    {
        return HttpResponse::Unauthorized()
            .insert_header(("WWW-Authenticate", "Bearer"))
            .json(json!({"error": "unauthorized"}));
    }
    let session = header(&req, "mcp-session-id");
    match method.as_str() {
        "initialize" => {
            let result = json!({
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {"listChanged": false}},
                "serverInfo": {"name": "fake-seller", "version": "1.0.0"},
            });
            let mut res = answer(&b, &msg["id"], result);
            if b.sessions {
                let id = uuid::Uuid::new_v4().to_string();
                state.live_sessions.lock().insert(id.clone());
                res.headers_mut().insert(
                    actix_web::http::header::HeaderName::from_static("mcp-session-id"),
                    id.parse().unwrap(),
                );
            }
            res
        }
        "notifications/initialized" => {
            if let Some(s) = &session
                && !state.live_sessions.lock().contains(s)
            {
                return HttpResponse::NotFound().finish();
            }
            HttpResponse::Accepted().finish()
        }
        "tools/call" => {
            if let Some(s) = &session {
                let mut expired_once = state.expired_once.lock();
                let forget = b.always_expire || (b.expire_session_once && !*expired_once);
                if forget {
                    *expired_once = true;
                    state.live_sessions.lock().remove(s);
                }
                if !state.live_sessions.lock().contains(s) {
                    return HttpResponse::NotFound().json(json!({
                        "jsonrpc": "2.0", "id": null,
                        "error": {"code": -32001, "message": "Session not found"}
                    }));
                }
            }
            if b.hang {
                std::future::pending::<()>().await;
            }
            let args = &msg["params"]["arguments"];
            let result = match msg["params"]["name"].as_str().unwrap_or("") {
                "get_products" => tool_result(&b),
                "create_media_buy" => match buys::create(&state, &b, args) {
                    Some((payload, is_error)) => wrap(&b, payload, is_error),
                    None => std::future::pending().await,
                },
                "get_media_buys" => wrap(&b, buys::get(&state, args), false),
                "list_accounts" => wrap(&b, json!({"accounts": b.accounts}), false),
                "sync_accounts" => wrap(&b, accounts::sync(&state, &b, args), false),
                "get_media_buy_delivery" => wrap(&b, buys::delivery(&state, args), false),
                "sync_creatives" => {
                    let (payload, is_error) = creatives::sync(&state, &b, args);
                    wrap(&b, payload, is_error)
                }
                "update_media_buy" => {
                    let (payload, is_error) = buys::update(&state, &b, args);
                    wrap(&b, payload, is_error)
                }
                _ => return rpc_error(&msg["id"], -32602, "Unknown tool"),
            };
            if !b.delay.is_zero() {
                actix_rt::time::sleep(b.delay).await;
            }
            answer(&b, &msg["id"], result)
        }
        _ => rpc_error(&msg["id"], -32601, "Method not found"),
    }
}

fn tool_result(b: &Behaviour) -> Value {
    if let Some(error) = &b.error {
        return json!({
            "content": [{"type": "text", "text": error["message"]}],
            "structuredContent": {"adcp_error": error, "errors": [error]},
            "isError": true,
        });
    }
    let mut payload = json!({"products": b.products, "status": "completed"});
    if b.proposals.as_array().is_some_and(|p| !p.is_empty()) {
        payload["proposals"] = b.proposals.clone();
    }
    if let Some(m) = &b.message {
        payload["message"] = json!(m);
    }
    wrap(b, payload, false)
}

/// A tool result carrying `payload` as JSON text and, unless the behaviour
/// says otherwise, as `structuredContent`.
fn wrap(b: &Behaviour, payload: Value, is_error: bool) -> Value {
    let text = payload.to_string();
    if b.structured {
        json!({
            "content": [{"type": "text", "text": text}],
            "structuredContent": payload,
            "isError": is_error,
        })
    } else {
        json!({"content": [{"type": "text", "text": text}], "isError": is_error})
    }
}

fn rpc_error(id: &Value, code: i64, message: &str) -> HttpResponse {
    HttpResponse::Ok()
        .json(json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}))
}

/// A JSON-RPC response as JSON, or as an event stream that stays open.
fn answer(b: &Behaviour, id: &Value, result: Value) -> HttpResponse {
    let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
    if !b.sse {
        return HttpResponse::Ok().json(response);
    }
    let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
                      "params": {"level": "info", "data": "searching inventory"}});
    let frames = vec![
        // A priming event: an id and empty data.
        "id: 0\ndata:\n\n".to_string(),
        format!("event: message\nid: 1\ndata: {note}\n\n"),
        format!("event: message\nid: 2\ndata: {response}\n\n"),
    ];
    let stream = futures_util::stream::iter(
        frames
            .into_iter()
            .map(|f| Ok::<_, actix_web::Error>(web::Bytes::from(f))),
    )
    .chain(futures_util::stream::pending());
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(stream)
}

async fn echo(state: web::Data<State>, req: HttpRequest) -> HttpResponse {
    record(&state, &req, "", Value::Null);
    HttpResponse::Ok().json(json!({"ok": true}))
}

async fn redirect(state: web::Data<State>, req: HttpRequest) -> HttpResponse {
    record(&state, &req, "", Value::Null);
    HttpResponse::Found()
        .insert_header(("Location", "/echo"))
        .finish()
}

async fn big(state: web::Data<State>, req: HttpRequest) -> HttpResponse {
    record(&state, &req, "", Value::Null);
    HttpResponse::Ok().body(vec![b'x'; 64 * 1024])
}
