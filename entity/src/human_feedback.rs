use sea_orm::entity::prelude::*;

/// A person's rating of a product, media buy or proposal.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "human_feedback")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    /// `product`, `media_buy` or `proposal`.
    pub subject_type: String,
    pub subject_id: String,
    /// The discovery session of a product or proposal.
    pub discovery_id: Option<String>,
    /// The media buy's campaign.
    pub campaign_id: Option<String>,
    pub rating: i32,
    #[sea_orm(column_type = "Text", nullable)]
    pub comment: Option<String>,
    /// JSON array of strings.
    #[sea_orm(column_type = "Text")]
    pub tags: String,
    pub created_by: i64,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
