use sea_orm::entity::prelude::*;

/// One conversion event of an event source, attributed to a campaign (and
/// a media buy when known); unique per advertiser, source and event id.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "conversion_events")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub advertiser_id: String,
    pub event_source_id: String,
    pub event_id: String,
    pub event_type: String,
    pub event_time: DateTimeUtc,
    /// The advertiser's date of `event_time` at ingest, `YYYY-MM-DD`.
    pub date: String,
    pub campaign_id: String,
    pub media_buy_id: Option<String>,
    #[sea_orm(column_type = "Double", nullable)]
    pub value: Option<f64>,
    pub currency: String,
    pub action_source: String,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
