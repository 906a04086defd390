use sea_orm::entity::prelude::*;

/// A unit of durable background work in a lane of a queue (see the server's
/// `outbox` module).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "outbox")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub queue: String,
    pub lane: String,
    #[sea_orm(column_type = "Text")]
    pub payload: String,
    /// `pending`, `done`, `failed`, `held` or `cancelled`.
    pub state: String,
    pub attempts: i32,
    pub available_at: DateTimeUtc,
    #[sea_orm(column_type = "Text", nullable)]
    pub result: Option<String>,
    pub created_at: DateTimeUtc,
    pub finished_at: Option<DateTimeUtc>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
