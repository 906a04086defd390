use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Delivery as rows: one per media buy, package, placement and seller day
/// (`placement_id` is `''` on a package's own row), replaced when the
/// seller restates that day; and the same summed per campaign and day
/// (package rows only), kept in the same transaction, for day and campaign
/// reports. Rows are the sellers' facts, kept by id (no foreign keys).
#[derive(DeriveIden)]
enum DeliveryDaily {
    Table,
    Id,
    AccountId,
    AdvertiserId,
    CampaignId,
    MediaBuyId,
    PackageId,
    PlacementId,
    Date,
    Impressions,
    Spend,
    Clicks,
    VideoCompletions,
    PricingModel,
    Units,
    Currency,
    PulledAt,
}

#[derive(DeriveIden)]
enum DeliveryCampaignDaily {
    Table,
    Id,
    AccountId,
    AdvertiserId,
    CampaignId,
    Date,
    Currency,
    PricingModel,
    Impressions,
    Spend,
    Clicks,
    VideoCompletions,
    Units,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(DeliveryDaily::Table)
                .col(big_pk_auto(DeliveryDaily::Id))
                .col(string(DeliveryDaily::AccountId))
                .col(string(DeliveryDaily::AdvertiserId))
                .col(string(DeliveryDaily::CampaignId))
                .col(string(DeliveryDaily::MediaBuyId))
                .col(string(DeliveryDaily::PackageId))
                .col(string(DeliveryDaily::PlacementId).default(""))
                .col(string(DeliveryDaily::Date))
                .col(big_integer(DeliveryDaily::Impressions))
                .col(double(DeliveryDaily::Spend))
                .col(big_integer_null(DeliveryDaily::Clicks))
                .col(big_integer_null(DeliveryDaily::VideoCompletions))
                .col(string(DeliveryDaily::PricingModel).default(""))
                .col(double_null(DeliveryDaily::Units))
                .col(string(DeliveryDaily::Currency))
                .col(timestamp_with_time_zone(DeliveryDaily::PulledAt))
                .to_owned(),
        )
        .await?;
        // The natural key: a restatement replaces its row.
        m.create_index(
            Index::create()
                .name("idx_delivery_daily_natural_key")
                .table(DeliveryDaily::Table)
                .col(DeliveryDaily::MediaBuyId)
                .col(DeliveryDaily::Date)
                .col(DeliveryDaily::PackageId)
                .col(DeliveryDaily::PlacementId)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_delivery_daily_advertiser_date")
                .table(DeliveryDaily::Table)
                .col(DeliveryDaily::AccountId)
                .col(DeliveryDaily::AdvertiserId)
                .col(DeliveryDaily::Date)
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_delivery_daily_campaign_date")
                .table(DeliveryDaily::Table)
                .col(DeliveryDaily::CampaignId)
                .col(DeliveryDaily::Date)
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(DeliveryCampaignDaily::Table)
                .col(big_pk_auto(DeliveryCampaignDaily::Id))
                .col(string(DeliveryCampaignDaily::AccountId))
                .col(string(DeliveryCampaignDaily::AdvertiserId))
                .col(string(DeliveryCampaignDaily::CampaignId))
                .col(string(DeliveryCampaignDaily::Date))
                .col(string(DeliveryCampaignDaily::Currency))
                .col(string(DeliveryCampaignDaily::PricingModel))
                .col(big_integer(DeliveryCampaignDaily::Impressions))
                .col(double(DeliveryCampaignDaily::Spend))
                .col(big_integer_null(DeliveryCampaignDaily::Clicks))
                .col(big_integer_null(DeliveryCampaignDaily::VideoCompletions))
                .col(double_null(DeliveryCampaignDaily::Units))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_delivery_campaign_daily_key")
                .table(DeliveryCampaignDaily::Table)
                .col(DeliveryCampaignDaily::CampaignId)
                .col(DeliveryCampaignDaily::Date)
                .col(DeliveryCampaignDaily::Currency)
                .col(DeliveryCampaignDaily::PricingModel)
                .unique()
                .to_owned(),
        )
        .await?;
        // A month by day for an advertiser: the range read from this index,
        // the figures from the rows it points at.
        m.create_index(
            Index::create()
                .name("idx_delivery_campaign_daily_advertiser_date")
                .table(DeliveryCampaignDaily::Table)
                .col(DeliveryCampaignDaily::AccountId)
                .col(DeliveryCampaignDaily::AdvertiserId)
                .col(DeliveryCampaignDaily::Date)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(DeliveryCampaignDaily::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(DeliveryDaily::Table).to_owned())
            .await
    }
}
