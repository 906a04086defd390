use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Insights: the test cohorts of auto-selected products (one row per
/// campaign and product, replaced when the campaign's selection is made
/// again), human feedback on products, media buys and proposals, and the
/// measurement engine's event sources and conversion events (unique per
/// advertiser, event source and event id: a re-sent batch adds nothing).
#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("test_cohorts")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("campaign_id"))
                .col(string("discovery_id"))
                .col(string("product_id"))
                .col(big_integer("storefront_id"))
                .col(string("pricing_option_id"))
                .col(string("pricing_model"))
                .col(string("selection_method"))
                .col(integer("rank"))
                .col(double("score"))
                .col(double("share"))
                .col(double_null("budget"))
                .col(double_null("test_budget"))
                .col(string("currency"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "test_cohorts",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_test_cohorts_campaign_product")
                .table("test_cohorts")
                .col("campaign_id")
                .col("product_id")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_test_cohorts_account_advertiser")
                .table("test_cohorts")
                .col("account_id")
                .col("advertiser_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("human_feedback")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("subject_type"))
                .col(string("subject_id"))
                .col(string_null("discovery_id"))
                .col(string_null("campaign_id"))
                .col(integer("rating"))
                .col(text_null("comment"))
                // JSON array of strings.
                .col(text("tags"))
                .col(big_integer("created_by"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "human_feedback",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_human_feedback_account_created")
                .table("human_feedback")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_human_feedback_subject")
                .table("human_feedback")
                .col("account_id")
                .col("subject_type")
                .col("subject_id")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("event_sources")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                // The buyer's id, named by campaign event goals.
                .col(string("event_source_id"))
                .col(string("name"))
                // JSON array of AdCP event types; empty: any.
                .col(text("event_types"))
                .col(big_integer("created_by"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "event_sources",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_event_sources_advertiser_source")
                .table("event_sources")
                .col("advertiser_id")
                .col("event_source_id")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("conversion_events")
                .col(big_pk_auto("id"))
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("event_source_id"))
                .col(string("event_id"))
                .col(string("event_type"))
                .col(timestamp_with_time_zone("event_time"))
                // The advertiser's date of event_time at ingest, YYYY-MM-DD.
                .col(string("date"))
                .col(string("campaign_id"))
                .col(string_null("media_buy_id"))
                .col(double_null("value"))
                .col(string("currency"))
                .col(string("action_source"))
                .col(timestamp_with_time_zone("received_at"))
                .foreign_key(&mut crate::cascade(
                    "conversion_events",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Dedup by event id per source: a re-sent event adds nothing.
        m.create_index(
            Index::create()
                .name("idx_conversion_events_dedup")
                .table("conversion_events")
                .col("advertiser_id")
                .col("event_source_id")
                .col("event_id")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_conversion_events_account_date")
                .table("conversion_events")
                .col("account_id")
                .col("advertiser_id")
                .col("date")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_conversion_events_media_buy")
                .table("conversion_events")
                .col("media_buy_id")
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            "conversion_events",
            "event_sources",
            "human_feedback",
            "test_cohorts",
        ] {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        Ok(())
    }
}
