//! sea-orm entities. Plain data: logic lives in the server's domain modules.

pub mod account;
pub mod advertiser;
pub mod advertiser_linked_account;
pub mod api_key;
pub mod audit_log;
pub mod brand;
pub mod conversation;
pub mod conversation_list_version;
pub mod conversation_message;
pub mod conversation_presence;
pub mod conversation_settings;
pub mod discovery_agent;
pub mod discovery_group;
pub mod discovery_proposal;
pub mod discovery_revision;
pub mod discovery_selection;
pub mod discovery_session;
pub mod outbox_job;
pub mod outbox_lease;
pub mod phone_line;
pub mod storefront;
pub mod stream_token;
pub mod user;
pub mod webhook_audience;
pub mod webhook_event;
pub mod webhook_subscription;
