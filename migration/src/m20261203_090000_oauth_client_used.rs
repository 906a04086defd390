use sea_orm_migration::sea_orm::ConnectionTrait;
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // When a client first obtained a grant: registration needs no
        // authentication, so clients never used within a day are pruned,
        // and this keeps a used one after its grants are gone.
        m.alter_table(
            Table::alter()
                .table("oauth_clients")
                .add_column(timestamp_with_time_zone_null("used_at"))
                .to_owned(),
        )
        .await?;
        // Clients used before this column existed.
        m.get_connection()
            .execute_unprepared(
                "UPDATE oauth_clients SET used_at = \
                 (SELECT MIN(g.created_at) FROM oauth_grants g WHERE g.client_id = oauth_clients.id) \
                 WHERE id IN (SELECT client_id FROM oauth_grants)",
            )
            .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("oauth_clients")
                .drop_column("used_at")
                .to_owned(),
        )
        .await
    }
}
