//! An OpenAI-compatible chat-completions backend: `POST {base}/chat/completions`
//! with `stream: true` and the tools as functions; the answer is read as
//! server-sent events (`data: {chunk}` ... `data: [DONE]`), text passed on
//! piece by piece, tool calls assembled from their fragments. Works with
//! OpenAI and with the servers that speak its wire format (vLLM, Ollama,
//! llama.cpp, LiteLLM...). The API key is sent as a bearer token and never
//! logged or recorded; requests go through the guarded outbound client.

use std::collections::BTreeMap;

use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

use super::{AgentError, Backend, ChatMessage, Deltas, Request, Role, ToolCall, Turn, Usage};
use crate::config::Secret;
use crate::net::{NetError, Outbound};

/// Largest streamed answer read from the model.
const MAX_STREAM_BYTES: usize = 4 * 1024 * 1024;
/// Largest error body read (for its message).
const MAX_ERROR_BYTES: usize = 16 * 1024;

pub struct OpenAi {
    /// `{base}/chat/completions`.
    endpoint: String,
    model: String,
    api_key: Option<Secret>,
    outbound: Outbound,
}

impl OpenAi {
    /// `base_url` is the API's base, e.g. `https://api.openai.com/v1`.
    pub fn new(
        base_url: String,
        model: String,
        api_key: Option<Secret>,
        outbound: Outbound,
    ) -> Self {
        let endpoint = format!("{}/chat/completions", base_url.trim_end_matches('/'));
        OpenAi {
            endpoint,
            model,
            api_key,
            outbound,
        }
    }
}

impl Backend for OpenAi {
    fn describe(&self) -> String {
        format!("{} at {}", self.model, self.endpoint)
    }

    fn turn<'a>(
        &'a self,
        request: Request<'a>,
        deltas: Deltas,
    ) -> BoxFuture<'a, Result<Turn, AgentError>> {
        let body = request_body(&self.model, &request);
        let endpoint = self.endpoint.clone();
        let bearer = self
            .api_key
            .as_ref()
            .map(|k| format!("Bearer {}", k.expose()));
        let work = self.outbound.run(move |client| async move {
            let mut req = client
                .post(&endpoint)
                .insert_header((awc::http::header::ACCEPT, "text/event-stream"));
            if let Some(bearer) = bearer {
                req = req.insert_header((awc::http::header::AUTHORIZATION, bearer));
            }
            let res = req
                .send_json(&body)
                .await
                .map_err(|e| unreachable_error(NetError::from(e)))?;
            read_answer(res, deltas).await
        });
        Box::pin(async move { work.await.map_err(unreachable_error)? })
    }
}

fn unreachable_error(e: NetError) -> AgentError {
    AgentError::Unreachable(e.to_string())
}

/// The request's JSON (OpenAI's chat-completions shape).
fn request_body(model: &str, request: &Request<'_>) -> Value {
    let messages: Vec<Value> = request.messages.iter().map(message_json).collect();
    let mut body = json!({
        "model": model,
        "messages": messages,
        "stream": true,
        "stream_options": { "include_usage": true },
        "max_tokens": request.max_tokens,
    });
    if !request.tools.is_empty() {
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|t| {
                json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    }
                })
            })
            .collect();
        body["tools"] = Value::Array(tools);
    }
    body
}

fn message_json(m: &ChatMessage) -> Value {
    match m.role {
        Role::System => json!({ "role": "system", "content": m.content }),
        Role::User => {
            let mut v = json!({ "role": "user", "content": m.content });
            if let Some(name) = &m.name {
                v["name"] = Value::String(name.clone());
            }
            v
        }
        Role::Assistant if m.tool_calls.is_empty() => {
            json!({ "role": "assistant", "content": m.content })
        }
        Role::Assistant => {
            let calls: Vec<Value> = m
                .tool_calls
                .iter()
                .map(|c| {
                    json!({
                        "id": c.id,
                        "type": "function",
                        "function": { "name": c.name, "arguments": c.arguments },
                    })
                })
                .collect();
            let content = if m.content.is_empty() {
                Value::Null
            } else {
                Value::String(m.content.clone())
            };
            json!({ "role": "assistant", "content": content, "tool_calls": calls })
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.clone().unwrap_or_default(),
            "content": m.content,
        }),
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ChunkUsage>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    delta: Option<Delta>,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Vec<CallFragment>,
}

#[derive(Deserialize)]
struct CallFragment {
    #[serde(default)]
    index: usize,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionFragment>,
}

#[derive(Deserialize)]
struct FunctionFragment {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<String>,
}

#[derive(Deserialize)]
struct ChunkUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// Reads a streamed answer (or an error status) into a turn.
async fn read_answer<S>(mut res: awc::ClientResponse<S>, deltas: Deltas) -> Result<Turn, AgentError>
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    let status = res.status();
    if !status.is_success() {
        let body = crate::net::read_body(&mut res, MAX_ERROR_BYTES)
            .await
            .unwrap_or_default();
        return Err(AgentError::Status {
            status: status.as_u16(),
            message: error_message(&body),
        });
    }
    let mut seen = 0usize;
    let bytes = res.map(move |chunk| match chunk {
        Ok(b) => {
            seen += b.len();
            if seen > MAX_STREAM_BYTES {
                Err(NetError::TooLarge {
                    limit: MAX_STREAM_BYTES,
                })
            } else {
                Ok::<bytes::Bytes, NetError>(b)
            }
        }
        Err(e) => Err(NetError::from(e)),
    });
    let mut events = std::pin::pin!(bytes.eventsource());
    let mut turn = Turn::default();
    let mut calls: BTreeMap<usize, ToolCall> = BTreeMap::new();
    let mut done = false;
    while let Some(event) = events.next().await {
        let event = event.map_err(|e| match e {
            eventsource_stream::EventStreamError::Transport(net) => unreachable_error(net),
            other => AgentError::Protocol(format!("event stream: {other}")),
        })?;
        let data = event.data.trim();
        if data.is_empty() {
            continue;
        }
        if data == "[DONE]" {
            done = true;
            break;
        }
        let chunk: Chunk = serde_json::from_str(data)
            .map_err(|e| AgentError::Protocol(format!("a chunk is not a completion chunk: {e}")))?;
        if let Some(u) = chunk.usage {
            turn.usage = Usage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            };
        }
        for choice in chunk.choices {
            let delta = choice.delta.unwrap_or_default();
            if let Some(text) = delta.content.filter(|t| !t.is_empty()) {
                turn.text.push_str(&text);
                let _ = deltas.send(text);
            }
            for f in delta.tool_calls {
                let call = calls.entry(f.index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = f.id {
                    call.id = id;
                }
                if let Some(function) = f.function {
                    if let Some(name) = function.name {
                        call.name.push_str(&name);
                    }
                    if let Some(args) = function.arguments {
                        call.arguments.push_str(&args);
                    }
                }
            }
        }
    }
    if !done {
        return Err(AgentError::Protocol(
            "the stream ended before [DONE]".to_string(),
        ));
    }
    for (i, mut call) in calls.into_values().enumerate() {
        if call.name.is_empty() {
            return Err(AgentError::Protocol("a tool call without a name".into()));
        }
        if call.id.is_empty() {
            call.id = format!("call_{i}");
        }
        turn.tool_calls.push(call);
    }
    Ok(turn)
}

/// The `error.message` of an OpenAI-style error body, else its start.
fn error_message(body: &[u8]) -> String {
    let parsed = serde_json::from_slice::<Value>(body).ok();
    let message = parsed
        .as_ref()
        .and_then(|v| v.pointer("/error/message").or_else(|| v.get("message")))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| String::from_utf8_lossy(body).chars().take(200).collect());
    if message.is_empty() {
        "no detail".to_string()
    } else {
        message.chars().take(500).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::{Origin, ToolSpec};

    #[test]
    fn request_carries_tools_names_and_tool_results() {
        let messages = vec![
            ChatMessage::system("be brief"),
            ChatMessage::user(Origin::Turn, Some("Ada".into()), "hi"),
            ChatMessage::assistant(
                "",
                vec![ToolCall {
                    id: "c1".into(),
                    name: "list_advertisers".into(),
                    arguments: "{}".into(),
                }],
            ),
            ChatMessage::tool("c1", "{\"data\":[]}"),
        ];
        let tools = [ToolSpec {
            name: "list_advertisers",
            description: "d",
            parameters: json!({"type": "object"}),
        }];
        let body = request_body(
            "m",
            &Request {
                messages: &messages,
                tools: &tools,
                max_tokens: 10,
            },
        );
        assert_eq!(body["stream"], true);
        assert_eq!(body["messages"][1]["name"], "Ada");
        assert_eq!(body["messages"][2]["content"], Value::Null);
        assert_eq!(
            body["messages"][2]["tool_calls"][0]["function"]["name"],
            "list_advertisers"
        );
        assert_eq!(body["messages"][3]["tool_call_id"], "c1");
        assert_eq!(body["tools"][0]["function"]["name"], "list_advertisers");
    }

    #[test]
    fn error_bodies_give_their_message() {
        assert_eq!(
            error_message(br#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(error_message(b"oops"), "oops");
        assert_eq!(error_message(b""), "no detail");
    }
}
