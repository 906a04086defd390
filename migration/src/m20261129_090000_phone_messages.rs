use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // Queued text messages (issue 12): SMS and RCS share one table, one
        // request-id namespace per account (the unique index decides
        // concurrent retries) and the sending limits. `id` is the public
        // `outboxId`; the outbox job of a message carries only its id.
        m.create_table(
            Table::create()
                .table("phone_messages")
                .col(big_pk_auto("id"))
                .col(string("account_id"))
                .col(big_integer("line_id"))
                // sms or rcs.
                .col(string("channel"))
                .col(string("to_number"))
                .col(text("text"))
                .col(string("request_id"))
                .col(integer("segments"))
                // gsm7 or ucs2.
                .col(string("encoding"))
                // segments x the line's price per segment, in micro-units.
                .col(big_integer("cost_micros"))
                // pending, submitting, submitted, delivered, failed, held.
                .col(string("status"))
                .col(string_null("carrier_message_id"))
                .col(text_null("error"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "phone_messages",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "phone_messages",
                    "line_id",
                    "phone_lines",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("uq_phone_messages_request")
                .table("phone_messages")
                .col("account_id")
                .col("request_id")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_phone_messages_line_created")
                .table("phone_messages")
                .col("line_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_phone_messages_carrier")
                .table("phone_messages")
                .col("carrier_message_id")
                .to_owned(),
        )
        .await?;
        // One opt-out record per recipient per line, for both channels.
        m.create_table(
            Table::create()
                .table("phone_opt_outs")
                .col(big_integer("line_id"))
                .col(string("recipient"))
                .col(timestamp_with_time_zone("created_at"))
                .primary_key(Index::create().col("line_id").col("recipient"))
                .foreign_key(&mut crate::cascade(
                    "phone_opt_outs",
                    "line_id",
                    "phone_lines",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // A line's sending limits; a line without a row has the defaults.
        m.create_table(
            Table::create()
                .table("phone_line_limits")
                .col(big_integer("line_id").primary_key())
                // Comma-separated ISO 3166-1 alpha-2 codes.
                .col(text("countries"))
                .col(integer("per_minute"))
                .col(big_integer("daily_spend_cap_micros"))
                .col(big_integer("segment_price_micros"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "phone_line_limits",
                    "line_id",
                    "phone_lines",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // An account's limits over all its lines (each optional, tightening).
        m.create_table(
            Table::create()
                .table("phone_account_limits")
                .col(string("account_id").primary_key())
                .col(text_null("countries"))
                .col(big_integer_null("daily_spend_cap_micros"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "phone_account_limits",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
