//! A fake OpenAI-compatible chat-completions server on 127.0.0.1 (port 0):
//! `POST /v1/chat/completions` with `stream: true` answers with the next
//! scripted reply as server-sent events in OpenAI's chunk format (text
//! pieces, tool-call fragments, a usage chunk, `data: [DONE]`), or an error
//! status with OpenAI's error body, or a stream that never ends. Every
//! request is recorded.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use parking_lot::Mutex;
use serde_json::{Value, json};

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Text, streamed piece by piece, `gap` apart.
    Text(Vec<&'static str>, Duration),
    /// One tool call (its arguments split over two fragments, as OpenAI does).
    Call(&'static str, Value),
    /// An error status with OpenAI's error body.
    Status(u16, &'static str),
    /// Sends these pieces, then never ends the stream.
    Hang(Vec<&'static str>),
}

pub fn text(pieces: &[&'static str]) -> Reply {
    Reply::Text(pieces.to_vec(), Duration::ZERO)
}

#[derive(Clone, Debug)]
pub struct Seen {
    pub authorization: Option<String>,
    pub body: Value,
}

impl Seen {
    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn messages(&self) -> Vec<Value> {
        self.body["messages"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

#[derive(Default)]
struct State {
    script: Mutex<VecDeque<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

pub struct FakeLlm {
    /// The API's base URL (`.../v1`), as `AGENTIC_ASSISTANT_URL` takes it.
    pub base: String,
    state: Arc<State>,
    handle: ServerHandle,
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

impl FakeLlm {
    pub async fn start() -> FakeLlm {
        let state = Arc::new(State::default());
        let data = web::Data::from(state.clone());
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(web::JsonConfig::default().limit(16 * 1024 * 1024))
                .route("/v1/chat/completions", web::post().to(completions))
        })
        .workers(2)
        .disable_signals()
        .bind("127.0.0.1:0")
        .expect("bind the fake model");
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        FakeLlm {
            base: format!("http://127.0.0.1:{port}/v1"),
            state,
            handle,
        }
    }

    /// Queues answers, used in order (then "ok" for every further request).
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.state.script.lock().extend(replies);
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().clone()
    }

    /// Waits until `n` requests arrived.
    pub async fn wait_requests(&self, n: usize) -> Vec<Seen> {
        for _ in 0..400 {
            let seen = self.seen();
            if seen.len() >= n {
                return seen;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("the fake model got {} requests, not {n}", self.seen().len());
    }
}

fn chunk(delta: Value) -> String {
    format!(
        "data: {}\n\n",
        json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{ "index": 0, "delta": delta, "finish_reason": null }] })
    )
}

fn usage_and_done(completion: u64) -> Vec<String> {
    vec![
        format!(
            "data: {}\n\n",
            json!({ "id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [], "usage": { "prompt_tokens": 10, "completion_tokens": completion, "total_tokens": 10 + completion } })
        ),
        "data: [DONE]\n\n".to_string(),
    ]
}

async fn completions(
    state: web::Data<State>,
    req: HttpRequest,
    body: web::Json<Value>,
) -> HttpResponse {
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    state.seen.lock().push(Seen {
        authorization,
        body: body.into_inner(),
    });
    let reply = state
        .script
        .lock()
        .pop_front()
        .unwrap_or_else(|| text(&["ok"]));
    let (pieces, gap, hang): (Vec<String>, Duration, bool) = match reply {
        Reply::Status(status, message) => {
            let status = actix_web::http::StatusCode::from_u16(status).unwrap();
            return HttpResponse::build(status)
                .json(json!({ "error": { "message": message, "type": "server_error" } }));
        }
        Reply::Text(parts, gap) => {
            let mut out: Vec<String> = vec![chunk(json!({ "role": "assistant", "content": "" }))];
            out.extend(parts.iter().map(|p| chunk(json!({ "content": p }))));
            out.extend(usage_and_done(parts.len() as u64));
            (out, gap, false)
        }
        Reply::Call(name, args) => {
            let args = args.to_string();
            let (a, b) = args.split_at(args.len() / 2);
            let mut out = vec![
                chunk(
                    json!({ "role": "assistant", "tool_calls": [{ "index": 0, "id": format!("call_{name}"), "type": "function", "function": { "name": name, "arguments": a } }] }),
                ),
                chunk(json!({ "tool_calls": [{ "index": 0, "function": { "arguments": b } }] })),
            ];
            out.extend(usage_and_done(5));
            (out, Duration::ZERO, false)
        }
        Reply::Hang(parts) => (
            parts
                .iter()
                .map(|p| chunk(json!({ "content": p })))
                .collect(),
            Duration::ZERO,
            true,
        ),
    };
    use futures_util::StreamExt;
    let body = futures_util::stream::iter(pieces).then(move |p| async move {
        if !gap.is_zero() {
            tokio::time::sleep(gap).await;
        }
        Ok::<_, actix_web::Error>(web::Bytes::from(p))
    });
    let stream = if hang {
        body.chain(futures_util::stream::pending()).boxed_local()
    } else {
        body.boxed_local()
    };
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .streaming(stream)
}
