use sea_orm::entity::prelude::*;

/// One published revision of a discovery session (JSON columns as sent).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "discovery_revisions")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub session_id: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub revision: i64,
    pub results_complete: bool,
    pub product_groups: String,
    pub pending_agents: String,
    pub incomplete_agents: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
