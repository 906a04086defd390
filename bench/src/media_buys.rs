//! `media-buy-execute`: the money path's two costs.
//!
//! **Execute**: a cart of 20 buys over 5 fake sellers whose
//! `create_media_buy` answers take 100 ms, 500 ms, 1 s, 1.5 s and 2 s (4
//! products each) is POSTed to `/api/v2/buyer/media-buys` with `mode:
//! execute`, each round a new campaign (fresh buys). The request is timed
//! at the client from just before it is sent to its answer's last byte; the
//! figure is that time minus the slowest seller's delay (the server sends
//! the buys concurrently, so that is its own cost). The sellers' logs split
//! it: when the first and the last `create_media_buy` arrived, and how long
//! after the slowest answer the response came.
//!
//! **Poller**: 10,000 non-terminal buys over 50 sellers, staged through the
//! API (one cart of one product per seller per campaign, `mode: stage`,
//! which contacts no seller) and then marked made in one transaction on the
//! server's database (`pending_start`, a seller id, `next_poll_at` spread
//! evenly over the next 30 s). The release server refreshes them at its
//! default cadence (30 s plus up to 10 % jitter) while the bench watches:
//! every `get_media_buys` the sellers receive is logged per buy id, so each
//! buy's gaps between refreshes come from what the sellers saw; the
//! server's CPU time over the window is read from `/proc`; the database's
//! most overdue `next_poll_at` is sampled every second. Each buy's first
//! delivery pull (`get_media_buy_delivery`, due 30 s after its first
//! refresh) falls inside the window and counts in the CPU figure.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, DbBackend, Statement, TransactionTrait};
use serde_json::{Value, json};

use crate::Args;
use crate::discovery::{self, DISCOVER, create_advertiser, register_storefronts};
use crate::fake_seller::{FakeSellers, Shop};
use crate::load::{Target, percentile_ms};
use crate::server::{Server, cpu_seconds_of};

pub const BUYS: &str = "/api/v2/buyer/media-buys";
/// The execute cart's sellers: one `create_media_buy` delay each.
const EXECUTE_DELAYS_MS: [u64; 5] = [100, 500, 1000, 1500, 2000];
const PRODUCTS_PER_SELLER: usize = 4;
/// Execute: at most this much over the slowest seller.
const TARGET_OVER_MS: f64 = 100.0;
/// Poller: the target allows 30 s plus 25 % (the backoff's jitter; a
/// healthy buy draws at most 10 %).
const MAX_GAP_S: f64 = 37.5;
/// Poller: under this share of one core.
const TARGET_CPU: f64 = 0.25;

pub async fn media_buy_execute(args: &Args) -> anyhow::Result<()> {
    if args.only.as_deref() != Some("poller") {
        execute_latency(args).await?;
    }
    if args.only.as_deref() != Some("execute") {
        poller_load(args).await?;
    }
    Ok(())
}

/// A server with fake sellers registered, a tenant, a USD advertiser and a
/// finished discovery session over every seller.
struct Setup {
    server: Server,
    auth: String,
    session: String,
}

async fn setup(args: &Args, sellers: &FakeSellers, count: usize) -> anyhow::Result<Setup> {
    // Loopback sellers are refused unless insecure URLs are allowed.
    let server = Server::start_with(
        args.database_url.as_deref(),
        &[("AGENTIC_ALLOW_INSECURE_URLS", "true")],
    )
    .await?;
    let auth = format!("Bearer {}", server.seed_tenant("platform:write")?);
    let ids = register_storefronts(&server, sellers, count)?;
    let advertiser = create_advertiser(&server, &auth).await?;
    let body = json!({
        "advertiserId": advertiser,
        "brief": "CTV, online video and display for a spring launch in the US",
        "storefrontIds": ids,
        "waitSeconds": 30,
    });
    let res = Target::get(server.addr, DISCOVER, Some(&auth))
        .json("POST", Some(body))
        .await?;
    if res["data"]["resultsComplete"] != true {
        bail!("the discovery session did not finish: {res}");
    }
    let session = res["data"]["discoveryId"]
        .as_str()
        .context("discoveryId")?
        .to_string();
    Ok(Setup {
        server,
        auth,
        session,
    })
}

/// A `campaign.create` of a month from tomorrow, `total` in the
/// advertiser's currency.
fn new_campaign(name: &str, total: f64) -> Value {
    let start = Utc::now() + chrono::Duration::days(1);
    let end = start + chrono::Duration::days(30);
    json!({"create": {
        "name": name,
        "flightDates": {"startDate": start.to_rfc3339(), "endDate": end.to_rfc3339()},
        "budget": {"total": total},
    }})
}

fn pick(product_id: String, budget: f64) -> Value {
    json!({"kind": "product", "productId": product_id, "budget": budget})
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn execute_latency(args: &Args) -> anyhow::Result<()> {
    let rounds = args.rounds.unwrap_or(10).max(1);
    let shops: Vec<Shop> = EXECUTE_DELAYS_MS
        .iter()
        .enumerate()
        .map(|(n, &d)| {
            Shop::new(n, Duration::from_millis(5), PRODUCTS_PER_SELLER)
                .create_after(Duration::from_millis(d))
        })
        .collect();
    let sellers = FakeSellers::start(shops).await?;
    let cx = setup(args, &sellers, EXECUTE_DELAYS_MS.len()).await?;
    let slowest = Duration::from_millis(EXECUTE_DELAYS_MS.iter().copied().max().unwrap_or(0));
    let selections: Vec<Value> = (0..EXECUTE_DELAYS_MS.len())
        .flat_map(|n| (0..PRODUCTS_PER_SELLER).map(move |j| pick(format!("sf{n}_p{j}"), 1000.0)))
        .collect();
    let cart = selections.len();
    let target = Target::get(cx.server.addr, BUYS, Some(&cx.auth));

    println!();
    println!(
        "scenario media-buy-execute, execute: {cart} buys over {} sellers ({PRODUCTS_PER_SELLER} each) answering create_media_buy after {:?} ms, {rounds} rounds, {}",
        EXECUTE_DELAYS_MS.len(),
        EXECUTE_DELAYS_MS,
        cx.server.backend()
    );
    println!(
        "| round | execute ms | over the slowest seller ms | first create at a seller ms | last create at a seller ms | slowest answer to response ms | buys made |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut over = Vec::with_capacity(rounds);
    let mut warnings = Vec::new();
    for r in 0..rounds {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let before = sellers.buys.creates().len();
        let body = json!({
            "productQueryId": cx.session,
            "campaign": new_campaign(&format!("Bench execute {r}"), 1_000_000.0),
            "mode": "execute",
            "selections": selections,
        });
        let (took, res) = target.json_timed("POST", Some(body)).await?;
        let received = Instant::now();
        let sent = received.checked_sub(took).context("clock")?;
        let buys = res["data"]["mediaBuys"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let made = buys
            .iter()
            .filter(|b| b["status"] == "pending_start" && b["adcpMediaBuyId"].is_string())
            .count();
        if made != cart {
            let statuses: Vec<&Value> = buys.iter().map(|b| &b["status"]).collect();
            warnings.push(format!(
                "round {}: {made} of {cart} buys made: {statuses:?}",
                r + 1
            ));
        }
        let calls: Vec<_> = sellers.buys.creates().into_iter().skip(before).collect();
        if calls.len() != cart {
            warnings.push(format!(
                "round {}: the sellers got {} create_media_buy calls for {cart} buys",
                r + 1,
                calls.len()
            ));
        }
        for n in 0..EXECUTE_DELAYS_MS.len() {
            let got = calls.iter().filter(|c| c.shop == n).count();
            if got != PRODUCTS_PER_SELLER {
                warnings.push(format!(
                    "round {}: seller {n} got {got} create_media_buy calls",
                    r + 1
                ));
            }
        }
        let at = |t: Option<Instant>| t.map_or(f64::NAN, |t| ms(t.saturating_duration_since(sent)));
        let first = at(calls.iter().map(|c| c.arrived).min());
        let last = at(calls.iter().map(|c| c.arrived).max());
        let tail = calls
            .iter()
            .map(|c| c.answered)
            .max()
            .map_or(f64::NAN, |a| ms(received.saturating_duration_since(a)));
        let o = ms(took) - ms(slowest);
        over.push(o);
        println!(
            "| {} | {:.1} | {o:.1} | {first:.1} | {last:.1} | {tail:.1} | {made}/{cart} |",
            r + 1,
            ms(took),
        );
    }
    for w in &warnings {
        println!("(warning: {w})");
    }
    let max = over.iter().copied().fold(f64::MIN, f64::max);
    println!();
    println!(
        "execute over the slowest seller ({} ms): median {:.1} ms, max {max:.1} ms over {rounds} rounds (target <= {TARGET_OVER_MS} ms: {})",
        slowest.as_millis(),
        median(&over),
        if max <= TARGET_OVER_MS && warnings.is_empty() {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}

/// Placeholders `1..=n` in the backend's syntax.
fn placeholders(backend: DbBackend, n: usize) -> Vec<String> {
    (1..=n)
        .map(|i| match backend {
            DbBackend::Postgres => format!("${i}"),
            _ => "?".to_string(),
        })
        .collect()
}

/// Marks every DRAFT buy made at its seller, in one transaction:
/// `pending_start` with a seller id, `next_poll_at` spread evenly over
/// `spread` from a second from now (in id order, which is random). Returns
/// each seller id's due time, and when the commit was done.
async fn mark_made(
    server: &Server,
    spread: Duration,
) -> anyhow::Result<(HashMap<String, Instant>, Instant)> {
    let db = sea_orm::Database::connect(server.database_url()).await?;
    let backend = db.get_database_backend();
    let rows = db
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT id FROM media_buys WHERE status = 'draft' ORDER BY id",
        ))
        .await?;
    let ids: Vec<String> = rows
        .iter()
        .map(|r| r.try_get_by_index::<String>(0))
        .collect::<Result<_, _>>()?;
    let p = placeholders(backend, 9);
    let sql = format!(
        "UPDATE media_buys SET status = {}, adcp_status = {}, previous_status = {}, adcp_media_buy_id = {}, adcp_revision = 1, dispatched_at = {}, status_changed_at = {}, updated_at = {}, next_poll_at = {} WHERE id = {}",
        p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7], p[8]
    );
    let (now, now_i) = (Utc::now(), Instant::now());
    let base = Duration::from_secs(1);
    let mut due = HashMap::with_capacity(ids.len());
    let txn = db.begin().await?;
    for (i, id) in ids.iter().enumerate() {
        let offset = base + spread.mul_f64(i as f64 / ids.len().max(1) as f64);
        let next: DateTime<Utc> = now + chrono::Duration::from_std(offset)?;
        let seller_id = format!("seed_{id}");
        txn.execute_raw(Statement::from_sql_and_values(
            backend,
            &sql,
            [
                "pending_start".into(),
                "pending_start".into(),
                "dispatching".into(),
                seller_id.clone().into(),
                now.into(),
                now.into(),
                now.into(),
                next.into(),
                id.clone().into(),
            ],
        ))
        .await?;
        due.insert(seller_id, now_i + offset);
    }
    txn.commit().await?;
    let committed = Instant::now();
    db.close().await.ok();
    Ok((due, committed))
}

/// How overdue the most overdue buy is (its `next_poll_at` to now), if any.
async fn most_overdue(db: &sea_orm::DatabaseConnection) -> anyhow::Result<Option<Duration>> {
    let backend = db.get_database_backend();
    let row = db
        .query_one_raw(Statement::from_string(
            backend,
            "SELECT MIN(next_poll_at) FROM media_buys WHERE next_poll_at IS NOT NULL",
        ))
        .await?;
    let min = match row {
        Some(r) => r.try_get_by_index::<Option<DateTime<Utc>>>(0)?,
        None => None,
    };
    Ok(min.and_then(|m| (Utc::now() - m).to_std().ok()))
}

/// Each polled buy's last refresh as the server recorded it: the seller id,
/// the instant its outcome was applied (`updated_at`, the `now` its next
/// refresh counts from) and that next refresh (`next_poll_at`).
async fn snapshot(
    db: &sea_orm::DatabaseConnection,
) -> anyhow::Result<Vec<(String, DateTime<Utc>, DateTime<Utc>)>> {
    let backend = db.get_database_backend();
    let rows = db
        .query_all_raw(Statement::from_string(
            backend,
            "SELECT adcp_media_buy_id, updated_at, next_poll_at FROM media_buys WHERE next_poll_at IS NOT NULL AND last_polled_at IS NOT NULL",
        ))
        .await?;
    rows.iter()
        .map(|r| {
            Ok((
                r.try_get_by_index::<String>(0)?,
                r.try_get_by_index::<DateTime<Utc>>(1)?,
                r.try_get_by_index::<DateTime<Utc>>(2)?,
            ))
        })
        .collect()
}

/// Seconds from `origin` (negative before it).
fn since(origin: Instant, t: Instant) -> f64 {
    match t.checked_duration_since(origin) {
        Some(d) => d.as_secs_f64(),
        None => -origin.duration_since(t).as_secs_f64(),
    }
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

async fn poller_load(args: &Args) -> anyhow::Result<()> {
    let count = args.storefronts;
    let total = args.buys;
    if count == 0 || total == 0 {
        bail!("--storefronts N and --buys N above 0");
    }
    let window = Duration::from_secs(args.window.max(40));
    let (min, max) = args.delays_ms.unwrap_or((50, 250));
    let sellers = FakeSellers::start(discovery::shops(
        count,
        Duration::from_millis(min),
        Duration::from_millis(max),
    ))
    .await?;
    let cx = setup(args, &sellers, count).await?;

    // Stage: one product of every seller per campaign.
    let seeding = Instant::now();
    let target = Target::get(cx.server.addr, BUYS, Some(&cx.auth));
    let campaigns = total.div_ceil(count);
    for c in 0..campaigns {
        let n = count.min(total - c * count);
        let selections: Vec<Value> = (0..n).map(|s| pick(format!("sf{s}_p0"), 100.0)).collect();
        let body = json!({
            "productQueryId": cx.session,
            "campaign": new_campaign(&format!("Bench poller {c}"), 100.0 * n as f64),
            "mode": "stage",
            "selections": selections,
        });
        target.json("POST", Some(body)).await?;
    }
    let staged = seeding.elapsed();
    let spread = Duration::from_secs(30);
    let (due, committed) = mark_made(&cx.server, spread).await?;
    if due.len() != total {
        bail!("{} buys marked made, {total} wanted", due.len());
    }
    let marked = committed.saturating_duration_since(seeding) - staged;

    println!();
    println!(
        "scenario media-buy-execute, poller: {total} pending_start buys over {count} sellers ({campaigns} campaigns), get_media_buys answered after {min} to {max} ms, default cadence (30 s + up to 10 % jitter), {} s window, {}",
        window.as_secs(),
        cx.server.backend()
    );
    println!(
        "(seeded in {:.1} s: staged through the API in {:.1} s, marked made in {:.2} s; next_poll_at spread over the 30 s after it)",
        (staged + marked).as_secs_f64(),
        staged.as_secs_f64(),
        marked.as_secs_f64()
    );

    let probe = sea_orm::Database::connect(cx.server.database_url()).await?;
    let start = Instant::now();
    let cpu0 = cx.server.cpu_seconds().context("server CPU")?;
    let me0 = cpu_seconds_of("self").unwrap_or(0.0);
    let mut overdue_us: Vec<u32> = Vec::new();
    let mut last_report = start;
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut loads = Vec::new();
    // Halfway (at least 40 s in, when every buy was refreshed once), the
    // server's own schedule of every buy's next refresh.
    let snapshot_at = (window / 2).max(Duration::from_secs(40));
    let mut schedule = None;
    while start.elapsed() < window {
        tick.tick().await;
        if schedule.is_none() && start.elapsed() >= snapshot_at {
            schedule = Some((Utc::now(), Instant::now(), snapshot(&probe).await?));
        }
        if let Some(d) = most_overdue(&probe).await? {
            overdue_us.push(d.as_micros().min(u32::MAX as u128) as u32);
        }
        if last_report.elapsed() >= Duration::from_secs(30) {
            last_report = Instant::now();
            let cpu = cx.server.cpu_seconds().unwrap_or(cpu0) - cpu0;
            let load = load_average();
            println!(
                "({:.0} s: {} get_media_buys and {} get_media_buy_delivery calls, server CPU {:.1} % of a core so far, load {load})",
                start.elapsed().as_secs_f64(),
                sellers
                    .buys
                    .poll_calls
                    .load(std::sync::atomic::Ordering::Relaxed),
                sellers
                    .buys
                    .delivery_calls
                    .load(std::sync::atomic::Ordering::Relaxed),
                100.0 * cpu / start.elapsed().as_secs_f64()
            );
            loads.push(load);
        }
    }
    let end = Instant::now();
    let wall = end.duration_since(start).as_secs_f64();
    let cpu = cx.server.cpu_seconds().context("server CPU")? - cpu0;
    let me = cpu_seconds_of("self").unwrap_or(0.0) - me0;
    let load_end = load_average();
    probe.close().await.ok();

    let polls = sellers
        .buys
        .polls
        .lock()
        .map(|p| p.clone())
        .unwrap_or_default();
    let calls = sellers
        .buys
        .poll_calls
        .load(std::sync::atomic::Ordering::Relaxed);
    let mut first_late_us: Vec<u32> = Vec::with_capacity(total);
    let mut gaps_us: Vec<u32> = Vec::new();
    let mut over_gaps = 0usize;
    let mut never = 0usize;
    let mut open_over = 0usize;
    let mut open_max = Duration::ZERO;
    let mut mentions = 0usize;
    let us = |d: Duration| d.as_micros().min(u32::MAX as u128) as u32;
    for (id, at) in &due {
        let mut times: Vec<Instant> = polls
            .get(id)
            .map(|t| t.iter().copied().filter(|t| *t <= end).collect())
            .unwrap_or_default();
        times.sort();
        mentions += times.len();
        let Some(first) = times.first() else {
            never += 1;
            continue;
        };
        first_late_us.push(us(first.saturating_duration_since((*at).max(committed))));
        for w in times.windows(2) {
            let gap = w[1].duration_since(w[0]);
            if gap.as_secs_f64() > MAX_GAP_S {
                over_gaps += 1;
            }
            gaps_us.push(us(gap));
        }
        let open = end.saturating_duration_since(times[times.len() - 1]);
        open_max = open_max.max(open);
        if open.as_secs_f64() > MAX_GAP_S {
            open_over += 1;
        }
    }
    // Each scheduled refresh split: the seller's arrival of the poll it came
    // from to its record (`updated_at`), the wait drawn (30 s plus jitter),
    // and the arrival of the next poll after `next_poll_at` (lateness).
    let mut record_us: Vec<u32> = Vec::new();
    let mut late_us: Vec<u32> = Vec::new();
    let mut early = 0usize;
    let mut wait_max = 0f64;
    let mut unrefreshed = 0usize;
    let scheduled = schedule.as_ref().map_or(0, |s| s.2.len());
    if let Some((at_utc, at, rows)) = &schedule {
        // DB times as seconds since `at`.
        let rel = |t: &DateTime<Utc>| (*t - *at_utc).num_microseconds().unwrap_or(0) as f64 / 1e6;
        for (id, updated, next) in rows {
            let Some(times) = polls.get(id) else { continue };
            let (r, n) = (rel(updated), rel(next));
            wait_max = wait_max.max(n - r);
            let prev = times
                .iter()
                .map(|t| since(*at, *t))
                .filter(|t| *t <= r)
                .fold(f64::NAN, f64::max);
            if prev.is_finite() {
                record_us.push(((r - prev) * 1e6) as u32);
            }
            let after = times
                .iter()
                .map(|t| since(*at, *t))
                .filter(|t| *t > r)
                .fold(f64::NAN, f64::min);
            if after.is_finite() {
                if after < n {
                    early += 1;
                }
                late_us.push(((after - n).max(0.0) * 1e6) as u32);
            } else if since(*at, end) > n {
                unrefreshed += 1;
            }
        }
    }
    let unknown = polls.keys().filter(|k| !due.contains_key(*k)).count();
    let s = |v: &[u32], p: f64| percentile_ms(v, p) / 1000.0;
    let min_gap = gaps_us.iter().min().copied().unwrap_or(0) as f64 / 1e6;
    let max_gap = gaps_us.iter().max().copied().unwrap_or(0) as f64 / 1e6;
    let counts = cx
        .server
        .query_counts(
            "SELECT COUNT(*), SUM(CASE WHEN poll_failures > 0 THEN 1 ELSE 0 END) FROM media_buys WHERE status = 'pending_start'",
        )
        .await?;

    println!(
        "| buys | polled | get_media_buys calls | ids per call | gaps | gap min / p50 / p99 / max s | gaps > {MAX_GAP_S} s | first poll after due p50 / p99 / max ms | most overdue next_poll_at p50 / p99 / max ms | server CPU | of a core |"
    );
    println!("|---:|---:|---:|---:|---:|---|---:|---|---|---:|---:|");
    println!(
        "| {total} | {} | {calls} | {:.1} | {} | {min_gap:.2} / {:.2} / {:.2} / {max_gap:.2} | {over_gaps} | {:.0} / {:.0} / {:.0} | {:.0} / {:.0} / {:.0} | {cpu:.2} s in {wall:.1} s | **{:.1} %** |",
        total - never,
        mentions as f64 / calls.max(1) as f64,
        gaps_us.len(),
        s(&gaps_us, 50.0),
        s(&gaps_us, 99.0),
        percentile_ms(&first_late_us, 50.0),
        percentile_ms(&first_late_us, 99.0),
        first_late_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0,
        percentile_ms(&overdue_us, 50.0),
        percentile_ms(&overdue_us, 99.0),
        overdue_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0,
        100.0 * cpu / wall,
    );
    println!(
        "(longest time since a buy's last refresh at the window's end: {:.2} s, {open_over} over {MAX_GAP_S} s; buys never polled: {never}; ids asked that were not seeded: {unknown}; after the window {} buys pending_start, {} with a failed refresh; bench process CPU {:.1} % of a core; load average {} at the end, {})",
        open_max.as_secs_f64(),
        counts.first().copied().unwrap_or(0),
        counts.get(1).copied().unwrap_or(0),
        100.0 * me / wall,
        load_end,
        if loads.is_empty() {
            String::new()
        } else {
            format!("every 30 s: {}", loads.join("; "))
        }
    );
    println!(
        "(the server's schedule of {scheduled} buys, read at {:.0} s: seller's arrival of a poll to its record p50 / p99 / max {:.0} / {:.0} / {:.0} ms; wait drawn at most {wait_max:.2} s; next poll's arrival after its next_poll_at p50 / p99 / max {:.0} / {:.0} / {:.0} ms ({} seen, {early} before it, {unrefreshed} due but never asked))",
        snapshot_at.as_secs_f64(),
        percentile_ms(&record_us, 50.0),
        percentile_ms(&record_us, 99.0),
        record_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0,
        percentile_ms(&late_us, 50.0),
        percentile_ms(&late_us, 99.0),
        late_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0,
        late_us.len(),
    );
    println!();
    let fresh = over_gaps == 0 && open_over == 0 && never == 0;
    println!(
        "target: every buy refreshed within {MAX_GAP_S} s ({}), server CPU under {:.0} % of one core ({})",
        if fresh { "met" } else { "NOT met" },
        TARGET_CPU * 100.0,
        if cpu / wall < TARGET_CPU {
            "met"
        } else {
            "NOT met"
        }
    );
    Ok(())
}
