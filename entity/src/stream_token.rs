use sea_orm::entity::prelude::*;

/// A short-lived credential for one event stream, bound to the API key that
/// minted it. Only the SHA-256 of the token is stored; `prefix` is the
/// readable, non-secret part used to find the row.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "stream_tokens")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    #[sea_orm(unique)]
    pub prefix: String,
    pub token_hash: String,
    pub api_key_id: i64,
    pub user_id: i64,
    /// The one stream path the token opens, e.g.
    /// `/api/v2/assistant/conversations/{uid}/events`.
    pub stream_path: String,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
    /// When the credential that minted it expires by itself (an OAuth
    /// access token): the token expires no later, and a stream opened
    /// with it ends then.
    pub credential_expires_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
