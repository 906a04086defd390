use sea_orm::entity::prelude::*;

/// An API key. Only the SHA-256 of the key is stored; `prefix` is the
/// readable, non-secret part used to find the row.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "api_keys")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub user_id: i64,
    #[sea_orm(unique)]
    pub prefix: String,
    pub key_hash: String,
    /// Space-separated permission names, e.g. `platform:write`.
    pub permissions: String,
    pub created_at: DateTimeUtc,
    pub revoked_at: Option<DateTimeUtc>,
    /// `key` (an API key) or `oauth` (the credential of an OAuth grant:
    /// no secret, never usable as a key; see `oauth_grant`).
    pub kind: String,
    /// The user's label for the key (keys page); `None` for keys issued
    /// without one.
    pub name: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
