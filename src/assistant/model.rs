//! Wire shapes of assistant runs.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use entity::assistant_run;

use crate::conversations::model::Participant;

pub const QUEUED: &str = "queued";
pub const RUNNING: &str = "running";
pub const AWAITING: &str = "awaiting_confirmation";
pub const COMPLETED: &str = "completed";
pub const FAILED: &str = "failed";
pub const CANCELED: &str = "canceled";
pub const INTERRUPTED: &str = "interrupted";

/// Statuses of a run that is not over (it holds the conversation's turn).
pub const UNFINISHED: [&str; 3] = [QUEUED, RUNNING, AWAITING];

/// Kinds of a run's messages.
pub mod kind {
    pub const TURN: &str = "turn";
    pub const ANSWER: &str = "answer";
    pub const TOOL_CALL: &str = "tool_call";
    pub const TOOL_RESULT: &str = "tool_result";
    pub const ACTION_PROPOSED: &str = "action_proposed";
    pub const ACTION_DECLINED: &str = "action_declined";
    pub const NOTICE: &str = "notice";
}

/// A write the run wants to make, waiting for a participant.
#[derive(Debug, Clone, Serialize, serde::Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposedAction {
    /// Answer it at `.../runs/{runId}/actions/{actionId}`.
    pub action_id: String,
    /// The operation (a registry operation's name).
    pub operation: String,
    /// Its arguments: `{pathParams?, params?, body?}`.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunError {
    /// `backend_unreachable`, `backend_error`, `backend_protocol`,
    /// `timeout`, `tool_limit`, `token_limit`, `credential_revoked`,
    /// `canceled`, `interrupted` or `internal`.
    pub code: String,
    pub message: String,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
}

/// An assistant run: one directed turn and the work it caused.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunOut {
    #[schema(format = "uuid")]
    pub run_id: String,
    #[schema(format = "uuid")]
    pub conversation_uid: String,
    /// `queued`, `running`, `awaiting_confirmation`, `completed`, `failed`,
    /// `canceled` or `interrupted`.
    pub status: String,
    /// Sequence of the turn's message; runs of a conversation go in this order.
    pub turn_sequence: i64,
    pub requested_by: Participant,
    pub tool_calls: i32,
    pub usage: Usage,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_action: Option<ProposedAction>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    pub created_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_at: Option<DateTime<Utc>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finished_at: Option<DateTime<Utc>>,
}

impl From<assistant_run::Model> for RunOut {
    fn from(m: assistant_run::Model) -> Self {
        RunOut {
            run_id: m.id,
            conversation_uid: m.conversation_uid,
            status: m.status,
            turn_sequence: m.turn_sequence,
            requested_by: Participant {
                user_id: m.requested_by_user_id,
                name: m.requested_by_name,
                email: m.requested_by_email,
            },
            tool_calls: m.tool_calls,
            usage: Usage {
                prompt_tokens: m.prompt_tokens,
                completion_tokens: m.completion_tokens,
            },
            pending_action: m
                .pending_action
                .as_deref()
                .and_then(|a| serde_json::from_str(a).ok()),
            error: m.error_code.map(|code| RunError {
                code,
                message: m.error_message.unwrap_or_default(),
            }),
            created_at: m.created_at,
            started_at: m.started_at,
            finished_at: m.finished_at,
        }
    }
}
