use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Assistant-directed turns: one run per turn, at most one running per
/// conversation (the oldest unfinished one), driven under a lease by one
/// instance. Messages a run writes carry its id, a kind and structured data
/// (a tool call's operation and arguments, a proposed action...). The
/// account decides whether the assistant's writes need a confirmation.
#[derive(DeriveIden)]
enum AssistantRuns {
    Table,
    Id,
    ConversationUid,
    AccountId,
    TurnSequence,
    Status,
    RequestedByUserId,
    RequestedByName,
    RequestedByEmail,
    ApiKeyId,
    PendingAction,
    ToolCalls,
    PromptTokens,
    CompletionTokens,
    ErrorCode,
    ErrorMessage,
    CancelRequested,
    LeaseOwner,
    LeaseUntil,
    CreatedAt,
    StartedAt,
    FinishedAt,
}

const MESSAGE_COLUMNS: [&str; 3] = ["run_id", "kind", "data"];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table(AssistantRuns::Table)
                .col(string(AssistantRuns::Id).primary_key())
                .col(string(AssistantRuns::ConversationUid))
                .col(string(AssistantRuns::AccountId))
                .col(big_integer(AssistantRuns::TurnSequence))
                .col(string(AssistantRuns::Status))
                .col(big_integer(AssistantRuns::RequestedByUserId))
                .col(string(AssistantRuns::RequestedByName))
                .col(string_null(AssistantRuns::RequestedByEmail))
                .col(big_integer(AssistantRuns::ApiKeyId))
                .col(text_null(AssistantRuns::PendingAction))
                .col(integer(AssistantRuns::ToolCalls).default(0))
                .col(big_integer(AssistantRuns::PromptTokens).default(0))
                .col(big_integer(AssistantRuns::CompletionTokens).default(0))
                .col(string_null(AssistantRuns::ErrorCode))
                .col(text_null(AssistantRuns::ErrorMessage))
                .col(boolean(AssistantRuns::CancelRequested).default(false))
                .col(string_null(AssistantRuns::LeaseOwner))
                .col(timestamp_with_time_zone_null(AssistantRuns::LeaseUntil))
                .col(timestamp_with_time_zone(AssistantRuns::CreatedAt))
                .col(timestamp_with_time_zone_null(AssistantRuns::StartedAt))
                .col(timestamp_with_time_zone_null(AssistantRuns::FinishedAt))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_assistant_runs_conversation")
                .table(AssistantRuns::Table)
                .col(AssistantRuns::ConversationUid)
                .col(AssistantRuns::TurnSequence)
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_assistant_runs_status")
                .table(AssistantRuns::Table)
                .col(AssistantRuns::Status)
                .col(AssistantRuns::LeaseUntil)
                .to_owned(),
        )
        .await?;
        // One column per statement: SQLite alters one at a time.
        for col in [
            string_null("run_id"),
            string_null("kind"),
            text_null("data"),
        ] {
            let mut col = col;
            m.alter_table(
                Table::alter()
                    .table("conversation_messages")
                    .add_column(&mut col)
                    .to_owned(),
            )
            .await?;
        }
        m.create_index(
            Index::create()
                .name("idx_conversation_messages_run")
                .table("conversation_messages")
                .col("run_id")
                .to_owned(),
        )
        .await?;
        let mut confirm = boolean("assistant_writes_need_confirmation")
            .default(true)
            .to_owned();
        m.alter_table(
            Table::alter()
                .table("conversation_settings")
                .add_column(&mut confirm)
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.alter_table(
            Table::alter()
                .table("conversation_settings")
                .drop_column("assistant_writes_need_confirmation")
                .to_owned(),
        )
        .await?;
        m.drop_index(
            Index::drop()
                .name("idx_conversation_messages_run")
                .table("conversation_messages")
                .to_owned(),
        )
        .await?;
        for col in MESSAGE_COLUMNS {
            m.alter_table(
                Table::alter()
                    .table("conversation_messages")
                    .drop_column(col)
                    .to_owned(),
            )
            .await?;
        }
        m.drop_table(Table::drop().table(AssistantRuns::Table).to_owned())
            .await
    }
}
