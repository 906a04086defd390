//! Minimal SSE subscribers for the fan-out benchmark: one hyper HTTP/1.1
//! connection each, recording, in arrival order, when each
//! `message.created` id arrives (so order can be checked per subscriber).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::bail;
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;

/// One subscriber's receipts in arrival order: (sequence, time read).
/// Each subscriber has its own, so recording never contends.
pub type Receipts = Arc<Mutex<Vec<(u64, Instant)>>>;

/// Opens a stream and returns once the server has sent response headers and
/// the `ready` event; then keeps reading in a task until `stop` is dropped.
pub async fn subscribe(
    addr: SocketAddr,
    path: &str,
    auth: &str,
    receipts: Receipts,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    // (the caller keeps a clone of `receipts` to read them)
    let stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = Request::get(path)
        .header("host", addr.to_string())
        .header("authorization", auth)
        .header("accept", "text/event-stream")
        .body(Empty::<Bytes>::new())?;
    let res = tx.send_request(req).await?;
    if res.status() != 200 {
        bail!("subscribe answered {}", res.status());
    }
    let mut body = res.into_body();
    let mut buf: Vec<u8> = Vec::new();
    // Wait for `ready` so the caller knows the subscription is live.
    loop {
        let Some(frame) = body.frame().await else {
            bail!("stream ended before ready")
        };
        if let Ok(data) = frame?.into_data() {
            buf.extend_from_slice(&data);
        }
        if find(&buf, b"event: ready").is_some() {
            break;
        }
    }
    buf.clear();
    Ok(tokio::spawn(async move {
        while let Some(Ok(frame)) = body.frame().await {
            let now = Instant::now();
            let Ok(data) = frame.into_data() else {
                continue;
            };
            buf.extend_from_slice(&data);
            // Each complete event ends with a blank line.
            while let Some(end) = find(&buf, b"\n\n") {
                let event: Vec<u8> = buf.drain(..end + 2).collect();
                if find(&event, b"event: message.created").is_none() {
                    continue;
                }
                if let Some(seq) = id_of(&event)
                    && let Ok(mut r) = receipts.lock()
                {
                    r.push((seq, now));
                }
            }
        }
    }))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn id_of(event: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(event).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("id:"))
        .and_then(|v| v.trim().parse().ok())
}
