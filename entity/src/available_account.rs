use sea_orm::entity::prelude::*;

/// The last answer of a source's `list_accounts` for one credential (the
/// cached projection `refresh=false` reads).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "available_accounts")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub credential_id: String,
    /// The seller's `account_id`.
    pub account_ref: String,
    pub name: String,
    pub status: String,
    pub billing: Option<String>,
    /// The account as the seller sent it (JSON object).
    #[sea_orm(column_type = "Text")]
    pub data: String,
    pub refreshed_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
