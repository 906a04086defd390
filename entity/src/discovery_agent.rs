use sea_orm::entity::prelude::*;

/// A storefront asked in a discovery session, and how it answered.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "discovery_agents")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub session_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub storefront_id: i64,
    pub agent_name: String,
    /// `pending`, `answered`, `failed`, `timed_out` or `interrupted`.
    pub status: String,
    pub message: Option<String>,
    /// JSON array of AdCP `incomplete` scopes.
    pub incomplete_scopes: Option<String>,
    pub settled_revision: Option<i64>,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
