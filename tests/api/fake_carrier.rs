//! A fake carrier speaking Telnyx v2 messaging: a real HTTP server on
//! 127.0.0.1 that records each submission (path, authorization, JSON body)
//! and answers as told (accept with a message id, a given status and body,
//! or never), and signs webhook events with its own Ed25519 key the way the
//! carrier does, for the server's webhook endpoint.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::{Signer, SigningKey};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// One submission as received.
#[derive(Clone, Debug)]
pub struct Submitted {
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

/// How the carrier answers submissions.
#[derive(Clone, Debug)]
pub enum Answer {
    /// 200 with `{data: {id: "tx-N", to: [{status: "queued"}]}}`.
    Accept,
    /// This status and body.
    Status(u16, String),
    /// Never (the request stays open until the client gives up).
    Hang,
}

struct State {
    seen: Mutex<Vec<Submitted>>,
    answer: Mutex<Answer>,
    next_id: AtomicU64,
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

async fn submit(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let id = state.next_id.fetch_add(1, Ordering::SeqCst) + 1;
    state.seen.lock().push(Submitted {
        path: req.path().to_string(),
        authorization: req
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .map(String::from),
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    });
    let answer = state.answer.lock().clone();
    match answer {
        Answer::Accept => HttpResponse::Ok().json(json!({"data": {
            "record_type": "message", "id": format!("tx-{id}"), "type": "SMS",
            "to": [{"phone_number": "+12127360000", "status": "queued"}]
        }})),
        Answer::Status(status, body) => {
            HttpResponse::build(actix_web::http::StatusCode::from_u16(status).unwrap_or_default())
                .content_type("application/json")
                .body(body)
        }
        Answer::Hang => {
            std::future::pending::<()>().await;
            HttpResponse::Ok().finish()
        }
    }
}

impl FakeCarrier {
    pub async fn start() -> FakeCarrier {
        let state = Arc::new(State {
            seen: Mutex::new(Vec::new()),
            answer: Mutex::new(Answer::Accept),
            next_id: AtomicU64::new(0),
        });
        let data = web::Data::from(Arc::clone(&state));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::route().to(submit))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .expect("bind fake carrier");
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

    pub fn answer(&self, a: Answer) {
        *self.state.answer.lock() = a;
    }

    pub fn seen(&self) -> Vec<Submitted> {
        self.state.seen.lock().clone()
    }

    /// The carrier's public key as its portal shows it (base64).
    pub fn public_key(&self) -> String {
        STANDARD.encode(self.key.verifying_key().to_bytes())
    }

    /// The `telnyx-signature-ed25519` and `telnyx-timestamp` headers for
    /// `body` signed at Unix time `at`.
    pub fn sign(&self, body: &[u8], at: i64) -> (String, String) {
        let ts = at.to_string();
        let mut signed = format!("{ts}|").into_bytes();
        signed.extend_from_slice(body);
        (STANDARD.encode(self.key.sign(&signed).to_bytes()), ts)
    }

    /// A `message.received` event: `text` from `from` to our line `to`.
    pub fn inbound(&self, from: &str, to: &str, text: &str) -> Vec<u8> {
        let id = self.state.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        serde_json::to_vec(&json!({"data": {
            "record_type": "event", "id": format!("ev-{id}"), "event_type": "message.received",
            "occurred_at": chrono::Utc::now().to_rfc3339(),
            "payload": {"id": format!("in-{id}"), "direction": "inbound", "type": "SMS",
                "from": {"phone_number": from}, "to": [{"phone_number": to, "status": "webhook_delivered"}],
                "text": text}},
            "meta": {"attempt": 1}}))
        .unwrap_or_default()
    }

    /// A `message.finalized` delivery report for our message `carrier_id`.
    pub fn report(&self, carrier_id: &str, kind: &str, status: &str) -> Vec<u8> {
        let id = self.state.next_id.fetch_add(1, Ordering::SeqCst) + 1;
        serde_json::to_vec(&json!({"data": {
            "record_type": "event", "id": format!("ev-{id}"), "event_type": "message.finalized",
            "payload": {"id": carrier_id, "type": kind,
                "to": [{"phone_number": "+12127360000", "status": status}]}}}))
        .unwrap_or_default()
    }
}
