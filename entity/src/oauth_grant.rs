use sea_orm::entity::prelude::*;

/// What a user allowed a client: one per exchanged authorization code. Its
/// credential row in `api_keys` (kind `oauth`) carries its revocation.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_grants")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub api_key_id: i64,
    pub client_id: String,
    pub user_id: i64,
    /// Space-separated granted scopes.
    pub scope: String,
    pub resource: Option<String>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
