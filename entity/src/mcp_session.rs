use sea_orm::entity::prelude::*;

/// An MCP session of `/mcp/buyer` or `/mcp/v3`, shared by every instance on
/// the database and bound to the user and account that opened it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "mcp_sessions")]
pub struct Model {
    /// The `Mcp-Session-Id` rmcp issued.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The MCP path it belongs to (`/mcp/buyer`, `/mcp/v3`).
    pub endpoint: String,
    pub account_id: String,
    pub user_id: i64,
    /// rmcp's `SessionState` as JSON (the client's `initialize` parameters).
    #[sea_orm(column_type = "Text")]
    pub state: String,
    pub created_at: DateTimeUtc,
    /// Renewed by use; past it the session is gone.
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
