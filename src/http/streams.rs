//! The event streams a stream token can open, by path: parsed into a known
//! stream (else a 400 naming `stream`), then checked readable by the caller
//! through the stream route's own access check, the owning domain's
//! visibility rule (else a 404).

use crate::caller::CallerInfo;
use crate::conversations::model::ConversationUid;
use crate::discovery::model::DiscoveryId;
use crate::error::ApiError;
use crate::ops::Ctx;

/// The conversation stream's path template (under `/api/v2`).
pub const CONVERSATION_EVENTS: &str = "/assistant/conversations/{conversationUid}/events";
/// The discovery stream's path template (under `/api/v2`).
pub const DISCOVERY_EVENTS: &str = "/buyer/discovery/{discoveryId}/events";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KnownStream {
    /// `GET /api/v2/assistant/conversations/{conversationUid}/events`
    ConversationEvents(ConversationUid),
    /// `GET /api/v2/buyer/discovery/{discoveryId}/events`
    DiscoveryEvents(DiscoveryId),
}

/// The one parameter of `path` under `template` (both under `/api/v2`).
fn parameter<'a>(template: &str, path: &'a str) -> Option<&'a str> {
    let (head, tail) = template.split_once('{')?;
    let (_, tail) = tail.split_once('}')?;
    path.strip_prefix(crate::openapi::PREFIX)?
        .strip_prefix(head)?
        .strip_suffix(tail)
        .filter(|p| !p.is_empty() && !p.contains('/'))
}

impl KnownStream {
    /// A stream path as a client names it (no scheme, host or query).
    pub fn parse(path: &str) -> Result<Self, ApiError> {
        if let Some(uid) = parameter(CONVERSATION_EVENTS, path) {
            let uid = ConversationUid::parse(uid)
                .map_err(|_| ApiError::invalid("stream", "conversationUid must be a UUID"))?;
            return Ok(KnownStream::ConversationEvents(uid));
        }
        if let Some(id) = parameter(DISCOVERY_EVENTS, path) {
            let id = DiscoveryId::parse(id, "stream").map_err(|_| {
                ApiError::invalid("stream", "discoveryId must be a discovery id (disc_...)")
            })?;
            return Ok(KnownStream::DiscoveryEvents(id));
        }
        Err(ApiError::invalid(
            "stream",
            "must be the path of an event stream: /api/v2/assistant/conversations/{conversationUid}/events \
             or /api/v2/buyer/discovery/{discoveryId}/events",
        ))
    }

    /// The canonical path, as stored with a token and returned to the client.
    pub fn path(&self) -> String {
        let (template, value) = match self {
            KnownStream::ConversationEvents(uid) => (CONVERSATION_EVENTS, uid.as_str()),
            KnownStream::DiscoveryEvents(id) => (DISCOVERY_EVENTS, id.as_str()),
        };
        let (head, rest) = template.split_once('{').unwrap_or((template, ""));
        let tail = rest.split_once('}').map_or("", |(_, t)| t);
        format!("{}{head}{value}{tail}", crate::openapi::PREFIX)
    }

    /// 404 unless `caller` can open this stream now: the stream route's own
    /// visibility check.
    pub async fn check_readable(&self, ctx: &Ctx, caller: &CallerInfo) -> Result<(), ApiError> {
        match self {
            KnownStream::ConversationEvents(uid) => {
                crate::conversations::service::visible(&ctx.db, caller, uid)
                    .await
                    .map(|_| ())
            }
            KnownStream::DiscoveryEvents(id) => {
                crate::discovery::operations::visible_session(ctx, caller, id.as_str())
                    .await
                    .map(|_| ())
            }
        }
    }
}

/// Describes the stream-token alternative to the bearer credential (the
/// stream routes' own descriptions list it as their second scheme).
pub fn document(doc: &mut serde_json::Value) {
    doc["components"]["securitySchemes"]["streamToken"] = serde_json::json!({
        "type": "apiKey",
        "in": "query",
        "name": crate::http::auth::STREAM_TOKEN_PARAM,
        "description": "A stream token from POST /api/v2/auth/stream-tokens, for clients that \
            cannot send headers (a browser's EventSource). Valid for the one stream path it \
            was minted for (a conversation's or a discovery session's events), until it \
            expires (reconnects may reuse it). A token minted with an OAuth access token \
            expires no later than that access token, and a stream it opened ends when the \
            access token expires. A bearer credential, if sent, wins.",
    });
}
