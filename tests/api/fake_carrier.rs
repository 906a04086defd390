//! A fake carrier speaking Telnyx's v2 messaging and fax wire format on 127.0.0.1
//! (port 0): records every submission (path, authorization, JSON body) on
//! arrival and answers as told (accept with a message id, refuse with a status and
//! Telnyx's error body, wait first, or never answer); it also signs webhook
//! events with its own Ed25519 key the way the carrier does.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicU64, Ordering};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer, SigningKey};
use parking_lot::Mutex;
use serde_json::{Value, json};

#[derive(Clone, Debug)]
pub struct Request {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

struct State {
    requests: Mutex<Vec<Request>>,
    status: AtomicU16,
    next: AtomicU64,
    /// Milliseconds each answer waits.
    delay_ms: AtomicU64,
    /// Never answer (the client gives up).
    hang: AtomicBool,
}

pub struct FakeCarrier {
    pub base: String,
    state: Arc<State>,
    handle: ServerHandle,
    key: SigningKey,
}

impl Drop for FakeCarrier {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

async fn messages(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    // Recorded on arrival: a request counts as sent even if its sender
    // is gone before the answer.
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    state.requests.lock().push(Request {
        path: req.path().to_string(),
        authorization: req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(String::from),
        body: parsed.clone(),
    });
    let delay = state.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
    if state.hang.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    let status = state.status.load(Ordering::SeqCst);
    let code = actix_web::http::StatusCode::from_u16(status).unwrap_or_default();
    if (200..300).contains(&status) && req.path() == "/v2/faxes" {
        let n = state.next.fetch_add(1, Ordering::SeqCst) + 1;
        HttpResponse::build(code).json(json!({"data": {
            "record_type": "fax", "direction": "outbound",
            "id": format!("b1f2c3d4-0000-4000-8000-{n:012}"),
            "connection_id": parsed["connection_id"], "media_url": parsed["media_url"],
            "to": parsed["to"], "from": parsed["from"], "status": "queued",
        }}))
    } else if (200..300).contains(&status) {
        let n = state.next.fetch_add(1, Ordering::SeqCst) + 1;
        HttpResponse::build(code).json(json!({"data": {
            "record_type": "message", "direction": "outbound",
            "id": format!("40317f2c-0000-4000-8000-{n:012}"),
            "to": [{"phone_number": parsed["to"], "status": "queued"}],
            "text": parsed["text"], "type": "SMS",
        }}))
    } else {
        HttpResponse::build(code).json(json!({"errors": [
            {"code": "40310", "title": "Invalid 'to' address", "detail": "The 'to' address is not valid."}
        ]}))
    }
}

impl FakeCarrier {
    pub async fn start() -> FakeCarrier {
        let state = Arc::new(State {
            requests: Mutex::new(Vec::new()),
            status: AtomicU16::new(200),
            next: AtomicU64::new(0),
            delay_ms: AtomicU64::new(0),
            hang: AtomicBool::new(false),
        });
        let data = web::Data::from(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/v2/messages", web::post().to(messages))
                .route("/v2/messages/rcs", web::post().to(messages))
                .route("/v2/faxes", web::post().to(messages))
        })
        .workers(2)
        .disable_signals()
        .bind("127.0.0.1:0")
        .expect("bind the fake carrier");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        FakeCarrier {
            base: format!("http://127.0.0.1:{port}"),
            state,
            handle,
            key: SigningKey::from_bytes(&[42u8; 32]),
        }
    }

    /// The status of the next answers (2xx accepts, anything else refuses
    /// with Telnyx's error body).
    pub fn answer(&self, status: u16) {
        self.state.status.store(status, Ordering::SeqCst);
    }

    pub fn delay(&self, ms: u64) {
        self.state.delay_ms.store(ms, Ordering::SeqCst);
    }

    /// Requests are recorded and never answered.
    pub fn hang(&self) {
        self.state.hang.store(true, Ordering::SeqCst);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().clone()
    }

    /// The carrier's webhook public key as its portal shows it (base64).
    pub fn public_key(&self) -> String {
        STANDARD.encode(self.key.verifying_key().to_bytes())
    }

    /// The `telnyx-signature-ed25519` value for `body` signed at `at`.
    pub fn sign(&self, body: &[u8], at: i64) -> String {
        let mut signed = format!("{at}|").into_bytes();
        signed.extend_from_slice(body);
        STANDARD.encode(self.key.sign(&signed).to_bytes())
    }
}
