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
    /// Work the server runs in child processes of itself; not for operators.
    #[command(hide = true)]
    Internal {
        #[command(subcommand)]
        command: InternalCommand,
    },
}

#[derive(Subcommand, Debug)]
pub enum InternalCommand {
    /// Extract a PDF's text from stdin under resource limits; JSON on stdout.
    ExtractPdf(crate::phone::fax::pdf::ExtractPdfArgs),
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
    /// Enrol an account in agent phone lines (or withdraw it with --disable).
    EnrolPhoneLines {
        #[arg(long)]
        account: String,
        #[arg(long)]
        disable: bool,
    },
    /// Set sending limits of a line (--endpoint) or of an account over all
    /// its lines (--account: --countries and --daily-spend-cap only).
    SetSendingLimits {
        #[arg(long, conflicts_with = "account", required_unless_present = "account")]
        endpoint: Option<String>,
        #[arg(long)]
        account: Option<String>,
        /// Comma-separated ISO 3166-1 alpha-2 codes, e.g. US,CA,GB.
        #[arg(long)]
        countries: Option<String>,
        /// Messages per minute from the line.
        #[arg(long)]
        per_minute: Option<i32>,
        /// Daily spend cap (segments x price), e.g. 100 or 25.50.
        #[arg(long)]
        daily_spend_cap: Option<String>,
        /// Price of one segment, e.g. 0.0079.
        #[arg(long)]
        segment_price: Option<String>,
    },
    /// List text messages held for an operator (unknown carrier outcome).
    ListHeldMessages,
    /// Resolve a held message: --mark-sent (the carrier took it) or
    /// --release (one more automatic try).
    ResolveHeldMessage {
        #[arg(long)]
        outbox_id: String,
        #[arg(long, conflicts_with = "release", required_unless_present = "release")]
        mark_sent: bool,
        #[arg(long)]
        release: bool,
        /// The carrier's message id, when known (with --mark-sent).
        #[arg(long, requires = "mark_sent")]
        carrier_id: Option<String>,
    },
    /// A customer of a seller account, whom its fax lines serve (--fax-enabled
    /// turns the fax rollout on for it).
    CreateCustomer {
        #[arg(long)]
        account: String,
        #[arg(long)]
        name: String,
        #[arg(long)]
        fax_enabled: bool,
    },
    /// Turn the fax rollout on for a customer (or off with --disable).
    SetFaxRollout {
        #[arg(long)]
        customer: i64,
        #[arg(long)]
        disable: bool,
    },
    /// A fax line serves a customer of its account (--inactive: not for now).
    AssignLineCustomer {
        #[arg(long)]
        endpoint: String,
        #[arg(long)]
        customer: i64,
        #[arg(long)]
        inactive: bool,
    },
    /// A user (with every key of theirs) may act for a customer (or no
    /// longer, with --revoke).
    GrantCustomerAccess {
        #[arg(long)]
        customer: i64,
        #[arg(long)]
        user: i64,
        #[arg(long)]
        revoke: bool,
    },
    /// List faxes, newest first: --unresolved (outcome unknown, held for an
    /// operator) or --failed.
    ListFaxes {
        #[arg(long, conflicts_with = "failed")]
        unresolved: bool,
        #[arg(long)]
        failed: bool,
    },
    /// Resolve a fax whose outcome was unknown: --sent (with the carrier's
    /// --provider-fax-id) or --failed (not sent; its requestId may send again).
    ResolveFax {
        #[arg(long)]
        fax: i64,
        #[arg(long, conflicts_with = "failed", required_unless_present = "failed")]
        sent: bool,
        #[arg(long)]
        failed: bool,
        #[arg(long, requires = "sent")]
        provider_fax_id: Option<String>,
    },
    /// Assign a fax line's storefront agent: its instructions, and the read
    /// operations (--tool NAME, repeatable) it may call as --tool-user.
    AssignFaxAgent {
        #[arg(long)]
        endpoint: String,
        #[arg(long, default_value = "")]
        instructions: String,
        #[arg(long = "tool")]
        tools: Vec<String>,
        #[arg(long)]
        tool_user: Option<i64>,
    },
    /// Receive a sample fax on a line as the carrier would deliver it (a
    /// sample request for proposal, or --pdf FILE), for a running server's
    /// pipeline to answer.
    ReceiveSampleFax {
        /// The fax line's id, or its number with --number.
        #[arg(long, conflicts_with = "number", required_unless_present = "number")]
        endpoint: Option<String>,
        #[arg(long)]
        number: Option<String>,
        #[arg(long, default_value = "+12125550199")]
        from: String,
        #[arg(long)]
        pdf: Option<std::path::PathBuf>,
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
    /// Set (or with --clear remove) an account's credit limit for committed
    /// media spend in one currency; without one, spend is unlimited.
    SetCreditLimit {
        #[arg(long)]
        account: String,
        /// ISO 4217, e.g. USD.
        #[arg(long)]
        currency: String,
        /// The most the account's live and pending real buys may total.
        #[arg(long, required_unless_present = "clear", conflicts_with = "clear")]
        amount: Option<f64>,
        #[arg(long)]
        clear: bool,
    },
    /// Replace a storefront's callback secret (the secret its signed media-buy
    /// callbacks are checked with; sent with the next buys, never shown).
    RotateCallbackSecret {
        #[arg(long)]
        storefront: i64,
    },
    /// Confirm a buyer account's operator domain (production account sync
    /// needs it); audited.
    ConfirmOperatorIdentity {
        #[arg(long)]
        account: String,
        /// The operator's domain, e.g. `agency.example`.
        #[arg(long)]
        domain: String,
    },
    /// Register an account source at a storefront, or replace one. Source
    /// `agent` overrides the storefront's own agent's capabilities.
    RegisterAccountSource {
        #[arg(long)]
        storefront: i64,
        #[arg(long)]
        source_id: String,
        #[arg(long)]
        name: Option<String>,
        /// The source's AdCP agent (external sources only).
        #[arg(long)]
        url: Option<String>,
        /// Buyers register credentials and list the accounts they can see.
        #[arg(long)]
        requires_credentials: bool,
        /// A billing party account sync may ask for (repeatable; default all).
        #[arg(long = "billing")]
        billing: Vec<String>,
    },
    /// Make an account the operator of a storefront (a managed storefront):
    /// it reviews the storefront's account-mapping intakes.
    AssignStorefrontOperator {
        #[arg(long)]
        storefront: i64,
        #[arg(long)]
        account: String,
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
