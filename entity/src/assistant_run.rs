use sea_orm::entity::prelude::*;

/// One assistant-directed turn's run. `status`: `queued`, `running`,
/// `awaiting_confirmation`, `completed`, `failed`, `canceled` or
/// `interrupted`. The oldest unfinished run of a conversation is the only
/// one that may run; `lease_*` name the instance driving it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "assistant_runs")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub conversation_uid: String,
    pub account_id: String,
    /// The sequence of the user's turn message; orders the queue.
    pub turn_sequence: i64,
    pub status: String,
    pub requested_by_user_id: i64,
    pub requested_by_name: String,
    pub requested_by_email: Option<String>,
    /// The credential the turn was directed with: tools run with its rights.
    pub api_key_id: i64,
    /// JSON `{actionId, operation, arguments}` while awaiting confirmation.
    #[sea_orm(column_type = "Text", nullable)]
    pub pending_action: Option<String>,
    pub tool_calls: i32,
    pub prompt_tokens: i64,
    pub completion_tokens: i64,
    pub error_code: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub error_message: Option<String>,
    pub cancel_requested: bool,
    pub lease_owner: Option<String>,
    pub lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub started_at: Option<DateTimeUtc>,
    pub finished_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
