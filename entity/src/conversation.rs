use sea_orm::entity::prelude::*;

/// A shared or private assistant conversation (a "room").
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "conversations")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub uid: String,
    pub account_id: String,
    pub owner_user_id: i64,
    pub title: String,
    /// True until the owner renames it.
    pub title_is_auto: bool,
    pub sharing_enabled: bool,
    pub last_sequence: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
