use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// Notifications: one row per recipient user, numbered by the account's
/// sequence (taken under the sequence row's lock, so an account's
/// notifications commit in sequence order: a stream resumes from a
/// number); each user's delivery preferences per topic and channel, and
/// the e-mail address recorded for later delivery.
#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("notification_sequences")
                .col(string("account_id").primary_key())
                .col(big_integer("last_seq"))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("notifications")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(big_integer("user_id"))
                .col(big_integer("seq"))
                .col(string("topic"))
                .col(string("title"))
                .col(text("body"))
                .col(text("data"))
                .col(boolean("in_console"))
                .col(string_null("email_to"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone_null("read_at"))
                .col(timestamp_with_time_zone_null("acknowledged_at"))
                .foreign_key(&mut crate::cascade(
                    "notifications",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_notifications_user_seq")
                .table("notifications")
                .col("user_id")
                .col("seq")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_notifications_account_seq_user")
                .table("notifications")
                .col("account_id")
                .col("seq")
                .col("user_id")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("notification_preferences")
                .col(big_integer("user_id"))
                .col(string("topic"))
                .col(string("channel"))
                .col(boolean("enabled"))
                .col(timestamp_with_time_zone("updated_at"))
                .primary_key(Index::create().col("user_id").col("topic").col("channel"))
                .foreign_key(&mut crate::cascade(
                    "notification_preferences",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("notification_settings")
                .col(big_integer("user_id").primary_key())
                .col(string_null("email_address"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "notification_settings",
                    "user_id",
                    "users",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            "notification_settings",
            "notification_preferences",
            "notifications",
            "notification_sequences",
        ] {
            m.drop_table(Table::drop().table(Alias::new(t)).to_owned())
                .await?;
        }
        Ok(())
    }
}
