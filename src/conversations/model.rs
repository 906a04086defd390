//! Wire shapes and validated inputs of conversations (parse, don't validate).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{conversation, conversation_message};

use crate::error::ApiError;

pub const TITLE_MAX: usize = 255;
pub const CONTENT_MAX: usize = 32_000;
/// Auto-generated title of a new conversation until its first message.
pub const DEFAULT_TITLE: &str = "New conversation";
const AUTO_TITLE_MAX: usize = 80;

/// A conversation uid from a path: a UUID, stored lowercase hyphenated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConversationUid(String);

impl ConversationUid {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        uuid::Uuid::parse_str(raw)
            .map(|u| ConversationUid(u.hyphenated().to_string()))
            .map_err(|_| ApiError::invalid("conversationUid", "must be a UUID"))
    }

    pub fn new_random() -> Self {
        ConversationUid(uuid::Uuid::new_v4().hyphenated().to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A title: trimmed, 1 to 255 characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Title(String);

impl Title {
    pub fn parse(raw: &str) -> Result<Self, ApiError> {
        let t = raw.trim();
        let n = t.chars().count();
        if n == 0 || n > TITLE_MAX {
            return Err(ApiError::invalid(
                "title",
                format!("must be 1 to {TITLE_MAX} characters after trimming"),
            ));
        }
        Ok(Title(t.to_string()))
    }

    /// The auto-generated title from a first message: its first line, cut at
    /// a word boundary.
    pub fn from_first_message(content: &str) -> Option<Self> {
        let line = content.lines().map(str::trim).find(|l| !l.is_empty())?;
        if line.chars().count() <= AUTO_TITLE_MAX {
            return Some(Title(line.to_string()));
        }
        let cut: String = line.chars().take(AUTO_TITLE_MAX).collect();
        let cut = match cut.rfind(char::is_whitespace) {
            Some(i) if i > AUTO_TITLE_MAX / 2 => cut[..i].trim_end().to_string(),
            _ => cut,
        };
        Some(Title(format!("{cut}…")))
    }

    pub fn into_inner(self) -> String {
        self.0
    }
}

/// Who a message is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Audience {
    Room,
    Assistant,
}

impl Audience {
    pub fn as_str(self) -> &'static str {
        match self {
            Audience::Room => "room",
            Audience::Assistant => "assistant",
        }
    }

    /// Only room messages are posted through this endpoint.
    pub fn parse_postable(raw: &str) -> Result<Self, ApiError> {
        match raw {
            "room" => Ok(Audience::Room),
            "assistant" => Err(ApiError::invalid(
                "audience",
                "assistant-directed turns are not available on this endpoint; post with audience \"room\"",
            )),
            _ => Err(ApiError::invalid("audience", "must be \"room\"")),
        }
    }
}

/// Message text: 1 to 32,000 characters, not only whitespace. Kept verbatim.
#[derive(Debug, Clone)]
pub struct Content(String);

impl Content {
    pub fn parse(raw: String) -> Result<Self, ApiError> {
        if raw.trim().is_empty() {
            return Err(ApiError::invalid("content", "must not be empty"));
        }
        if raw.chars().count() > CONTENT_MAX {
            return Err(ApiError::invalid(
                "content",
                format!("must be at most {CONTENT_MAX} characters"),
            ));
        }
        Ok(Content(raw))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// A user present in a room (or a message's author).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Participant {
    pub user_id: i64,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationOut {
    #[schema(format = "uuid")]
    pub conversation_uid: String,
    pub title: String,
    pub sharing_enabled: bool,
    pub owner_user_id: i64,
    /// Sequence of the newest message (0 when empty): resume cursor for `after`.
    pub last_sequence: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<conversation::Model> for ConversationOut {
    fn from(m: conversation::Model) -> Self {
        ConversationOut {
            conversation_uid: m.uid,
            title: m.title,
            sharing_enabled: m.sharing_enabled,
            owner_user_id: m.owner_user_id,
            last_sequence: m.last_sequence,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageOut {
    /// Strictly increasing per conversation, without gaps.
    pub sequence: i64,
    pub audience: Audience,
    pub content: String,
    /// The author of a user-authored message; absent on assistant messages.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub author: Option<Participant>,
    pub created_at: DateTime<Utc>,
    /// The assistant run this message belongs to: a directed turn, its
    /// answer, its tool calls and results, a proposed action.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = "uuid")]
    pub run_id: Option<String>,
    /// On a run's messages: `turn`, `answer`, `tool_call`, `tool_result`,
    /// `action_proposed`, `action_declined` or `notice`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Detail of a tool call (`{callId, operation, arguments}`), a result
    /// (`{callId, operation, ok, result}`) or a proposed action
    /// (`{actionId, operation, arguments}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub data: Option<serde_json::Value>,
}

impl From<conversation_message::Model> for MessageOut {
    fn from(m: conversation_message::Model) -> Self {
        let author = m.author_user_id.map(|user_id| Participant {
            user_id,
            name: m.author_name.unwrap_or_default(),
            email: m.author_email,
        });
        MessageOut {
            sequence: m.sequence,
            audience: if m.audience == "assistant" {
                Audience::Assistant
            } else {
                Audience::Room
            },
            content: m.content,
            author,
            created_at: m.created_at,
            run_id: m.run_id,
            kind: m.kind,
            data: m.data.and_then(|d| serde_json::from_str(&d).ok()),
        }
    }
}

/// Payload of the `message.created` event.
pub fn message_created_data(conversation_uid: &str, message: &MessageOut) -> String {
    serde_json::json!({ "conversationUid": conversation_uid, "message": message }).to_string()
}

/// A message to append: who wrote it (none for the assistant) and, on a
/// run's messages, the run, the kind and the detail.
#[derive(Debug, Clone)]
pub struct NewMessage {
    pub audience: Audience,
    pub content: Content,
    pub author: Option<Participant>,
    pub run_id: Option<String>,
    pub kind: Option<&'static str>,
    pub data: Option<serde_json::Value>,
}

impl NewMessage {
    /// A user's message.
    pub fn by(author: Participant, audience: Audience, content: Content) -> Self {
        NewMessage {
            audience,
            content,
            author: Some(author),
            run_id: None,
            kind: None,
            data: None,
        }
    }
}

/// Payload of the `presence.changed` event.
pub fn presence_data(conversation_uid: &str, participants: &[Participant]) -> String {
    serde_json::json!({ "conversationUid": conversation_uid, "participants": participants })
        .to_string()
}
