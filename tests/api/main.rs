#![allow(clippy::unwrap_used, clippy::expect_used)]
//! One test binary: the real app over real HTTP, a fresh database per test.
//! Set `AGENTIC_TEST_DATABASE_URL=postgres://...` to run on PostgreSQL.

mod fake_carrier;
mod fake_llm;
mod fake_seller;
mod helpers;
mod outputs;

mod advertisers;
mod assistant;
mod auth;
mod browser;
mod campaigns;
mod catalogs;
mod cli;
mod client_ip;
mod console;
mod console_browser;
mod conventions;
mod conversations;
mod demo;
mod discovery;
mod fake_seller_buys;
mod fax_pdf;
mod logs;
mod mcp;
mod media_buys;
mod metrics;
mod multi_instance;
mod oauth;
mod openapi;
mod outbound;
mod permissions;
mod phone;
mod phone_carrier;
mod rate_limits;
mod receiver;
mod rooms;
mod seller;
mod shutdown;
mod storefronts;
mod stream_access;
mod targeting;
mod webhook_delivery;
mod webhooks;
