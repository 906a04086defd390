use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        // An MCP session (`Mcp-Session-Id`) of `/mcp/buyer` or `/mcp/v3`,
        // shared by every instance on the database: the client's
        // `initialize` parameters (rmcp's `SessionState`, JSON) let an
        // instance that did not open it restore it, and the user and account
        // that opened it are the only caller it answers.
        m.create_table(
            Table::create()
                .table("mcp_sessions")
                .col(string("id").primary_key())
                .col(string("endpoint"))
                .col(string("account_id"))
                .col(big_integer("user_id"))
                .col(text("state"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("expires_at"))
                .foreign_key(&mut crate::cascade(
                    "mcp_sessions",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .foreign_key(&mut crate::cascade(
                    "mcp_sessions",
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
                .name("idx_mcp_sessions_expires_at")
                .table("mcp_sessions")
                .col("expires_at")
                .to_owned(),
        )
        .await?;
        Ok(())
    }
}
