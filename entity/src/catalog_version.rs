use sea_orm::entity::prelude::*;

/// One synced version of a catalog: accepted items and rejection reports,
/// both JSON text.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "catalog_versions")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub catalog_id: String,
    pub version: i32,
    pub format: String,
    pub item_count: i64,
    pub rejected_count: i64,
    #[sea_orm(column_type = "Text")]
    pub items: String,
    #[sea_orm(column_type = "Text")]
    pub rejected: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
