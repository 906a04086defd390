use sea_orm::entity::prelude::*;

/// A creative assigned to a media buy (its package), with what the seller
/// said when it was last synced (AdCP `sync_creatives`).
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "creative_assignments")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub creative_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub media_buy_id: String,
    pub account_id: String,
    pub campaign_id: String,
    pub storefront_id: i64,
    pub weight: Option<f64>,
    /// The creative id the seller knows this assignment's creative by.
    pub adcp_creative_id: String,
    /// The click URL last sent (utm parameters resolved).
    #[sea_orm(column_type = "Text", nullable)]
    pub click_url: Option<String>,
    /// `pending`, `synced`, `submitted` or `failed`.
    pub sync_status: String,
    /// The seller's AdCP action of the last sync (`created`, `updated`, ...).
    pub action: Option<String>,
    /// The seller's AdCP creative status (`pending_review`, `approved`, ...).
    pub review_status: Option<String>,
    /// The creative's revision the last sync sent.
    pub synced_revision: Option<i64>,
    /// The seller's (or our) errors of the last sync, JSON array.
    #[sea_orm(column_type = "Text")]
    pub errors: String,
    pub synced_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
