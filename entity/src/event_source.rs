use sea_orm::entity::prelude::*;

/// An advertiser's source of conversion events (a site pixel, an app, a
/// CRM upload...), named by the buyer's `event_source_id`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "event_sources")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub event_source_id: String,
    pub name: String,
    /// JSON array of AdCP event types; empty: any.
    #[sea_orm(column_type = "Text")]
    pub event_types: String,
    pub created_by: i64,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
