use sea_orm::entity::prelude::*;

/// A notification to one user: what happened (`topic`, a short `title` and
/// `body`, the ids it is about in `data`), numbered by the account's
/// sequence, and whether the user read and acknowledged it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notifications")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub user_id: i64,
    /// The account's notification sequence: commits in this order.
    pub seq: i64,
    pub topic: String,
    pub title: String,
    pub body: String,
    /// A small JSON object: the ids the notification is about.
    pub data: String,
    /// The user's `console` channel was on for the topic: listed and streamed.
    pub in_console: bool,
    /// The user's e-mail address when the `email` channel was on: recorded
    /// for a later delivery (nothing is sent).
    pub email_to: Option<String>,
    pub created_at: DateTimeUtc,
    pub read_at: Option<DateTimeUtc>,
    pub acknowledged_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
