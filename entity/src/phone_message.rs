use sea_orm::entity::prelude::*;

/// A queued SMS or RCS message; `id` is the public `outboxId`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_messages")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub line_id: i64,
    /// `sms` or `rcs`.
    pub channel: String,
    pub to_number: String,
    #[sea_orm(column_type = "Text")]
    pub text: String,
    pub request_id: String,
    pub segments: i32,
    /// `gsm7` or `ucs2`.
    pub encoding: String,
    pub cost_micros: i64,
    /// `pending`, `submitting`, `submitted`, `delivered`, `failed` or `held`.
    pub status: String,
    pub carrier_message_id: Option<String>,
    #[sea_orm(column_type = "Text", nullable)]
    pub error: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
