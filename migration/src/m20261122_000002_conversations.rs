use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("conversations")
                .col(string("uid").primary_key())
                .col(string("account_id"))
                .col(big_integer("owner_user_id"))
                .col(string("title"))
                .col(boolean("title_is_auto"))
                .col(boolean("sharing_enabled"))
                // The last assigned message sequence; incremented inside the
                // message's write transaction (the row lock orders writers).
                .col(big_integer("last_sequence"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "conversations",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "conversations",
                    "owner_user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_conversations_account_updated")
                .table("conversations")
                .col("account_id")
                .col("updated_at")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("conversation_messages")
                .col(big_pk_auto("id"))
                .col(string("conversation_uid"))
                .col(big_integer("sequence"))
                .col(string("audience"))
                .col(text("content"))
                .col(big_integer_null("author_user_id"))
                .col(string_null("author_name"))
                .col(string_null("author_email"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "conversation_messages",
                    "conversation_uid",
                    "conversations",
                    "uid",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("uq_conversation_messages_sequence")
                .table("conversation_messages")
                .col("conversation_uid")
                .col("sequence")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("conversation_settings")
                .col(string("account_id").primary_key())
                .col(boolean("default_sharing_enabled"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "conversation_settings",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Who has a stream open, per instance: the union across instances is
        // the room's presence. Rows are refreshed by the owning instance and
        // ignored once stale, so a crashed instance's rows fade out.
        m.create_table(
            Table::create()
                .table("conversation_presence")
                .col(string("conversation_uid"))
                .col(string("instance_id"))
                .col(big_integer("user_id"))
                .col(timestamp_with_time_zone("seen_at"))
                .primary_key(
                    Index::create()
                        .col("conversation_uid")
                        .col("instance_id")
                        .col("user_id"),
                )
                .foreign_key(&mut crate::cascade(
                    "conversation_presence",
                    "conversation_uid",
                    "conversations",
                    "uid",
                ))
                .foreign_key(&mut crate::cascade(
                    "conversation_presence",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
