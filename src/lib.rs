//! agentic-api: a self-hostable server for AI-assisted advertising buyers.

pub mod accounts;
pub mod admin;
pub mod agent;
pub mod app;
pub mod assistant;
pub mod auth;
pub mod bus;
pub mod buyer;
pub mod caller;
pub mod cli;
pub mod config;
pub mod console;
pub mod conversations;
pub mod creatives;
pub mod db;
pub mod demo;
pub mod discovery;
pub mod error;
pub mod health;
pub mod http;
pub mod insights;
pub mod launch;
pub mod library;
pub mod mcp;
pub mod media_buys;
pub mod metrics;
pub mod net;
pub mod notifications;
pub mod openapi;
pub mod ops;
pub mod outbox;
pub mod phone;
pub mod reporting;
pub mod rt;
pub mod sse;
pub mod telemetry;
pub mod types;
pub mod webhook_events;
pub mod webhooks;
pub mod widgets;

#[cfg(test)]
mod layers;

pub use app::Application;
pub use config::Config;
