use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // A discovery session: what was asked, its last revision, and who is
        // driving it. The driver (the instance asking the sellers) renews a
        // lease; a session whose lease ran out while results were still
        // incomplete is completed by any instance (restart recovery).
        m.create_table(
            Table::create()
                .table("discovery_sessions")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(big_integer("created_by_user_id"))
                // The normalized request (JSON): brief, filters, storefronts.
                .col(text("request"))
                .col(big_integer("revision"))
                .col(boolean("results_complete"))
                // Which round of questions is current (0, then one per refine).
                .col(big_integer("round"))
                .col(timestamp_with_time_zone("deadline"))
                .col(string_null("lease_owner"))
                .col(timestamp_with_time_zone_null("lease_until"))
                .col(timestamp_with_time_zone_null("completed_at"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "discovery_sessions",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Recovery looks for incomplete sessions with an expired lease.
        m.create_index(
            Index::create()
                .name("idx_discovery_sessions_open")
                .table("discovery_sessions")
                .col("results_complete")
                .col("lease_until")
                .to_owned(),
        )
        .await?;
        // One row per storefront asked in a session, for the current round.
        m.create_table(
            Table::create()
                .table("discovery_agents")
                .col(string("session_id"))
                .col(big_integer("storefront_id"))
                .col(string("agent_name"))
                // pending | answered | failed | timed_out | interrupted
                .col(string("status"))
                .col(text_null("message"))
                // JSON array of AdCP `incomplete` scopes.
                .col(text_null("incomplete_scopes"))
                .col(big_integer_null("settled_revision"))
                .primary_key(Index::create().col("session_id").col("storefront_id"))
                .foreign_key(&mut crate::cascade(
                    "discovery_agents",
                    "session_id",
                    "discovery_sessions",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Each revision as it was published: the groups it landed and the
        // agents still pending. Streams replay and webhooks read these.
        m.create_table(
            Table::create()
                .table("discovery_revisions")
                .col(string("session_id"))
                .col(big_integer("revision"))
                .col(boolean("results_complete"))
                .col(text("product_groups"))
                .col(text("pending_agents"))
                .col(text("incomplete_agents"))
                .col(timestamp_with_time_zone("created_at"))
                .primary_key(Index::create().col("session_id").col("revision"))
                .foreign_key(&mut crate::cascade(
                    "discovery_revisions",
                    "session_id",
                    "discovery_sessions",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // The current snapshot, one row per group (replaced by group id).
        m.create_table(
            Table::create()
                .table("discovery_groups")
                .col(string("session_id"))
                .col(string("group_id"))
                .col(string("group_name"))
                // Order of first landing, kept when a refine replaces it.
                .col(big_integer("position"))
                .col(big_integer("revision"))
                .col(big_integer("product_count"))
                .col(text("products"))
                .primary_key(Index::create().col("session_id").col("group_id"))
                .foreign_key(&mut crate::cascade(
                    "discovery_groups",
                    "session_id",
                    "discovery_sessions",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // Products the user chose from a session.
        m.create_table(
            Table::create()
                .table("discovery_selections")
                .col(string("session_id"))
                .col(string("product_id"))
                .col(string("group_id"))
                .col(big_integer("added_by_user_id"))
                .col(timestamp_with_time_zone("created_at"))
                .primary_key(Index::create().col("session_id").col("product_id"))
                .foreign_key(&mut crate::cascade(
                    "discovery_selections",
                    "session_id",
                    "discovery_sessions",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // A saved snapshot, returned whole for its code.
        m.create_table(
            Table::create()
                .table("discovery_proposals")
                .col(string("code").primary_key())
                .col(string("account_id"))
                .col(string("session_id"))
                .col(big_integer("revision"))
                .col(text("snapshot"))
                .col(big_integer("created_by_user_id"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "discovery_proposals",
                    "session_id",
                    "discovery_sessions",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
