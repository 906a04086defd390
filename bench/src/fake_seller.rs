//! Fake seller agents for the discovery benchmark: one hand-written
//! HTTP/1.1 server on 127.0.0.1 answering MCP Streamable HTTP at
//! `/s/{n}/mcp` for storefront `n`, the exchange of the reference SDKs
//! (`initialize` → `notifications/initialized` → `tools/call get_products`,
//! JSON answers with `structuredContent.products`). Each storefront has its
//! own answer delay and products. Hand-written rather than a server library
//! so the recorded answer time is exactly the instant before the answer's
//! bytes are written, and so it costs the shared cores as little as it can.

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
    pub delay: Duration,
    /// The serialized `result` of its `tools/call` answer.
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
            result: result.to_string(),
        }
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

pub struct FakeSellers {
    pub addr: SocketAddr,
    pub answers: Answers,
    pub in_flight: Arc<InFlight>,
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
        let (log, calls) = (answers.clone(), in_flight.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, shops.clone(), log.clone(), calls.clone()));
            }
        });
        Ok(FakeSellers {
            addr,
            answers,
            in_flight,
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
                in_flight.enter();
                tokio::time::sleep(shop.delay).await;
                in_flight.leave();
                let tag = body["params"]["arguments"]["brief"]
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
