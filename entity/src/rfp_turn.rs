use sea_orm::entity::prelude::*;

/// One turn of an RFP's exchange, numbered from 1 in order.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "rfp_turns")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub rfp_id: String,
    pub turn: i32,
    /// `buyer` or `seller`.
    pub role: String,
    #[sea_orm(column_type = "Text")]
    pub text: String,
    pub created_by: i64,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
