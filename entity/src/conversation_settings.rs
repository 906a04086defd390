use sea_orm::entity::prelude::*;

/// Per-account conversation settings; a missing row means the defaults.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "conversation_settings")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub account_id: String,
    pub default_sharing_enabled: bool,
    /// The assistant's write tools wait for a participant's confirmation.
    pub assistant_writes_need_confirmation: bool,
    pub updated_at: DateTimeUtc,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {}

impl ActiveModelBehavior for ActiveModel {}
