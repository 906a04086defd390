//! Inbound faxes arriving together (issue 36): N faxes of P pages each (a
//! text PDF written here) are stored for a fax line's customer and recorded
//! `stored` in one transaction, as the carrier's events would leave them;
//! the server's pipeline extracts each in an isolated child, asks the
//! built-in offline agent, renders the reply and faxes it back through the
//! simulated carrier. Reported: the time until every fax is `sent`, the peak
//! memory of the server and its extraction children together (sampled every
//! 20 ms from `/proc`), and each stage's p50 and p99 from the server's
//! `agentic_fax_inbound_stage_seconds` histogram (bucket bounds).

use std::time::{Duration, Instant};

use anyhow::{Context, bail};

use crate::Args;
use crate::server::Server;

/// A PDF of `pages` pages of Helvetica text, with a correct xref table.
fn pdf(pages: usize, lines: usize) -> Vec<u8> {
    let mut objects: Vec<String> = Vec::new();
    // 1: catalog, 2: pages, 3: font, then per page: page, content.
    let kids: Vec<String> = (0..pages).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    objects.push("<< /Type /Catalog /Pages 2 0 R >>".into());
    objects.push(format!(
        "<< /Type /Pages /Kids [{}] /Count {pages} >>",
        kids.join(" ")
    ));
    objects.push(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>".into(),
    );
    for p in 0..pages {
        let mut content = String::from("BT /F1 11 Tf 72 740 Td 14 TL\n");
        for l in 0..lines {
            content.push_str(&format!(
                "(Page {} line {}: please quote connected TV and sports video rates for spring.) Tj T*\n",
                p + 1,
                l + 1
            ));
        }
        content.push_str("ET");
        objects.push(format!(
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R >>",
            5 + 2 * p
        ));
        objects.push(format!(
            "<< /Length {} >>\nstream\n{content}\nendstream",
            content.len()
        ));
    }
    let mut out = b"%PDF-1.4\n".to_vec();
    let mut offsets = Vec::with_capacity(objects.len());
    for (i, o) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{o}\nendobj\n", i + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for off in offsets {
        out.extend_from_slice(format!("{off:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// RSS in KiB of `pid` and every process whose parent it is.
fn tree_rss_kib(pid: u32) -> u64 {
    let rss = |p: &str| -> u64 {
        std::fs::read_to_string(format!("/proc/{p}/status"))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find(|l| l.starts_with("VmRSS:"))
                    .and_then(|l| l.split_whitespace().nth(1))
                    .and_then(|v| v.parse().ok())
            })
            .unwrap_or(0)
    };
    let mut total = rss(&pid.to_string());
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let name = e.file_name();
            let Some(p) = name.to_str() else { continue };
            if !p.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let parent = std::fs::read_to_string(format!("/proc/{p}/stat"))
                .ok()
                .and_then(|s| {
                    s.rsplit(')')
                        .next()
                        .and_then(|r| r.split_whitespace().nth(1))
                        .map(str::to_string)
                });
            if parent.as_deref() == Some(&pid.to_string()) {
                total += rss(p);
            }
        }
    }
    total
}

/// p50 and p99 upper bounds of one histogram series from a Prometheus text.
fn quantiles(text: &str, metric: &str, stage: &str) -> Option<(f64, f64, u64)> {
    let mut buckets: Vec<(f64, u64)> = Vec::new();
    let prefix = format!("{metric}_bucket{{");
    for line in text
        .lines()
        .filter(|l| l.starts_with(&prefix) && l.contains(&format!("stage=\"{stage}\"")))
    {
        let le = line.split("le=\"").nth(1)?.split('"').next()?;
        let le: f64 = if le == "+Inf" {
            f64::INFINITY
        } else {
            le.parse().ok()?
        };
        let count: u64 = line.rsplit(' ').next()?.parse().ok()?;
        buckets.push((le, count));
    }
    buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
    let total = buckets.last()?.1;
    let at = |q: f64| {
        let want = (q * total as f64).ceil() as u64;
        buckets
            .iter()
            .find(|(_, c)| *c >= want)
            .map(|(le, _)| *le)
            .unwrap_or(f64::INFINITY)
    };
    Some((at(0.5), at(0.99), total))
}

pub async fn fax_inbound(args: &Args) -> anyhow::Result<()> {
    let faxes = args.buys.min(100_000);
    let faxes = if faxes == 10_000 { 100 } else { faxes };
    let pages = 10;
    let storage = std::env::temp_dir().join(format!("agentic-bench-fax-{}", std::process::id()));
    std::fs::create_dir_all(&storage)?;
    let storage_s = storage.display().to_string();
    let server = Server::start_with(
        args.database_url.as_deref(),
        &[
            ("AGENTIC_FAX_STORAGE_DIR", storage_s.as_str()),
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
        ],
    )
    .await?;
    let account = server.admin(&["create-account", "--name", "Fax", "--phone-lines"])?["accountId"]
        .as_str()
        .context("accountId")?
        .to_string();
    let line = server.admin(&[
        "provision-line",
        "--account",
        &account,
        "--number",
        "+13325550100",
        "--kind",
        "fax",
    ])?["endpointId"]
        .as_str()
        .context("endpointId")?
        .to_string();
    let customer = server.admin(&[
        "create-customer",
        "--account",
        &account,
        "--name",
        "Bench",
        "--fax-enabled",
    ])?["customerId"]
        .as_i64()
        .context("customerId")?;
    server.admin(&[
        "assign-line-customer",
        "--endpoint",
        &line,
        "--customer",
        &customer.to_string(),
    ])?;
    let doc = pdf(pages, 40);
    let dir = storage.join(&account).join(customer.to_string());
    std::fs::create_dir_all(&dir)?;
    for i in 0..faxes {
        std::fs::write(dir.join(format!("bench-{i}.pdf")), &doc)?;
    }
    let db = sea_orm::Database::connect(server.database_url()).await?;
    let now = chrono::Utc::now().to_rfc3339();
    let values: Vec<String> = (0..faxes)
        .map(|i| {
            format!(
                "('{account}', {customer}, {line}, 'bench-{i}', '+1312555{:04}', '+13325550100', 'stored', '{account}/{customer}/bench-{i}.pdf', {}, 0, false, 0, '{now}', '{now}')",
                i % 10_000,
                doc.len()
            )
        })
        .collect();
    let sql = format!(
        "INSERT INTO inbound_faxes (account_id, customer_id, line_id, provider_fax_id, from_number, to_number, stage, file_path, file_bytes, pages, truncated, attempts, created_at, updated_at) VALUES {}",
        values.join(", ")
    );
    let base_rss = tree_rss_kib(server.pid());
    let started = Instant::now();
    use sea_orm::ConnectionTrait;
    db.execute_unprepared(&sql).await?;
    let mut peak = base_rss;
    let deadline = started + Duration::from_secs(600);
    let mut last_check = Instant::now() - Duration::from_secs(1);
    let (sent, failed) = loop {
        peak = peak.max(tree_rss_kib(server.pid()));
        if last_check.elapsed() >= Duration::from_millis(250) {
            last_check = Instant::now();
            let counts = server
                .query_counts("SELECT (SELECT COUNT(*) FROM inbound_faxes WHERE stage = 'sent'), (SELECT COUNT(*) FROM inbound_faxes WHERE stage = 'failed')")
                .await?;
            let (sent, failed) = (counts[0], counts[1]);
            if sent + failed >= faxes as i64 {
                break (sent, failed);
            }
        }
        if Instant::now() > deadline {
            bail!("not every fax was answered within 10 minutes");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let took = started.elapsed();
    println!();
    println!(
        "scenario fax-inbound: {faxes} faxes of {pages} pages ({} bytes each) stored at once, built-in agent, simulated carrier, {}",
        doc.len(),
        server.backend()
    );
    println!(
        "| faxes | answered | failed | all answered in s | faxes/s | peak RSS, server + children (MiB) | server before (MiB) |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    println!(
        "| {faxes} | {sent} | {failed} | {:.1} | {:.1} | {:.0} | {:.0} |",
        took.as_secs_f64(),
        faxes as f64 / took.as_secs_f64(),
        peak as f64 / 1024.0,
        base_rss as f64 / 1024.0
    );
    if let Some(m) = &server.metrics {
        let t = crate::load::Target::get(m.parse()?, "/metrics", None);
        let text = t.text().await?;
        println!();
        println!("| stage | p50 s (at most) | p99 s (at most) | count |");
        println!("|---|---:|---:|---:|");
        for stage in ["extracted", "replied", "rendered", "sent"] {
            if let Some((p50, p99, n)) =
                quantiles(&text, "agentic_fax_inbound_stage_seconds", stage)
            {
                println!("| {stage} | {p50} | {p99} | {n} |");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&storage);
    Ok(())
}
