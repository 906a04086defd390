use sea_orm::entity::prelude::*;

/// A buyer's request for proposals: `draft`, `open` or `closed`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "rfps")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub title: String,
    #[sea_orm(column_type = "Text")]
    pub brief: String,
    /// `{amount, currency}` as JSON text.
    #[sea_orm(column_type = "Text", nullable)]
    pub budget: Option<String>,
    /// `YYYY-MM-DD`.
    pub due_date: Option<String>,
    pub status: String,
    pub created_by: i64,
    pub created_at: DateTimeUtc,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
