use sea_orm::entity::prelude::*;

/// A campaign's package rows of `delivery_daily` summed per seller day,
/// currency and pricing model; rewritten with them.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "delivery_campaign_daily")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub advertiser_id: String,
    pub campaign_id: String,
    pub date: String,
    pub currency: String,
    pub pricing_model: String,
    pub impressions: i64,
    #[sea_orm(column_type = "Double")]
    pub spend: f64,
    pub clicks: Option<i64>,
    pub video_completions: Option<i64>,
    #[sea_orm(column_type = "Double", nullable)]
    pub units: Option<f64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
