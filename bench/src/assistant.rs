//! The assistant's streamed answer (issue 35): a fake OpenAI-compatible
//! model in this process streams one answer piece by piece at a steady rate
//! (`--rate` pieces per second for `--seconds`), recording the instant just
//! before each piece is written; N subscribers of the room (`--sizes`)
//! record when each `message.delta` arrives. Latency: the model writing a
//! piece to the server reading it as a delta, through the server's parse,
//! bus and room. Hand-written HTTP on both sides, as the other scenarios.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::Args;
use crate::load::{Target, percentile_ms};
use crate::server::Server;
use crate::sse::{self, Receipts};

/// When each piece of the current answer was written.
type Sent = Arc<Mutex<Vec<Instant>>>;

struct FakeModel {
    addr: SocketAddr,
    sent: Sent,
}

impl FakeModel {
    async fn start(pieces: usize, gap: Duration) -> anyhow::Result<FakeModel> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let sent: Sent = Default::default();
        let record = sent.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let record = record.clone();
                tokio::spawn(async move {
                    if let Err(e) = answer(stream, pieces, gap, record).await {
                        eprintln!("fake model: {e}");
                    }
                });
            }
        });
        Ok(FakeModel { addr, sent })
    }
}

/// Reads one chat-completions request and streams the answer.
async fn answer(
    mut stream: TcpStream,
    pieces: usize,
    gap: Duration,
    sent: Sent,
) -> anyhow::Result<()> {
    stream.set_nodelay(true)?;
    let mut buf = Vec::with_capacity(64 * 1024);
    let body_start = loop {
        if stream.read_buf(&mut buf).await? == 0 {
            bail!("request ended early");
        }
        if let Some(i) = sse::find(&buf, b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..body_start]).to_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while buf.len() < body_start + length {
        if stream.read_buf(&mut buf).await? == 0 {
            bail!("body ended early");
        }
    }
    stream
        .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n")
        .await?;
    let frame = |data: &Value| {
        let event = format!("data: {data}\n\n");
        format!("{:x}\r\n{event}\r\n", event.len())
    };
    sent.lock()
        .map_err(|_| anyhow::anyhow!("poisoned"))?
        .clear();
    let mut tick = tokio::time::interval(gap);
    for i in 0..pieces {
        tick.tick().await;
        let chunk = frame(
            &json!({ "choices": [{ "index": 0, "delta": { "content": format!("w{i} ") } }] }),
        );
        if let Ok(mut s) = sent.lock() {
            s.push(Instant::now());
        }
        stream.write_all(chunk.as_bytes()).await?;
    }
    let usage = frame(
        &json!({ "choices": [], "usage": { "prompt_tokens": 1, "completion_tokens": pieces } }),
    );
    let done = "data: [DONE]\n\n";
    let tail = format!("{usage}{:x}\r\n{done}\r\n0\r\n\r\n", done.len());
    stream.write_all(tail.as_bytes()).await?;
    Ok(())
}

/// The `index` of a `message.delta` frame.
fn index_of(frame: &[u8]) -> Option<u64> {
    let at = sse::find(frame, b"\"index\":")? + b"\"index\":".len();
    let digits: Vec<u8> = frame[at..]
        .iter()
        .copied()
        .take_while(u8::is_ascii_digit)
        .collect();
    std::str::from_utf8(&digits).ok()?.parse().ok()
}

pub async fn assistant_stream(args: &Args) -> anyhow::Result<()> {
    let pieces = (args.rate * args.seconds) as usize;
    let gap = Duration::from_secs_f64(1.0 / args.rate.max(1) as f64);
    let model = FakeModel::start(pieces, gap).await?;
    let url = format!("http://{}/v1", model.addr);
    let server = Server::start_with(
        args.database_url.as_deref(),
        &[
            ("AGENTIC_ASSISTANT_URL", url.as_str()),
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
            ("AGENTIC_ASSISTANT_RUN_SECONDS", "600"),
            ("AGENTIC_ASSISTANT_MAX_TOKENS", "200000"),
        ],
    )
    .await?;
    let account = server.admin(&["create-account", "--name", "Stream"])?["accountId"]
        .as_str()
        .context("accountId")?
        .to_string();
    let mut keys = Vec::new();
    for i in 0..8 {
        keys.push(format!(
            "Bearer {}",
            server.seed_user(
                &account,
                &format!("st{i}-{}@example.com", std::process::id()),
                "platform:write"
            )?
        ));
    }
    let call = |method: &'static str, path: String, body: Value| {
        let t = Target {
            addr: server.addr,
            path,
            auth: Some(keys[0].clone()),
        };
        async move { t.json(method, Some(body)).await }
    };
    let conv = call(
        "POST",
        "/api/v2/assistant/conversations".into(),
        json!({ "sharingEnabled": true }),
    )
    .await?;
    let uid = conv["data"]["conversation"]["conversationUid"]
        .as_str()
        .context("conversationUid")?
        .to_string();
    let events = format!("/api/v2/assistant/conversations/{uid}/events");
    // The room scenario's default sizes are too many for a stream of pieces.
    let sizes = if args.sizes == [100, 1000, 5000] {
        vec![100, 1000]
    } else {
        args.sizes.clone()
    };
    println!();
    println!(
        "scenario assistant-stream: one answer of {pieces} pieces at {} pieces/s per size, {}",
        args.rate,
        server.backend()
    );
    println!("| subscribers | pieces | deltas read | missing | p50 ms | p99 ms | max ms |");
    println!("|---:|---:|---:|---:|---:|---:|---:|");
    let mut receipts: Vec<Receipts> = Vec::new();
    let mut handles = Vec::new();
    for &n in &sizes {
        while receipts.len() < n {
            let key = &keys[receipts.len() % keys.len()];
            let r: Receipts = Default::default();
            handles.push(
                sse::subscribe_to(
                    server.addr,
                    &events,
                    key,
                    b"event: message.delta",
                    index_of,
                    r.clone(),
                )
                .await?,
            );
            receipts.push(r);
        }
        for r in &receipts {
            if let Ok(mut r) = r.lock() {
                r.clear();
            }
        }
        let turn = call(
            "POST",
            format!("/api/v2/assistant/conversations/{uid}/turns"),
            json!({ "content": "stream" }),
        )
        .await?;
        if turn["data"]["run"]["runId"].is_null() {
            bail!("the turn was refused: {turn}");
        }
        // The whole answer, then a little for the last pieces in flight.
        let deadline = Instant::now() + gap * pieces as u32 + Duration::from_secs(10);
        loop {
            let done = receipts
                .iter()
                .all(|r| r.lock().map(|r| r.len() >= pieces).unwrap_or(true));
            if done || Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let sent = model
            .sent
            .lock()
            .map_err(|_| anyhow::anyhow!("poisoned"))?
            .clone();
        let mut samples: Vec<u32> = Vec::new();
        let mut read = 0usize;
        for r in &receipts {
            let r = r.lock().map_err(|_| anyhow::anyhow!("poisoned"))?;
            read += r.len();
            for &(index, at) in r.iter() {
                if let Some(&t) = sent.get(index as usize) {
                    samples.push(at.saturating_duration_since(t).as_micros() as u32);
                }
            }
        }
        samples.sort_unstable();
        let expected = pieces * n;
        println!(
            "| {n} | {pieces} | {read} | {} | {:.2} | {:.2} | {:.2} |",
            expected.saturating_sub(read),
            percentile_ms(&samples, 50.0),
            percentile_ms(&samples, 99.0),
            samples.last().copied().unwrap_or(0) as f64 / 1000.0,
        );
        // Let the run end before the next size's turn.
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    for h in handles {
        h.abort();
    }
    Ok(())
}
