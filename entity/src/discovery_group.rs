use sea_orm::entity::prelude::*;

/// A product group of a session's current snapshot.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "discovery_groups")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub session_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub group_id: String,
    pub group_name: String,
    pub position: i64,
    /// The revision that landed this version of the group.
    pub revision: i64,
    pub product_count: i64,
    /// JSON array of products.
    pub products: String,
    /// JSON array of the seller's proposals, when it made any.
    pub proposals: Option<String>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
