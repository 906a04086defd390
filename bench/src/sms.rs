//! `sms-accept`: concurrent clients posting SMS, fresh request ids and
//! retries of earlier ones, against `GET /healthz` in the same run. Counts
//! accepted/s and p99, and checks that no message was queued twice: every
//! fresh acceptance has its own outboxId, and every retry answers the
//! outboxId of its original with `duplicate: true`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::json;

use crate::Args;
use crate::load::{self, Target, percentile_ms};
use crate::server::Server;

#[derive(Default)]
struct Accepts {
    fresh: u64,
    retries: u64,
    errors: u64,
    elapsed: Duration,
    latencies_us: Vec<u32>,
    /// outboxId of each fresh request id.
    ids: HashMap<String, String>,
    /// Retries answered with another outboxId, or not as duplicates.
    wrong: u64,
}

/// One worker: its own line (so the per-minute limit is per line, as in
/// production) and connection; every fifth request retries an earlier one.
async fn worker(
    target: Target,
    line: String,
    worker: usize,
    deadline: Instant,
) -> anyhow::Result<Accepts> {
    let mut acc = Accepts::default();
    let stream = tokio::net::TcpStream::connect(target.addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut sent: Vec<String> = Vec::new();
    let mut n: u64 = 0;
    while Instant::now() < deadline {
        n += 1;
        let retry = n.is_multiple_of(5) && !sent.is_empty();
        let request_id = if retry {
            sent[(n as usize / 5) % sent.len()].clone()
        } else {
            format!("{worker:08x}-0000-4000-8000-{n:012x}")
        };
        let body = Bytes::from(serde_json::to_vec(&json!({
            "requestId": request_id, "endpointId": line, "to": "+14155550124",
            "text": format!("Your order {request_id} has shipped."),
        }))?);
        let req = Request::post(&target.path)
            .header("host", target.addr.to_string())
            .header("authorization", target.auth.as_deref().unwrap_or(""))
            .header("content-type", "application/json")
            .body(Full::new(body))?;
        let t0 = Instant::now();
        let res = tx.send_request(req).await?;
        let status = res.status().as_u16();
        let raw = res.into_body().collect().await?.to_bytes();
        if status != 202 {
            acc.errors += 1;
            continue;
        }
        acc.latencies_us
            .push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
        let v: serde_json::Value = serde_json::from_slice(&raw)?;
        let id = v["data"]["message"]["outboxId"]
            .as_str()
            .context("outboxId")?
            .to_string();
        let duplicate = v["data"]["message"]["duplicate"] == true;
        if retry {
            acc.retries += 1;
            if !duplicate || acc.ids.get(&request_id) != Some(&id) {
                acc.wrong += 1;
            }
        } else {
            acc.fresh += 1;
            if duplicate {
                acc.wrong += 1;
            }
            acc.ids.insert(request_id.clone(), id);
            sent.push(request_id);
        }
    }
    Ok(acc)
}

pub async fn sms_accept(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(args.database_url.as_deref()).await?;
    let acct = server.admin(&["create-account", "--name", "Bench SMS", "--phone-lines"])?;
    let account = acct["accountId"].as_str().context("accountId")?.to_string();
    let key = server.seed_user(&account, "bench-sms@example.com", "platform:write")?;
    let auth = format!("Bearer {key}");
    let mut lines = Vec::new();
    for i in 0..args.connections {
        let line = server.admin(&[
            "provision-line",
            "--account",
            &account,
            "--number",
            &format!("+1415556{:04}", i % 10_000),
            "--kind",
            "sms",
        ])?;
        let id = line["endpointId"]
            .as_str()
            .context("endpointId")?
            .to_string();
        server.admin(&[
            "set-sending-limits",
            "--endpoint",
            &id,
            "--per-minute",
            "100000",
            "--daily-spend-cap",
            "1000000000",
        ])?;
        lines.push(id);
    }
    let target = Target::get(server.addr, "/api/v2/communications/messages", Some(&auth));
    let health = Target::get(server.addr, "/healthz", None);
    let secs = args.seconds.max(2);
    load::run(&health, args.connections, 1).await?;
    let h = load::run(&health, args.connections, secs).await?;
    let deadline = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let tasks: Vec<_> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| tokio::spawn(worker(target.clone(), l.clone(), i, deadline)))
        .collect();
    let mut total = Accepts::default();
    let mut all_ids = std::collections::HashSet::new();
    let mut repeated = 0u64;
    for task in tasks {
        let a = task.await.context("sms worker")??;
        total.fresh += a.fresh;
        total.retries += a.retries;
        total.errors += a.errors;
        total.wrong += a.wrong;
        total.latencies_us.extend(a.latencies_us);
        for id in a.ids.into_values() {
            if !all_ids.insert(id) {
                repeated += 1;
            }
        }
    }
    total.elapsed = start.elapsed();
    let rate = (total.fresh + total.retries) as f64 / total.elapsed.as_secs_f64().max(1e-9);
    println!();
    println!(
        "scenario sms-accept: {} connections (one line each), 1 in 5 requests a retry, {} s, {}",
        args.connections,
        secs,
        server.backend()
    );
    println!("| endpoint | req/s | p50 ms | p99 ms | errors |");
    println!("|---|---:|---:|---:|---:|");
    println!(
        "| GET /healthz | {:.0} | {:.2} | {:.2} | {} |",
        h.rps(),
        h.percentile(50.0),
        h.percentile(99.0),
        h.errors
    );
    println!(
        "| POST /communications/messages | {:.0} | {:.2} | {:.2} | {} |",
        rate,
        percentile_ms(&total.latencies_us, 50.0),
        percentile_ms(&total.latencies_us, 99.0),
        total.errors
    );
    println!();
    println!(
        "accepted: {} fresh, {} retries answered; accepted/s {:.0} (target >= 2,000 on 2 cores, SQLite FULL)",
        total.fresh, total.retries, rate
    );
    println!(
        "duplicates in the outbox: {} (outboxIds given twice: {repeated}; retries answered wrongly: {})",
        repeated + total.wrong,
        total.wrong
    );
    // The database's own count: one message and one outbox job per fresh
    // request id, none twice (a request that failed client-side may still
    // have been committed, hence `errors`).
    let counts = server
        .query_counts(
            "SELECT (SELECT COUNT(*) FROM phone_messages), \
                    (SELECT COUNT(DISTINCT request_id) FROM phone_messages), \
                    (SELECT COUNT(*) FROM outbox WHERE queue = 'text')",
        )
        .await?;
    let [rows, distinct, jobs] = counts[..] else {
        bail!("unexpected counts {counts:?}");
    };
    println!(
        "database: {rows} messages, {distinct} distinct request ids, {jobs} outbox jobs (fresh accepts {}, errors {})",
        total.fresh, total.errors
    );
    let db_dupes = rows - distinct;
    if repeated + total.wrong > 0 || db_dupes != 0 || jobs != rows {
        bail!("a message was queued twice or a retry was answered wrongly");
    }
    if rows < total.fresh as i64 || rows > (total.fresh + total.errors) as i64 {
        bail!(
            "the database holds {rows} messages for {} fresh accepts",
            total.fresh
        );
    }
    Ok(())
}
