use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // When the advertiser was archived (save_advertiser isArchived
        // true); null while it is active. Lists hide archived advertisers
        // unless asked, and an archived advertiser takes no new campaigns.
        m.alter_table(
            Table::alter()
                .table("advertisers")
                .add_column(timestamp_with_time_zone_null("archived_at"))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("advertisers")
                .drop_column("archived_at")
                .to_owned(),
        )
        .await
    }
}
