use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Fax lines: a seller account's customers (with the fax rollout each), the
/// customers a line serves, which users may act for which customer, and
/// every fax sent (bound to its request id, line, destination and digest).
#[derive(DeriveIden)]
enum SellerCustomers {
    Table,
    Id,
    AccountId,
    Name,
    FaxEnabled,
    CreatedAt,
}

#[derive(DeriveIden)]
enum CustomerAccess {
    Table,
    CustomerId,
    UserId,
    CreatedAt,
}

#[derive(DeriveIden)]
enum PhoneLineCustomers {
    Table,
    LineId,
    CustomerId,
    Active,
    CreatedAt,
}

#[derive(DeriveIden)]
enum Faxes {
    Table,
    Id,
    AccountId,
    CustomerId,
    LineId,
    RequestId,
    FromNumber,
    ToNumber,
    MediaSha256,
    ProviderFaxId,
    Status,
    FailureReason,
    CreatedAt,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(SellerCustomers::Table)
                .col(big_pk_auto(SellerCustomers::Id))
                .col(string(SellerCustomers::AccountId))
                .col(string(SellerCustomers::Name))
                .col(boolean(SellerCustomers::FaxEnabled).default(false))
                .col(timestamp_with_time_zone(SellerCustomers::CreatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_seller_customers_account_name")
                .table(SellerCustomers::Table)
                .col(SellerCustomers::AccountId)
                .col(SellerCustomers::Name)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(CustomerAccess::Table)
                .col(big_integer(CustomerAccess::CustomerId))
                .col(big_integer(CustomerAccess::UserId))
                .col(timestamp_with_time_zone(CustomerAccess::CreatedAt))
                .primary_key(
                    Index::create()
                        .col(CustomerAccess::CustomerId)
                        .col(CustomerAccess::UserId),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(PhoneLineCustomers::Table)
                .col(big_integer(PhoneLineCustomers::LineId))
                .col(big_integer(PhoneLineCustomers::CustomerId))
                .col(boolean(PhoneLineCustomers::Active).default(true))
                .col(timestamp_with_time_zone(PhoneLineCustomers::CreatedAt))
                .primary_key(
                    Index::create()
                        .col(PhoneLineCustomers::LineId)
                        .col(PhoneLineCustomers::CustomerId),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(Faxes::Table)
                .col(big_pk_auto(Faxes::Id))
                .col(string(Faxes::AccountId))
                .col(big_integer(Faxes::CustomerId))
                .col(big_integer(Faxes::LineId))
                .col(string(Faxes::RequestId))
                .col(string(Faxes::FromNumber))
                .col(string(Faxes::ToNumber))
                .col(string(Faxes::MediaSha256))
                .col(string_null(Faxes::ProviderFaxId))
                .col(string(Faxes::Status))
                .col(text_null(Faxes::FailureReason))
                .col(timestamp_with_time_zone(Faxes::CreatedAt))
                .col(timestamp_with_time_zone(Faxes::UpdatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_faxes_account_request")
                .table(Faxes::Table)
                .col(Faxes::AccountId)
                .col(Faxes::RequestId)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_faxes_provider")
                .table(Faxes::Table)
                .col(Faxes::ProviderFaxId)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            "faxes",
            "phone_line_customers",
            "customer_access",
            "seller_customers",
        ] {
            m.drop_table(Table::drop().table(Alias::new(t)).to_owned())
                .await?;
        }
        Ok(())
    }
}
