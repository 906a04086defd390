use sea_orm::entity::prelude::*;

/// A per-account counter of changes to what conversation lists show:
/// incremented in the same transaction as every such change, so an instance
/// can check whether a cached list is still current with one primary-key read.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "conversation_list_versions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub account_id: String,
    pub version: i64,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
