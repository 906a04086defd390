//! Minimal SSE subscribers for the fan-out benchmark: one plain TCP
//! connection each (a hand-written HTTP/1.1 request, the chunked body read
//! as it comes), recording, in arrival order, when each `message.created`
//! id arrives (so order can be checked per subscriber). No HTTP client
//! library: the readers share the two cores with the server, so the load
//! generator does as little as it can per delivery (one task, no body
//! channel between a connection task and a reader).

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::bail;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One subscriber's receipts in arrival order: (sequence, time read).
/// Each subscriber has its own, so recording never contends.
pub type Receipts = Arc<Mutex<Vec<(u64, Instant)>>>;

/// Opens a stream and returns once the server has sent the response head
/// and the `ready` event; then keeps reading in a task until it is aborted.
pub async fn subscribe(
    addr: SocketAddr,
    path: &str,
    auth: &str,
    receipts: Receipts,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let request = format!(
        "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: {auth}\r\naccept: text/event-stream\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await?;
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        if stream.read_buf(&mut buf).await? == 0 {
            bail!("stream ended before ready");
        }
        if find(&buf, b"\r\n\r\n").is_some() && !buf.starts_with(b"HTTP/1.1 200") {
            bail!(
                "subscribe answered {}",
                String::from_utf8_lossy(&buf[..buf.len().min(40)])
            );
        }
        if find(&buf, b"event: ready").is_some() {
            break;
        }
    }
    buf.clear();
    Ok(tokio::spawn(async move {
        loop {
            match stream.read_buf(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            let now = Instant::now();
            // Each complete event ends with a blank line; the chunk-size
            // lines between events are not `id:` lines and are skipped.
            let mut start = 0;
            while let Some(end) = find(&buf[start..], b"\n\n") {
                let event = &buf[start..start + end];
                start += end + 2;
                if find(event, b"event: message.created").is_none() {
                    continue;
                }
                if let Some(seq) = id_of(event)
                    && let Ok(mut r) = receipts.lock()
                {
                    r.push((seq, now));
                }
            }
            buf.drain(..start);
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
