use sea_orm::entity::prelude::*;

/// A dynamically registered public OAuth client (RFC 7591).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_clients")]
pub struct Model {
    /// The `client_id`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub client_name: Option<String>,
    /// JSON array of the exact redirect URIs, as registered.
    pub redirect_uris: String,
    pub created_at: DateTimeUtc,
    /// When it first obtained a grant; unused clients are pruned.
    pub used_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
