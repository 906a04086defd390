//! A webhook receiver: a real HTTP server on 127.0.0.1, port 0, that records
//! every request (headers and the raw body bytes) on arrival, then answers
//! with the status it is told, once its gate is open.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use parking_lot::Mutex;
use serde_json::Value;

/// One request as received.
#[derive(Clone, Debug)]
pub struct Hit {
    pub path: String,
    pub signature: Option<String>,
    pub delivery_id: Option<String>,
    pub event_type: Option<String>,
    pub content_type: Option<String>,
    pub raw: Vec<u8>,
}

impl Hit {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.raw).expect("a JSON body")
    }
}

struct State {
    hits: Mutex<Vec<Hit>>,
    status: AtomicU16,
    /// `true` while requests are held before answering.
    gate: tokio::sync::watch::Sender<bool>,
}

pub struct Receiver {
    pub base: String,
    state: Arc<State>,
    handle: ServerHandle,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.release();
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

fn header(req: &HttpRequest, name: &str) -> Option<String> {
    req.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(String::from)
}

async fn hook(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    state.hits.lock().push(Hit {
        path: req.path().to_string(),
        signature: header(&req, "x-webhook-signature"),
        delivery_id: header(&req, "x-webhook-id"),
        event_type: header(&req, "x-webhook-event"),
        content_type: header(&req, "content-type"),
        raw: body.to_vec(),
    });
    let mut gate = state.gate.subscribe();
    while *gate.borrow_and_update() {
        if gate.changed().await.is_err() {
            break;
        }
    }
    let status = state.status.load(Ordering::SeqCst);
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap_or_default())
        .body("ok")
}

impl Receiver {
    pub async fn start() -> Receiver {
        let (gate, _) = tokio::sync::watch::channel(false);
        let state = Arc::new(State {
            hits: Mutex::new(Vec::new()),
            status: AtomicU16::new(200),
            gate,
        });
        let data = web::Data::from(Arc::clone(&state));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(web::PayloadConfig::new(16 * 1024 * 1024))
                .default_service(web::route().to(hook))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .expect("bind receiver");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        Receiver {
            base: format!("http://127.0.0.1:{port}"),
            state,
            handle,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn answer(&self, status: u16) {
        self.state.status.store(status, Ordering::SeqCst);
    }

    /// Requests wait (after being recorded) until [`Receiver::release`].
    pub fn hold(&self) {
        self.state.gate.send_replace(true);
    }

    pub fn release(&self) {
        self.state.gate.send_replace(false);
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.hits.lock().clone()
    }

    pub fn count(&self) -> usize {
        self.state.hits.lock().len()
    }

    /// Waits until at least `n` requests arrived (a bound on a hang, not a
    /// timing assertion).
    pub async fn wait_for(&self, n: usize) -> Vec<Hit> {
        for _ in 0..3000 {
            if self.count() >= n {
                return self.hits();
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("expected {n} requests, got {}", self.count());
    }
}
