use sea_orm::entity::prelude::*;

/// A product discovery session over the account's storefronts.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "discovery_sessions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub created_by_user_id: i64,
    /// The normalized request, as JSON.
    pub request: String,
    pub revision: i64,
    pub results_complete: bool,
    pub round: i64,
    pub deadline: DateTimeUtc,
    pub lease_owner: Option<String>,
    pub lease_until: Option<DateTimeUtc>,
    pub completed_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
