use sea_orm::entity::prelude::*;

/// The storefront agent that answers a fax line's inbound faxes: its
/// instructions, and the read operations it may call (as `tool_user_id`,
/// read-only).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "fax_agents")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub line_id: i64,
    #[sea_orm(column_type = "Text")]
    pub instructions: String,
    /// Space-separated operation names (read operations only).
    #[sea_orm(column_type = "Text")]
    pub tools: String,
    pub tool_user_id: Option<i64>,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
