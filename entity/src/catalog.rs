use sea_orm::entity::prelude::*;

/// An advertiser's catalog (product feed); the domain module owns the
/// meaning of its status strings.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "catalogs")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub name: String,
    pub catalog_type: String,
    pub source_kind: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub feed_url: Option<String>,
    pub feed_format: Option<String>,
    pub sync_status: String,
    pub health: String,
    pub item_count: i64,
    pub rejected_count: i64,
    pub latest_version: Option<i32>,
    pub activated_version: Option<i32>,
    pub last_synced_at: Option<DateTimeUtc>,
    #[sea_orm(column_type = "Text", nullable)]
    pub last_error: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
