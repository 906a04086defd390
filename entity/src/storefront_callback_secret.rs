use sea_orm::entity::prelude::*;

/// The secret a storefront signs its callbacks with (sealed at rest).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "storefront_callback_secrets")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub storefront_id: i64,
    #[sea_orm(column_type = "Text")]
    pub secret: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
