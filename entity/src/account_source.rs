use sea_orm::entity::prelude::*;

/// Where a storefront's accounts come from: its own AdCP agent (`agent`,
/// implicit unless a row overrides it) or an external source. Set by the
/// operator.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "account_sources")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub storefront_id: i64,
    pub source_id: String,
    pub name: String,
    /// The source's AdCP agent; `None` is the storefront's own.
    pub url: Option<String>,
    pub requires_credentials: bool,
    /// JSON array of AdCP billing parties (`operator`, `agent`, `advertiser`).
    #[sea_orm(column_type = "Text")]
    pub supported_billing: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
