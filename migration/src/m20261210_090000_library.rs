use sea_orm_migration::{prelude::*, schema::*};

#[derive(DeriveMigrationName)]
pub struct Migration;

/// The library: materials (files and notes, with their upload reservation
/// while one is open), library requests, RFPs with their turns, proposal
/// passes over an RFP, and the Page capabilities the `/mcp/v3` bridge
/// issues (only a hash of each token).
#[async_trait::async_trait]
impl MigrationTrait for Migration {
    async fn up(&self, m: &SchemaManager) -> Result<(), DbErr> {
        m.create_table(
            Table::create()
                .table("materials")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(big_integer("owner_user_id"))
                .col(string("title"))
                .col(text_null("description"))
                .col(string("kind"))
                .col(string_null("content_type"))
                .col(string_null("file_name"))
                .col(big_integer_null("size_bytes"))
                .col(string_null("sha256"))
                .col(string("status"))
                .col(text_null("rejection_reason"))
                .col(string("destination_type"))
                .col(string_null("destination_id"))
                .col(string_null("advertiser_id"))
                // Relative to AGENTIC_UPLOAD_STORAGE_DIR, once written.
                .col(string_null("storage_path"))
                // The open upload reservation: the token's non-secret prefix,
                // SHA-256 of the token, and when it stops being accepted.
                .col(string_null("upload_prefix"))
                .col(string_null("upload_token_hash"))
                .col(timestamp_with_time_zone_null("upload_expires_at"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "materials",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_materials_account_created")
                .table("materials")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_materials_upload_prefix")
                .table("materials")
                .col("upload_prefix")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("library_requests")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string_null("advertiser_id"))
                .col(string("title"))
                .col(text("body"))
                .col(string("status"))
                .col(big_integer("created_by"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade(
                    "library_requests",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_library_requests_account_created")
                .table("library_requests")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("rfps")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("advertiser_id"))
                .col(string("title"))
                .col(text("brief"))
                // {amount, currency} as JSON text.
                .col(text_null("budget"))
                .col(string_null("due_date"))
                .col(string("status"))
                .col(big_integer("created_by"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("updated_at"))
                .foreign_key(&mut crate::cascade("rfps", "account_id", "accounts", "id"))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_rfps_account_created")
                .table("rfps")
                .col("account_id")
                .col("created_at")
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("rfp_turns")
                .col(big_pk_auto("id"))
                .col(string("rfp_id"))
                .col(integer("turn"))
                .col(string("role"))
                .col(text("text"))
                .col(big_integer("created_by"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade("rfp_turns", "rfp_id", "rfps", "id"))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_rfp_turns_rfp_turn")
                .table("rfp_turns")
                .col("rfp_id")
                .col("turn")
                .unique()
                .to_owned(),
        )
        .await?;
        m.create_table(
            Table::create()
                .table("proposal_passes")
                .col(string("id").primary_key())
                .col(string("account_id"))
                .col(string("rfp_id"))
                .col(string_null("discovery_id"))
                .col(string("status"))
                .col(big_integer("created_by"))
                .col(timestamp_with_time_zone("created_at"))
                .foreign_key(&mut crate::cascade(
                    "proposal_passes",
                    "rfp_id",
                    "rfps",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        // One open pass per RFP: a second opener finds the first's.
        m.get_connection()
            .execute_unprepared(
                "CREATE UNIQUE INDEX idx_proposal_passes_open ON proposal_passes (rfp_id) WHERE status = 'open'",
            )
            .await?;
        m.create_table(
            Table::create()
                .table("page_capabilities")
                .col(big_pk_auto("id"))
                .col(string("prefix"))
                .col(string("token_hash"))
                .col(string("account_id"))
                .col(big_integer("user_id"))
                .col(string("mcp_session_id"))
                .col(string("page"))
                .col(string_null("resource_id"))
                .col(timestamp_with_time_zone("created_at"))
                .col(timestamp_with_time_zone("expires_at"))
                .foreign_key(&mut crate::cascade(
                    "page_capabilities",
                    "account_id",
                    "accounts",
                    "id",
                ))
                .to_owned(),
        )
        .await?;
        m.create_index(
            Index::create()
                .name("idx_page_capabilities_prefix")
                .table("page_capabilities")
                .col("prefix")
                .unique()
                .to_owned(),
        )
        .await
    }

    async fn down(&self, m: &SchemaManager) -> Result<(), DbErr> {
        for t in [
            "page_capabilities",
            "proposal_passes",
            "rfp_turns",
            "rfps",
            "library_requests",
            "materials",
        ] {
            m.drop_table(Table::drop().table(t).to_owned()).await?;
        }
        Ok(())
    }
}
