use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Well-known brands the local registry starts with (official entries).
const SEED_BRANDS: &[(&str, &str, &str, &str)] = &[
    ("nike.com", "Nike", "Apparel & Footwear", "Just Do It."),
    ("coca-cola.com", "Coca-Cola", "Beverages", "Real Magic."),
    (
        "apple.com",
        "Apple",
        "Consumer Electronics",
        "Think different.",
    ),
    (
        "ikea.com",
        "IKEA",
        "Home Furnishings",
        "The wonderful everyday.",
    ),
];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("brands")
                .col(string("id").primary_key())
                .col(string_uniq("domain"))
                .col(string("name"))
                .col(text("manifest"))
                .col(boolean("official"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("advertisers")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("name"))
                .col(text_null("description"))
                .col(string("status"))
                .col(string("brand"))
                .col(text("brand_countries"))
                .col(string("primary_currency"))
                .col(string_null("preferred_timezone"))
                .col(boolean("sandbox"))
                .col(text("channels"))
                .col(string("optimization_apply_mode"))
                .col(text("utm_config"))
                .col(text("frequency_caps"))
                .col(text_null("brand_warning"))
                .col(text("linked_brand"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "advertisers",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_advertisers_account_created")
                .table("advertisers")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("advertiser_linked_accounts")
                .col(big_pk_auto("id"))
                .col(string("advertiser_id"))
                .col(big_integer("storefront_id"))
                .col(string("source_id"))
                .col(string("account_ref"))
                .col(string_null("billing_type"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "advertiser_linked_accounts",
                    "advertiser_id",
                    "advertisers",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "advertiser_linked_accounts",
                    "storefront_id",
                    "storefronts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("uq_advertiser_linked_accounts")
                .table("advertiser_linked_accounts")
                .col("advertiser_id")
                .col("storefront_id")
                .col("source_id")
                .col("account_ref")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("audit_logs")
                .col(big_pk_auto("id"))
                .col(string("account_id"))
                .col(big_integer("user_id"))
                .col(big_integer_null("api_key_id"))
                .col(string("action"))
                .col(string("resource_type"))
                .col(string("resource_id"))
                .col(text("changes"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "audit_logs",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_audit_logs_account")
                .table("audit_logs")
                .col("account_id")
                .col("id")
                .to_owned(),
        )
        .await?;

        let now = chrono::Utc::now();
        for (domain, name, industry, tagline) in SEED_BRANDS {
            let manifest = serde_json::json!({
                "logos": [], "colors": {}, "fonts": [], "industry": industry,
                "tagline": tagline, "tone": null, "assets": [], "productCatalog": null,
                "disclaimers": [],
            });
            let insert = Query::insert()
                .into_table("brands")
                .columns([
                    "id",
                    "domain",
                    "name",
                    "manifest",
                    "official",
                    "created_at",
                    "updated_at",
                ])
                .values_panic([
                    format!("brand_{}", domain.replace(['.', '-'], "_")).into(),
                    (*domain).into(),
                    (*name).into(),
                    manifest.to_string().into(),
                    true.into(),
                    now.into(),
                    now.into(),
                ])
                .to_owned();
            m.exec_stmt(insert).await?;
        }
        Ok(())
    }
}
