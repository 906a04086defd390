use sea_orm::entity::prelude::*;

/// A seller-account binding of an advertiser. Its existence locks the
/// advertiser's brand and currency.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "advertiser_linked_accounts")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub advertiser_id: String,
    pub storefront_id: i64,
    pub source_id: String,
    /// The seller-side account id (`accountId` on the wire).
    pub account_ref: String,
    pub billing_type: Option<String>,
    /// `active` once verified or accepted (only active bindings lock the
    /// advertiser and are used by media buys), `pending_review`, `rejected`.
    pub status: String,
    /// The intake it came from, for a managed storefront's account.
    pub intake_id: Option<String>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
