use sea_orm::entity::prelude::*;

/// A Page capability issued by `open_page`: bound to an MCP session, a
/// user of an account, a page and optionally one resource. Only SHA-256 of
/// the token is kept, found by its non-secret prefix.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "page_capabilities")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub prefix: String,
    pub token_hash: String,
    pub account_id: String,
    pub user_id: i64,
    pub mcp_session_id: String,
    /// `teach` or `library`.
    pub page: String,
    pub resource_id: Option<String>,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
