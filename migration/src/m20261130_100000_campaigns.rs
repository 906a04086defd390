use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Campaigns: one advertiser's flight, budget, brief and targeting. Object
/// and list fields are JSON text (same on SQLite and PostgreSQL); the
/// campaigns module owns their shapes.
#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("campaigns")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("name"))
                .col(string("status"))
                // The status an archived campaign returns to on restore.
                .col(string_null("archived_from"))
                .col(timestamp_with_time_zone("start_date"))
                .col(timestamp_with_time_zone("end_date"))
                .col(text("budget"))
                .col(text_null("brief"))
                .col(string_null("discovery_id"))
                .col(text("storefront_ids"))
                .col(text("autonomy"))
                .col(text_null("performance_config"))
                .col(text("constraints"))
                .col(string_null("catalog_id"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "campaigns",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "campaigns",
                    "advertiser_id",
                    "advertisers",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_campaigns_account_created")
                .table("campaigns")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        // The advertiser lock counts an advertiser's campaigns.
        m.create_index(
            Index::create()
                .name("idx_campaigns_advertiser")
                .table("campaigns")
                .col("advertiser_id")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
