use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Inbound faxes and the pipeline's state for each (one stage at a time,
/// each persisted, under a lease), and each fax line's storefront agent.
#[derive(DeriveIden)]
enum InboundFaxes {
    Table,
    Id,
    AccountId,
    CustomerId,
    LineId,
    ProviderFaxId,
    FromNumber,
    ToNumber,
    Stage,
    Failure,
    FilePath,
    FileBytes,
    Pages,
    ExtractedText,
    Truncated,
    ReplyText,
    ReplyPath,
    ReplyToken,
    ReplyFaxId,
    Attempts,
    LeaseOwner,
    LeaseUntil,
    CreatedAt,
    UpdatedAt,
}

#[derive(DeriveIden)]
enum FaxAgents {
    Table,
    LineId,
    Instructions,
    Tools,
    ToolUserId,
    UpdatedAt,
}

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(InboundFaxes::Table)
                .col(big_pk_auto(InboundFaxes::Id))
                .col(string(InboundFaxes::AccountId))
                .col(big_integer(InboundFaxes::CustomerId))
                .col(big_integer(InboundFaxes::LineId))
                .col(string(InboundFaxes::ProviderFaxId))
                .col(string(InboundFaxes::FromNumber))
                .col(string(InboundFaxes::ToNumber))
                .col(string(InboundFaxes::Stage))
                .col(text_null(InboundFaxes::Failure))
                .col(string_null(InboundFaxes::FilePath))
                .col(big_integer(InboundFaxes::FileBytes).default(0))
                .col(integer(InboundFaxes::Pages).default(0))
                .col(text_null(InboundFaxes::ExtractedText))
                .col(boolean(InboundFaxes::Truncated).default(false))
                .col(text_null(InboundFaxes::ReplyText))
                .col(string_null(InboundFaxes::ReplyPath))
                .col(string_null(InboundFaxes::ReplyToken))
                .col(big_integer_null(InboundFaxes::ReplyFaxId))
                .col(integer(InboundFaxes::Attempts).default(0))
                .col(string_null(InboundFaxes::LeaseOwner))
                .col(timestamp_with_time_zone_null(InboundFaxes::LeaseUntil))
                .col(timestamp_with_time_zone(InboundFaxes::CreatedAt))
                .col(timestamp_with_time_zone(InboundFaxes::UpdatedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_inbound_faxes_provider")
                .table(InboundFaxes::Table)
                .col(InboundFaxes::ProviderFaxId)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_inbound_faxes_stage")
                .table(InboundFaxes::Table)
                .col(InboundFaxes::Stage)
                .col(InboundFaxes::LeaseUntil)
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_inbound_faxes_reply_token")
                .table(InboundFaxes::Table)
                .col(InboundFaxes::ReplyToken)
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table(FaxAgents::Table)
                .col(big_integer(FaxAgents::LineId).primary_key())
                .col(text(FaxAgents::Instructions))
                .col(text(FaxAgents::Tools))
                .col(big_integer_null(FaxAgents::ToolUserId))
                .col(timestamp_with_time_zone(FaxAgents::UpdatedAt))
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table(FaxAgents::Table).to_owned())
            .await?;
        m.drop_table(Table::drop().table(InboundFaxes::Table).to_owned())
            .await
    }
}
