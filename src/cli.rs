//! The operator contract: `serve [--demo]`, `migrate`, `admin ...`.

use clap::{Parser, Subcommand};

use crate::config::Config;

#[derive(Parser, Debug)]
#[command(
    name = "agentic-api",
    version,
    about = "Self-hostable server for AI-assisted advertising buyers"
)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Apply pending migrations, then serve HTTP until SIGINT/SIGTERM.
    Serve {
        /// Seed (idempotently) a ready-to-try demo tenant and print its API key.
        #[arg(long)]
        demo: bool,
    },
    /// Apply pending migrations and exit.
    Migrate,
    /// Operator actions against the database; each prints one JSON object.
    /// A fresh database is migrated first; a partly migrated one only with --migrate.
    Admin {
        /// Apply pending migrations first, even if the database is in use.
        #[arg(long, global = true)]
        migrate: bool,
        #[command(subcommand)]
        command: AdminCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Create an account (tenant).
    CreateAccount {
        #[arg(long)]
        name: String,
        /// Enrol the account in agent phone lines.
        #[arg(long)]
        phone_lines: bool,
        /// Disable the assistant for the account.
        #[arg(long)]
        no_assistant: bool,
        /// Disable shared conversations for the account.
        #[arg(long)]
        no_shared_conversations: bool,
    },
    /// Create a user in an account.
    CreateUser {
        #[arg(long)]
        account: String,
        #[arg(long)]
        email: String,
        #[arg(long)]
        name: String,
        /// member, admin or super-admin.
        #[arg(long, default_value = "member")]
        role: String,
        #[arg(long)]
        password: Option<String>,
    },
    /// Issue an API key for a user; the key is printed only this once.
    CreateApiKey {
        #[arg(long)]
        user: String,
        /// Permission to grant, e.g. platform:write (repeatable).
        #[arg(long = "permission")]
        permissions: Vec<String>,
    },
    /// Revoke an API key by its value or its prefix.
    RevokeApiKey {
        #[arg(long)]
        key: String,
    },
    /// Provision an SMS/RCS or fax line for an account.
    ProvisionLine {
        #[arg(long)]
        account: String,
        /// E.164 number, e.g. +14155550123.
        #[arg(long)]
        number: String,
        /// sms or fax.
        #[arg(long)]
        kind: String,
        #[arg(long)]
        rcs_agent_verified: bool,
        #[arg(long)]
        messaging_profile: Option<String>,
        #[arg(long)]
        inactive: bool,
    },
    /// Register a seller agent (AdCP over MCP Streamable HTTP).
    RegisterStorefront {
        /// Unique, whatever the case.
        #[arg(long)]
        name: String,
        #[arg(long)]
        url: String,
        /// Bearer token sent to the seller agent (stored; never shown again).
        #[arg(long)]
        auth_token: Option<String>,
    },
    /// Add or refresh an official entry of the local brand registry.
    RegisterBrand {
        /// Brand domain, e.g. `acme.com`.
        #[arg(long)]
        domain: String,
        #[arg(long)]
        name: String,
        /// Brand manifest as a JSON object (logos, colors, fonts, industry,
        /// tagline, tone, assets, productCatalog, disclaimers).
        #[arg(long)]
        manifest: Option<String>,
    },
}
