use sea_orm::entity::prelude::*;

/// A media buy: one cart selection of a campaign, from DRAFT to the seller's
/// answer. The media-buys module owns the JSON fields' shapes.
#[derive(Clone, Debug, PartialEq, DeriveEntityModel)]
#[sea_orm(table_name = "media_buys")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub campaign_id: String,
    pub discovery_id: String,
    pub storefront_id: i64,
    pub selection_key: String,
    pub kind: String,
    pub product_id: Option<String>,
    pub proposal_id: Option<String>,
    pub pricing_option_id: Option<String>,
    pub pricing_model: Option<String>,
    pub currency: String,
    pub budget: f64,
    pub bid_price: Option<f64>,
    pub priced: bool,
    #[sea_orm(column_type = "Text")]
    pub package: String,
    pub status: String,
    pub adcp_status: Option<String>,
    pub previous_status: Option<String>,
    pub previous_adcp_status: Option<String>,
    pub status_changed_at: DateTimeUtc,
    pub adcp_media_buy_id: Option<String>,
    pub adcp_task_id: Option<String>,
    /// The seller's package ids of the buy (JSON array), from its create
    /// answer: what creative assignments name.
    #[sea_orm(column_type = "Text", nullable)]
    pub adcp_package_ids: Option<String>,
    pub adcp_revision: Option<i64>,
    pub idempotency_key: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub adcp_request: Option<String>,
    pub sandbox: bool,
    #[sea_orm(column_type = "Text")]
    pub errors: String,
    pub dispatched_at: Option<DateTimeUtc>,
    pub next_poll_at: Option<DateTimeUtc>,
    pub last_polled_at: Option<DateTimeUtc>,
    pub poll_failures: i32,
    pub poll_lease_owner: Option<String>,
    pub poll_lease_until: Option<DateTimeUtc>,
    /// The seller's latest delivery report (JSON; see the media-buys module).
    #[sea_orm(column_type = "Text", nullable)]
    pub delivery: Option<String>,
    pub delivery_at: Option<DateTimeUtc>,
    /// When the next delivery pull is due; `None` once the buy has ended
    /// and its final report is in.
    pub delivery_next_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
