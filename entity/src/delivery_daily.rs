use sea_orm::entity::prelude::*;

/// One seller day of a media buy's package (or of one placement of it, when
/// `placement_id` is not empty), as the seller last reported it. The
/// reporting module owns the shape.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "delivery_daily")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub advertiser_id: String,
    pub campaign_id: String,
    pub media_buy_id: String,
    pub package_id: String,
    /// `''` on the package's own row.
    pub placement_id: String,
    /// The seller's day, `YYYY-MM-DD`, as given.
    pub date: String,
    pub impressions: i64,
    #[sea_orm(column_type = "Double")]
    pub spend: f64,
    pub clicks: Option<i64>,
    pub video_completions: Option<i64>,
    /// The buy's pricing model (`''` when unknown).
    pub pricing_model: String,
    /// What the pricing model counts (CPM: impressions / 1000, CPC: clicks,
    /// CPCV: completions, ...); `None` when the report does not give it.
    #[sea_orm(column_type = "Double", nullable)]
    pub units: Option<f64>,
    pub currency: String,
    pub pulled_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
