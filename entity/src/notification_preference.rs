use sea_orm::entity::prelude::*;

/// One user's choice for one topic and channel; no row means the
/// channel's default.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "notification_preferences")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub topic: String,
    /// `console`, `webhook` or `email`.
    #[sea_orm(primary_key, auto_increment = false)]
    pub channel: String,
    pub enabled: bool,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
