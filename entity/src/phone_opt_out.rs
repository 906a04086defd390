use sea_orm::entity::prelude::*;

/// A recipient who texted STOP to a line (both channels).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_opt_outs")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub line_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub recipient: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
