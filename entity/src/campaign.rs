use sea_orm::entity::prelude::*;

/// A campaign of one advertiser. Object and list fields are JSON text (same
/// on SQLite and PostgreSQL); the campaigns module owns their shapes.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "campaigns")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub name: String,
    pub status: String,
    pub archived_from: Option<String>,
    pub start_date: DateTimeUtc,
    pub end_date: DateTimeUtc,
    #[sea_orm(column_type = "Text")]
    pub budget: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub brief: Option<String>,
    pub discovery_id: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub storefront_ids: String,
    #[sea_orm(column_type = "Text")]
    pub autonomy: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub performance_config: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub constraints: String,
    pub catalog_id: Option<String>,
    /// The campaign's utm parameters (JSON array), overriding the
    /// advertiser's per key; `None` overrides nothing.
    #[sea_orm(column_type = "Text", nullable)]
    pub utm_config: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
