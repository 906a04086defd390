use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // Per-advertiser catalogs (product feeds). `id` is the public
        // `catalogId` (`cat_…`), referenced by campaigns.
        m.create_table(
            Table::create()
                .table("catalogs")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("name"))
                // AdCP 3.1 catalog type: product, hotel, flight, job, ...
                .col(string("catalog_type"))
                // inline or url.
                .col(string("source_kind"))
                .col(text_null("feed_url"))
                // json or csv as requested; null infers it per fetch.
                .col(string_null("feed_format"))
                // pending, synced or failed.
                .col(string("sync_status"))
                // healthy, degraded or failing.
                .col(string("health"))
                .col(big_integer("item_count"))
                .col(big_integer("rejected_count"))
                .col(integer_null("latest_version"))
                // The version the last executed activation plan moved to.
                .col(integer_null("activated_version"))
                .col(timestamp_with_time_zone_null("last_synced_at"))
                .col(text_null("last_error"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "catalogs",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "catalogs",
                    "advertiser_id",
                    "advertisers",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // A sync without a catalogId updates the advertiser's catalog of
        // that name; the index decides concurrent creates.
        m.create_index(
            Index::create()
                .name("uq_catalogs_advertiser_name")
                .table("catalogs")
                .col("advertiser_id")
                .col("name")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_catalogs_account_advertiser")
                .table("catalogs")
                .col("account_id")
                .col("advertiser_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        // Every successful sync is a version with its accepted items (JSON
        // array) and the rejected ones' reports.
        m.create_table(
            Table::create()
                .table("catalog_versions")
                .col(big_pk_auto("id"))
                .col(string("catalog_id"))
                .col(integer("version"))
                // inline, json or csv.
                .col(string("format"))
                .col(big_integer("item_count"))
                .col(big_integer("rejected_count"))
                .col(text("items"))
                .col(text("rejected"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "catalog_versions",
                    "catalog_id",
                    "catalogs",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("uq_catalog_versions_version")
                .table("catalog_versions")
                .col("catalog_id")
                .col("version")
                .unique()
                .to_owned(),
        )
        .await?;
        // Activation plans saved by a preview with `save: true`.
        m.create_table(
            Table::create()
                .table("catalog_activation_plans")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("catalog_id"))
                .col(integer_null("from_version"))
                .col(integer("to_version"))
                .col(text("plan"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "catalog_activation_plans",
                    "catalog_id",
                    "catalogs",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_catalog_activation_plans_catalog")
                .table("catalog_activation_plans")
                .col("catalog_id")
                .to_owned(),
        )
        .await?;
        // Downstream activation work, one job per catalog version, left
        // `pending` (no runner exists yet). The unique index makes executing
        // the same version twice return the first job.
        m.create_table(
            Table::create()
                .table("catalog_activation_jobs")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("catalog_id"))
                .col(integer("version"))
                .col(integer_null("from_version"))
                .col(text("plan"))
                .col(string("status"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "catalog_activation_jobs",
                    "catalog_id",
                    "catalogs",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("uq_catalog_activation_jobs_version")
                .table("catalog_activation_jobs")
                .col("catalog_id")
                .col("version")
                .unique()
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
