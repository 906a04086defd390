//! `reporting-metrics`: one year of daily delivery rows for 1,000 media buys
//! (20 campaigns of 50 buys, one advertiser: 365,000 package rows and their
//! campaign-day sums, seeded straight into the database as the poller
//! writes them), then a month of it grouped by day
//! (`GET /api/v2/buyer/reporting/metrics?advertiserId=..&startDate=..&endDate=..&groupBy=day`)
//! from concurrent keep-alive clients, against `GET /healthz` in the same
//! run, in alternating rounds. Prints the query plan of the report's query.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sea_orm::{ConnectionTrait, Statement, TransactionTrait};
use serde_json::json;

use crate::Args;
use crate::load::{self, Target};
use crate::server::Server;

const CAMPAIGNS: usize = 20;
const BUYS_PER_CAMPAIGN: usize = 50;
const DAYS: i64 = 365;

pub async fn reporting_metrics(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(args.database_url.as_deref()).await?;
    let key = server.seed_tenant("platform:write")?;
    let auth = format!("Bearer {key}");
    let adv = Target::get(server.addr, "/api/v2/buyer/advertisers", Some(&auth))
        .json(
            "POST",
            Some(json!({"name": "Bench", "brand": "bench.example", "primaryCurrency": "USD"})),
        )
        .await?;
    let advertiser = adv["data"]["id"]
        .as_str()
        .context("advertiser id")?
        .to_string();

    let db = sea_orm::Database::connect(server.database_url()).await?;
    let backend = db.get_database_backend();
    let account: String = db
        .query_one_raw(Statement::from_string(
            backend,
            format!("SELECT account_id FROM advertisers WHERE id = '{advertiser}'"),
        ))
        .await?
        .context("the advertiser's row")?
        .try_get_by_index(0)?;

    let seeding = Instant::now();
    let first = chrono::NaiveDate::from_ymd_opt(2025, 12, 1).context("date")?;
    let pulled = chrono::Utc::now().to_rfc3339();
    let txn = db.begin().await?;
    let mut values = Vec::with_capacity(500);
    let mut rows = 0u64;
    for c in 0..CAMPAIGNS {
        for b in 0..BUYS_PER_CAMPAIGN {
            let buy = c * BUYS_PER_CAMPAIGN + b;
            for d in 0..DAYS {
                let date = first + chrono::Duration::days(d);
                let impressions = 1_000 + (buy as i64 * 7 + d * 13) % 500;
                let spend = impressions as f64 * 0.005;
                values.push(format!(
                    "('{account}','{advertiser}','camp_{c}','buy_{buy}','buy_{buy}_p1','','{date}',{impressions},{spend},{clicks},NULL,'cpm',{units},'USD','{pulled}')",
                    clicks = impressions / 100,
                    units = impressions as f64 / 1000.0,
                ));
                rows += 1;
                if values.len() == 500 {
                    insert(&txn, backend, &values).await?;
                    values.clear();
                }
            }
        }
    }
    if !values.is_empty() {
        insert(&txn, backend, &values).await?;
    }
    txn.execute_raw(Statement::from_string(
        backend,
        "INSERT INTO delivery_campaign_daily (account_id, advertiser_id, campaign_id, date, currency, pricing_model, impressions, spend, clicks, video_completions, units) \
         SELECT account_id, advertiser_id, campaign_id, date, currency, pricing_model, SUM(impressions), SUM(spend), SUM(clicks), SUM(video_completions), SUM(units) \
         FROM delivery_daily WHERE placement_id = '' GROUP BY account_id, advertiser_id, campaign_id, date, currency, pricing_model",
    ))
    .await?;
    txn.commit().await?;
    let seeded = seeding.elapsed();

    // The report's query, as the server sends it (see src/reporting/metrics.rs).
    let report_sql = format!(
        "SELECT \"delivery_campaign_daily\".\"advertiser_id\", \"delivery_campaign_daily\".\"date\", \"delivery_campaign_daily\".\"currency\", \"delivery_campaign_daily\".\"pricing_model\", \
         CAST(SUM(\"delivery_campaign_daily\".\"impressions\") AS BIGINT) AS \"impressions\", SUM(\"delivery_campaign_daily\".\"spend\") AS \"spend\", \
         CAST(SUM(\"delivery_campaign_daily\".\"clicks\") AS BIGINT) AS \"clicks\", CAST(SUM(\"delivery_campaign_daily\".\"video_completions\") AS BIGINT) AS \"video_completions\", \
         SUM(\"delivery_campaign_daily\".\"units\") AS \"units\" FROM \"delivery_campaign_daily\" \
         WHERE \"delivery_campaign_daily\".\"account_id\" = '{account}' AND \"delivery_campaign_daily\".\"advertiser_id\" = '{advertiser}' \
         AND \"delivery_campaign_daily\".\"date\" >= '2026-06-01' AND \"delivery_campaign_daily\".\"date\" <= '2026-06-30' \
         GROUP BY \"delivery_campaign_daily\".\"advertiser_id\", \"delivery_campaign_daily\".\"date\", \"delivery_campaign_daily\".\"currency\", \"delivery_campaign_daily\".\"pricing_model\""
    );
    let explain = match backend {
        sea_orm::DatabaseBackend::Postgres => format!("EXPLAIN {report_sql}"),
        _ => format!("EXPLAIN QUERY PLAN {report_sql}"),
    };
    let plan = db
        .query_all_raw(Statement::from_string(backend, explain))
        .await?;
    let mut plan_lines = Vec::new();
    for row in plan {
        let line = row
            .try_get::<String>("", "detail")
            .or_else(|_| row.try_get::<String>("", "QUERY PLAN"))
            .unwrap_or_default();
        plan_lines.push(line);
    }
    db.close().await.ok();

    let path = format!(
        "/api/v2/buyer/reporting/metrics?advertiserId={advertiser}&startDate=2026-06-01&endDate=2026-06-30&groupBy=day&take=31"
    );
    let target = Target::get(server.addr, &path, Some(&auth));
    let (first_ms, report) = target.json_timed("GET", None).await?;
    let days = report["data"].as_array().context("report rows")?;
    if days.len() != 30 || days[0]["date"] != "2026-06-01" {
        bail!("unexpected report: {report}");
    }
    let expected: i64 = (0..CAMPAIGNS * BUYS_PER_CAMPAIGN)
        .map(|buy| 1_000 + (buy as i64 * 7 + 182 * 13) % 500)
        .sum();
    if days[0]["impressions"].as_i64() != Some(expected) {
        bail!(
            "2026-06-01 has {} impressions, expected {expected}",
            days[0]["impressions"]
        );
    }

    let health = Target::get(server.addr, "/healthz", None);
    let secs = args.seconds.max(2);
    let rounds = args.rounds.unwrap_or(5).clamp(1, secs as usize);
    let slice = Duration::from_secs_f64(secs as f64 / rounds as f64);
    load::run(&health, args.connections, 1).await?;
    load::run(&target, args.connections, 1).await?;
    let mut h = load::Stats::default();
    let mut r = load::Stats::default();
    let mut ratios = Vec::new();
    for _ in 0..rounds {
        let hr = load::run_for(&health, args.connections, slice).await?;
        let rr = load::run_for(&target, args.connections, slice).await?;
        ratios.push(rr.rps() / hr.rps().max(1e-9) * 100.0);
        h.merge(hr);
        r.merge(rr);
    }
    println!();
    println!(
        "scenario reporting-metrics: {rows} delivery rows ({} buys x {DAYS} days, {CAMPAIGNS} campaigns; seeded in {:.1} s), a month by day; {} connections, {} s per endpoint, {}",
        CAMPAIGNS * BUYS_PER_CAMPAIGN,
        seeded.as_secs_f64(),
        args.connections,
        secs,
        server.backend()
    );
    println!("first report: {:.2} ms", first_ms.as_secs_f64() * 1000.0);
    println!("| endpoint | req/s | p50 ms | p99 ms | errors |");
    println!("|---|---:|---:|---:|---:|");
    for (name, s) in [
        ("GET /healthz", &h),
        ("GET /api/v2/buyer/reporting/metrics", &r),
    ] {
        println!(
            "| {name} | {:.0} | {:.2} | {:.2} | {} |",
            s.rps(),
            s.percentile(50.0),
            s.percentile(99.0),
            s.errors
        );
    }
    println!();
    println!(
        "ratio reporting/metrics : /healthz = {:.1}% (target >= 20%); rounds: {}",
        r.rps() / h.rps().max(1e-9) * 100.0,
        ratios
            .iter()
            .map(|x| format!("{x:.1}%"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!("query plan:");
    for l in plan_lines {
        println!("    {l}");
    }
    if r.errors > 0 {
        bail!("{} reports failed", r.errors);
    }
    Ok(())
}

async fn insert(
    txn: &sea_orm::DatabaseTransaction,
    backend: sea_orm::DatabaseBackend,
    values: &[String],
) -> anyhow::Result<()> {
    txn.execute_raw(Statement::from_string(
        backend,
        format!(
            "INSERT INTO delivery_daily (account_id, advertiser_id, campaign_id, media_buy_id, package_id, placement_id, date, impressions, spend, clicks, video_completions, pricing_model, units, currency, pulled_at) VALUES {}",
            values.join(",")
        ),
    ))
    .await?;
    Ok(())
}
