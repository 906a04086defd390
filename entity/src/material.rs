use sea_orm::entity::prelude::*;

/// A buyer's material: a file (uploaded through a reservation) or a note.
/// `status`: reserved, uploading, failed (an upload's), uploaded, draft,
/// candidate, accepted, rejected, archived (see `src/library`).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "materials")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub owner_user_id: i64,
    pub title: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub description: Option<String>,
    /// `file` or `note`.
    pub kind: String,
    pub content_type: Option<String>,
    pub file_name: Option<String>,
    pub size_bytes: Option<i64>,
    pub sha256: Option<String>,
    pub status: String,
    #[sea_orm(column_type = "Text", nullable)]
    pub rejection_reason: Option<String>,
    /// `library` or `advertiser`.
    pub destination_type: String,
    pub destination_id: Option<String>,
    pub advertiser_id: Option<String>,
    /// Relative to the upload storage directory, once written.
    pub storage_path: Option<String>,
    pub upload_prefix: Option<String>,
    pub upload_token_hash: Option<String>,
    pub upload_expires_at: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
