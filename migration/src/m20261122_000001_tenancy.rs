use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("accounts")
                .col(string("id").primary_key())
                .col(string("name"))
                .col(boolean("assistant_enabled"))
                .col(boolean("shared_conversations_enabled"))
                .col(boolean("phone_lines_enabled"))
                .col(timestamp_with_time_zone("created_at"))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("users")
                .col(big_pk_auto("id"))
                .col(string("account_id"))
                .col(string_uniq("email"))
                .col(string("name"))
                .col(string("role"))
                .col(string_null("password_hash"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(
                    ForeignKey::create()
                        .from("users", "account_id")
                        .to("accounts", "id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_users_account")
                .table("users")
                .col("account_id")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("api_keys")
                .col(big_pk_auto("id"))
                .col(big_integer("user_id"))
                .col(string_uniq("prefix"))
                .col(string("key_hash"))
                .col(string("permissions"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone_null("revoked_at"))
                .foreign_key(
                    ForeignKey::create()
                        .from("api_keys", "user_id")
                        .to("users", "id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("phone_lines")
                .col(big_pk_auto("id"))
                .col(string("account_id"))
                .col(string_uniq("number"))
                .col(string("kind"))
                .col(boolean("rcs_agent_verified"))
                .col(string_null("messaging_profile"))
                .col(boolean("active"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(
                    ForeignKey::create()
                        .from("phone_lines", "account_id")
                        .to("accounts", "id")
                        .on_delete(ForeignKeyAction::Cascade),
                )
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("storefronts")
                .col(big_pk_auto("id"))
                .col(string("name"))
                .col(string("url"))
                .col(timestamp_with_time_zone("created_at"))
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
