//! Scenarios of the shared-conversation rooms (issue 3).

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::Args;
use crate::load::{self, Target, percentile_ms};
use crate::server::Server;
use crate::sse::{self, Receipts};

/// One JSON request over a fresh connection (setup only, not measured).
async fn call(
    server: &Server,
    method: &str,
    path: &str,
    auth: &str,
    body: Option<Value>,
) -> anyhow::Result<Value> {
    let t = Target {
        addr: server.addr,
        path: path.into(),
        auth: Some(auth.into()),
    };
    t.json(method, body).await
}

/// A kept HTTP/1.1 connection for the posts, so a post's latency is not a
/// TCP handshake.
struct Poster {
    tx: hyper::client::conn::http1::SendRequest<http_body_util::Full<bytes::Bytes>>,
    addr: std::net::SocketAddr,
    path: String,
    auth: String,
}

impl Poster {
    async fn connect(addr: std::net::SocketAddr, path: &str, auth: &str) -> anyhow::Result<Poster> {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let (tx, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        Ok(Poster {
            tx,
            addr,
            path: path.into(),
            auth: auth.into(),
        })
    }

    /// Posts one message; its sequence.
    async fn post(&mut self, body: &Value) -> anyhow::Result<u64> {
        use http_body_util::BodyExt;
        let req = hyper::Request::post(&self.path)
            .header("host", self.addr.to_string())
            .header("authorization", &self.auth)
            .header("content-type", "application/json")
            .body(http_body_util::Full::new(bytes::Bytes::from(
                serde_json::to_vec(body)?,
            )))?;
        let res = self.tx.send_request(req).await?;
        if res.status() != 201 {
            bail!("post answered {}", res.status());
        }
        let bytes = res.into_body().collect().await?.to_bytes();
        let v: Value = serde_json::from_slice(&bytes)?;
        v["data"]["message"]["sequence"]
            .as_u64()
            .context("sequence")
    }
}

/// N SSE subscribers on one shared room; posts at a steady rate; latency
/// from just before each POST is sent to receipt at every subscriber, and
/// each subscriber's order checked.
pub async fn room_fanout(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(args.database_url.as_deref()).await?;
    let account = server.admin(&["create-account", "--name", "Fanout"])?["accountId"]
        .as_str()
        .context("accountId")?
        .to_string();
    // A handful of teammates share the subscriptions (presence stays small).
    let mut keys = Vec::new();
    for i in 0..8 {
        keys.push(format!(
            "Bearer {}",
            server.seed_user(
                &account,
                &format!("fan{i}-{}@example.com", std::process::id()),
                "platform:write"
            )?
        ));
    }
    let conv = call(
        &server,
        "POST",
        "/api/v2/assistant/conversations",
        &keys[0],
        Some(json!({"sharingEnabled": true})),
    )
    .await?;
    let uid = conv["data"]["conversation"]["conversationUid"]
        .as_str()
        .context("conversationUid")?
        .to_string();
    let events = format!("/api/v2/assistant/conversations/{uid}/events");
    let messages = format!("/api/v2/assistant/conversations/{uid}/messages");

    println!();
    println!(
        "scenario room-fanout: one shared room, {} posts/s for {} s per size, {}",
        args.rate,
        args.seconds,
        server.backend()
    );
    println!(
        "| subscribers | posts | deliveries | out of order | p50 ms | p99 ms | max ms | posts/s | POST p50 ms | POST p99 ms | RSS per idle connection (all) | (this step) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut handles = Vec::new();
    let mut receipts: Vec<Receipts> = Vec::new();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let baseline = server.rss_kib().unwrap_or(0);
    for &n in &args.sizes {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let before = server.rss_kib().unwrap_or(0);
        let before_count = receipts.len();
        // Connect in batches so the listen backlog never overflows.
        while receipts.len() < n {
            let batch = (n - receipts.len()).min(200);
            let mut pending = Vec::with_capacity(batch);
            for i in 0..batch {
                let key = &keys[(receipts.len() + i) % keys.len()];
                let r: Receipts = Default::default();
                pending.push((r.clone(), sse::subscribe(server.addr, &events, key, r)));
            }
            let (rs, subs): (Vec<_>, Vec<_>) = pending.into_iter().unzip();
            for p in futures_util::future::join_all(subs).await {
                handles.push(p?);
            }
            receipts.extend(rs);
        }
        tokio::time::sleep(Duration::from_secs(2)).await;
        let after = server.rss_kib().unwrap_or(0);
        let step = (after.saturating_sub(before)) as f64 / (n - before_count).max(1) as f64;
        let all = (after.saturating_sub(baseline)) as f64 / n.max(1) as f64;

        for r in &receipts {
            if let Ok(mut r) = r.lock() {
                r.clear();
            }
        }
        // A fresh kept connection per size: the server closes idle ones.
        let mut poster = Poster::connect(server.addr, &messages, &keys[0]).await?;
        let interval = Duration::from_secs_f64(1.0 / args.rate as f64);
        let mut sent_at: HashMap<u64, Instant> = HashMap::new();
        let mut post_us: Vec<u32> = Vec::new();
        let start = Instant::now();
        let mut tick = tokio::time::interval(interval);
        let body = json!({"audience": "room", "content": "bench message"});
        while start.elapsed() < Duration::from_secs(args.seconds) {
            tick.tick().await;
            let sent = Instant::now();
            let seq = poster.post(&body).await?;
            post_us.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32);
            sent_at.insert(seq, sent);
        }
        let post_secs = start.elapsed().as_secs_f64();
        // Let the last deliveries land.
        let expected = sent_at.len() * n;
        let wait_until = Instant::now() + Duration::from_secs(10);
        loop {
            let got: usize = receipts
                .iter()
                .map(|r| r.lock().map(|r| r.len()).unwrap_or(0))
                .sum();
            if got >= expected || Instant::now() > wait_until {
                break;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut lat_us = Vec::with_capacity(expected);
        let mut out_of_order = 0usize;
        for r in &receipts {
            let Ok(r) = r.lock() else { continue };
            let mut last = 0u64;
            for (seq, t) in r.iter() {
                // Strictly one after the other: no gap, no reordering.
                if last != 0 && *seq != last + 1 {
                    out_of_order += 1;
                }
                last = *seq;
                if let Some(sent) = sent_at.get(seq) {
                    lat_us.push(
                        t.saturating_duration_since(*sent)
                            .as_micros()
                            .min(u32::MAX as u128) as u32,
                    );
                }
            }
        }
        if lat_us.len() < expected {
            println!(
                "(warning: {} of {} deliveries arrived)",
                lat_us.len(),
                expected
            );
        }
        let max = lat_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0;
        if std::env::var("BENCH_SPREAD").is_ok() {
            // Per post: the first and the last subscriber's latency.
            let mut first: HashMap<u64, u32> = HashMap::new();
            let mut last: HashMap<u64, u32> = HashMap::new();
            for r in &receipts {
                let Ok(r) = r.lock() else { continue };
                for (seq, t) in r.iter() {
                    if let Some(sent) = sent_at.get(seq) {
                        let us = t.saturating_duration_since(*sent).as_micros() as u32;
                        let f = first.entry(*seq).or_insert(u32::MAX);
                        *f = (*f).min(us);
                        let l = last.entry(*seq).or_insert(0);
                        *l = (*l).max(us);
                    }
                }
            }
            let f: Vec<u32> = first.into_values().collect();
            let l: Vec<u32> = last.into_values().collect();
            println!(
                "(first delivery p50 {:.2} ms p99 {:.2}; last delivery p50 {:.2} ms p99 {:.2})",
                percentile_ms(&f, 50.0),
                percentile_ms(&f, 99.0),
                percentile_ms(&l, 50.0),
                percentile_ms(&l, 99.0)
            );
        }
        println!(
            "| {n} | {} | {} | {out_of_order} | {:.2} | {:.2} | {:.2} | {:.1} | {:.2} | {:.2} | {:.1} KiB | {:.1} KiB |",
            sent_at.len(),
            lat_us.len(),
            percentile_ms(&lat_us, 50.0),
            percentile_ms(&lat_us, 99.0),
            max,
            sent_at.len() as f64 / post_secs,
            percentile_ms(&post_us, 50.0),
            percentile_ms(&post_us, 99.0),
            all,
            step,
        );
    }
    for h in handles {
        h.abort();
    }
    Ok(())
}

/// `GET /api/v2/assistant/conversations` (visibility query, presence, envelope)
/// against `GET /healthz`.
pub async fn conversations_list(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(args.database_url.as_deref()).await?;
    let account = server.admin(&["create-account", "--name", "Lister"])?["accountId"]
        .as_str()
        .context("accountId")?
        .to_string();
    let me = format!(
        "Bearer {}",
        server.seed_user(
            &account,
            &format!("list-a-{}@example.com", std::process::id()),
            "platform:write"
        )?
    );
    let mate = format!(
        "Bearer {}",
        server.seed_user(
            &account,
            &format!("list-b-{}@example.com", std::process::id()),
            "platform:write"
        )?
    );
    // 30 own conversations (half shared) and 30 of a teammate (half shared).
    let mut shared_uid = String::new();
    for i in 0..60 {
        let key = if i % 2 == 0 { &me } else { &mate };
        let res = call(
            &server,
            "POST",
            "/api/v2/assistant/conversations",
            key,
            Some(json!({"sharingEnabled": i % 4 < 2})),
        )
        .await?;
        match res["data"]["conversation"]["conversationUid"].as_str() {
            Some(uid) if i % 4 == 0 => shared_uid = uid.to_string(),
            Some(_) => {}
            None => bail!("create failed: {res}"),
        }
    }
    // With several instances, lists (and /healthz) are read through the
    // last one while the posts below go through the first: the reader's
    // cache must notice other instances' writes.
    let mut others = Vec::new();
    for _ in 1..args.instances {
        others.push(server.another().await?);
    }
    let reader = others.last().map_or(server.addr, |s| s.addr);
    let list = Target::get(reader, "/api/v2/assistant/conversations?take=20", Some(&me));
    let health = Target::get(reader, "/healthz", None);
    list.check(200).await?;
    let secs = args.seconds.max(2);
    load::run(&health, args.connections, 1).await?;
    load::run(&list, args.connections, 1).await?;
    let mut h = load::Stats::default();
    let mut l = load::Stats::default();
    for _ in 0..2 {
        h.merge(load::run(&health, args.connections, secs / 2).await?);
        l.merge(load::run(&list, args.connections, secs / 2).await?);
    }
    // The same list while messages keep changing it: every post invalidates
    // the account's cached lists, so most requests take the database path.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let poster = {
        let stop = stop.clone();
        let post = Target {
            addr: server.addr,
            path: format!("/api/v2/assistant/conversations/{shared_uid}/messages"),
            auth: Some(me.clone()),
        };
        tokio::spawn(async move {
            let mut posts = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let body = json!({"audience": "room", "content": "changes the list"});
                if post.json("POST", Some(body)).await.is_ok() {
                    posts += 1;
                }
            }
            posts
        })
    };
    let started = std::time::Instant::now();
    let changing = load::run(&list, args.connections, secs).await?;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let posts = poster.await?;
    let post_rate = posts as f64 / started.elapsed().as_secs_f64();

    println!();
    println!(
        "scenario conversations-list: {} connections, {} s per endpoint, 45 visible of 60 conversations, take=20, {}, {} instance(s) (posts through the first, lists through the last)",
        args.connections,
        secs,
        server.backend(),
        args.instances
    );
    println!("| endpoint | req/s | p50 ms | p99 ms | errors |");
    println!("|---|---:|---:|---:|---:|");
    for (name, s) in [
        ("GET /healthz", &h),
        ("GET /api/v2/assistant/conversations", &l),
    ] {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} | {} |",
            s.rps(),
            s.percentile(50.0),
            s.percentile(99.0),
            s.errors
        );
    }
    println!(
        "| same list, invalidated by {post_rate:.0} posts/s | {:.0} | {:.2} | {:.2} | {} |",
        changing.rps(),
        changing.percentile(50.0),
        changing.percentile(99.0),
        changing.errors
    );
    println!();
    println!(
        "ratio list : /healthz = {:.1}% (target >= 40%, PostgreSQL >= 15%); while changing: {:.1}%",
        l.rps() / h.rps() * 100.0,
        changing.rps() / h.rps() * 100.0
    );
    Ok(())
}
