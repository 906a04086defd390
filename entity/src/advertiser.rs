use sea_orm::entity::prelude::*;

/// A buyer's advertiser. List-valued fields are JSON text (same on SQLite
/// and PostgreSQL); the domain module owns their shapes.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "advertisers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub name: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub description: Option<String>,
    pub status: String,
    pub brand: String,
    #[sea_orm(column_type = "Text")]
    pub brand_countries: String,
    pub primary_currency: String,
    pub preferred_timezone: Option<String>,
    pub sandbox: bool,
    #[sea_orm(column_type = "Text")]
    pub channels: String,
    pub optimization_apply_mode: String,
    #[sea_orm(column_type = "Text")]
    pub utm_config: String,
    #[sea_orm(column_type = "Text")]
    pub frequency_caps: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub brand_warning: Option<String>,
    #[sea_orm(column_type = "Text")]
    pub linked_brand: String,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
    /// When it was archived; `None` while active.
    pub archived_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
