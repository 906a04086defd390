use sea_orm::entity::prelude::*;

/// A customer a (fax) line serves, and whether the line is active for it.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_line_customers")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub line_id: i64,
    #[sea_orm(primary_key, auto_increment = false)]
    pub customer_id: i64,
    pub active: bool,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
