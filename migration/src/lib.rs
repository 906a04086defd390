//! Schema migrations, shared by SQLite and PostgreSQL.

pub use sea_orm_migration::prelude::*;

mod m20261122_000001_tenancy;
mod m20261122_000002_conversations;
mod m20261122_000003_buyer;
mod m20261123_120000_conversation_list_versions;
mod m20261123_120000_stream_tokens;
mod m20261124_120000_storefront_credentials;
mod m20261124_130000_discovery;
mod m20261125_120000_webhook_subscriptions;
mod m20261126_090000_outbox;
mod m20261127_090000_oauth;
mod m20261128_090000_mcp_sessions;
mod m20261129_090000_phone_messages;
mod m20261130_090000_catalogs;
mod m20261130_100000_campaigns;
mod m20261201_090000_phone_daily_spend;
mod m20261202_090000_stream_token_credential_expiry;
mod m20261203_090000_oauth_client_used;
mod m20261204_090000_media_buys;
mod m20261205_090000_media_buy_delivery;
mod m20261206_090000_assistant_runs;
mod m20261206_170000_api_key_names;
mod m20261207_090000_fax;
mod m20261207_100000_inbound_faxes;
mod m20261208_080000_advertiser_archive;
mod m20261208_090000_seller_accounts;
mod m20261210_090000_library;
mod m20261211_090000_notifications;
mod m20261211_100000_reporting;
mod m20261212_100000_insights;
mod m20261212_110000_creatives;

/// A foreign key that deletes the row with its parent.
pub(crate) fn cascade(
    table: &'static str,
    column: &'static str,
    parent: &'static str,
    parent_column: &'static str,
) -> ForeignKeyCreateStatement {
    ForeignKey::create()
        .from(table, column)
        .to(parent, parent_column)
        .on_delete(ForeignKeyAction::Cascade)
        .to_owned()
}

pub struct Migrator;

#[async_trait::async_trait]
impl MigratorTrait for Migrator {
    fn migrations() -> Vec<Box<dyn MigrationTrait>> {
        vec![
            Box::new(m20261122_000001_tenancy::Migration),
            Box::new(m20261122_000002_conversations::Migration),
            Box::new(m20261122_000003_buyer::Migration),
            Box::new(m20261123_120000_stream_tokens::Migration),
            Box::new(m20261123_120000_conversation_list_versions::Migration),
            Box::new(m20261124_120000_storefront_credentials::Migration),
            Box::new(m20261124_130000_discovery::Migration),
            Box::new(m20261125_120000_webhook_subscriptions::Migration),
            Box::new(m20261126_090000_outbox::Migration),
            Box::new(m20261127_090000_oauth::Migration),
            Box::new(m20261128_090000_mcp_sessions::Migration),
            Box::new(m20261129_090000_phone_messages::Migration),
            Box::new(m20261130_090000_catalogs::Migration),
            Box::new(m20261130_100000_campaigns::Migration),
            Box::new(m20261201_090000_phone_daily_spend::Migration),
            Box::new(m20261202_090000_stream_token_credential_expiry::Migration),
            Box::new(m20261203_090000_oauth_client_used::Migration),
            Box::new(m20261204_090000_media_buys::Migration),
            Box::new(m20261205_090000_media_buy_delivery::Migration),
            Box::new(m20261206_090000_assistant_runs::Migration),
            Box::new(m20261206_170000_api_key_names::Migration),
            Box::new(m20261207_090000_fax::Migration),
            Box::new(m20261207_100000_inbound_faxes::Migration),
            Box::new(m20261208_080000_advertiser_archive::Migration),
            Box::new(m20261208_090000_seller_accounts::Migration),
            Box::new(m20261210_090000_library::Migration),
            Box::new(m20261211_090000_notifications::Migration),
            Box::new(m20261211_100000_reporting::Migration),
            Box::new(m20261212_100000_insights::Migration),
            Box::new(m20261212_110000_creatives::Migration),
        ]
    }
}
