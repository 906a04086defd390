use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // Short-lived credentials for one event stream (a browser's
        // `EventSource` cannot send an Authorization header). Only SHA-256 of
        // the token is stored; `prefix` is its non-secret handle.
        m.create_table(
            Table::create()
                .table("stream_tokens")
                .col(big_pk_auto("id"))
                .col(string_uniq("prefix"))
                .col(string("token_hash"))
                .col(big_integer("api_key_id"))
                .col(big_integer("user_id"))
                .col(string("stream_path"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("expires_at"))
                .foreign_key(&mut crate::cascade(
                    "stream_tokens",
                    "api_key_id",
                    "api_keys",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "stream_tokens",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Pruning deletes by expiry.
        m.create_index(
            Index::create()
                .name("idx_stream_tokens_expires_at")
                .table("stream_tokens")
                .col("expires_at")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
