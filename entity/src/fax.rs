use sea_orm::entity::prelude::*;

/// A fax sent from a line. `request_id` is bound to (line, destination,
/// digest). `status`: `submitting` (handed to the carrier, outcome not yet
/// recorded), `unresolved` (the outcome is unknown: held for an operator),
/// then the carrier's: `queued`, `media.processed`, `sending`, `delivered`,
/// `failed`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "faxes")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub customer_id: i64,
    pub line_id: i64,
    pub request_id: String,
    pub from_number: String,
    pub to_number: String,
    pub media_sha256: String,
    /// The carrier's fax id, once it accepted the fax.
    pub provider_fax_id: Option<String>,
    pub status: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub failure_reason: Option<String>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
