use sea_orm::entity::prelude::*;

/// An OAuth access or refresh token of a grant. Only SHA-256 of the token
/// is stored; `prefix` is its non-secret handle.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_tokens")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    /// The grant (its `api_keys` row id).
    pub grant_id: i64,
    /// `access` or `refresh`.
    pub kind: String,
    #[sea_orm(unique)]
    pub prefix: String,
    pub token_hash: String,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    /// A refresh token is spent when rotated; presenting it again revokes the grant.
    pub used_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
