use sea_orm::entity::prelude::*;

/// The account that operates a storefront on this server (a managed
/// storefront): it reviews the storefront's account-mapping intakes.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "storefront_operators")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub storefront_id: i64,
    pub account_id: String,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
