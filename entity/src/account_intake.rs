use sea_orm::entity::prelude::*;

/// A buyer-declared account synced to a managed storefront, awaiting (or
/// past) the storefront operator's review: `pending_review`, `accepted`,
/// `rejected`. One per advertiser, storefront, operator and sandbox flag.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "account_intakes")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    /// The buyer's account.
    pub account_id: String,
    pub advertiser_id: String,
    pub storefront_id: i64,
    /// The seller's `account_id`, once it gave one.
    pub account_ref: Option<String>,
    /// The brand's domain.
    pub brand: String,
    pub operator: String,
    pub billing: String,
    /// AdCP business entity without bank details (JSON object).
    #[sea_orm(column_type = "Text", nullable)]
    pub billing_entity: Option<String>,
    pub sandbox: bool,
    /// The seller's account status (`active`, `pending_approval`, ...).
    pub seller_status: String,
    pub status: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub review_note: Option<String>,
    pub reviewed_by: Option<i64>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
