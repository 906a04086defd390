use sea_orm::entity::prelude::*;

/// An authorization code. Only SHA-256 of the code is stored; `prefix` is
/// its non-secret handle.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_codes")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub prefix: String,
    pub code_hash: String,
    pub client_id: String,
    pub user_id: i64,
    pub redirect_uri: String,
    pub scope: String,
    pub code_challenge: String,
    pub resource: Option<String>,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    /// Set by the one exchange that may use it.
    pub used_at: Option<DateTimeUtc>,
    /// The grant that exchange created (revoked if the code comes back).
    pub grant_id: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
