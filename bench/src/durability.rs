//! The cost of SQLite `synchronous=FULL` (the default) against `NORMAL` on
//! message posts, the commonest write: two servers, alternating runs.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::Args;
use crate::load::{Target, percentile_ms};
use crate::server::Server;

#[derive(Default)]
struct Posts {
    ok: u64,
    errors: u64,
    elapsed: Duration,
    latencies_us: Vec<u32>,
}

/// A server with one conversation per connection, so posts contend only on
/// the database, as with many users.
async fn setup(sync: &str, connections: usize) -> anyhow::Result<(Server, Vec<Target>)> {
    let server = Server::start_with(None, &[("AGENTIC_SQLITE_SYNCHRONOUS", sync)]).await?;
    if server.backend() != "SQLite" {
        bail!("message-post-sync measures SQLite");
    }
    let auth = format!("Bearer {}", server.seed_tenant("platform:write")?);
    let mut targets = Vec::new();
    for _ in 0..connections {
        let conv = Target::get(server.addr, "/api/v2/assistant/conversations", Some(&auth))
            .json("POST", Some(json!({})))
            .await?;
        let uid = conv["data"]["conversation"]["conversationUid"]
            .as_str()
            .context("conversationUid")?;
        targets.push(Target::get(
            server.addr,
            &format!("/api/v2/assistant/conversations/{uid}/messages"),
            Some(&auth),
        ));
    }
    Ok((server, targets))
}

async fn run(targets: &[Target], seconds: u64) -> anyhow::Result<Posts> {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let tasks: Vec<_> = targets
        .iter()
        .cloned()
        .map(|t| tokio::spawn(worker(t, deadline)))
        .collect();
    let mut total = Posts::default();
    for task in tasks {
        let p = task.await.context("post worker")??;
        total.ok += p.ok;
        total.errors += p.errors;
        total.latencies_us.extend(p.latencies_us);
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

async fn worker(target: Target, deadline: Instant) -> anyhow::Result<Posts> {
    let mut posts = Posts::default();
    let stream = tokio::net::TcpStream::connect(target.addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let body = Bytes::from(serde_json::to_vec(
        &json!({"audience": "room", "content": "Brief is in; flighting starts Monday."}),
    )?);
    while Instant::now() < deadline {
        let req = Request::post(&target.path)
            .header("host", target.addr.to_string())
            .header("authorization", target.auth.as_deref().unwrap_or(""))
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))?;
        let t0 = Instant::now();
        let res = tx.send_request(req).await?;
        let ok = res.status().as_u16() == 201;
        res.into_body().collect().await?;
        if ok {
            posts.ok += 1;
            posts
                .latencies_us
                .push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
        } else {
            posts.errors += 1;
        }
    }
    Ok(posts)
}

pub async fn message_post_sync(args: &Args) -> anyhow::Result<()> {
    let (_full_server, full_targets) = setup("full", args.connections).await?;
    let (_normal_server, normal_targets) = setup("normal", args.connections).await?;
    let secs = args.seconds.max(2);
    // Warm-up, then alternate so drift hits both alike.
    run(&full_targets, 1).await?;
    run(&normal_targets, 1).await?;
    let mut full = Posts::default();
    let mut normal = Posts::default();
    for _ in 0..2 {
        for (acc, targets) in [(&mut full, &full_targets), (&mut normal, &normal_targets)] {
            let p = run(targets, secs / 2).await?;
            acc.ok += p.ok;
            acc.errors += p.errors;
            acc.elapsed += p.elapsed;
            acc.latencies_us.extend(p.latencies_us);
        }
    }
    println!();
    println!(
        "scenario message-post-sync: POST .../messages, {} connections (one conversation each), {} s per setting, SQLite in {}",
        args.connections,
        secs,
        std::env::temp_dir().display()
    );
    println!("| AGENTIC_SQLITE_SYNCHRONOUS | posts/s | p50 ms | p99 ms | errors |");
    println!("|---|---:|---:|---:|---:|");
    for (name, p) in [("full (default)", &full), ("normal", &normal)] {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} | {} |",
            p.ok as f64 / p.elapsed.as_secs_f64().max(1e-9),
            percentile_ms(&p.latencies_us, 50.0),
            percentile_ms(&p.latencies_us, 99.0),
            p.errors
        );
    }
    let rate = |p: &Posts| p.ok as f64 / p.elapsed.as_secs_f64().max(1e-9);
    println!();
    println!(
        "ratio full : normal = {:.1}%",
        rate(&full) / rate(&normal) * 100.0
    );
    Ok(())
}
