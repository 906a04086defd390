use sea_orm::entity::prelude::*;

/// A saved discovery snapshot, returned whole for its code.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "discovery_proposals")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub code: String,
    pub account_id: String,
    pub session_id: String,
    pub revision: i64,
    /// The discover-products response data at `revision`, as JSON.
    pub snapshot: String,
    pub created_by_user_id: i64,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
