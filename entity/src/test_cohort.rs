use sea_orm::entity::prelude::*;

/// One auto-selected product of a campaign with its test budget, written
/// when the campaign's auto-selection is made (replacing the campaign's
/// earlier rows). The insights module reads it.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "test_cohorts")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub campaign_id: String,
    pub discovery_id: String,
    pub product_id: String,
    pub storefront_id: i64,
    pub pricing_option_id: String,
    pub pricing_model: String,
    pub selection_method: String,
    /// 1 for the best-ranked product of the selection.
    pub rank: i32,
    #[sea_orm(column_type = "Double")]
    pub score: f64,
    #[sea_orm(column_type = "Double")]
    pub share: f64,
    #[sea_orm(column_type = "Double", nullable)]
    pub budget: Option<f64>,
    #[sea_orm(column_type = "Double", nullable)]
    pub test_budget: Option<f64>,
    pub currency: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
