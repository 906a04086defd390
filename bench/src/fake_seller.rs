//! Fake seller agents for the discovery and media-buy benchmarks: one
//! hand-written HTTP/1.1 server on 127.0.0.1 answering MCP Streamable HTTP
//! at `/s/{n}/mcp` for storefront `n`, the exchange of the reference SDKs
//! (`initialize` → `notifications/initialized` → `tools/call`, JSON answers
//! with `structuredContent`). The tools: `get_products` (the storefront's
//! products), and AdCP 3.1 `create_media_buy` (every buy made,
//! `pending_start`; the seller's id derived from the idempotency key, so a
//! repeat answers with the same buy) and `get_media_buys` (every id asked
//! listed as `pending_start`). Each storefront has its own answer delay (and
//! optionally another for `create_media_buy`) and products. Hand-written
//! rather than a server library so the recorded answer time is exactly the
//! instant before the answer's bytes are written, and so it costs the
//! shared cores as little as it can.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One storefront's behaviour.
pub struct Shop {
    /// Before every tool's answer, unless `create_delay` says otherwise.
    pub delay: Duration,
    /// Before `create_media_buy`'s answer.
    pub create_delay: Option<Duration>,
    /// The serialized `result` of its `get_products` answer.
    result: String,
}

impl Shop {
    pub fn new(n: usize, delay: Duration, products: usize) -> Shop {
        let list: Vec<Value> = (0..products).map(|j| product(n, j)).collect();
        let payload = json!({"products": list, "status": "completed"});
        let result = json!({
            "content": [{"type": "text", "text": payload.to_string()}],
            "structuredContent": payload,
            "isError": false,
        });
        Shop {
            delay,
            create_delay: None,
            result: result.to_string(),
        }
    }

    /// The same shop answering `create_media_buy` after `delay`.
    pub fn create_after(mut self, delay: Duration) -> Shop {
        self.create_delay = Some(delay);
        self
    }
}

/// A valid AdCP 3.1 product (the shape of `tests/api/fake_seller.rs`), varied
/// per storefront and product so groups are not identical.
fn product(n: usize, j: usize) -> Value {
    let (channel, format, delivery) = match (n + j) % 3 {
        0 => ("ctv", "video_standard_30s", "guaranteed"),
        1 => ("olv", "video_standard_15s", "guaranteed"),
        _ => ("display", "display_300x250_image", "non_guaranteed"),
    };
    let domain = format!("publisher{n}.example");
    let cpm = 4.0 + ((n * 7 + j * 3) % 40) as f64 * 0.75;
    json!({
        "product_id": format!("sf{n}_p{j}"),
        "name": format!("Publisher {n} {channel} package {j}"),
        "description": format!("Premium {channel} inventory across publisher {n}, US and Canada."),
        "delivery_type": delivery,
        "channels": [channel],
        "publisher_properties": [{"publisher_domain": domain, "selection_type": "all"}],
        "format_ids": [{"agent_url": "https://creative.adcontextprotocol.org", "id": format}],
        "pricing_options": [{"pricing_option_id": format!("po-{j}"), "pricing_model": "cpm", "currency": "USD", "fixed_price": cpm}],
        "brief_relevance": "Matches the brief's audience and channels",
        "placements": [{"kind": "seller_inline", "placement_id": format!("pl-{j}"), "mode": "targetable", "name": "Homepage"}],
        "reporting_capabilities": {"available_metrics": ["impressions", "spend", "completed_views"]},
    })
}

/// Answer times keyed by (session tag from the brief, storefront); a
/// storefront asked twice for one session keeps both.
pub type Answers = Arc<Mutex<HashMap<(usize, usize), Vec<Instant>>>>;

/// Tool calls being answered now, and the most at once (the server's
/// outbound concurrency).
#[derive(Default)]
pub struct InFlight {
    now: AtomicUsize,
    peak: AtomicUsize,
}

impl InFlight {
    fn enter(&self) {
        let n = self.now.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(n, Ordering::Relaxed);
    }

    fn leave(&self) {
        self.now.fetch_sub(1, Ordering::Relaxed);
    }

    /// The peak since the last call.
    pub fn take_peak(&self) -> usize {
        self.peak
            .swap(self.now.load(Ordering::Relaxed), Ordering::Relaxed)
    }
}

/// One `create_media_buy` call: the storefront, when the request arrived
/// and when the answer was written.
#[derive(Debug, Clone, Copy)]
pub struct CreateCall {
    pub shop: usize,
    pub arrived: Instant,
    pub answered: Instant,
}

/// What the sellers were asked about media buys.
#[derive(Default)]
pub struct BuyLog {
    pub creates: Mutex<Vec<CreateCall>>,
    /// Arrival times of the `get_media_buys` calls naming each seller id.
    pub polls: Mutex<HashMap<String, Vec<Instant>>>,
    /// `get_media_buys` calls (each names up to 100 ids).
    pub poll_calls: AtomicUsize,
    /// `get_media_buy_delivery` calls.
    pub delivery_calls: AtomicUsize,
}

impl BuyLog {
    pub fn creates(&self) -> Vec<CreateCall> {
        self.creates.lock().map(|c| c.clone()).unwrap_or_default()
    }
}

pub struct FakeSellers {
    pub addr: SocketAddr,
    pub answers: Answers,
    pub in_flight: Arc<InFlight>,
    pub buys: Arc<BuyLog>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeSellers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeSellers {
    pub async fn start(shops: Vec<Shop>) -> anyhow::Result<FakeSellers> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let answers: Answers = Default::default();
        let shops = Arc::new(shops);
        let in_flight: Arc<InFlight> = Default::default();
        let buys: Arc<BuyLog> = Default::default();
        let (log, calls, buy_log) = (answers.clone(), in_flight.clone(), buys.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(
                    stream,
                    shops.clone(),
                    log.clone(),
                    calls.clone(),
                    buy_log.clone(),
                ));
            }
        });
        Ok(FakeSellers {
            addr,
            answers,
            in_flight,
            buys,
            task,
        })
    }

    pub fn url(&self, n: usize) -> String {
        format!("http://{}/s/{n}/mcp", self.addr)
    }

    /// The answer times recorded for one session at one storefront.
    pub fn answered(&self, tag: usize, n: usize) -> Vec<Instant> {
        self.answers
            .lock()
            .map(|a| a.get(&(tag, n)).cloned().unwrap_or_default())
            .unwrap_or_default()
    }
}

/// The brief a benchmark session sends, carrying its tag so each tool call
/// can be traced back to its session.
pub fn brief(tag: usize) -> String {
    format!("bench session {tag}: CTV and online video for a spring launch in the US")
}

fn tag_of(brief: &str) -> Option<usize> {
    brief
        .strip_prefix("bench session ")?
        .split(':')
        .next()?
        .parse()
        .ok()
}

/// Serves keep-alive HTTP/1.1 requests on one connection (requests with a
/// `Content-Length` body, as the server's client sends them).
async fn serve(
    mut stream: TcpStream,
    shops: Arc<Vec<Shop>>,
    answers: Answers,
    in_flight: Arc<InFlight>,
    buys: Arc<BuyLog>,
) {
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let path = head.split_whitespace().nth(1).unwrap_or("").to_string();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let body: Value =
            serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or(Value::Null);
        buf.drain(..head_end + length);
        let shop = path
            .strip_prefix("/s/")
            .and_then(|p| p.strip_suffix("/mcp"))
            .and_then(|n| n.parse::<usize>().ok())
            .and_then(|n| shops.get(n).map(|s| (n, s)));
        let Some((n, shop)) = shop else {
            if respond(&mut stream, "404 Not Found", "", None)
                .await
                .is_err()
            {
                return;
            }
            continue;
        };
        let id = body["id"].to_string();
        let written = match body["method"].as_str().unwrap_or("") {
            "initialize" => {
                let result = r#"{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":false}},"serverInfo":{"name":"bench-seller","version":"1.0.0"}}"#;
                static SESSIONS: AtomicUsize = AtomicUsize::new(0);
                let session = format!("bench-{n}-{}", SESSIONS.fetch_add(1, Ordering::Relaxed));
                respond(&mut stream, "200 OK", &rpc(&id, result), Some(&session)).await
            }
            "notifications/initialized" => respond(&mut stream, "202 Accepted", "", None).await,
            "tools/call" => {
                let arrived = Instant::now();
                let args = &body["params"]["arguments"];
                match body["params"]["name"].as_str().unwrap_or("") {
                    "create_media_buy" => {
                        in_flight.enter();
                        tokio::time::sleep(shop.create_delay.unwrap_or(shop.delay)).await;
                        in_flight.leave();
                        let result = tool_result(&created(n, args));
                        let answer = response("200 OK", &rpc(&id, &result), None);
                        let answered = Instant::now();
                        if let Ok(mut c) = buys.creates.lock() {
                            c.push(CreateCall {
                                shop: n,
                                arrived,
                                answered,
                            });
                        }
                        stream.write_all(&answer).await.context("writing an answer")
                    }
                    "get_media_buys" => {
                        let ids: Vec<&str> = args["media_buy_ids"]
                            .as_array()
                            .map(|a| a.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        buys.poll_calls.fetch_add(1, Ordering::Relaxed);
                        if let Ok(mut p) = buys.polls.lock() {
                            for id in &ids {
                                p.entry((*id).to_string()).or_default().push(arrived);
                            }
                        }
                        in_flight.enter();
                        tokio::time::sleep(shop.delay).await;
                        in_flight.leave();
                        let result = tool_result(&listed(&ids));
                        respond(&mut stream, "200 OK", &rpc(&id, &result), None).await
                    }
                    "get_media_buy_delivery" => {
                        let ids: Vec<&str> = args["media_buy_ids"]
                            .as_array()
                            .map(|a| a.iter().filter_map(Value::as_str).collect())
                            .unwrap_or_default();
                        buys.delivery_calls.fetch_add(1, Ordering::Relaxed);
                        in_flight.enter();
                        tokio::time::sleep(shop.delay).await;
                        in_flight.leave();
                        let result = tool_result(&delivered(&ids));
                        respond(&mut stream, "200 OK", &rpc(&id, &result), None).await
                    }
                    _ => {
                        in_flight.enter();
                        tokio::time::sleep(shop.delay).await;
                        in_flight.leave();
                        let tag = args["brief"]
                            .as_str()
                            .and_then(tag_of)
                            .unwrap_or(usize::MAX);
                        let answer = response("200 OK", &rpc(&id, &shop.result), None);
                        let at = Instant::now();
                        if let Ok(mut a) = answers.lock() {
                            a.entry((tag, n)).or_default().push(at);
                        }
                        stream.write_all(&answer).await.context("writing an answer")
                    }
                }
            }
            _ => {
                let err = format!(
                    r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":-32601,"message":"Method not found"}}}}"#
                );
                respond(&mut stream, "200 OK", &err, None).await
            }
        };
        if written.is_err() {
            return;
        }
    }
}

/// A tool result carrying `payload` as text and as `structuredContent`.
fn tool_result(payload: &Value) -> String {
    json!({
        "content": [{"type": "text", "text": payload.to_string()}],
        "structuredContent": payload,
        "isError": false,
    })
    .to_string()
}

/// The seller's id of the buy made for this idempotency key.
pub fn seller_buy_id(shop: usize, key: &str) -> String {
    format!("bmb_{shop}_{key}")
}

/// AdCP 3.1 `create_media_buy` success: the buy made, `pending_start`, one
/// package per package asked for.
fn created(shop: usize, args: &Value) -> Value {
    let key = args["idempotency_key"].as_str().unwrap_or("none");
    let packages: Vec<Value> = args["packages"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .enumerate()
                .map(|(i, p)| {
                    let package_id = p["context"]["package_id"]
                        .as_str()
                        .map_or_else(|| format!("pkg_{i}"), String::from);
                    json!({
                        "package_id": package_id,
                        "product_id": p["product_id"],
                        "pricing_option_id": p["pricing_option_id"],
                        "budget": p["budget"],
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    json!({
        "status": "completed",
        "media_buy_id": seller_buy_id(shop, key),
        "media_buy_status": "pending_start",
        "confirmed_at": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
        "revision": 1,
        "packages": packages,
    })
}

/// AdCP 3.1 `get_media_buys`: every id asked, `pending_start`.
fn listed(ids: &[&str]) -> Value {
    let buys: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({
                "media_buy_id": id,
                "status": "pending_start",
                "currency": "USD",
                "total_budget": 1000.0,
                "confirmed_at": "2026-12-01T00:00:00Z",
                "revision": 1,
                "packages": [],
            })
        })
        .collect();
    json!({"status": "completed", "media_buys": buys})
}

/// A `get_media_buy_delivery` answer for `ids`: one package each.
fn delivered(ids: &[&str]) -> Value {
    let rows: Vec<Value> = ids
        .iter()
        .map(|id| {
            json!({
                "media_buy_id": id,
                "status": "pending_start",
                "currency": "USD",
                "totals": {"impressions": 1000.0, "spend": 5.0},
                "by_package": [{"package_id": format!("{id}_p1"), "impressions": 1000.0, "spend": 5.0,
                                "pricing_model": "cpm", "rate": 5.0, "currency": "USD"}],
            })
        })
        .collect();
    json!({"reporting_period": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-02T00:00:00Z"},
           "currency": "USD", "media_buy_deliveries": rows})
}

fn rpc(id: &str, result: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#)
}

async fn respond(
    stream: &mut TcpStream,
    status: &str,
    body: &str,
    session: Option<&str>,
) -> anyhow::Result<()> {
    stream
        .write_all(&response(status, body, session))
        .await
        .context("writing an answer")
}

/// Head and body, for one write.
fn response(status: &str, body: &str, session: Option<&str>) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    if let Some(s) = session {
        out.push_str(&format!("mcp-session-id: {s}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
