use sea_orm::entity::prelude::*;

/// Which instance works a lane of a queue, until when.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox_leases")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub queue: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub lane: String,
    pub owner: String,
    pub until: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
