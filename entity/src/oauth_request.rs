use sea_orm::entity::prelude::*;

/// An authorization in progress in a browser, from `GET /authorize` to the
/// consent form. Only SHA-256 of its CSRF token and browser cookie are kept.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "oauth_requests")]
pub struct Model {
    /// The non-secret handle carried by the forms.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub client_id: String,
    pub redirect_uri: String,
    /// Space-separated granted scopes.
    pub scope: String,
    pub state: Option<String>,
    /// PKCE S256 challenge.
    pub code_challenge: String,
    pub resource: Option<String>,
    pub csrf_hash: String,
    pub browser_hash: String,
    /// Set once the user signed in on the login form.
    pub user_id: Option<i64>,
    pub created_at: DateTimeUtc,
    pub expires_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
