use sea_orm::entity::prelude::*;

/// A buyer account's webhook subscription.
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_subscriptions")]
pub struct Model {
    /// `wh_` and 24 random letters or digits.
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub url: String,
    /// JSON array of event types.
    pub event_types: String,
    /// Versioned: `plain1:<secret>` or `aesgcm1:<hex nonce, ciphertext and tag>`.
    /// Never returned, never logged (this type's `Debug` leaves it out).
    pub secret: String,
    /// `active` or `failed`.
    pub status: String,
    pub failure_count: i32,
    pub last_success: Option<DateTimeUtc>,
    pub last_failure: Option<DateTimeUtc>,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Model")
            .field("id", &self.id)
            .field("account_id", &self.account_id)
            .field("url", &self.url)
            .field("event_types", &self.event_types)
            .field("secret", &"<redacted>")
            .field("status", &self.status)
            .field("failure_count", &self.failure_count)
            .field("last_success", &self.last_success)
            .field("last_failure", &self.last_failure)
            .field("created_at", &self.created_at)
            .field("updated_at", &self.updated_at)
            .finish()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
