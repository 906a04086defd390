use sea_orm::entity::prelude::*;

/// One message of a conversation; `sequence` is gap-free per conversation.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "conversation_messages")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub conversation_uid: String,
    pub sequence: i64,
    /// `room` or `assistant`.
    pub audience: String,
    #[sea_orm(column_type = "Text")]
    pub content: String,
    /// Set on user-authored messages; none on assistant ones.
    pub author_user_id: Option<i64>,
    pub author_name: Option<String>,
    pub author_email: Option<String>,
    pub created_at: DateTimeUtc,
    /// The assistant run the message belongs to (its turn, its answer, its
    /// tool calls).
    pub run_id: Option<String>,
    /// On a run's messages: `turn`, `answer`, `tool_call`, `tool_result`,
    /// `action_proposed`, `action_declined` or `notice`.
    pub kind: Option<String>,
    /// JSON detail of a tool call, result or proposed action.
    #[sea_orm(column_type = "Text", nullable)]
    pub data: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
