use sea_orm::entity::prelude::*;

/// A subscription that receives the events of a scope (a discovery session)
/// because it was active when the scope began.
#[derive(Clone, Debug, PartialEq, Eq, DeriveEntityModel)]
#[sea_orm(table_name = "webhook_audiences")]
pub struct Model {
    #[sea_orm(primary_key, auto_increment = false)]
    pub scope: String,
    #[sea_orm(primary_key, auto_increment = false)]
    pub subscription_id: String,
}

#[derive(Copy, Clone, Debug, EnumIter, DeriveRelation)]
pub enum Relation {
    #[sea_orm(
        belongs_to = "super::webhook_subscription::Entity",
        from = "Column::SubscriptionId",
        to = "super::webhook_subscription::Column::Id"
    )]
    Subscription,
}

impl Related<super::webhook_subscription::Entity> for Entity {
    fn to() -> RelationDef {
        Relation::Subscription.def()
    }
}

impl ActiveModelBehavior for ActiveModel {}
