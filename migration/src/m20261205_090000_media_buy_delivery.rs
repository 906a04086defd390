use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The seller's delivery of a buy (AdCP `get_media_buy_delivery`), kept with
/// the buy: the latest report, when it was pulled, and when the next pull is
/// due (its own cadence, beside the status poll's `next_poll_at`).
const COLUMNS: [&str; 3] = ["delivery", "delivery_at", "delivery_next_at"];

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // One column per statement: SQLite alters one at a time.
        for col in [
            text_null("delivery"),
            timestamp_with_time_zone_null("delivery_at"),
            timestamp_with_time_zone_null("delivery_next_at"),
        ] {
            let mut col = col;
            m.alter_table(
                Table::alter()
                    .table("media_buys")
                    .add_column(&mut col)
                    .to_owned(),
            )
            .await?;
        }
        m.create_index(
            Index::create()
                .name("idx_media_buys_delivery_next")
                .table("media_buys")
                .col("delivery_next_at")
                .to_owned(),
        )
        .await?;
        // Buys already live at their sellers get their first pull now.
        let live = ["pending_creatives", "pending_start", "active", "paused"];
        m.exec_stmt(
            Query::update()
                .table("media_buys")
                .value("delivery_next_at", chrono::Utc::now())
                .and_where(Expr::col("status").is_in(live))
                .and_where(Expr::col("adcp_media_buy_id").is_not_null())
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.drop_index(
            Index::drop()
                .name("idx_media_buys_delivery_next")
                .table("media_buys")
                .to_owned(),
        )
        .await?;
        for col in COLUMNS {
            m.alter_table(
                Table::alter()
                    .table("media_buys")
                    .drop_column(col)
                    .to_owned(),
            )
            .await?;
        }
        Ok(())
    }
}
