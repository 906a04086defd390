use sea_orm::entity::prelude::*;

/// A seller callback already applied, by its event id: a replay is ignored.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "adcp_callback_events")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub storefront_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub event_key: String,
    pub received_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
