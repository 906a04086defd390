use sea_orm::entity::prelude::*;

/// Who changed what, when: one row per create or update.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "audit_logs")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub user_id: i64,
    pub api_key_id: Option<i64>,
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    /// JSON object: field -> {from, to}.
    #[sea_orm(column_type = "Text")]
    pub changes: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
