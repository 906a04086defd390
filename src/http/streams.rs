//! The event streams a stream token can open, by path: parsed into a known
//! stream (else a 400 naming `stream`), then checked readable by the caller
//! through the owning domain's own visibility rule (else a 404).

use crate::caller::CallerInfo;
use crate::conversations::model::ConversationUid;
use crate::conversations::service;
use crate::error::ApiError;
use crate::http::AppState;

const CONVERSATIONS: &str = "/api/v2/assistant/conversations/";
const EVENTS: &str = "/events";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownStream {
    /// `GET /api/v2/assistant/conversations/{conversationUid}/events`
    ConversationEvents(ConversationUid),
}

impl KnownStream {
    /// A stream path as a client names it (no scheme, host or query).
    pub fn parse(path: &str) -> Result<Self, ApiError> {
        let unknown = || {
            ApiError::invalid(
                "stream",
                "must be the path of an event stream, e.g. /api/v2/assistant/conversations/{conversationUid}/events",
            )
        };
        let uid = path
            .strip_prefix(CONVERSATIONS)
            .and_then(|rest| rest.strip_suffix(EVENTS))
            .filter(|uid| !uid.contains('/'))
            .ok_or_else(unknown)?;
        let uid = ConversationUid::parse(uid)
            .map_err(|_| ApiError::invalid("stream", "conversationUid must be a UUID"))?;
        Ok(KnownStream::ConversationEvents(uid))
    }

    /// The canonical path, as stored with a token and returned to the client.
    pub fn path(&self) -> String {
        match self {
            KnownStream::ConversationEvents(uid) => {
                format!("{CONVERSATIONS}{}{EVENTS}", uid.as_str())
            }
        }
    }

    /// 404 unless `caller` can open this stream now.
    pub async fn check_readable(
        &self,
        state: &AppState,
        caller: &CallerInfo,
    ) -> Result<(), ApiError> {
        match self {
            KnownStream::ConversationEvents(uid) => {
                service::visible(&state.db, caller, uid).await.map(|_| ())
            }
        }
    }
}

/// Documents the stream-token alternative to the bearer credential on every
/// known stream route (`?streamToken=`, minted by `POST /api/v2/auth/stream-tokens`).
pub fn document(doc: &mut serde_json::Value) {
    doc["components"]["securitySchemes"]["streamToken"] = serde_json::json!({
        "type": "apiKey",
        "in": "query",
        "name": crate::http::auth::STREAM_TOKEN_PARAM,
        "description": "A stream token from POST /api/v2/auth/stream-tokens, for clients that \
            cannot send headers (a browser's EventSource). Valid for the one stream path it \
            was minted for, until it expires (reconnects may reuse it). A bearer credential, \
            if sent, wins.",
    });
    let path = format!("{CONVERSATIONS}{{conversationUid}}{EVENTS}");
    let op = &mut doc["paths"][path.as_str()]["get"];
    if op.is_object() {
        op["security"] = serde_json::json!([{ "bearer": [] }, { "streamToken": [] }]);
    }
}
