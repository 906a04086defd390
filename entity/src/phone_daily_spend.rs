use sea_orm::entity::prelude::*;

/// What a line spent on one UTC day (kept with each accepted message).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_daily_spend")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub line_id: i64,
    /// `YYYY-MM-DD`, UTC.
    #[sea_orm(primary_key, auto_increment = false)]
    pub day: String,
    pub account_id: String,
    pub spent_micros: i64,
    pub messages: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
