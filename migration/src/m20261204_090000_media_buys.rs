use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Media buys: one row per cart selection of a campaign, from DRAFT to the
/// seller's answer and the poller's refreshes; the operator's credit limits;
/// each storefront's callback secret; the seller callbacks already seen.
#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("media_buys")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("campaign_id"))
                .col(string("discovery_id"))
                .col(big_integer("storefront_id"))
                // What the buy is for, unique in its campaign: `product:…`
                // or `proposal:…`, with the storefront.
                .col(string("selection_key"))
                .col(string("kind"))
                .col(string_null("product_id"))
                .col(string_null("proposal_id"))
                .col(string_null("pricing_option_id"))
                .col(string_null("pricing_model"))
                .col(string("currency"))
                .col(double("budget"))
                .col(double_null("bid_price"))
                // False for an auction option without a bid: staged, not executable.
                .col(boolean("priced"))
                // The package sent to the seller (targeting, caps, utm), JSON.
                .col(text("package"))
                .col(string("status"))
                .col(string_null("adcp_status"))
                .col(string_null("previous_status"))
                .col(string_null("previous_adcp_status"))
                .col(timestamp_with_time_zone("status_changed_at"))
                .col(string_null("adcp_media_buy_id"))
                .col(string_null("adcp_task_id"))
                .col(big_integer_null("adcp_revision"))
                // Sent with every create: a retry never makes a second buy.
                .col(string("idempotency_key"))
                // The create_media_buy arguments of the first attempt (without
                // the callback secret): every retry sends the same payload.
                .col(text_null("adcp_request"))
                .col(boolean("sandbox"))
                // JSON array of the seller's or our errors, latest attempt.
                .col(text("errors"))
                .col(timestamp_with_time_zone_null("dispatched_at"))
                .col(timestamp_with_time_zone_null("next_poll_at"))
                .col(timestamp_with_time_zone_null("last_polled_at"))
                .col(integer("poll_failures"))
                .col(string_null("poll_lease_owner"))
                .col(timestamp_with_time_zone_null("poll_lease_until"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "media_buys",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "media_buys",
                    "campaign_id",
                    "campaigns",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("uq_media_buys_campaign_selection")
                .table("media_buys")
                .col("campaign_id")
                .col("selection_key")
                .unique()
                .to_owned(),
        )
        .await?;
        // The poller's due buys.
        m.create_index(
            Index::create()
                .name("idx_media_buys_next_poll")
                .table("media_buys")
                .col("next_poll_at")
                .to_owned(),
        )
        .await?;
        // Callbacks name the task (submitted) or the seller's buy.
        m.create_index(
            Index::create()
                .name("idx_media_buys_task")
                .table("media_buys")
                .col("storefront_id")
                .col("adcp_task_id")
                .to_owned(),
        )
        .await?;
        // A storefront's proposals beside its products in a discovery group.
        m.alter_table(
            Table::alter()
                .table("discovery_groups")
                .add_column(text_null("proposals"))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("account_credit_limits")
                .col(string("account_id"))
                .col(string("currency"))
                .col(double("credit_limit"))
                .col(timestamp_with_time_zone("updated_at"))
                .primary_key(Index::create().col("account_id").col("currency"))
                .foreign_key(&mut crate::cascade(
                    "account_credit_limits",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("storefront_callback_secrets")
                .col(big_integer("storefront_id").primary_key())
                // Sealed like webhook secrets (`webhooks::secret`).
                .col(text("secret"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "storefront_callback_secrets",
                    "storefront_id",
                    "storefronts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("adcp_callback_events")
                .col(big_integer("storefront_id"))
                .col(string("event_key"))
                .col(timestamp_with_time_zone("received_at"))
                .primary_key(Index::create().col("storefront_id").col("event_key"))
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            "adcp_callback_events",
            "storefront_callback_secrets",
            "account_credit_limits",
            "media_buys",
        ] {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        m.alter_table(
            Table::alter()
                .table("discovery_groups")
                .drop_column("proposals")
                .to_owned(),
        )
        .await
    }
}
