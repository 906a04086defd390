//! Discovery fan-out (issue 9): how long a seller's answer takes to reach a
//! buyer's event stream. Fake sellers run in this process and record the
//! instant before each answer's bytes are written; each session's
//! subscriber records when every `revision` event arrives; a storefront's
//! latency is the arrival of the revision carrying its group (`sf_{id}`)
//! minus its answer time. Answers that queue behind a commit in flight land
//! together in one revision; each still counts from its own answer.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};

use crate::Args;
use crate::fake_seller::{self, FakeSellers, Shop};
use crate::load::{Target, percentile_ms};
use crate::server::Server;
use crate::sse::{Event, EventStream};

pub const DISCOVER: &str = "/api/v2/buyer/discovery/discover-products";

/// Storefront `n`'s delay: the range split evenly, in a scrambled order so
/// neighbouring ids do not answer together; 3 to 10 products each.
pub fn shops(count: usize, min: Duration, max: Duration) -> Vec<Shop> {
    let mut order: Vec<usize> = (0..count).collect();
    order.sort_by_key(|&n| (n as u64).wrapping_mul(2_654_435_761) % (1 << 32));
    let mut rank = vec![0usize; count];
    for (r, &n) in order.iter().enumerate() {
        rank[n] = r;
    }
    let span = max.saturating_sub(min);
    (0..count)
        .map(|n| {
            let delay = min + span.mul_f64(rank[n] as f64 / (count.max(2) - 1) as f64);
            Shop::new(n, delay, 3 + (n * 5) % 8)
        })
        .collect()
}

/// Registers fake storefronts `0..count` through the operator CLI; their
/// storefront ids, by index.
pub fn register_storefronts(
    server: &Server,
    sellers: &FakeSellers,
    count: usize,
) -> anyhow::Result<Vec<i64>> {
    let mut ids = Vec::with_capacity(count);
    for n in 0..count {
        let sf = server.admin(&[
            "register-storefront",
            "--name",
            &format!("Bench Seller {n}"),
            "--url",
            &sellers.url(n),
        ])?;
        ids.push(sf["storefrontId"].as_i64().context("storefrontId")?);
    }
    Ok(ids)
}

/// Creates the advertiser sessions are started for; its id.
pub async fn create_advertiser(server: &Server, auth: &str) -> anyhow::Result<String> {
    let adv = Target::get(server.addr, "/api/v2/buyer/advertisers", Some(auth))
        .json(
            "POST",
            Some(
                json!({"name": "Bench Brand", "brand": "bench.example", "primaryCurrency": "USD"}),
            ),
        )
        .await?;
    Ok(adv["data"]["id"]
        .as_str()
        .context("advertiser id")?
        .to_string())
}

/// Starts a progressive discovery session over `storefronts` (ids), tagged
/// in its brief so the fake sellers can tell sessions apart; its id.
pub async fn start_session(
    addr: SocketAddr,
    auth: &str,
    advertiser: &str,
    tag: usize,
    storefronts: &[i64],
) -> anyhow::Result<String> {
    let body = json!({
        "advertiserId": advertiser,
        "brief": fake_seller::brief(tag),
        "storefrontIds": storefronts,
        "progressive": true,
    });
    let res = Target::get(addr, DISCOVER, Some(auth))
        .json("POST", Some(body))
        .await?;
    Ok(res["data"]["discoveryId"]
        .as_str()
        .context("discoveryId")?
        .to_string())
}

/// What one benchmark session asks: its tag (in the brief) and storefronts.
struct Plan {
    tag: usize,
    storefronts: Vec<usize>,
}

struct Opened {
    plan: Plan,
    ready: Instant,
    reader: tokio::task::JoinHandle<Vec<Event>>,
}

struct Ctx<'a> {
    server: &'a Server,
    sellers: &'a FakeSellers,
    auth: String,
    advertiser: String,
    /// Storefront id per fake storefront index, and back.
    ids: Vec<i64>,
    index: HashMap<i64, usize>,
}

/// Starts a progressive session and subscribes to it at once; returns when
/// the subscriber has its `ready` event.
async fn open(cx: &Ctx<'_>, plan: Plan) -> anyhow::Result<Opened> {
    let storefronts: Vec<i64> = plan.storefronts.iter().map(|&n| cx.ids[n]).collect();
    let id = start_session(
        cx.server.addr,
        &cx.auth,
        &cx.advertiser,
        plan.tag,
        &storefronts,
    )
    .await?;
    let path = format!("/api/v2/buyer/discovery/{id}/events");
    let mut stream = EventStream::open(cx.server.addr, &path, &cx.auth).await?;
    let mut early = Vec::new();
    let ready = loop {
        match stream.next().await? {
            Some(e) if e.name == "ready" => break e.at,
            Some(e) => early.push(e),
            None => bail!("stream {id} ended before ready"),
        }
    };
    let reader = tokio::spawn(async move {
        let mut events = early;
        while let Ok(Some(e)) = stream.next().await {
            let last = e.name == "complete" || e.name == "error";
            events.push(e);
            if last {
                break;
            }
        }
        events
    });
    Ok(Opened {
        plan,
        ready,
        reader,
    })
}

#[derive(Default)]
struct Tally {
    sessions: usize,
    revisions: usize,
    groups: usize,
    lat_us: Vec<u32>,
    /// The same latencies split by whether the answer came while sessions
    /// were still being opened (POSTs and subscriptions in flight).
    opening_us: Vec<u32>,
    settled_us: Vec<u32>,
    completes: usize,
    duplicates: usize,
    missing: usize,
    unexpected: usize,
    /// Tool calls answered more than once for one session.
    repeated_calls: usize,
    /// Groups answered before the subscriber was ready (delivered by replay,
    /// not counted in the latencies).
    before_ready: usize,
    errors: Vec<String>,
}

impl Tally {
    fn add(
        &mut self,
        cx: &Ctx<'_>,
        plan: &Plan,
        ready: Instant,
        all_open: Instant,
        events: &[Event],
    ) {
        self.sessions += 1;
        let mut seen: HashMap<usize, usize> = HashMap::new();
        for e in events {
            match e.name.as_str() {
                "complete" => self.completes += 1,
                "error" => self.errors.push(e.data.clone()),
                "revision" => {}
                _ => continue,
            }
            if e.name != "revision" {
                continue;
            }
            self.revisions += 1;
            let v: Value = serde_json::from_str(&e.data).unwrap_or(Value::Null);
            for g in v["productGroups"].as_array().into_iter().flatten() {
                let n = g["groupId"]
                    .as_str()
                    .and_then(|s| s.strip_prefix("sf_"))
                    .and_then(|s| s.parse::<i64>().ok())
                    .and_then(|id| cx.index.get(&id).copied());
                let Some(n) = n.filter(|n| plan.storefronts.contains(n)) else {
                    self.unexpected += 1;
                    continue;
                };
                let count = seen.entry(n).or_default();
                *count += 1;
                if *count > 1 {
                    self.duplicates += 1;
                    continue;
                }
                self.groups += 1;
                let answered = cx.sellers.answered(plan.tag, n);
                if answered.len() > 1 {
                    self.repeated_calls += 1;
                }
                match answered.first() {
                    Some(at) if *at < ready => self.before_ready += 1,
                    Some(at) => {
                        let us = e.at.saturating_duration_since(*at).as_micros();
                        let us = us.min(u32::MAX as u128) as u32;
                        self.lat_us.push(us);
                        if *at < all_open {
                            self.opening_us.push(us);
                        } else {
                            self.settled_us.push(us);
                        }
                    }
                    None => self.unexpected += 1,
                }
            }
        }
        self.missing += plan
            .storefronts
            .iter()
            .filter(|n| !seen.contains_key(n))
            .count();
    }

    fn warnings(&self, name: &str) {
        let mut w = Vec::new();
        if self.completes != self.sessions {
            w.push(format!(
                "{} of {} subscribers got complete",
                self.completes, self.sessions
            ));
        }
        if self.missing > 0 {
            w.push(format!("{} groups never arrived", self.missing));
        }
        if self.duplicates > 0 {
            w.push(format!("{} groups arrived more than once", self.duplicates));
        }
        if self.unexpected > 0 {
            w.push(format!(
                "{} groups not asked for or never answered",
                self.unexpected
            ));
        }
        if self.repeated_calls > 0 {
            w.push(format!(
                "{} storefronts asked more than once",
                self.repeated_calls
            ));
        }
        if self.before_ready > 0 {
            w.push(format!(
                "{} answers came before the subscriber was ready (replayed, not counted)",
                self.before_ready
            ));
        }
        for e in &self.errors {
            w.push(format!("error event: {e}"));
        }
        for line in w {
            println!("(warning, {name}: {line})");
        }
    }
}

struct Run {
    tally: Tally,
    total: Duration,
    /// From the first POST until every subscriber was ready.
    opening: Duration,
    /// Server RSS before the sessions, with all of them open, and the peak.
    rss_before: u64,
    rss_open: u64,
    rss_peak: u64,
}

/// Opens every planned session concurrently, then reads them to the end.
async fn run(cx: &Ctx<'_>, plans: Vec<Plan>) -> anyhow::Result<Run> {
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_before = cx.server.rss_kib().unwrap_or(0);
    let start = Instant::now();
    let opened = futures_util::future::join_all(plans.into_iter().map(|p| open(cx, p))).await;
    let opened: Vec<Opened> = opened.into_iter().collect::<anyhow::Result<_>>()?;
    let all_open = Instant::now();
    let rss_open = cx.server.rss_kib().unwrap_or(0);
    let mut rss_peak = rss_open;
    let (opened, readers): (Vec<_>, Vec<_>) = opened
        .into_iter()
        .map(|o| ((o.plan, o.ready), o.reader))
        .unzip();
    let mut readers = futures_util::future::join_all(readers);
    let deadline = tokio::time::sleep(Duration::from_secs(120));
    tokio::pin!(deadline);
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let results = loop {
        tokio::select! {
            r = &mut readers => break r,
            _ = tick.tick() => rss_peak = rss_peak.max(cx.server.rss_kib().unwrap_or(0)),
            _ = &mut deadline => bail!("sessions still streaming after 120 s"),
        }
    };
    let mut total = Duration::ZERO;
    let mut tally = Tally::default();
    for ((plan, ready), events) in opened.iter().zip(results) {
        let events = events.context("reader")?;
        if let Some(last) = events.last() {
            total = total.max(last.at.saturating_duration_since(start));
        }
        tally.add(cx, plan, *ready, all_open, &events);
    }
    Ok(Run {
        tally,
        total,
        opening: all_open.saturating_duration_since(start),
        rss_before,
        rss_open,
        rss_peak,
    })
}

pub async fn discovery_fanout(args: &Args) -> anyhow::Result<()> {
    let count = args.storefronts;
    if count == 0 || args.per_session == 0 || args.per_session > count {
        bail!("--storefronts N and --per-session M with 1 <= M <= N");
    }
    let (min, max) = args.delays_ms.unwrap_or((50, 3000));
    let sellers = FakeSellers::start(shops(
        count,
        Duration::from_millis(min),
        Duration::from_millis(max),
    ))
    .await?;
    // Loopback sellers are refused unless insecure URLs are allowed.
    let server = Server::start_with(
        args.database_url.as_deref(),
        &[("AGENTIC_ALLOW_INSECURE_URLS", "true")],
    )
    .await?;
    let auth = format!("Bearer {}", server.seed_tenant("platform:write")?);
    let ids = register_storefronts(&server, &sellers, count)?;
    let cx = Ctx {
        server: &server,
        sellers: &sellers,
        advertiser: create_advertiser(&server, &auth).await?,
        auth,
        index: ids.iter().enumerate().map(|(n, id)| (*id, n)).collect(),
        ids,
    };

    println!();
    println!(
        "scenario discovery-fanout: {count} fake storefronts, answers after {min} to {max} ms, 3 to 10 products each, {}",
        server.backend()
    );
    println!(
        "| run | sessions | storefronts each | revisions | groups landed | p50 ms | p99 ms | max ms | complete | total s | RSS per session |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut tag = 0;
    let mut next_tag = || {
        tag += 1;
        tag
    };
    for round in 0..args.repeat.max(1) {
        let suffix = if args.repeat > 1 {
            format!(" #{}", round + 1)
        } else {
            String::new()
        };
        // A: one session over every storefront.
        let a = run(
            &cx,
            vec![Plan {
                tag: next_tag(),
                storefronts: (0..count).collect(),
            }],
        )
        .await?;
        row(&format!("A: one session{suffix}"), count, &a, None);
        cx.sellers.in_flight.take_peak();
        a.tally.warnings("A");
        // B: many sessions, each over its own spread of the storefronts
        // (every storefront shared by several sessions).
        let per = args.per_session;
        let plans = (0..args.sessions)
            .map(|k| Plan {
                tag: next_tag(),
                storefronts: (0..per).map(|j| (k + j * count / per) % count).collect(),
            })
            .collect();
        let b = run(&cx, plans).await?;
        let rss = b.rss_open.saturating_sub(b.rss_before) as f64 / args.sessions.max(1) as f64;
        row(
            &format!("B: concurrent sessions{suffix}"),
            per,
            &b,
            Some(rss),
        );
        b.tally.warnings("B");
        let t = &b.tally;
        let split = |v: &[u32]| match v.len() {
            0 => "0".to_string(),
            n => format!(
                "{n} (p50 {:.2} ms, p99 {:.2} ms)",
                percentile_ms(v, 50.0),
                percentile_ms(v, 99.0)
            ),
        };
        println!(
            "(B{suffix}: opening took {:.0} ms; answers during it: {}; after: {})",
            b.opening.as_secs_f64() * 1000.0,
            split(&t.opening_us),
            split(&t.settled_us),
        );
        println!(
            "(B{suffix}: server RSS {} KiB before, {} KiB with all sessions open, {} KiB peak; at most {} tool calls at the sellers at once)",
            b.rss_before,
            b.rss_open,
            b.rss_peak,
            cx.sellers.in_flight.take_peak()
        );
    }
    println!();
    println!(
        "target: p99 < 20 ms (answer written by the seller to the revision read by the subscriber)"
    );
    Ok(())
}

fn row(name: &str, per: usize, r: &Run, rss_per_session: Option<f64>) {
    let t = &r.tally;
    let max = t.lat_us.iter().max().copied().unwrap_or(0) as f64 / 1000.0;
    println!(
        "| {name} | {} | {per} | {} | {} | {:.2} | {:.2} | {max:.2} | {}/{} | {:.2} | {} |",
        t.sessions,
        t.revisions,
        t.groups,
        percentile_ms(&t.lat_us, 50.0),
        percentile_ms(&t.lat_us, 99.0),
        t.completes,
        t.sessions,
        r.total.as_secs_f64(),
        rss_per_session.map_or("—".into(), |k| format!("{k:.1} KiB")),
    );
}
