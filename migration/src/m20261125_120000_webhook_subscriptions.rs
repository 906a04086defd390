use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // A buyer account's webhook subscription (issue 10). `secret` is
        // stored with a version prefix: `plain1:` (no key configured) or
        // `aesgcm1:` (AES-256-GCM under `AGENTIC_WEBHOOK_SECRET_KEY`).
        m.create_table(
            Table::create()
                .table("webhook_subscriptions")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(text("url"))
                // JSON array of catalog event types, duplicates collapsed.
                .col(text("event_types"))
                .col(text("secret"))
                .col(string("status"))
                .col(integer("failure_count"))
                .col(timestamp_with_time_zone_null("last_success"))
                .col(timestamp_with_time_zone_null("last_failure"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "webhook_subscriptions",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_webhook_subscriptions_account_created")
                .table("webhook_subscriptions")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
