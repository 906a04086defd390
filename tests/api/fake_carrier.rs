//! A fake carrier speaking Telnyx's v2 messaging wire format on 127.0.0.1
//! (port 0): records every request and answers as it is told.
#![allow(dead_code)]

use std::sync::Arc;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
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
}

pub struct FakeCarrier {
    pub base: String,
    state: Arc<State>,
    handle: ServerHandle,
}

impl Drop for FakeCarrier {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

async fn messages(req: HttpRequest, body: web::Bytes, state: web::Data<State>) -> HttpResponse {
    let delay = state.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
    }
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
    let status = state.status.load(Ordering::SeqCst);
    let code = actix_web::http::StatusCode::from_u16(status).unwrap_or_default();
    if (200..300).contains(&status) {
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
        });
        let data = web::Data::from(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .route("/v2/messages", web::post().to(messages))
                .route("/v2/messages/rcs", web::post().to(messages))
        })
        .workers(2)
        .bind("127.0.0.1:0")
        .unwrap();
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        FakeCarrier {
            base: format!("http://127.0.0.1:{port}"),
            state,
            handle,
        }
    }

    pub fn answer(&self, status: u16) {
        self.state.status.store(status, Ordering::SeqCst);
    }

    pub fn delay(&self, ms: u64) {
        self.state.delay_ms.store(ms, Ordering::SeqCst);
    }

    pub fn requests(&self) -> Vec<Request> {
        self.state.requests.lock().clone()
    }
}
