use sea_orm_migration::sea_orm::{ConnectionTrait, DbBackend};
use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // What each line spent on each UTC day, kept with every accepted
        // message in the same transaction, so the daily caps read one row
        // per line instead of summing the day's messages on every send.
        m.create_table(
            Table::create()
                .table("phone_daily_spend")
                .col(big_integer("line_id"))
                // `YYYY-MM-DD`, UTC.
                .col(string_len("day", 10))
                .col(string("account_id"))
                .col(big_integer("spent_micros"))
                .col(big_integer("messages"))
                .primary_key(Index::create().col("line_id").col("day"))
                .foreign_key(&mut crate::cascade(
                    "phone_daily_spend",
                    "line_id",
                    "phone_lines",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_phone_daily_spend_account")
                .table("phone_daily_spend")
                .col("account_id")
                .col("day")
                .to_owned(),
        )
        .await?;
        // Messages accepted before this table existed.
        let day = match m.get_database_backend() {
            DbBackend::Postgres => "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD')",
            _ => "substr(created_at, 1, 10)",
        };
        m.get_connection()
            .execute_unprepared(&format!(
                "INSERT INTO phone_daily_spend (line_id, day, account_id, spent_micros, messages) \
                 SELECT line_id, {day}, MIN(account_id), SUM(cost_micros), COUNT(*) \
                 FROM phone_messages GROUP BY line_id, {day}"
            ))
            .await?;
        Ok(())
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_table(Table::drop().table("phone_daily_spend").to_owned())
            .await
    }
}
