use sea_orm::entity::prelude::*;

/// An entry of the local brand registry.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "brands")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    #[sea_orm(unique)]
    pub domain: String,
    pub name: String,
    #[sea_orm(column_type = "Text")]
    pub manifest: String,
    /// Registered by the operator (or seeded) rather than saved from an
    /// enrichment by a buyer.
    pub official: bool,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
