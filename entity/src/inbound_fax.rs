use sea_orm::entity::prelude::*;

/// A fax received on a line and the pipeline's state for it. `stage`:
/// `stored` (the PDF is in private storage), `extracted` (its text is
/// read), `replied` (the agent answered), `rendered` (the answer is a
/// PDF), `sent` (faxed back), `failed` (with `failure`), `expired` (its
/// files were deleted under the retention policy).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "inbound_faxes")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    pub customer_id: i64,
    pub line_id: i64,
    /// The carrier's id of the received fax (its events repeat: one row).
    #[sea_orm(unique)]
    pub provider_fax_id: String,
    /// The verified originating number.
    pub from_number: String,
    pub to_number: String,
    pub stage: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub failure: Option<String>,
    /// The stored PDF, relative to the fax storage directory.
    pub file_path: Option<String>,
    pub file_bytes: i64,
    pub pages: i32,
    #[sea_orm(column_type = "Text", nullable)]
    pub extracted_text: Option<String>,
    pub truncated: bool,
    #[sea_orm(column_type = "Text", nullable)]
    pub reply_text: Option<String>,
    /// The reply PDF, relative to the storage directory.
    pub reply_path: Option<String>,
    /// Names the reply PDF in the URL the carrier fetches it from.
    pub reply_token: Option<String>,
    /// The reply's outbound fax (`faxes.id`).
    pub reply_fax_id: Option<i64>,
    pub attempts: i32,
    pub lease_owner: Option<String>,
    pub lease_until: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
