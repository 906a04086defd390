//! Benchmark harness: builds and starts the release server on a fresh
//! database, seeds tenants through the operator CLI, and runs named scenarios
//! with its own load generator. Results are ratios within one run.
//!
//!     cargo run --release -p bench -- auth-read [--seconds 10] [--connections 32]
//!     cargo run --release -p bench -- discovery-fanout [--storefronts 50] [--sessions 100]
//!     cargo run --release -p bench -- webhook-fanout [--subscriptions 1,100] [--seconds 10]
//!     cargo run --release -p bench -- campaign-validate [--seconds 10] [--connections 32] [--rounds 5]
//!     cargo run --release -p bench -- assistant-stream [--sizes 100,1000] [--rate 20] [--seconds 10]
//!     cargo run --release -p bench -- fax-inbound [--buys 100]   (faxes of 10 pages)
//!     cargo run --release -p bench -- reporting-metrics [--seconds 10] [--connections 32] [--rounds 5]
//!     cargo run --release -p bench -- media-buy-execute [--rounds 10] [--storefronts 50] [--buys 10000] [--window 150] [--only execute|poller]

mod assistant;
mod campaign;
mod discovery;
mod durability;
mod fake_seller;
mod fax;
mod load;
mod media_buys;
mod reporting;
mod rooms;
mod server;
mod sms;
mod sse;
mod webhooks;

use anyhow::{Context, bail};

pub struct Args {
    pub scenario: String,
    pub seconds: u64,
    pub connections: usize,
    pub database_url: Option<String>,
    /// room-fanout: subscriber counts, run in increasing order on one room.
    pub sizes: Vec<usize>,
    /// room-fanout: posts per second.
    pub rate: u64,
    /// conversations-list: server instances on the database (2 or more
    /// needs PostgreSQL); lists are read through the last one, while seeding
    /// and posts go through the first.
    pub instances: usize,
    /// discovery-fanout: fake storefronts (session A asks them all).
    pub storefronts: usize,
    /// discovery-fanout: concurrent sessions of run B, and storefronts each.
    pub sessions: usize,
    pub per_session: usize,
    /// discovery-fanout, webhook-fanout: the storefronts' answer delays span
    /// this range (ms); each scenario has its own default.
    pub delays_ms: Option<(u64, u64)>,
    /// discovery-fanout: runs A and B this many times on one server.
    pub repeat: usize,
    /// campaign-validate: alternating rounds the seconds per endpoint are
    /// split into (5); media-buy-execute: executes, each of a new cart (10).
    pub rounds: Option<usize>,
    /// media-buy-execute: non-terminal buys the poller keeps refreshing.
    pub buys: usize,
    /// media-buy-execute: seconds the poller is watched for.
    pub window: u64,
    /// media-buy-execute: run only `execute` or `poller`.
    pub only: Option<String>,
    /// webhook-fanout: subscription counts, each on a fresh server.
    pub subscriptions: Vec<usize>,
    /// webhook-fanout: revisions committed per second (default by size).
    pub revision_rate: Option<f64>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut it = std::env::args().skip(1);
    let mut args = Args {
        scenario: String::new(),
        seconds: 10,
        connections: 32,
        database_url: None,
        sizes: vec![100, 1000, 5000],
        rate: 20,
        instances: 1,
        storefronts: 50,
        sessions: 100,
        per_session: 10,
        delays_ms: None,
        repeat: 1,
        rounds: None,
        buys: 10_000,
        window: 150,
        only: None,
        subscriptions: vec![1, 100],
        revision_rate: None,
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--seconds" => args.seconds = it.next().context("--seconds N")?.parse()?,
            "--connections" => args.connections = it.next().context("--connections N")?.parse()?,
            "--database-url" => args.database_url = Some(it.next().context("--database-url URL")?),
            "--sizes" => {
                args.sizes = it
                    .next()
                    .context("--sizes N,N,...")?
                    .split(',')
                    .map(|s| s.trim().parse())
                    .collect::<Result<_, _>>()?
            }
            "--rate" => args.rate = it.next().context("--rate N")?.parse()?,
            "--instances" => args.instances = it.next().context("--instances N")?.parse()?,
            "--storefronts" => args.storefronts = it.next().context("--storefronts N")?.parse()?,
            "--sessions" => args.sessions = it.next().context("--sessions N")?.parse()?,
            "--per-session" => args.per_session = it.next().context("--per-session N")?.parse()?,
            "--repeat" => args.repeat = it.next().context("--repeat N")?.parse()?,
            "--rounds" => args.rounds = Some(it.next().context("--rounds N")?.parse()?),
            "--buys" => args.buys = it.next().context("--buys N")?.parse()?,
            "--window" => args.window = it.next().context("--window SECONDS")?.parse()?,
            "--only" => {
                let part = it.next().context("--only execute|poller")?;
                if part != "execute" && part != "poller" {
                    bail!("--only execute|poller");
                }
                args.only = Some(part);
            }
            "--delays" => {
                let v = it.next().context("--delays MIN_MS,MAX_MS")?;
                let (a, b) = v.split_once(',').context("--delays MIN_MS,MAX_MS")?;
                let (a, b) = (a.trim().parse()?, b.trim().parse()?);
                if a > b {
                    bail!("--delays MIN_MS,MAX_MS with MIN <= MAX");
                }
                args.delays_ms = Some((a, b));
            }
            "--subscriptions" => {
                args.subscriptions = it
                    .next()
                    .context("--subscriptions N,N,...")?
                    .split(',')
                    .map(|s| s.trim().parse())
                    .collect::<Result<_, _>>()?
            }
            "--revision-rate" => {
                args.revision_rate = Some(it.next().context("--revision-rate N")?.parse()?)
            }
            "-h" | "--help" => {
                println!(
                    "usage: bench SCENARIO [--seconds N] [--connections N] [--database-url URL] [--sizes 100,1000,5000] [--rate POSTS_PER_S] [--instances N] [--storefronts 50] [--sessions 100] [--per-session 10] [--delays 50,3000] [--repeat 1] [--subscriptions 1,100] [--revision-rate REVISIONS_PER_S] [--rounds N] [--buys 10000] [--window 150] [--only execute|poller]\nscenarios: {}",
                    SCENARIOS.join(", ")
                );
                std::process::exit(0);
            }
            s if args.scenario.is_empty() && !s.starts_with('-') => args.scenario = s.to_string(),
            other => bail!("unknown argument {other}"),
        }
    }
    if args.instances == 0
        || (args.instances > 1
            && !args
                .database_url
                .as_deref()
                .is_some_and(|u| u.starts_with("postgres")))
    {
        bail!("--instances N: 1, or more with --database-url postgres://...");
    }
    if args.scenario.is_empty() {
        bail!("name a scenario: {}", SCENARIOS.join(", "));
    }
    Ok(args)
}

const SCENARIOS: &[&str] = &[
    "auth-read",
    "room-fanout",
    "conversations-list",
    "message-post-sync",
    "discovery-fanout",
    "webhook-fanout",
    "sms-accept",
    "campaign-validate",
    "media-buy-execute",
    "assistant-stream",
    "fax-inbound",
    "reporting-metrics",
];

fn main() -> anyhow::Result<()> {
    let args = parse_args()?;
    // Thousands of subscribers: one socket each.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    // One thread for the load generator by default (the server gets its own
    // process); `BENCH_THREADS=N` spreads the readers over N threads.
    let threads: usize = std::env::var("BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1);
    let rt = if threads > 1 {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(threads)
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    };
    rt.block_on(async move {
        match args.scenario.as_str() {
            "auth-read" => auth_read(&args).await,
            "room-fanout" => rooms::room_fanout(&args).await,
            "conversations-list" => rooms::conversations_list(&args).await,
            "message-post-sync" => durability::message_post_sync(&args).await,
            "discovery-fanout" => discovery::discovery_fanout(&args).await,
            "webhook-fanout" => webhooks::webhook_fanout(&args).await,
            "sms-accept" => sms::sms_accept(&args).await,
            "campaign-validate" => campaign::campaign_validate(&args).await,
            "media-buy-execute" => media_buys::media_buy_execute(&args).await,
            "assistant-stream" => assistant::assistant_stream(&args).await,
            "fax-inbound" => fax::fax_inbound(&args).await,
            "reporting-metrics" => reporting::reporting_metrics(&args).await,
            other => bail!("unknown scenario {other}; known: {}", SCENARIOS.join(", ")),
        }
    })
}

/// `GET /api/v2/me` (bearer auth, rate limiting, envelope) against `GET /healthz`.
async fn auth_read(args: &Args) -> anyhow::Result<()> {
    let server = server::Server::start(args.database_url.as_deref()).await?;
    let key = server.seed_tenant("platform:write")?;
    let auth = format!("Bearer {key}");
    let me = load::Target::get(server.addr, "/api/v2/me", Some(&auth));
    let health = load::Target::get(server.addr, "/healthz", None);
    me.check(200).await?;
    health.check(200).await?;

    let secs = args.seconds.max(2);
    // Warm-up, then alternate the two endpoints so drift hits both alike.
    load::run(&health, args.connections, 1).await?;
    load::run(&me, args.connections, 1).await?;
    let mut h = load::Stats::default();
    let mut m = load::Stats::default();
    for _ in 0..2 {
        h.merge(load::run(&health, args.connections, secs / 2).await?);
        m.merge(load::run(&me, args.connections, secs / 2).await?);
    }
    println!();
    println!(
        "scenario auth-read: {} connections, {} s per endpoint, {}",
        args.connections,
        secs,
        server.backend()
    );
    println!("| endpoint | req/s | p50 ms | p99 ms | errors |");
    println!("|---|---:|---:|---:|---:|");
    for (name, s) in [("GET /healthz", &h), ("GET /api/v2/me", &m)] {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} | {} |",
            s.rps(),
            s.percentile(50.0),
            s.percentile(99.0),
            s.errors
        );
    }
    let ratio = m.rps() / h.rps();
    println!();
    println!(
        "ratio /api/v2/me : /healthz = {:.1}% (target >= 50%)",
        ratio * 100.0
    );
    println!(
        "server RSS after run: {} KiB",
        server.rss_kib().unwrap_or(0)
    );
    Ok(())
}
