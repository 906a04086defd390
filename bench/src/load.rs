//! A small closed-loop HTTP/1.1 load generator: N keep-alive connections,
//! each sending its next request as soon as the previous answer arrives.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::Request;
use hyper_util::rt::TokioIo;

#[derive(Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub path: String,
    pub auth: Option<String>,
}

impl Target {
    pub fn get(addr: SocketAddr, path: &str, auth: Option<&str>) -> Target {
        Target {
            addr,
            path: path.into(),
            auth: auth.map(String::from),
        }
    }

    fn request(&self) -> anyhow::Result<Request<Empty<Bytes>>> {
        let mut b = Request::get(&self.path).header("host", self.addr.to_string());
        if let Some(a) = &self.auth {
            b = b.header("authorization", a);
        }
        Ok(b.body(Empty::new())?)
    }

    /// One JSON request on a fresh connection (setup, not measured); fails on a
    /// non-2xx answer.
    pub async fn json(
        &self,
        method: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<serde_json::Value> {
        Ok(self.json_timed(method, body).await?.1)
    }

    /// [`Target::json`], timed from just before the request is sent (the
    /// connection already open) to the answer's last byte.
    pub async fn json_timed(
        &self,
        method: &str,
        body: Option<serde_json::Value>,
    ) -> anyhow::Result<(Duration, serde_json::Value)> {
        let stream = tokio::net::TcpStream::connect(self.addr).await?;
        stream.set_nodelay(true)?;
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let mut b = Request::builder()
            .method(method)
            .uri(&self.path)
            .header("host", self.addr.to_string());
        if let Some(a) = &self.auth {
            b = b.header("authorization", a);
        }
        let payload = match body {
            Some(v) => {
                b = b.header("content-type", "application/json");
                Bytes::from(serde_json::to_vec(&v)?)
            }
            None => Bytes::new(),
        };
        let request = b.body(http_body_util::Full::new(payload))?;
        let start = Instant::now();
        let res = tx.send_request(request).await?;
        let status = res.status();
        let bytes = res.into_body().collect().await?.to_bytes();
        let took = start.elapsed();
        if !status.is_success() {
            bail!(
                "{method} {} answered {status}: {}",
                self.path,
                String::from_utf8_lossy(&bytes)
            );
        }
        Ok((took, serde_json::from_slice(&bytes)?))
    }

    /// One GET on a fresh connection; the body as text.
    pub async fn text(&self) -> anyhow::Result<String> {
        let stream = tokio::net::TcpStream::connect(self.addr).await?;
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let res = tx.send_request(self.request()?).await?;
        let bytes = res.into_body().collect().await?.to_bytes();
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// One request; fails unless the status matches.
    pub async fn check(&self, status: u16) -> anyhow::Result<()> {
        let stream = tokio::net::TcpStream::connect(self.addr).await?;
        let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
        tokio::spawn(conn);
        let res = tx.send_request(self.request()?).await?;
        let got = res.status().as_u16();
        let body = res.into_body().collect().await?.to_bytes();
        if got != status {
            bail!(
                "{} answered {got}: {}",
                self.path,
                String::from_utf8_lossy(&body)
            );
        }
        Ok(())
    }
}

#[derive(Default)]
pub struct Stats {
    pub ok: u64,
    pub errors: u64,
    pub elapsed: Duration,
    latencies_us: Vec<u32>,
}

impl Stats {
    pub fn rps(&self) -> f64 {
        self.ok as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }

    pub fn percentile(&self, p: f64) -> f64 {
        percentile_ms(&self.latencies_us, p)
    }

    pub fn merge(&mut self, other: Stats) {
        self.ok += other.ok;
        self.errors += other.errors;
        self.elapsed += other.elapsed;
        self.latencies_us.extend(other.latencies_us);
    }
}

/// p-th percentile of microsecond samples, in milliseconds.
pub fn percentile_ms(samples: &[u32], p: f64) -> f64 {
    if samples.is_empty() {
        return 0.0;
    }
    let mut v = samples.to_vec();
    v.sort_unstable();
    let idx = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[idx.min(v.len() - 1)] as f64 / 1000.0
}

pub async fn run(target: &Target, connections: usize, seconds: u64) -> anyhow::Result<Stats> {
    run_for(target, connections, Duration::from_secs(seconds)).await
}

pub async fn run_for(target: &Target, connections: usize, span: Duration) -> anyhow::Result<Stats> {
    let start = Instant::now();
    let deadline = start + span;
    let mut tasks = Vec::with_capacity(connections);
    for _ in 0..connections {
        let t = target.clone();
        tasks.push(tokio::spawn(async move { worker(t, deadline).await }));
    }
    let mut total = Stats::default();
    for task in tasks {
        total.merge(task.await.context("load worker")??);
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

async fn worker(target: Target, deadline: Instant) -> anyhow::Result<Stats> {
    let mut stats = Stats::default();
    let stream = tokio::net::TcpStream::connect(target.addr).await?;
    stream.set_nodelay(true)?;
    let (mut tx, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    while Instant::now() < deadline {
        let t0 = Instant::now();
        let res = tx.send_request(target.request()?).await?;
        let ok = res.status().is_success();
        res.into_body().collect().await?;
        let us = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
        if ok {
            stats.ok += 1;
            stats.latencies_us.push(us);
        } else {
            stats.errors += 1;
        }
    }
    Ok(stats)
}
