use sea_orm::entity::prelude::*;

#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "users")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    #[sea_orm(unique)]
    pub email: String,
    pub name: String,
    /// `member`, `admin` or `super-admin`.
    pub role: String,
    /// Argon2 PHC string; `None` for users that only use API keys.
    pub password_hash: Option<String>,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
