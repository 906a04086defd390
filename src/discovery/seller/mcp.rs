//! A minimal MCP Streamable HTTP client: `initialize`, then
//! `notifications/initialized`, then `tools/call`, each a POST whose answer
//! is either one JSON body or an SSE stream carrying the JSON-RPC response
//! (taken by its id; server notifications and requests on the way are
//! skipped). The session id a server hands out is kept per storefront; a
//! 404 to a kept session means the server forgot it, so the client
//! initializes again, once, and retries. Messages are rmcp's model types.
//!
//! Runs on the outbound worker thread (awc is `!Send`).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use awc::http::header;
use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use parking_lot::Mutex;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientCapabilities,
    ClientJsonRpcMessage, ClientNotification, ClientRequest, Implementation, InitializeRequest,
    InitializeRequestParams, InitializeResult, InitializedNotification, JsonObject, JsonRpcMessage,
    ProtocolVersion, RequestId,
};
use serde_json::Value;

use super::SellerError;
use crate::net::NetError;

/// Storefront id, URL and a digest of the bearer token: a re-registered
/// URL never reuses a session, nor does another credential (a buyer's own
/// credential for an account source is its own session).
pub(super) type SessionKey = (i64, String, Option<[u8; 32]>);

#[derive(Debug, Clone)]
pub(super) struct Session {
    /// `Mcp-Session-Id`, when the server runs sessions.
    id: Option<String>,
    /// The negotiated version, sent as `MCP-Protocol-Version`.
    protocol_version: String,
}

pub(super) type Sessions = Arc<Mutex<HashMap<SessionKey, Session>>>;

/// Any message a server may send: only responses and errors matter here.
type Incoming = JsonRpcMessage<JsonObject, JsonObject, JsonObject>;

enum Failure {
    /// 404 to a request carrying a session id.
    SessionGone,
    Error(SellerError),
}

impl From<SellerError> for Failure {
    fn from(e: SellerError) -> Self {
        Failure::Error(e)
    }
}

/// One tool call against one storefront, with everything it needs to run
/// on the outbound thread.
pub(super) struct ToolCall {
    pub url: String,
    pub token: Option<String>,
    pub key: SessionKey,
    pub sessions: Sessions,
    pub ids: Arc<AtomicI64>,
    pub max_body: usize,
    pub timeout: std::time::Duration,
    pub tool: &'static str,
    pub arguments: JsonObject,
}

impl ToolCall {
    pub async fn run(self, client: awc::Client) -> Result<CallToolResult, SellerError> {
        let mut reinitialized = false;
        loop {
            let cached = self.sessions.lock().get(&self.key).cloned();
            let session = match cached {
                Some(s) => s,
                None => {
                    let s = self.initialize(&client).await?;
                    self.sessions.lock().insert(self.key.clone(), s.clone());
                    s
                }
            };
            let params =
                CallToolRequestParams::new(self.tool).with_arguments(self.arguments.clone());
            let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            match self.request(&client, Some(&session), request).await {
                Ok((result, _)) => {
                    return serde_json::from_value::<CallToolResult>(Value::Object(result))
                        .map_err(|e| SellerError::Protocol(format!("tools/call result: {e}")));
                }
                Err(Failure::SessionGone) => {
                    self.forget(&session);
                    if reinitialized {
                        return Err(SellerError::Http { status: 404 });
                    }
                    tracing::debug!(url = %self.url, "MCP session expired; initializing again");
                    reinitialized = true;
                }
                Err(Failure::Error(e)) => return Err(e),
            }
        }
    }

    /// Drops the cached session unless another call already replaced it.
    fn forget(&self, session: &Session) {
        let mut sessions = self.sessions.lock();
        if sessions.get(&self.key).map(|s| &s.id) == Some(&session.id) {
            sessions.remove(&self.key);
        }
    }

    async fn initialize(&self, client: &awc::Client) -> Result<Session, SellerError> {
        let params = InitializeRequestParams::new(
            ClientCapabilities::default(),
            Implementation::new("agentic-api", env!("CARGO_PKG_VERSION")),
        )
        .with_protocol_version(ProtocolVersion::LATEST_WITH_INITIALIZE);
        let request = ClientRequest::InitializeRequest(InitializeRequest::new(params));
        let (result, session_id) = match self.request(client, None, request).await {
            Ok(r) => r,
            Err(Failure::SessionGone) => return Err(SellerError::Http { status: 404 }),
            Err(Failure::Error(e)) => return Err(e),
        };
        let init: InitializeResult = serde_json::from_value(Value::Object(result))
            .map_err(|e| SellerError::Protocol(format!("initialize result: {e}")))?;
        let session = Session {
            id: session_id,
            protocol_version: init.protocol_version.to_string(),
        };
        let note = ClientNotification::InitializedNotification(InitializedNotification {
            method: Default::default(),
            extensions: Default::default(),
        });
        let body = encode(&ClientJsonRpcMessage::notification(note))?;
        let res = self.post(client, Some(&session), body).await;
        match res.map_err(|e| self.net(e)) {
            Ok(res) if res.status().is_success() => Ok(session),
            Ok(res) => Err(SellerError::Http {
                status: res.status().as_u16(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Sends a request and waits for the response with its id; returns the
    /// result and the `Mcp-Session-Id` header of the answer.
    async fn request(
        &self,
        client: &awc::Client,
        session: Option<&Session>,
        request: ClientRequest,
    ) -> Result<(JsonObject, Option<String>), Failure> {
        let id = RequestId::Number(self.ids.fetch_add(1, Ordering::Relaxed));
        let body = encode(&ClientJsonRpcMessage::request(request, id.clone()))?;
        let res = self
            .post(client, session, body)
            .await
            .map_err(|e| self.net(e))?;
        let status = res.status();
        if status.as_u16() == 404 && session.is_some_and(|s| s.id.is_some()) {
            return Err(Failure::SessionGone);
        }
        if !status.is_success() {
            return Err(SellerError::Http {
                status: status.as_u16(),
            }
            .into());
        }
        let session_id = res
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let content_type = res
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        let result = if content_type.starts_with("text/event-stream") {
            self.read_stream(res, &id).await?
        } else if content_type.starts_with("application/json") {
            let mut res = res;
            let body = crate::net::read_body(&mut res, self.max_body)
                .await
                .map_err(|e| SellerError::from_net(e, self.timeout))?;
            read_json(&body, &id)?
        } else {
            return Err(
                SellerError::Protocol(format!("unexpected Content-Type '{content_type}'")).into(),
            );
        };
        Ok((result, session_id))
    }

    fn post(
        &self,
        client: &awc::Client,
        session: Option<&Session>,
        body: Vec<u8>,
    ) -> awc::SendClientRequest {
        let mut req = client
            .post(&self.url)
            .insert_header((header::CONTENT_TYPE, "application/json"))
            .insert_header((header::ACCEPT, "application/json, text/event-stream"));
        if let Some(s) = session {
            if let Some(id) = &s.id {
                req = req.insert_header(("Mcp-Session-Id", id.as_str()));
            }
            req = req.insert_header(("MCP-Protocol-Version", s.protocol_version.as_str()));
        }
        if let Some(token) = &self.token {
            req = req.insert_header((header::AUTHORIZATION, format!("Bearer {token}")));
        }
        req.send_body(body)
    }

    fn net(&self, e: awc::error::SendRequestError) -> SellerError {
        SellerError::from_net(NetError::from(e), self.timeout)
    }

    /// Reads SSE events until the response to `id`, within the size limit.
    async fn read_stream<S>(
        &self,
        res: awc::ClientResponse<S>,
        id: &RequestId,
    ) -> Result<JsonObject, SellerError>
    where
        S: futures_util::Stream<Item = Result<Bytes, awc::error::PayloadError>> + Unpin,
    {
        let limit = self.max_body;
        let mut seen = 0usize;
        let bytes = res.map(move |chunk| match chunk {
            Ok(b) => {
                seen += b.len();
                if seen > limit {
                    Err(NetError::TooLarge { limit })
                } else {
                    Ok::<Bytes, NetError>(b)
                }
            }
            Err(e) => Err(NetError::from(e)),
        });
        let mut events = std::pin::pin!(bytes.eventsource());
        while let Some(event) = events.next().await {
            let event = event.map_err(|e| match e {
                eventsource_stream::EventStreamError::Transport(net) => {
                    SellerError::from_net(net, self.timeout)
                }
                other => SellerError::Protocol(format!("event stream: {other}")),
            })?;
            // Priming events (an id and no data) and other event types carry
            // no JSON-RPC message.
            if event.data.is_empty() || event.event != "message" {
                continue;
            }
            let Ok(value) = serde_json::from_str::<Value>(&event.data) else {
                return Err(SellerError::Protocol(
                    "an event's data is not JSON".to_string(),
                ));
            };
            if let Some(outcome) = match_reply(value, id) {
                return outcome;
            }
        }
        Err(SellerError::Protocol(format!(
            "the event stream ended without the response to request {id}"
        )))
    }
}

fn encode(message: &ClientJsonRpcMessage) -> Result<Vec<u8>, SellerError> {
    serde_json::to_vec(message).map_err(|e| SellerError::Protocol(format!("encoding: {e}")))
}

/// A JSON body: one message, or a batch holding the response.
fn read_json(body: &[u8], id: &RequestId) -> Result<JsonObject, SellerError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| SellerError::Protocol(format!("the body is not JSON: {e}")))?;
    let messages = match value {
        Value::Array(items) => items,
        single => vec![single],
    };
    for m in messages {
        if let Some(outcome) = match_reply(m, id) {
            return outcome;
        }
    }
    Err(SellerError::Protocol(format!(
        "no response to request {id} in the body"
    )))
}

/// `Some` when `value` answers request `id` (a result or an error).
fn match_reply(value: Value, id: &RequestId) -> Option<Result<JsonObject, SellerError>> {
    match serde_json::from_value::<Incoming>(value) {
        Ok(JsonRpcMessage::Response(r)) if &r.id == id => Some(Ok(r.result)),
        Ok(JsonRpcMessage::Error(e)) if e.id.as_ref().is_none_or(|eid| eid == id) => {
            Some(Err(SellerError::Rpc {
                code: e.error.code.0,
                message: e.error.message.to_string(),
            }))
        }
        Ok(_) => None,
        Err(e) => Some(Err(SellerError::Protocol(format!(
            "not a JSON-RPC message: {e}"
        )))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    #[test]
    fn a_batch_body_yields_the_matching_response() {
        let id = RequestId::Number(7);
        let body = serde_json::to_vec(&json!([
            {"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "x"}},
            {"jsonrpc": "2.0", "id": 6, "result": {"other": true}},
            {"jsonrpc": "2.0", "id": 7, "result": {"content": []}},
        ]))
        .unwrap();
        let result = read_json(&body, &id).unwrap();
        assert_eq!(Value::Object(result), json!({"content": []}));
    }

    #[test]
    fn a_json_rpc_error_is_typed() {
        let id = RequestId::Number(1);
        let body = br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such tool"}}"#;
        assert_eq!(
            read_json(body, &id).unwrap_err(),
            SellerError::Rpc {
                code: -32601,
                message: "no such tool".into()
            }
        );
    }

    #[test]
    fn requests_are_rmcp_messages_on_the_wire() {
        let params = CallToolRequestParams::new("get_products").with_arguments(
            json!({"buying_mode": "wholesale"})
                .as_object()
                .unwrap()
                .clone(),
        );
        let msg = ClientJsonRpcMessage::request(
            ClientRequest::CallToolRequest(CallToolRequest::new(params)),
            RequestId::Number(3),
        );
        assert_eq!(
            serde_json::to_value(&msg).unwrap(),
            json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                   "params": {"name": "get_products", "arguments": {"buying_mode": "wholesale"}}})
        );
        let note = ClientJsonRpcMessage::notification(ClientNotification::InitializedNotification(
            InitializedNotification {
                method: Default::default(),
                extensions: Default::default(),
            },
        ));
        assert_eq!(
            serde_json::to_value(&note).unwrap(),
            json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
        );
    }
}
