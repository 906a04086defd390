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
/// Records each `message.created` by its id.
pub async fn subscribe(
    addr: SocketAddr,
    path: &str,
    auth: &str,
    receipts: Receipts,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    subscribe_to(addr, path, auth, b"event: message.created", id_of, receipts).await
}

/// [`subscribe`] recording the events named by `event` (its `event:` line),
/// each by the number `key` reads from it.
pub async fn subscribe_to(
    addr: SocketAddr,
    path: &str,
    auth: &str,
    event: &'static [u8],
    key: fn(&[u8]) -> Option<u64>,
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
                let frame = &buf[start..start + end];
                start += end + 2;
                if find(frame, event).is_none() {
                    continue;
                }
                if let Some(seq) = key(frame)
                    && let Ok(mut r) = receipts.lock()
                {
                    r.push((seq, now));
                }
            }
            buf.drain(..start);
        }
    }))
}

pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

fn id_of(event: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(event).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("id:"))
        .and_then(|v| v.trim().parse().ok())
}

/// One event read from a stream: its name, its data, and when the read
/// that completed it returned.
pub struct Event {
    pub name: String,
    pub data: String,
    pub at: Instant,
}

/// Any event stream over one plain TCP connection, the chunked body
/// decoded as it comes (an event may straddle chunks).
pub struct EventStream {
    stream: tokio::net::TcpStream,
    raw: Vec<u8>,
    body: Vec<u8>,
    chunked: bool,
    ended: bool,
    parsed: std::collections::VecDeque<Event>,
}

impl EventStream {
    /// Sends the request and reads the response head; fails unless 200.
    pub async fn open(addr: SocketAddr, path: &str, auth: &str) -> anyhow::Result<EventStream> {
        let mut stream = tokio::net::TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let request = format!(
            "GET {path} HTTP/1.1\r\nhost: {addr}\r\nauthorization: {auth}\r\naccept: text/event-stream\r\n\r\n"
        );
        stream.write_all(request.as_bytes()).await?;
        let mut raw: Vec<u8> = Vec::with_capacity(8192);
        let head_end = loop {
            if let Some(i) = find(&raw, b"\r\n\r\n") {
                break i + 4;
            }
            if stream.read_buf(&mut raw).await? == 0 {
                bail!("stream ended before its head");
            }
        };
        let head = String::from_utf8_lossy(&raw[..head_end]).to_ascii_lowercase();
        if !head.starts_with("http/1.1 200") {
            bail!(
                "stream answered {}",
                String::from_utf8_lossy(&raw[..raw.len().min(200)])
            );
        }
        let chunked = head.contains("transfer-encoding: chunked");
        raw.drain(..head_end);
        let mut s = EventStream {
            stream,
            raw,
            body: Vec::with_capacity(8192),
            chunked,
            ended: false,
            parsed: Default::default(),
        };
        s.decode(Instant::now());
        Ok(s)
    }

    /// The next event (keep-alive comments skipped); `None` at the end.
    pub async fn next(&mut self) -> anyhow::Result<Option<Event>> {
        loop {
            if let Some(e) = self.parsed.pop_front() {
                return Ok(Some(e));
            }
            if self.ended {
                return Ok(None);
            }
            if self.stream.read_buf(&mut self.raw).await? == 0 {
                self.ended = true;
            }
            self.decode(Instant::now());
        }
    }

    fn decode(&mut self, now: Instant) {
        if self.chunked {
            while let Some(line) = find(&self.raw, b"\r\n") {
                let size = std::str::from_utf8(&self.raw[..line])
                    .ok()
                    .and_then(|s| usize::from_str_radix(s.split(';').next()?.trim(), 16).ok());
                let Some(size) = size else {
                    self.ended = true;
                    break;
                };
                if size == 0 {
                    self.ended = true;
                    break;
                }
                let need = line + 2 + size + 2;
                if self.raw.len() < need {
                    break;
                }
                self.body
                    .extend_from_slice(&self.raw[line + 2..line + 2 + size]);
                self.raw.drain(..need);
            }
        } else {
            self.body.append(&mut self.raw);
        }
        let mut start = 0;
        while let Some(end) = find(&self.body[start..], b"\n\n") {
            let block = String::from_utf8_lossy(&self.body[start..start + end]).into_owned();
            start += end + 2;
            let mut name = None;
            let mut data: Vec<&str> = Vec::new();
            for l in block.lines() {
                if let Some(v) = l.strip_prefix("event:") {
                    name = Some(v.trim().to_string());
                } else if let Some(v) = l.strip_prefix("data:") {
                    data.push(v.strip_prefix(' ').unwrap_or(v));
                }
            }
            if name.is_none() && data.is_empty() {
                continue;
            }
            self.parsed.push_back(Event {
                name: name.unwrap_or_else(|| "message".into()),
                data: data.join("\n"),
                at: now,
            });
        }
        self.body.drain(..start);
    }
}
