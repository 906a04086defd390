use sea_orm::entity::prelude::*;

/// A line's sending limits (absent: the defaults).
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_line_limits")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub line_id: i64,
    /// Comma-separated ISO 3166-1 alpha-2 codes.
    #[sea_orm(column_type = "Text")]
    pub countries: String,
    pub per_minute: i32,
    pub daily_spend_cap_micros: i64,
    pub segment_price_micros: i64,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
