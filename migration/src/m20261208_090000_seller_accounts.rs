use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Seller accounts: each storefront's account sources (its own agent is
/// implicit; rows override it or add external sources), buyers' credentials
/// for sources, the cached projection of the accounts a credential can
/// see, account-mapping intakes (synced accounts awaiting the storefront
/// operator's review), which account operates a storefront, each buyer
/// account's confirmed operator domain, and a status on each binding.
#[derive(DeriveIden)]
enum AccountSources {
    Table,
    Id,
    StorefrontId,
    SourceId,
    Name,
    Url,
    RequiresCredentials,
    SupportedBilling,
    CreatedAt,
}

#[derive(DeriveIden)]
enum SourceCredentials {
    Table,
    Id,
    AccountId,
    StorefrontId,
    SourceId,
    Label,
    Secret,
    CreatedAt,
    RotatedAt,
}

#[derive(DeriveIden)]
enum AvailableAccounts {
    Table,
    Id,
    CredentialId,
    AccountRef,
    Name,
    Status,
    Billing,
    Data,
    RefreshedAt,
}

#[derive(DeriveIden)]
enum AccountIntakes {
    Table,
    Id,
    AccountId,
    AdvertiserId,
    StorefrontId,
    AccountRef,
    Brand,
    Operator,
    Billing,
    BillingEntity,
    Sandbox,
    SellerStatus,
    Status,
    ReviewNote,
    ReviewedBy,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum StorefrontOperators {
    Table,
    StorefrontId,
    AccountId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum OperatorIdentities {
    Table,
    AccountId,
    Domain,
    ConfirmedAt,
}

#[derive(DeriveIden)]
enum AdvertiserLinkedAccounts {
    Table,
    Status,
    IntakeId,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(AccountSources::Table)
                .col(big_pk_auto(AccountSources::Id))
                .col(big_integer(AccountSources::StorefrontId))
                .col(string(AccountSources::SourceId))
                .col(string(AccountSources::Name))
                .col(string_null(AccountSources::Url))
                .col(boolean(AccountSources::RequiresCredentials).default(false))
                .col(text(AccountSources::SupportedBilling))
                .col(timestamp_with_time_zone(AccountSources::CreatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_account_sources_storefront_source")
                .table(AccountSources::Table)
                .col(AccountSources::StorefrontId)
                .col(AccountSources::SourceId)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(SourceCredentials::Table)
                .col(string(SourceCredentials::Id).primary_key())
                .col(string(SourceCredentials::AccountId))
                .col(big_integer(SourceCredentials::StorefrontId))
                .col(string(SourceCredentials::SourceId))
                .col(string(SourceCredentials::Label))
                .col(text(SourceCredentials::Secret))
                .col(timestamp_with_time_zone(SourceCredentials::CreatedAt))
                .col(timestamp_with_time_zone_null(SourceCredentials::RotatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_source_credentials_source")
                .table(SourceCredentials::Table)
                .col(SourceCredentials::AccountId)
                .col(SourceCredentials::StorefrontId)
                .col(SourceCredentials::SourceId)
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(AvailableAccounts::Table)
                .col(big_pk_auto(AvailableAccounts::Id))
                .col(string(AvailableAccounts::CredentialId))
                .col(string(AvailableAccounts::AccountRef))
                .col(string(AvailableAccounts::Name))
                .col(string(AvailableAccounts::Status))
                .col(string_null(AvailableAccounts::Billing))
                .col(text(AvailableAccounts::Data))
                .col(timestamp_with_time_zone(AvailableAccounts::RefreshedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_available_accounts_credential")
                .table(AvailableAccounts::Table)
                .col(AvailableAccounts::CredentialId)
                .col(AvailableAccounts::AccountRef)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(AccountIntakes::Table)
                .col(string(AccountIntakes::Id).primary_key())
                .col(string(AccountIntakes::AccountId))
                .col(string(AccountIntakes::AdvertiserId))
                .col(big_integer(AccountIntakes::StorefrontId))
                .col(string_null(AccountIntakes::AccountRef))
                .col(string(AccountIntakes::Brand))
                .col(string(AccountIntakes::Operator))
                .col(string(AccountIntakes::Billing))
                .col(text_null(AccountIntakes::BillingEntity))
                .col(boolean(AccountIntakes::Sandbox).default(false))
                .col(string(AccountIntakes::SellerStatus))
                .col(string(AccountIntakes::Status))
                .col(text_null(AccountIntakes::ReviewNote))
                .col(big_integer_null(AccountIntakes::ReviewedBy))
                .col(timestamp_with_time_zone(AccountIntakes::CreatedAt))
                .col(timestamp_with_time_zone(AccountIntakes::UpdatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_account_intakes_natural_key")
                .table(AccountIntakes::Table)
                .col(AccountIntakes::AdvertiserId)
                .col(AccountIntakes::StorefrontId)
                .col(AccountIntakes::Operator)
                .col(AccountIntakes::Sandbox)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_account_intakes_storefront")
                .table(AccountIntakes::Table)
                .col(AccountIntakes::StorefrontId)
                .col(AccountIntakes::Status)
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(StorefrontOperators::Table)
                .col(big_integer(StorefrontOperators::StorefrontId).primary_key())
                .col(string(StorefrontOperators::AccountId))
                .col(timestamp_with_time_zone(StorefrontOperators::CreatedAt))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(OperatorIdentities::Table)
                .col(string(OperatorIdentities::AccountId).primary_key())
                .col(string(OperatorIdentities::Domain))
                .col(timestamp_with_time_zone(OperatorIdentities::ConfirmedAt))
                .to_owned(),
        )
        .await?;
        // Bindings made before this migration were unchecked entries: they
        // keep locking brand and currency, as they did.
        m.alter_table(
            Table::alter()
                .table(AdvertiserLinkedAccounts::Table)
                .add_column(string(AdvertiserLinkedAccounts::Status).default("active"))
                .to_owned(),
        )
        .await?;
        m.alter_table(
            Table::alter()
                .table(AdvertiserLinkedAccounts::Table)
                .add_column(string_null(AdvertiserLinkedAccounts::IntakeId))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            AccountSources::Table.into_iden(),
            SourceCredentials::Table.into_iden(),
            AvailableAccounts::Table.into_iden(),
            AccountIntakes::Table.into_iden(),
            StorefrontOperators::Table.into_iden(),
            OperatorIdentities::Table.into_iden(),
        ] {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        m.alter_table(
            Table::alter()
                .table(AdvertiserLinkedAccounts::Table)
                .drop_column(AdvertiserLinkedAccounts::IntakeId)
                .to_owned(),
        )
        .await?;
        m.alter_table(
            Table::alter()
                .table(AdvertiserLinkedAccounts::Table)
                .drop_column(AdvertiserLinkedAccounts::Status)
                .to_owned(),
        )
        .await
    }
}
