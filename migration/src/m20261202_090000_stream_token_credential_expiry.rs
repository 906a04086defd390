use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // When the credential that minted a stream token expires by itself
        // (an OAuth access token): a stream opened with the token ends then.
        m.alter_table(
            Table::alter()
                .table("stream_tokens")
                .add_column(timestamp_with_time_zone_null("credential_expires_at"))
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("stream_tokens")
                .drop_column("credential_expires_at")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
