use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Creatives: an advertiser's creative library (AdCP 3.1 creative assets:
/// a format, assets by role, a click URL), their assignments to media buys
/// (one package each) with what the seller said when each was synced
/// (AdCP `sync_creatives`); a campaign's own utm parameters, overriding
/// the advertiser's per key; and the seller's package ids of a media buy,
/// which creative assignments name.
#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("campaigns")
                .add_column(text_null("utm_config"))
                .to_owned(),
        )
        .await?;
        m.alter_table(
            Table::alter()
                .table("media_buys")
                .add_column(text_null("adcp_package_ids"))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("creatives")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("name"))
                .col(text("format"))
                .col(text("assets"))
                .col(text_null("click_url"))
                .col(string("status"))
                .col(big_integer("revision"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "creatives",
                    "advertiser_id",
                    "advertisers",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_creatives_account_created")
                .table("creatives")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_creatives_advertiser")
                .table("creatives")
                .col("advertiser_id")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("creative_assignments")
                .col(string("creative_id"))
                .col(string("media_buy_id"))
                .col(string("account_id"))
                .col(string("campaign_id"))
                .col(big_integer("storefront_id"))
                .col(double_null("weight"))
                .col(string("adcp_creative_id"))
                .col(text_null("click_url"))
                .col(string("sync_status"))
                .col(string_null("action"))
                .col(string_null("review_status"))
                .col(big_integer_null("synced_revision"))
                .col(text("errors"))
                .col(timestamp_with_time_zone_null("synced_at"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .primary_key(Index::create().col("creative_id").col("media_buy_id"))
                .foreign_key(&mut crate::cascade(
                    "creative_assignments",
                    "creative_id",
                    "creatives",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "creative_assignments",
                    "media_buy_id",
                    "media_buys",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_creative_assignments_media_buy")
                .table("creative_assignments")
                .col("media_buy_id")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_creative_assignments_campaign")
                .table("creative_assignments")
                .col("campaign_id")
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in ["creative_assignments", "creatives"] {
            m.drop_table(Table::drop().table(Alias::new(t)).to_owned())
                .await?;
        }
        m.alter_table(
            Table::alter()
                .table("media_buys")
                .drop_column("adcp_package_ids")
                .to_owned(),
        )
        .await?;
        m.alter_table(
            Table::alter()
                .table("campaigns")
                .drop_column("utm_config")
                .to_owned(),
        )
        .await
    }
}
