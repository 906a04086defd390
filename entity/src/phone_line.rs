use sea_orm::entity::prelude::*;

/// An agent phone line (SMS/RCS or fax). `id` is the public `endpointId`.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "phone_lines")]
pub struct Model {
    #[sea_orm(primary_key)]
    pub id: i64,
    pub account_id: String,
    #[sea_orm(unique)]
    pub number: String,
    /// `sms` or `fax`.
    pub kind: String,
    pub rcs_agent_verified: bool,
    pub messaging_profile: Option<String>,
    pub active: bool,
    pub created_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
