//! `campaign-validate`: a large targeting `constraints` object (hundreds of
//! postal codes over several countries and systems, a hundred-odd Nielsen
//! DMA metros, regions, languages, devices) POSTed to
//! `/api/v2/buyer/targeting/validate` by concurrent keep-alive clients,
//! against `GET /healthz` in the same run. Every answer is checked to be the
//! 200 `valid: true` one.

use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::Args;
use crate::load::{self, Target, percentile_ms};
use crate::server::Server;

#[derive(Default)]
struct Validations {
    ok: u64,
    errors: u64,
    elapsed: Duration,
    latencies_us: Vec<u32>,
}

impl Validations {
    fn rate(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    fn merge(&mut self, other: Validations) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.elapsed += other.elapsed;
        self.latencies_us.extend(other.latencies_us);
    }
}

/// `connections` clients POSTing the body for `span`.
async fn validations(
    target: &Target,
    body: &Bytes,
    connections: usize,
    span: Duration,
) -> anyhow::Result<Validations> {
    let start = Instant::now();
    let deadline = start + span;
    let tasks: Vec<_> = (0..connections)
        .map(|_| tokio::spawn(worker(target.clone(), body.clone(), deadline)))
        .collect();
    let mut total = Validations::default();
    for task in tasks {
        total.merge(task.await.context("validate worker")??);
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

/// Letters a Canadian FSA or LDU may use in its letter positions.
const CA_LETTERS: &[u8] = b"ABCEGHJKLMNPRSTVXY";
/// Letters a UK inward code may end with.
const GB_INWARD: &[u8] = b"ABDEFGHJLNPQRSTUWXYZ";
const GB_AREAS: &[&str] = &[
    "E", "N", "W", "SE", "SW", "NW", "EC", "WC", "M", "B", "L", "G", "EH", "CF", "BS", "LS",
];

fn postal_codes() -> (Vec<Value>, usize) {
    let us_zip: Vec<String> = (0..250)
        .map(|i| format!("{:05}", 10_001 + i * 331))
        .collect();
    let us_zip4: Vec<String> = (0..50)
        .map(|i| format!("{:05}-{:04}", 20_001 + i * 97, 1000 + i))
        .collect();
    let gb_outward: Vec<String> = (0..60)
        .map(|i| format!("{}{}", GB_AREAS[i % GB_AREAS.len()], 1 + i / GB_AREAS.len()))
        .collect();
    let gb_full: Vec<String> = (0..40)
        .map(|i| {
            format!(
                "{}{} {}{}{}",
                GB_AREAS[i % GB_AREAS.len()],
                1 + i % 9,
                i % 10,
                GB_INWARD[i % GB_INWARD.len()] as char,
                GB_INWARD[(i * 7) % GB_INWARD.len()] as char
            )
        })
        .collect();
    let ca = |i: usize| {
        format!(
            "{}{}{}",
            CA_LETTERS[i % CA_LETTERS.len()] as char,
            i % 10,
            CA_LETTERS[(i * 5) % CA_LETTERS.len()] as char
        )
    };
    let ca_fsa: Vec<String> = (0..30).map(ca).collect();
    let ca_full: Vec<String> = (0..30)
        .map(|i| {
            format!(
                "{} {}{}{}",
                ca(i + 3),
                i % 10,
                CA_LETTERS[(i * 3) % CA_LETTERS.len()] as char,
                (i * 7) % 10
            )
        })
        .collect();
    let de: Vec<String> = (0..50)
        .map(|i| format!("{:05}", 10_115 + i * 1_013))
        .collect();
    let fr: Vec<String> = (0..40).map(|i| format!("{:05}", 75_001 + i)).collect();
    let au: Vec<String> = (0..30).map(|i| format!("{}", 2000 + i * 41)).collect();
    let br: Vec<String> = (0..20)
        .map(|i| format!("{:05}-{:03}", 1_310 + i * 211, i * 7))
        .collect();
    let india: Vec<String> = (0..20)
        .map(|i| format!("{}", 110_001 + i * 4_999))
        .collect();
    let za: Vec<String> = (0..20).map(|i| format!("{:04}", 1 + i * 97)).collect();
    let areas = [
        ("US", "zip", us_zip),
        ("US", "zip_plus_four", us_zip4),
        ("GB", "outward", gb_outward),
        ("GB", "full", gb_full),
        ("CA", "fsa", ca_fsa),
        ("CA", "full", ca_full),
        ("DE", "plz", de),
        ("FR", "code_postal", fr),
        ("AU", "postcode", au),
        ("BR", "cep", br),
        ("IN", "pin", india),
        ("ZA", "postal_code", za),
    ];
    let count = areas.iter().map(|(_, _, v)| v.len()).sum();
    let items = areas
        .into_iter()
        .map(|(c, s, values)| json!({"country": c, "system": s, "values": values}))
        .collect();
    (items, count)
}

async fn worker(target: Target, body: Bytes, deadline: Instant) -> anyhow::Result<Validations> {
    let mut acc = Validations::default();
    let stream = tokio::net::TcpStream::connect(target.addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    while Instant::now() < deadline {
        let req = Request::post(&target.path)
            .header("host", target.addr.to_string())
            .header("authorization", target.auth.as_deref().unwrap_or(""))
            .header("content-type", "application/json")
            .body(Full::new(body.clone()))?;
        let t0 = Instant::now();
        let res = tx.send_request(req).await?;
        let status = res.status().as_u16();
        let raw = res.into_body().collect().await?.to_bytes();
        // A cheap check that it is the valid answer, not an error envelope.
        if status == 200 && raw.starts_with(b"{\"data\":{\"valid\":true") {
            acc.ok += 1;
            acc.latencies_us
                .push(t0.elapsed().as_micros().min(u32::MAX as u128) as u32);
        } else {
            acc.errors += 1;
        }
    }
    Ok(acc)
}

pub async fn campaign_validate(args: &Args) -> anyhow::Result<()> {
    let server = Server::start(args.database_url.as_deref()).await?;
    let key = server.seed_tenant("platform:read")?;
    let auth = format!("Bearer {key}");

    // Real DMA codes, from the server's own vocabulary.
    let mut dma = Vec::new();
    for skip in [0, 200] {
        let page = Target::get(
            server.addr,
            &format!("/api/v2/buyer/targeting/dimensions/nielsen_dma/values?take=200&skip={skip}"),
            Some(&auth),
        )
        .json("GET", None)
        .await?;
        for v in page["data"].as_array().context("DMA labels")? {
            dma.push(v["code"].as_str().context("code")?.to_string());
        }
    }
    if dma.len() != 210 {
        bail!("expected 210 DMA markets, got {}", dma.len());
    }
    let (postal, postal_count) = postal_codes();
    let constraints = json!({
        "channels": ["display", "olv", "ctv"],
        "geo_countries": ["US", "GB", "CA", "DE", "FR", "AU", "BR", "IN", "ZA"],
        "geo_countries_exclude": ["CU"],
        "geo_regions": ["US-CA", "US-NY", "US-TX", "US-FL", "GB-ENG", "CA-ON", "DE-BE", "FR-IDF"],
        "geo_metros": [{"system": "nielsen_dma", "values": &dma[..150]}],
        "geo_metros_exclude": [{"system": "nielsen_dma", "values": &dma[150..170]}],
        "geo_postal_areas": postal,
        "geo_postal_areas_exclude": [
            {"country": "US", "system": "zip", "values": ["10001", "94105", "60601"]},
            {"system": "gb_outward", "values": ["EC1"]},
        ],
        "language": ["en", "fr", "de", "pt", "hi"],
        "device_type": ["desktop", "mobile", "tablet", "ctv"],
        "device_type_exclude": ["dooh"],
        "device_platform": ["ios", "android", "roku_os", "tvos", "windows", "macos"],
    });
    let body_json = json!({ "constraints": constraints });
    let body = Bytes::from(serde_json::to_vec(&body_json)?);

    let target = Target::get(server.addr, "/api/v2/buyer/targeting/validate", Some(&auth));
    let first = target.json("POST", Some(body_json)).await?;
    if first["data"]["valid"] != json!(true) {
        bail!("the constraints were not valid: {first}");
    }
    let health = Target::get(server.addr, "/healthz", None);
    let secs = args.seconds.max(2);
    let rounds = args.rounds.unwrap_or(5).clamp(1, secs as usize);
    let slice = Duration::from_secs_f64(secs as f64 / rounds as f64);
    // Warm-up of both, then the two endpoints in alternation: the machine's
    // speed drifts (other tenants of the host), and alternating short slices
    // puts both sides of each ratio in the same conditions.
    load::run(&health, args.connections, 1).await?;
    validations(&target, &body, args.connections, Duration::from_secs(1)).await?;
    let mut h = load::Stats::default();
    let mut total = Validations::default();
    let mut ratios = Vec::with_capacity(rounds);
    // Server CPU seconds spent on each endpoint: less sensitive than
    // throughput to how the two cores are shared with the load generator.
    let (mut cpu_h, mut cpu_v) = (0.0, 0.0);
    let cpu = || server.cpu_seconds().unwrap_or(0.0);
    for _ in 0..rounds {
        let c0 = cpu();
        let hr = load::run_for(&health, args.connections, slice).await?;
        let c1 = cpu();
        let vr = validations(&target, &body, args.connections, slice).await?;
        cpu_h += c1 - c0;
        cpu_v += cpu() - c1;
        ratios.push(vr.rate() / hr.rps().max(1e-9) * 100.0);
        h.merge(hr);
        total.merge(vr);
    }
    let rate = total.rate();
    println!();
    println!(
        "scenario campaign-validate: {} connections, {} s per endpoint in {} alternating rounds, {}; body {} bytes: {} postal codes in 12 country/system areas, 150 + 20 DMA metros",
        args.connections,
        secs,
        rounds,
        server.backend(),
        body.len(),
        postal_count
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
        "| POST /buyer/targeting/validate | {:.0} | {:.2} | {:.2} | {} |",
        rate,
        percentile_ms(&total.latencies_us, 50.0),
        percentile_ms(&total.latencies_us, 99.0),
        total.errors
    );
    println!();
    let mut sorted = ratios.clone();
    sorted.sort_by(f64::total_cmp);
    println!(
        "ratio validations/s : /healthz = {:.1}% (target >= 12%); per round {} (median {:.1}%)",
        rate / h.rps().max(1e-9) * 100.0,
        ratios
            .iter()
            .map(|r| format!("{r:.1}%"))
            .collect::<Vec<_>>()
            .join(", "),
        sorted[sorted.len() / 2]
    );
    let per_h = cpu_h * 1e6 / h.ok.max(1) as f64;
    let per_v = cpu_v * 1e6 / total.ok.max(1) as f64;
    println!(
        "server CPU per request: /healthz {per_h:.1} µs, validate {per_v:.1} µs (ratio {:.1}%)",
        per_h / per_v.max(1e-9) * 100.0
    );
    println!(
        "server RSS after run: {} KiB",
        server.rss_kib().unwrap_or(0)
    );
    if total.errors > 0 {
        bail!("{} validations were not answered valid", total.errors);
    }
    Ok(())
}
