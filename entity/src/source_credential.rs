use sea_orm::entity::prelude::*;

/// A buyer account's credential for an account source. The secret
/// is sealed at rest (never returned, never logged).
#[derive(Clone, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "source_credentials")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub storefront_id: i64,
    pub source_id: String,
    pub label: String,
    #[sea_orm(column_type = "Text")]
    pub secret: String,
    pub created_at: DateTimeUtc,
    pub rotated_at: Option<DateTimeUtc>,
}

impl std::fmt::Debug for Model {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SourceCredential")
            .field("id", &self.id)
            .field("account_id", &self.account_id)
            .field("storefront_id", &self.storefront_id)
            .field("source_id", &self.source_id)
            .finish_non_exhaustive()
    }
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
