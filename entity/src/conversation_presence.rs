use sea_orm::entity::prelude::*;

/// A user with at least one open room stream on one server instance.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "conversation_presence")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub conversation_uid: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub instance_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub user_id: i64,
    pub seen_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
