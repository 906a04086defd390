//! Webhook fan-out (issue 10): how many webhook deliveries a second the
//! durable outbox sends, and how long a committed revision takes to reach a
//! subscriber. Receivers are hand-written HTTP/1.1 servers in this process
//! (one listener, path `/h/{n}` for subscription `n`) that answer 200 at
//! once, then record the receipt time, parse the body's `discoveryId`,
//! `revision` and `timestamp`, and verify the signature of every tenth
//! request. A stream of revisions comes from progressive discovery sessions
//! against fast fake storefronts (a session over k storefronts commits
//! revisions 0..=k, one per answer when answers are spaced apart).
//! Latency is receipt minus the event's `timestamp` (the revision's time,
//! taken before its transaction; millisecond resolution, truncated, so a
//! latency reads up to 1 ms long). After the revisions stop, the run waits
//! for the queue to drain and counts lost and duplicated deliveries. Then a
//! plain client with one connection per subscription POSTs the same body
//! to the same receivers for a few seconds: the receivers' ceiling.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, bail};
use hmac::{Hmac, KeyInit, Mac};
use serde::Deserialize;
use serde_json::json;
use sha2::Sha256;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::Args;
use crate::discovery::{create_advertiser, register_storefronts, shops, start_session};
use crate::fake_seller::{FakeSellers, find};
use crate::load::{Target, percentile_ms};
use crate::server::{FreshDatabase, Server, cpu_seconds_of};

const SUBSCRIPTIONS: &str = "/api/v2/buyer/webhook-subscriptions";
const EVENT: &str = "discovery.revision";

/// Subscription `n`'s signing secret.
fn secret(n: usize) -> String {
    format!("bench-webhook-secret-{n:05}")
}

/// Lowercase hex HMAC-SHA256, as the server signs.
fn sign(secret: &[u8], body: &[u8]) -> String {
    match Hmac::<Sha256>::new_from_slice(secret) {
        Ok(mut mac) => {
            mac.update(body);
            hex::encode(mac.finalize().into_bytes())
        }
        Err(_) => String::new(),
    }
}

fn unix_us(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// One webhook delivery as received.
struct Receipt {
    sub: u32,
    /// Unix µs when its body had been read.
    at_us: i64,
    /// Unix µs of the event's `timestamp`.
    commit_us: i64,
    /// Index into `Log::discoveries`.
    discovery: u32,
    revision: i64,
    delivery: String,
}

#[derive(Default)]
struct Log {
    receipts: Vec<Receipt>,
    discoveries: HashMap<String, u32>,
    /// Requests of the ceiling client.
    ceiling: u64,
    requests: u64,
    signatures_checked: u64,
    bad_signatures: u64,
    errors: u64,
    first_errors: Vec<String>,
    /// One delivered body, for the ceiling client.
    sample: Option<Vec<u8>>,
    /// Bytes of every delivered body.
    body_bytes: u64,
}

impl Log {
    fn error(&mut self, e: String) {
        self.errors += 1;
        if self.first_errors.len() < 5 {
            self.first_errors.push(e);
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct EventBody<'a> {
    event: &'a str,
    discovery_id: &'a str,
    revision: i64,
    timestamp: &'a str,
}

struct Headers {
    path: String,
    length: usize,
    signature: String,
    delivery: String,
    event: String,
}

fn parse_head(head: &[u8]) -> Headers {
    let head = String::from_utf8_lossy(head);
    let mut lines = head.split("\r\n");
    let path = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("")
        .to_string();
    let mut h = Headers {
        path,
        length: 0,
        signature: String::new(),
        delivery: String::new(),
        event: String::new(),
    };
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("content-length") {
            h.length = v.parse().unwrap_or(0);
        } else if k.eq_ignore_ascii_case("x-webhook-signature") {
            h.signature = v.to_string();
        } else if k.eq_ignore_ascii_case("x-webhook-id") {
            h.delivery = v.to_string();
        } else if k.eq_ignore_ascii_case("x-webhook-event") {
            h.event = v.to_string();
        }
    }
    h
}

pub struct Receivers {
    addr: SocketAddr,
    log: Arc<Mutex<Log>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Receivers {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Receivers {
    async fn start(subscriptions: usize) -> anyhow::Result<Receivers> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let log: Arc<Mutex<Log>> = Default::default();
        let secrets: Arc<Vec<String>> = Arc::new((0..subscriptions).map(secret).collect());
        let shared = log.clone();
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve(stream, shared.clone(), secrets.clone()));
            }
        });
        Ok(Receivers { addr, log, task })
    }

    fn url(&self, n: usize) -> String {
        format!("http://{}/h/{n}", self.addr)
    }

    fn received(&self) -> usize {
        self.log.lock().map(|l| l.receipts.len()).unwrap_or(0)
    }

    fn take(&self) -> Log {
        self.log
            .lock()
            .map(|mut l| {
                let kept = Log {
                    discoveries: l.discoveries.clone(),
                    ..Log::default()
                };
                std::mem::replace(&mut *l, kept)
            })
            .unwrap_or_default()
    }
}

const OK: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n";

/// Keep-alive HTTP/1.1 with `Content-Length` bodies (as awc and hyper send).
async fn serve(mut stream: TcpStream, log: Arc<Mutex<Log>>, secrets: Arc<Vec<String>>) {
    let mut buf: Vec<u8> = Vec::with_capacity(16 * 1024);
    loop {
        let mut scanned = 0;
        let head_end = loop {
            if let Some(i) = find(&buf[scanned..], b"\r\n\r\n") {
                break scanned + i + 4;
            }
            scanned = buf.len().saturating_sub(3);
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        };
        let h = parse_head(&buf[..head_end]);
        while buf.len() < head_end + h.length {
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
        let at = SystemTime::now();
        if stream.write_all(OK).await.is_err() {
            return;
        }
        if let Ok(mut log) = log.lock() {
            record(
                &mut log,
                &secrets,
                &h,
                &buf[head_end..head_end + h.length],
                at,
            );
        }
        buf.drain(..head_end + h.length);
    }
}

fn record(log: &mut Log, secrets: &[String], h: &Headers, body: &[u8], at: SystemTime) {
    let (ceiling, n) = match h.path.split_once('/').map(|(_, p)| p).and_then(|p| {
        let (kind, n) = p.split_once('/')?;
        Some((kind == "c", n.parse::<usize>().ok()?))
    }) {
        Some((c, n)) if n < secrets.len() => (c, n),
        _ => return log.error(format!("request to {}", h.path)),
    };
    log.requests += 1;
    if log.requests % 10 == 1 {
        if sign(secrets[n].as_bytes(), body) == h.signature {
            log.signatures_checked += 1;
        } else {
            log.bad_signatures += 1;
        }
    }
    let ev: EventBody = match serde_json::from_slice(body) {
        Ok(e) => e,
        Err(e) => return log.error(format!("body: {e}")),
    };
    let commit_us = match chrono::DateTime::parse_from_rfc3339(ev.timestamp) {
        Ok(t) => t.timestamp_micros(),
        Err(e) => return log.error(format!("timestamp {}: {e}", ev.timestamp)),
    };
    if ceiling {
        log.ceiling += 1;
        return;
    }
    if ev.event != EVENT || h.event != EVENT || h.delivery.is_empty() {
        return log.error(format!(
            "event {} / header {} / id {:?}",
            ev.event, h.event, h.delivery
        ));
    }
    let next = log.discoveries.len() as u32;
    let discovery = *log
        .discoveries
        .entry(ev.discovery_id.to_string())
        .or_insert(next);
    // A revision that landed a group: the body the ceiling client sends.
    if log.sample.is_none() && ev.revision > 0 {
        log.sample = Some(body.to_vec());
    }
    log.body_bytes += body.len() as u64;
    log.receipts.push(Receipt {
        sub: n as u32,
        at_us: unix_us(at),
        commit_us,
        discovery,
        revision: ev.revision,
        delivery: h.delivery.clone(),
    });
}

/// Sessions started at a steady pace.
struct Generated {
    ids: Vec<String>,
    failed: Vec<String>,
    start: SystemTime,
    end: SystemTime,
}

struct Setup {
    addr: SocketAddr,
    auth: String,
    advertiser: String,
    storefronts: Arc<Vec<i64>>,
}

async fn generate(cx: &Setup, sessions_per_s: f64, seconds: u64, first_tag: usize) -> Generated {
    let total = ((sessions_per_s * seconds as f64).round() as usize).max(1);
    let period = Duration::from_secs_f64(1.0 / sessions_per_s);
    let began = tokio::time::Instant::now();
    let start = SystemTime::now();
    let mut tasks = Vec::with_capacity(total);
    for i in 0..total {
        tokio::time::sleep_until(began + period.mul_f64(i as f64)).await;
        let (addr, auth, adv, sf) = (
            cx.addr,
            cx.auth.clone(),
            cx.advertiser.clone(),
            cx.storefronts.clone(),
        );
        tasks.push(tokio::spawn(async move {
            start_session(addr, &auth, &adv, first_tag + i, &sf).await
        }));
    }
    let end = SystemTime::now();
    let mut g = Generated {
        ids: Vec::new(),
        failed: Vec::new(),
        start,
        end,
    };
    for t in tasks {
        match t.await {
            Ok(Ok(id)) => g.ids.push(id),
            Ok(Err(e)) => g.failed.push(e.to_string()),
            Err(e) => g.failed.push(e.to_string()),
        }
    }
    g
}

/// The session's last revision once it completed.
async fn final_revision(cx: &Setup, id: &str) -> anyhow::Result<i64> {
    let path =
        format!("/api/v2/buyer/discovery/{id}/discover-products?groupLimit=1&productsPerGroup=1");
    let t = Target::get(cx.addr, &path, Some(&cx.auth));
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let v = t.json("GET", None).await?;
        if v["data"]["resultsComplete"].as_bool() == Some(true) {
            return v["data"]["revision"].as_i64().context("revision");
        }
        if Instant::now() > deadline {
            bail!("session {id} not complete after 60 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until `expected` deliveries arrived (then a second more, for late
/// duplicates), or nothing arrived for `quiet`.
async fn drain(rx: &Receivers, expected: usize, quiet: Duration) {
    let mut last = rx.received();
    let mut since = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = rx.received();
        if now >= expected {
            tokio::time::sleep(Duration::from_secs(1)).await;
            return;
        }
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() > quiet {
            return;
        }
    }
}

/// The receivers' ceiling: `connections` keep-alive clients on a thread of
/// their own (the receivers keep this one), each POSTing `body` (signed as
/// subscription n) in a loop.
async fn ceiling(
    addr: SocketAddr,
    connections: usize,
    seconds: u64,
    body: Vec<u8>,
) -> anyhow::Result<(u64, u64, f64, Vec<u32>)> {
    let body = bytes::Bytes::from(body);
    let (done, result) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let _ = done.send(client_thread(addr, connections, seconds, body));
    });
    result.await.context("ceiling thread")?
}

fn client_thread(
    addr: SocketAddr,
    connections: usize,
    seconds: u64,
    body: bytes::Bytes,
) -> anyhow::Result<(u64, u64, f64, Vec<u32>)> {
    {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        rt.block_on(async move {
            let start = Instant::now();
            let deadline = start + Duration::from_secs(seconds);
            let tasks: Vec<_> = (0..connections)
                .map(|n| tokio::spawn(post_loop(addr, n, body.clone(), deadline)))
                .collect();
            let (mut ok, mut errors, mut lat) = (0, 0, Vec::new());
            for t in tasks {
                let (o, e, l) = t.await.context("ceiling worker")??;
                ok += o;
                errors += e;
                lat.extend(l);
            }
            Ok((ok, errors, start.elapsed().as_secs_f64(), lat))
        })
    }
}

async fn post_loop(
    addr: SocketAddr,
    n: usize,
    body: bytes::Bytes,
    deadline: Instant,
) -> anyhow::Result<(u64, u64, Vec<u32>)> {
    use http_body_util::{BodyExt, Full};
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let signature = sign(secret(n).as_bytes(), &body);
    let path = format!("/c/{n}");
    let (mut ok, mut errors, mut lat) = (0, 0, Vec::new());
    while Instant::now() < deadline {
        let req = hyper::Request::post(&path)
            .header("host", addr.to_string())
            .header("content-type", "application/json")
            .header("x-webhook-signature", &signature)
            .header("x-webhook-id", "whd_ceiling")
            .header("x-webhook-event", EVENT)
            .body(Full::new(body.clone()))?;
        let t0 = Instant::now();
        let res = tx.send_request(req).await?;
        let good = res.status().is_success();
        res.into_body().collect().await?;
        if good {
            ok += 1;
            lat.push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
        } else {
            errors += 1;
        }
    }
    Ok((ok, errors, lat))
}

/// What one size measured.
struct Row {
    subscriptions: usize,
    /// Revisions per second asked for, and the seconds they were asked over.
    rate: f64,
    generation_s: f64,
    sessions: usize,
    revisions: usize,
    expected: usize,
    received: usize,
    /// Deliveries/s from first to last receipt, and while revisions were
    /// being generated.
    rate_all: f64,
    rate_during: f64,
    /// From the end of generation to the last receipt, and deliveries/s
    /// then (delivery without new revisions competing for the writer).
    drain_s: f64,
    rate_drain: f64,
    lat_us: Vec<u32>,
    lost: usize,
    duplicate_ids: usize,
    duplicate_keys: usize,
    out_of_order: usize,
    errors: Vec<String>,
    signatures_checked: u64,
    ceiling_rps: f64,
    ceiling_p99: f64,
    ceiling_errors: u64,
    server_cores: f64,
    bench_cores: f64,
    /// The ceiling client's body, and the mean delivered body.
    body_bytes: (usize, u64),
    /// See [`breakdown`].
    breakdown: [Vec<u32>; 3],
}

/// Default revisions per second: a moderate pace for a few subscriptions
/// (latency without queueing), enough to saturate delivery for many.
fn default_rate(subscriptions: usize) -> f64 {
    if subscriptions <= 10 {
        50.0
    } else {
        (5000.0 / subscriptions as f64).clamp(20.0, 100.0)
    }
}

async fn run_size(args: &Args, subs: usize) -> anyhow::Result<(Row, &'static str)> {
    let per = args.per_session.max(1);
    let (min, max) = args.delays_ms.unwrap_or((20, 20 * per as u64));
    // A fresh PostgreSQL database per server (dropped after it).
    let fresh = match args.database_url.as_deref() {
        Some(u) if u.starts_with("postgres") => {
            Some(FreshDatabase::create(u, &format!("wh{subs}"))?)
        }
        _ => None,
    };
    let url = fresh
        .as_ref()
        .map(|f| f.url.as_str())
        .or(args.database_url.as_deref());
    // The storefronts' delays split the range evenly: a session's answers
    // are spaced apart, so each lands in its own revision.
    let sellers = FakeSellers::start(shops(
        per,
        Duration::from_millis(min),
        Duration::from_millis(max),
    ))
    .await?;
    let rx = Receivers::start(subs).await?;
    // Loopback sellers and receivers are refused unless insecure URLs are allowed.
    let server = Server::start_with(url, &[("AGENTIC_ALLOW_INSECURE_URLS", "true")]).await?;
    let auth = format!("Bearer {}", server.seed_tenant("platform:write")?);
    let storefronts = register_storefronts(&server, &sellers, per)?;
    let cx = Setup {
        addr: server.addr,
        advertiser: create_advertiser(&server, &auth).await?,
        auth,
        storefronts: Arc::new(storefronts),
    };
    let subscribe = Target::get(server.addr, SUBSCRIPTIONS, Some(&cx.auth));
    let mut first_sub = String::new();
    for n in 0..subs {
        let created = subscribe
            .json(
                "POST",
                Some(json!({"url": rx.url(n), "secret": secret(n), "eventTypes": [EVENT]})),
            )
            .await
            .with_context(|| format!("creating subscription {n}"))?;
        if n == 0 {
            first_sub = created["data"]["subscription"]["id"]
                .as_str()
                .context("subscription id")?
                .to_string();
        }
    }
    // Warm-up: one session, all its deliveries (lanes started, connections
    // pooled, caches filled), then forgotten.
    let warm = start_session(cx.addr, &cx.auth, &cx.advertiser, 1, &cx.storefronts).await?;
    let warm_revs = final_revision(&cx, &warm).await? as usize + 1;
    drain(&rx, warm_revs * subs, Duration::from_secs(10)).await;
    let warm_log = rx.take();
    if warm_log.receipts.len() != warm_revs * subs {
        bail!(
            "warm-up: {} of {} deliveries arrived",
            warm_log.receipts.len(),
            warm_revs * subs
        );
    }

    let rate = args.revision_rate.unwrap_or_else(|| default_rate(subs));
    let sessions_per_s = rate / (per + 1) as f64;
    let cpu0 = (server.cpu_seconds(), cpu_seconds_of("self"));
    let generated = generate(&cx, sessions_per_s, args.seconds.max(1), 2).await;
    let mut errors: Vec<String> = generated
        .failed
        .iter()
        .map(|e| format!("session start: {e}"))
        .collect();
    // Every session's revisions 0..=final, for every subscription.
    let mut finals = Vec::with_capacity(generated.ids.len());
    for id in &generated.ids {
        match final_revision(&cx, id).await {
            Ok(r) => finals.push((id.clone(), r)),
            Err(e) => errors.push(e.to_string()),
        }
    }
    let revisions: usize = finals.iter().map(|(_, r)| *r as usize + 1).sum();
    let expected = revisions * subs;
    drain(&rx, expected, Duration::from_secs(20)).await;
    let cpu1 = (server.cpu_seconds(), cpu_seconds_of("self"));
    let log = rx.take();

    // Subscriptions still active and without failures.
    let listed = Target::get(
        server.addr,
        &format!("{SUBSCRIPTIONS}?take=100"),
        Some(&cx.auth),
    );
    let mut skip = 0;
    loop {
        let page = Target::get(
            server.addr,
            &format!("{}&skip={skip}", listed.path),
            Some(&cx.auth),
        )
        .json("GET", None)
        .await?;
        let items = page["data"].as_array().cloned().unwrap_or_default();
        for s in &items {
            if s["status"] != "active" || !s["lastFailure"].is_null() {
                errors.push(format!(
                    "subscription {}: status {}, failures {}, last failure {}",
                    s["id"], s["status"], s["failureCount"], s["lastFailure"]
                ));
            }
        }
        skip += items.len();
        if items.is_empty() || skip >= subs {
            break;
        }
    }

    let breakdown = breakdown(&cx, &first_sub, &log).await?;
    let body = log.sample.clone().unwrap_or_else(|| b"{}".to_vec());
    let (c_ok, c_err, c_secs, c_lat) = ceiling(rx.addr, subs, 5, body.clone()).await?;
    let mut row = analyse(
        subs,
        rate,
        &generated,
        &finals,
        &log,
        errors,
        (
            c_ok as f64 / c_secs.max(1e-9),
            percentile_ms(&c_lat, 99.0),
            c_err,
        ),
        (
            body.len(),
            log.body_bytes / log.receipts.len().max(1) as u64,
        ),
        (cpu0, cpu1),
    );
    row.breakdown = breakdown;
    Ok((row, server.backend()))
}

/// Subscription 0's latencies split at the points its delivery log shows
/// (µs samples): the event's `timestamp` to the job's `queuedAt` (written
/// in the revision's transaction, just before its commit: waiting for the
/// writer and the transaction's statements), `queuedAt` to `attemptedAt`
/// (the commit, waking the lane, reading the job and the body), and
/// `attemptedAt` to receipt (the POST). `timestamp` and `attemptedAt` have
/// millisecond resolution.
async fn breakdown(cx: &Setup, sub: &str, log: &Log) -> anyhow::Result<[Vec<u32>; 3]> {
    let mut logged: HashMap<String, (i64, i64)> = HashMap::new();
    let mut skip = 0;
    loop {
        let path = format!("{SUBSCRIPTIONS}/{sub}/deliveries?take=100&skip={skip}");
        let page = Target::get(cx.addr, &path, Some(&cx.auth))
            .json("GET", None)
            .await?;
        let items = page["data"].as_array().cloned().unwrap_or_default();
        for d in &items {
            let at = |k: &str| {
                d[k].as_str()
                    .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                    .map(|t| t.timestamp_micros())
            };
            if let (Some(id), Some(queued), Some(attempted)) =
                (d["deliveryId"].as_str(), at("queuedAt"), at("attemptedAt"))
            {
                logged.insert(id.to_string(), (queued, attempted));
            }
        }
        skip += items.len();
        if items.len() < 100 {
            break;
        }
    }
    let mut out: [Vec<u32>; 3] = Default::default();
    let us = |d: i64| d.clamp(0, u32::MAX as i64) as u32;
    for r in log.receipts.iter().filter(|r| r.sub == 0) {
        if let Some(&(queued, attempted)) = logged.get(&r.delivery) {
            out[0].push(us(queued - r.commit_us));
            out[1].push(us(attempted - queued));
            out[2].push(us(r.at_us - attempted));
        }
    }
    Ok(out)
}

type Cpu = (Option<f64>, Option<f64>);

#[allow(clippy::too_many_arguments)]
fn analyse(
    subs: usize,
    rate: f64,
    generated: &Generated,
    finals: &[(String, i64)],
    log: &Log,
    mut errors: Vec<String>,
    ceiling: (f64, f64, u64),
    body_bytes: (usize, u64),
    cpu: (Cpu, Cpu),
) -> Row {
    let r = &log.receipts;
    let revisions: usize = finals.iter().map(|(_, f)| *f as usize + 1).sum();
    let expected = revisions * subs;
    // Expected (subscription, session, revision) triples.
    let mut wanted: HashSet<(u32, u32, i64)> = HashSet::with_capacity(expected);
    let mut unknown_sessions = 0;
    for (id, last) in finals {
        let Some(&d) = log.discoveries.get(id) else {
            unknown_sessions += 1;
            for s in 0..subs as u32 {
                for rev in 0..=*last {
                    // Never seen: all of them lost (a placeholder index).
                    wanted.insert((s, u32::MAX - unknown_sessions, rev));
                }
            }
            continue;
        };
        for s in 0..subs as u32 {
            for rev in 0..=*last {
                wanted.insert((s, d, rev));
            }
        }
    }
    let mut ids: HashSet<&str> = HashSet::with_capacity(r.len());
    let mut keys: HashSet<(u32, u32, i64)> = HashSet::with_capacity(r.len());
    let mut last_rev: HashMap<(u32, u32), i64> = HashMap::new();
    let (mut duplicate_ids, mut duplicate_keys, mut out_of_order, mut unexpected) = (0, 0, 0, 0);
    let mut lat_us = Vec::with_capacity(r.len());
    for x in r {
        if !ids.insert(&x.delivery) {
            duplicate_ids += 1;
        }
        let key = (x.sub, x.discovery, x.revision);
        if !keys.insert(key) {
            duplicate_keys += 1;
        }
        if !wanted.contains(&key) {
            unexpected += 1;
        }
        let prev = last_rev.entry((x.sub, x.discovery)).or_insert(-1);
        if x.revision <= *prev {
            out_of_order += 1;
        }
        *prev = (*prev).max(x.revision);
        lat_us.push((x.at_us - x.commit_us).clamp(0, u32::MAX as i64) as u32);
    }
    let lost = wanted.difference(&keys).count();
    if unexpected > 0 {
        errors.push(format!("{unexpected} deliveries of revisions not expected"));
    }
    if log.bad_signatures > 0 {
        errors.push(format!("{} bad signatures", log.bad_signatures));
    }
    if log.errors > 0 {
        errors.push(format!(
            "{} bad requests at the receivers, first: {:?}",
            log.errors, log.first_errors
        ));
    }
    let first = r.iter().map(|x| x.at_us).min().unwrap_or(0);
    let last = r.iter().map(|x| x.at_us).max().unwrap_or(0);
    let rate_all = if last > first {
        r.len() as f64 / ((last - first) as f64 / 1e6)
    } else {
        0.0
    };
    let (g0, g1) = (unix_us(generated.start), unix_us(generated.end));
    let during = r.iter().filter(|x| x.at_us >= g0 && x.at_us <= g1).count();
    let rate_during = during as f64 / ((g1 - g0).max(1) as f64 / 1e6);
    let after = r.iter().filter(|x| x.at_us > g1).count();
    let rate_drain = if last > g1 {
        after as f64 / ((last - g1) as f64 / 1e6)
    } else {
        0.0
    };
    let window = (last.max(g1) - g0).max(1) as f64 / 1e6;
    let ((s0, b0), (s1, b1)) = cpu;
    let cores = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => (b - a) / window,
        _ => 0.0,
    };
    Row {
        subscriptions: subs,
        rate,
        generation_s: (g1 - g0).max(1) as f64 / 1e6,
        sessions: finals.len(),
        revisions,
        expected,
        received: r.len(),
        rate_all,
        rate_during,
        drain_s: (last - g1).max(0) as f64 / 1e6,
        rate_drain,
        lat_us,
        lost,
        duplicate_ids,
        duplicate_keys,
        out_of_order,
        errors,
        signatures_checked: log.signatures_checked,
        ceiling_rps: ceiling.0,
        ceiling_p99: ceiling.1,
        ceiling_errors: ceiling.2,
        server_cores: cores(s0, s1),
        bench_cores: cores(b0, b1),
        body_bytes,
        breakdown: Default::default(),
    }
}

pub async fn webhook_fanout(args: &Args) -> anyhow::Result<()> {
    if args.subscriptions.is_empty() || args.subscriptions.contains(&0) {
        bail!("--subscriptions N,N,... with N >= 1");
    }
    let mut rows = Vec::new();
    let mut backend = "";
    for &subs in &args.subscriptions {
        let (row, b) = run_size(args, subs).await?;
        backend = b;
        rows.push(row);
    }
    let per = args.per_session.max(1);
    let (min, max) = args.delays_ms.unwrap_or((20, 20 * per as u64));
    println!();
    println!(
        "scenario webhook-fanout: sessions over {per} fake storefronts (answers after {min} to {max} ms, {} revisions each), revisions for {} s, then the queue drained; {backend}",
        per + 1,
        args.seconds.max(1),
    );
    println!(
        "| subscriptions | revisions/s asked, committed | sessions | revisions | deliveries expected | received | deliveries/s (first→last) | while generating | draining | drain s | p50 ms | p99 ms | max ms | lost | duplicated | out of order | errors |"
    );
    println!(
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    for r in &rows {
        let max = r.lat_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0;
        println!(
            "| {} | {:.0}, {:.0} | {} | {} | {} | {} | {:.0} | {:.0} | {:.0} | {:.1} | {:.2} | {:.2} | {max:.2} | {} | {} | {} | {} |",
            r.subscriptions,
            r.rate,
            r.revisions as f64 / r.generation_s,
            r.sessions,
            r.revisions,
            r.expected,
            r.received,
            r.rate_all,
            r.rate_during,
            r.rate_drain,
            r.drain_s,
            percentile_ms(&r.lat_us, 50.0),
            percentile_ms(&r.lat_us, 99.0),
            r.lost,
            r.duplicate_ids.max(r.duplicate_keys),
            r.out_of_order,
            r.errors.len(),
        );
    }
    println!();
    println!(
        "| subscriptions | mean body bytes | ceiling body bytes | receivers' ceiling req/s | ceiling p99 ms | deliveries/s : ceiling | server cores | bench cores | signatures checked |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &rows {
        println!(
            "| {} | {} | {} | {:.0} | {:.2} | {:.1}% | {:.2} | {:.2} | {} |",
            r.subscriptions,
            r.body_bytes.1,
            r.body_bytes.0,
            r.ceiling_rps,
            r.ceiling_p99,
            100.0 * r.rate_all / r.ceiling_rps.max(1e-9),
            r.server_cores,
            r.bench_cores,
            r.signatures_checked,
        );
    }
    for r in &rows {
        if r.ceiling_errors > 0 {
            println!(
                "(warning, {} subscriptions: {} ceiling requests failed)",
                r.subscriptions, r.ceiling_errors
            );
        }
        if r.duplicate_ids != r.duplicate_keys {
            println!(
                "(warning, {} subscriptions: {} repeated delivery ids, {} repeated (subscription, session, revision))",
                r.subscriptions, r.duplicate_ids, r.duplicate_keys
            );
        }
        for e in &r.errors {
            println!("(error, {} subscriptions: {e})", r.subscriptions);
        }
    }
    for r in &rows {
        let [a, b, c] = &r.breakdown;
        let pp = |v: &[u32]| {
            format!(
                "p50 {:.2} / p99 {:.2} ms",
                percentile_ms(v, 50.0),
                percentile_ms(v, 99.0)
            )
        };
        println!(
            "(latency of subscription 0 of {}, {} deliveries: timestamp → job queued {}; queued → attempt {}; attempt → receipt {})",
            r.subscriptions,
            a.len(),
            pp(a),
            pp(b),
            pp(c)
        );
    }
    println!();
    println!(
        "targets: >= 3000 deliveries/s at 100 subscriptions; p99 < 20 ms commit-to-receipt at 1 subscription"
    );
    for r in &rows {
        if r.subscriptions == 100 {
            println!(
                "  100 subscriptions: {:.0} deliveries/s: {}",
                r.rate_all,
                if r.rate_all >= 3000.0 {
                    "met"
                } else {
                    "NOT met"
                }
            );
        }
        if r.subscriptions == 1 {
            let p99 = percentile_ms(&r.lat_us, 99.0);
            println!(
                "  1 subscription: p99 {p99:.2} ms: {}",
                if p99 < 20.0 { "met" } else { "NOT met" }
            );
        }
    }
    Ok(())
}
