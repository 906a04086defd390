use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // Durable background work (issue 10), shared by every queue
        // (webhook deliveries first; text messages and faxes later). A job is
        // written in the transaction of the change that causes it and
        // belongs to a lane (a subscription, a phone line): one instance at a
        // time works a lane, its jobs in `id` order. Finished jobs stay, with
        // their `result`, until pruned: they are the queue's delivery log.
        m.create_table(
            Table::create()
                .table("outbox")
                .col(big_pk_auto("id"))
                .col(string("queue"))
                .col(string("lane"))
                // Queue-specific JSON.
                .col(text("payload"))
                // pending, done, failed, held or cancelled.
                .col(string("state"))
                .col(integer("attempts"))
                // A pending job is not taken before this (backoff).
                .col(timestamp_with_time_zone("available_at"))
                // Queue-specific JSON of the last attempt.
                .col(text_null("result"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone_null("finished_at"))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_outbox_lane")
                .table("outbox")
                .col("queue")
                .col("lane")
                .col("state")
                .col("id")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_outbox_due")
                .table("outbox")
                .col("queue")
                .col("state")
                .col("available_at")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_outbox_finished")
                .table("outbox")
                .col("queue")
                .col("finished_at")
                .to_owned(),
        )
        .await?;
        // Who works a lane: an instance holds it until `until` and renews it
        // while alive; an expired lease may be taken by any instance.
        m.create_table(
            Table::create()
                .table("outbox_leases")
                .col(string("queue"))
                .col(string("lane"))
                .col(string("owner"))
                .col(timestamp_with_time_zone("until"))
                .primary_key(Index::create().col("queue").col("lane"))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_outbox_leases_owner")
                .table("outbox_leases")
                .col("owner")
                .to_owned(),
        )
        .await?;
        // One webhook event: the exact bytes every subscription receives
        // (and signs with its own secret).
        m.create_table(
            Table::create()
                .table("webhook_events")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("event_type"))
                .col(text("body"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "webhook_events",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_webhook_events_created")
                .table("webhook_events")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        // The subscriptions that were active when a source of events (a
        // discovery session) started: only they receive its events.
        m.create_table(
            Table::create()
                .table("webhook_audiences")
                .col(string("scope"))
                .col(string("subscription_id"))
                .primary_key(Index::create().col("scope").col("subscription_id"))
                .foreign_key(&mut crate::cascade(
                    "webhook_audiences",
                    "subscription_id",
                    "webhook_subscriptions",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_webhook_audiences_subscription")
                .table("webhook_audiences")
                .col("subscription_id")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
