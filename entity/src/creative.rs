use sea_orm::entity::prelude::*;

/// A creative of an advertiser's library (an AdCP 3.1 creative asset).
/// The creatives module owns the JSON fields' shapes.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "creatives")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub name: String,
    /// AdCP `format_id` (`{agent_url, id, ...}`), JSON.
    #[sea_orm(column_type = "Text")]
    pub format: String,
    /// AdCP assets keyed by role, JSON.
    #[sea_orm(column_type = "Text")]
    pub assets: String,
    /// The landing page, before the utm parameters are added.
    #[sea_orm(column_type = "Text", nullable)]
    pub click_url: Option<String>,
    /// `active` or `archived`.
    pub status: String,
    /// Starts at 1; every change adds one (a sync records the one it sent).
    pub revision: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
