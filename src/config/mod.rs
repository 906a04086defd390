//! Runtime configuration, from the environment (the operator contract) or
//! the equivalent command-line flags.

use clap::{ArgAction, Args};

pub mod catalogs;
pub mod http;
pub mod oauth;
pub mod phone;
pub mod secret;
pub mod webhooks;

pub use secret::Secret;

use self::http::AllowedOrigins;
use crate::types::UrlPolicy;

#[derive(Args, Debug, Clone)]
pub struct Config {
    /// Any sea-orm URL; `postgres://...` for PostgreSQL.
    #[arg(
        long,
        env = "AGENTIC_DATABASE_URL",
        default_value = "sqlite://agentic.db?mode=rwc",
        global = true
    )]
    pub database_url: String,

    /// Listen address; port 0 picks a free port.
    #[arg(
        long,
        env = "AGENTIC_BIND",
        default_value = "127.0.0.1:8080",
        global = true
    )]
    pub bind: String,

    /// Base URL used in OAuth metadata and links (default `http://{bind}`).
    #[arg(long, env = "AGENTIC_PUBLIC_URL", global = true)]
    pub public_url: Option<String>,

    /// Allow `http://` and loopback/private hosts in outbound URLs (development only).
    #[arg(long, env = "AGENTIC_ALLOW_INSECURE_URLS", default_value_t = false, action = ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new(), global = true)]
    pub allow_insecure_urls: bool,

    /// General per-IP limit per minute.
    #[arg(long, env = "AGENTIC_RATE_LIMIT_PER_MINUTE", default_value_t = 100,
          value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub rate_limit_per_minute: u32,

    /// Per-IP limit on `/auth/*` per 15 minutes.
    #[arg(long, env = "AGENTIC_AUTH_RATE_LIMIT", default_value_t = 40,
          value_parser = clap::value_parser!(u32).range(1..), global = true)]
    pub auth_rate_limit: u32,

    /// Comma-separated CIDRs or addresses of load balancers whose `Forwarded` /
    /// `X-Forwarded-For` headers name the client (for rate limits); none by default.
    #[arg(long, env = "AGENTIC_TRUSTED_PROXIES", default_value = "",
          value_parser = self::http::parse_trusted_proxies, global = true)]
    pub trusted_proxies: self::http::TrustedProxies,

    /// Base URL of the carrier's HTTP API; unset means the built-in simulated carrier.
    #[arg(long, env = "AGENTIC_CARRIER_URL", global = true)]
    pub carrier_url: Option<String>,

    /// The carrier API key, sent as a bearer token with every submission.
    #[arg(
        long,
        env = "AGENTIC_CARRIER_API_KEY",
        hide_env_values = true,
        global = true
    )]
    pub carrier_api_key: Option<self::phone::ApiKey>,

    /// The carrier's webhook public key (base64 Ed25519, from its portal):
    /// inbound messages and delivery reports signed with it are accepted;
    /// unset, carrier webhooks are refused.
    #[arg(long, env = "AGENTIC_CARRIER_PUBLIC_KEY", global = true)]
    pub carrier_public_key: Option<self::phone::CarrierKey>,

    /// Origins allowed cross-origin (CORS) access, comma-separated exact
    /// origins such as `https://app.example.com`; empty means none.
    #[arg(long, env = "AGENTIC_CORS_ORIGINS", default_value = "", global = true)]
    pub cors_origins: AllowedOrigins,
    /// SQLite `synchronous`: `full` (a commit survives power loss) or `normal`
    /// (faster; the last commits can be lost on power loss).
    #[arg(long, env = "AGENTIC_SQLITE_SYNCHRONOUS", value_enum,
          default_value_t = crate::db::SqliteSync::Full, global = true)]
    pub sqlite_synchronous: crate::db::SqliteSync,

    /// Seconds one storefront may take to answer a discovery (default 60;
    /// at most 300, the session's hard cap).
    #[arg(long, env = "AGENTIC_DISCOVERY_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..=300), global = true)]
    pub discovery_timeout: Option<u64>,

    /// Seconds between two refreshes of one media buy at its seller (default
    /// 30, the spec's floor for media-buy status; lower is for tests).
    #[arg(long, env = "AGENTIC_MEDIA_BUY_POLL_SECONDS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3600), global = true)]
    pub media_buy_poll_seconds: u64,

    /// Seconds between two pulls of one live buy's delivery report (AdCP
    /// `get_media_buy_delivery`; default 900: sellers' reports move hourly
    /// at best; lower is for tests).
    #[arg(long, env = "AGENTIC_MEDIA_BUY_DELIVERY_SECONDS", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(1..=86400), global = true)]
    pub media_buy_delivery_seconds: u64,

    /// Base URL of an OpenAI-compatible chat-completions API (e.g.
    /// `https://api.openai.com/v1`) for the room's assistant; unset means the
    /// built-in offline assistant. Outbound rules apply (`AGENTIC_ALLOW_INSECURE_URLS`
    /// for a model on a private address).
    #[arg(long, env = "AGENTIC_ASSISTANT_URL", global = true)]
    pub assistant_url: Option<String>,

    /// The model asked at `AGENTIC_ASSISTANT_URL`.
    #[arg(
        long,
        env = "AGENTIC_ASSISTANT_MODEL",
        default_value = "gpt-4o-mini",
        global = true
    )]
    pub assistant_model: String,

    /// Sent as a bearer token to `AGENTIC_ASSISTANT_URL`; never printed or logged.
    #[arg(
        long,
        env = "AGENTIC_ASSISTANT_API_KEY",
        hide_env_values = true,
        global = true
    )]
    pub assistant_api_key: Option<Secret>,

    /// Most tool calls one assistant run may make.
    #[arg(long, env = "AGENTIC_ASSISTANT_MAX_TOOL_CALLS", default_value_t = 10,
          value_parser = clap::value_parser!(u32).range(0..=100), global = true)]
    pub assistant_max_tool_calls: u32,

    /// Most tokens the model may produce over one assistant run.
    #[arg(long, env = "AGENTIC_ASSISTANT_MAX_TOKENS", default_value_t = 4096,
          value_parser = clap::value_parser!(u32).range(16..=200_000), global = true)]
    pub assistant_max_tokens: u32,

    /// Seconds one assistant run may take (model turns and tool calls; a
    /// wait for a confirmation does not count).
    #[arg(long, env = "AGENTIC_ASSISTANT_RUN_SECONDS", default_value_t = 120,
          value_parser = clap::value_parser!(u64).range(1..=3600), global = true)]
    pub assistant_run_seconds: u64,

    /// Directory of received faxes and their replies (one subdirectory per
    /// account and customer); instances sharing a database must share it.
    #[arg(
        long,
        env = "AGENTIC_FAX_STORAGE_DIR",
        default_value = "fax-files",
        global = true
    )]
    pub fax_storage_dir: std::path::PathBuf,

    /// Days a received fax's files (and its text and reply) are kept.
    #[arg(long, env = "AGENTIC_FAX_RETENTION_DAYS", default_value_t = 30,
          value_parser = clap::value_parser!(u64).range(1..=3650), global = true)]
    pub fax_retention_days: u64,

    /// Largest received fax, in MiB.
    #[arg(long, env = "AGENTIC_FAX_MAX_MB", default_value_t = 20,
          value_parser = clap::value_parser!(u64).range(1..=200), global = true)]
    pub fax_max_mb: u64,

    /// Pages of a received fax whose text is read (the rest is left out).
    #[arg(long, env = "AGENTIC_FAX_MAX_PAGES", default_value_t = 50,
          value_parser = clap::value_parser!(u32).range(1..=1000), global = true)]
    pub fax_max_pages: u32,

    /// Directory of uploaded material files (one subdirectory per account);
    /// instances sharing a database must share it.
    #[arg(
        long,
        env = "AGENTIC_UPLOAD_STORAGE_DIR",
        default_value = "upload-files",
        global = true
    )]
    pub upload_storage_dir: std::path::PathBuf,

    /// Seconds an upload's write URL stays usable (default 900, 15 minutes).
    #[arg(long, env = "AGENTIC_UPLOAD_URL_SECONDS", default_value_t = 900,
          value_parser = clap::value_parser!(u64).range(10..=86400), global = true)]
    pub upload_url_seconds: u64,

    /// How often unfinished upload reservations are pruned; not part of
    /// the operator contract (tests shorten it).
    #[arg(skip = UPLOAD_PRUNE_EVERY)]
    pub upload_prune_every: std::time::Duration,

    /// Lifetime of a Page capability (`open_page`); not part of the
    /// operator contract (tests shorten it).
    #[arg(skip = PAGE_CAPABILITY_TTL)]
    pub page_capability_ttl: std::time::Duration,

    /// The inbound fax pipeline's timings and the text extractor's program;
    /// not part of the operator contract (tests shorten and set them).
    #[arg(skip)]
    pub fax: FaxTuning,

    /// HTTP worker threads; 0 (the default) means one per CPU core.
    #[arg(long, env = "AGENTIC_WORKERS", default_value_t = 0, global = true)]
    pub workers: usize,

    /// tracing filter, e.g. `info` or `agentic_api=debug`.
    #[arg(long, env = "AGENTIC_LOG", default_value = "info", global = true)]
    pub log: String,

    /// Log format on stderr: `text` (colour only at a terminal) or `json` (one object per line).
    #[arg(
        long,
        env = "AGENTIC_LOG_FORMAT",
        value_enum,
        default_value_t,
        global = true
    )]
    pub log_format: LogFormat,

    /// Record Prometheus metrics and serve them on `AGENTIC_METRICS_BIND`.
    #[arg(long, env = "AGENTIC_METRICS", default_value_t = true, action = ArgAction::Set,
          value_parser = clap::builder::BoolishValueParser::new(), global = true)]
    pub metrics: bool,

    /// Listen address of `/metrics`, apart from the API (it has no
    /// authentication); port 0 picks a free port, empty turns it off.
    #[arg(
        long,
        env = "AGENTIC_METRICS_BIND",
        default_value = "127.0.0.1:9464",
        global = true
    )]
    pub metrics_bind: String,

    /// 64 hex characters (32 bytes): webhook secrets are stored encrypted
    /// with AES-256-GCM under this key. Unset: on SQLite, a key file made
    /// beside the database; on PostgreSQL, stored as given (with a warning).
    #[arg(long, env = "AGENTIC_WEBHOOK_SECRET_KEY", hide_env_values = true,
          value_parser = WebhookKeyParser, global = true)]
    pub webhook_secret_key: Option<self::webhooks::SecretKey>,

    /// Room stream tuning; not part of the operator contract (tests shorten it).
    /// Seconds an instance's claim on shared work (a discovery session it
    /// drives, a webhook subscription it delivers) lasts unless renewed:
    /// how long a crashed instance's work waits before another takes it.
    #[arg(long, env = "AGENTIC_LEASE_SECONDS", value_parser = clap::value_parser!(u64).range(2..=300), global = true)]
    pub lease_seconds: Option<u64>,

    /// One webhook delivery attempt, in seconds (connect to end of answer).
    #[arg(long, env = "AGENTIC_WEBHOOK_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..=60), global = true)]
    pub webhook_timeout: Option<u64>,

    /// Seconds one catalog feed fetch may take, from connecting to the last
    /// byte of the feed (default 30).
    #[arg(long, env = "AGENTIC_CATALOG_FEED_TIMEOUT", value_parser = clap::value_parser!(u64).range(1..=300), global = true)]
    pub catalog_feed_timeout: Option<u64>,

    /// Largest catalog feed accepted, in MiB (default 10); a larger one
    /// fails its catalog's sync with `FEED_TOO_LARGE`.
    #[arg(long, env = "AGENTIC_CATALOG_FEED_MAX_MB", value_parser = clap::value_parser!(u64).range(1..=256), global = true)]
    pub catalog_feed_max_mb: Option<u64>,

    /// Seconds a stopping server (SIGTERM, SIGINT) waits for requests under
    /// way and for background work to finish its attempt under way (a text
    /// being submitted, a webhook being delivered) and record it; 0 stops
    /// at once.
    #[arg(long, env = "AGENTIC_SHUTDOWN_GRACE", default_value_t = 10,
          value_parser = clap::value_parser!(u64).range(0..=3600), global = true)]
    pub shutdown_grace: u64,

    /// How many days webhook delivery attempts stay listed.
    #[arg(long, env = "AGENTIC_WEBHOOK_LOG_RETENTION_DAYS", value_parser = clap::value_parser!(u64).range(1..=365), global = true)]
    pub webhook_log_retention_days: Option<u64>,

    #[arg(skip)]
    pub rooms: RoomTuning,

    /// Discovery timings; not part of the operator contract (tests shorten them).
    #[arg(skip)]
    pub discovery: DiscoveryTuning,

    /// Leases and sweep of durable background work.
    #[arg(skip)]
    pub outbox: crate::outbox::OutboxTuning,

    /// Webhook delivery (the variables above override its defaults).
    #[arg(skip)]
    pub webhook_delivery: self::webhooks::DeliveryTuning,

    /// How often the PostgreSQL bus listener proves itself alive (tests
    /// shorten it); three missed beats reconnect it.
    #[arg(skip = crate::bus::DEFAULT_HEARTBEAT)]
    pub bus_heartbeat: std::time::Duration,
    /// Lifetime of stream tokens; not part of the operator contract (tests shorten it).
    #[arg(skip = DEFAULT_STREAM_TOKEN_TTL)]
    pub stream_token_ttl: std::time::Duration,
    /// How long an MCP session lives after its last request; not part of
    /// the operator contract (tests shorten it).
    #[arg(skip = MCP_SESSION_TTL)]
    pub mcp_session_ttl: std::time::Duration,
    /// Lifetimes of OAuth codes, tokens and authorizations in progress;
    /// not part of the operator contract (tests shorten them).
    #[arg(skip)]
    pub oauth: self::oauth::OAuthTuning,
    /// Bounds of catalog feed fetches (tests shorten them below what
    /// `AGENTIC_CATALOG_FEED_TIMEOUT` and `AGENTIC_CATALOG_FEED_MAX_MB`
    /// allow; those override them).
    #[arg(skip)]
    pub catalog_feeds: self::catalogs::FeedTuning,
    /// Multiplies the built-in demo sellers' answer delays; not part of the
    /// operator contract (tests set 0).
    #[arg(skip = 1.0)]
    pub demo_seller_delay_scale: f64,
}

/// Parses `AGENTIC_WEBHOOK_SECRET_KEY`. Hand-written rather than a parser
/// function so that a bad value's error does not repeat the value (clap's
/// default message would print it on stderr).
#[derive(Clone, Copy, Debug)]
pub struct WebhookKeyParser;

impl clap::builder::TypedValueParser for WebhookKeyParser {
    type Value = self::webhooks::SecretKey;

    fn parse_ref(
        &self,
        _cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Self::Value, clap::Error> {
        value
            .to_str()
            .ok_or(self::webhooks::KEY_FORMAT)
            .and_then(self::webhooks::SecretKey::from_hex)
            .map_err(|m| clap::Error::raw(clap::error::ErrorKind::InvalidValue, format!("{m}\n")))
    }
}

/// Stream tokens (for `EventSource`, which cannot send headers) live this long.
/// `AGENTIC_LOG_FORMAT`: human-readable lines, or one JSON object per line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

/// The inbound fax pipeline's timings.
#[derive(Debug, Clone)]
pub struct FaxTuning {
    /// How often the pipeline looks for work (it is also woken by new faxes).
    pub tick: std::time::Duration,
    /// An instance's claim on a fax it is working on.
    pub lease: std::time::Duration,
    /// The program that extracts text (this binary's hidden `internal
    /// extract-pdf`); `None`: this very binary.
    pub extractor: Option<std::path::PathBuf>,
}

impl Default for FaxTuning {
    fn default() -> Self {
        FaxTuning {
            tick: std::time::Duration::from_secs(2),
            lease: std::time::Duration::from_secs(120),
            extractor: None,
        }
    }
}

/// How long an idle MCP session is kept.
pub const MCP_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

/// How often unfinished upload reservations are looked for.
pub const UPLOAD_PRUNE_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

/// How long a Page capability lasts (renewable while valid).
pub const PAGE_CAPABILITY_TTL: std::time::Duration = std::time::Duration::from_secs(15 * 60);

pub const DEFAULT_STREAM_TOKEN_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// Timings and bounds of conversation rooms and their streams.
#[derive(Debug, Clone)]
pub struct RoomTuning {
    /// Keep-alive comment interval; also how often presence is refreshed
    /// and the database's reachability is checked.
    pub keepalive: std::time::Duration,
    /// Events buffered per subscriber before it counts as too slow.
    pub subscriber_buffer: usize,
    /// How long an empty room lingers before its actor stops.
    pub idle_grace: std::time::Duration,
    /// A stream older than this is closed (`STREAM_MAX_DURATION`) at the
    /// next tick; the client resumes from its cursor.
    pub max_stream_duration: std::time::Duration,
}

impl Default for RoomTuning {
    fn default() -> Self {
        RoomTuning {
            keepalive: std::time::Duration::from_secs(15),
            subscriber_buffer: 1024,
            idle_grace: std::time::Duration::from_secs(10),
            max_stream_duration: std::time::Duration::from_secs(3600),
        }
    }
}

/// Timings and bounds of discovery sessions and their streams.
#[derive(Debug, Clone)]
pub struct DiscoveryTuning {
    /// How long one storefront may take to answer.
    pub storefront_timeout: std::time::Duration,
    /// A session (each round of it) completes by then, whatever is pending.
    pub hard_cap: std::time::Duration,
    pub keepalive: std::time::Duration,
    /// A stream is closed with `STREAM_MAX_DURATION` after this.
    pub max_stream_duration: std::time::Duration,
    pub subscriber_buffer: usize,
    /// The driving instance's lease on a session; an incomplete session
    /// whose lease ran out is completed by any instance.
    pub lease: std::time::Duration,
    /// How often leases are renewed and abandoned sessions looked for.
    pub sweep: std::time::Duration,
    /// A completed session still accepts streams (which replay it) this long.
    pub complete_grace: std::time::Duration,
    /// How long an idle session actor lingers.
    pub idle_grace: std::time::Duration,
}

impl Default for DiscoveryTuning {
    fn default() -> Self {
        use std::time::Duration;
        DiscoveryTuning {
            storefront_timeout: Duration::from_secs(60),
            hard_cap: Duration::from_secs(300),
            keepalive: Duration::from_secs(15),
            max_stream_duration: Duration::from_secs(300),
            subscriber_buffer: 256,
            lease: Duration::from_secs(30),
            sweep: Duration::from_secs(10),
            complete_grace: Duration::from_secs(600),
            idle_grace: Duration::from_secs(10),
        }
    }
}

impl RoomTuning {
    /// Presence rows older than this belong to a vanished instance.
    pub fn presence_ttl(&self) -> std::time::Duration {
        self.keepalive * 3
    }
}

/// A lease of `secs` seconds and the renewal interval that goes with it
/// (a third of it, at most `sweep`).
pub fn lease_and_sweep(
    secs: u64,
    sweep: std::time::Duration,
) -> (std::time::Duration, std::time::Duration) {
    let lease = std::time::Duration::from_secs(secs);
    (lease, (lease / 3).min(sweep))
}

impl Config {
    /// Defaults with the given database; for tests and tools.
    pub fn with_database(database_url: &str) -> Self {
        Config {
            database_url: database_url.to_string(),
            bind: "127.0.0.1:0".into(),
            public_url: None,
            allow_insecure_urls: false,
            rate_limit_per_minute: 100,
            auth_rate_limit: 40,
            trusted_proxies: Default::default(),
            carrier_url: None,
            carrier_api_key: None,
            carrier_public_key: None,
            cors_origins: AllowedOrigins::none(),
            sqlite_synchronous: crate::db::SqliteSync::Full,
            workers: 0,
            discovery_timeout: None,
            media_buy_poll_seconds: 30,
            media_buy_delivery_seconds: 900,
            assistant_url: None,
            assistant_model: "gpt-4o-mini".into(),
            assistant_api_key: None,
            assistant_max_tool_calls: 10,
            assistant_max_tokens: 4096,
            assistant_run_seconds: 120,
            fax_storage_dir: "fax-files".into(),
            upload_storage_dir: "upload-files".into(),
            upload_url_seconds: 900,
            upload_prune_every: UPLOAD_PRUNE_EVERY,
            page_capability_ttl: PAGE_CAPABILITY_TTL,
            fax_retention_days: 30,
            fax_max_mb: 20,
            fax_max_pages: 50,
            fax: FaxTuning::default(),
            log: "info".into(),
            log_format: Default::default(),
            metrics: true,
            metrics_bind: "127.0.0.1:0".into(),
            rooms: RoomTuning::default(),
            discovery: DiscoveryTuning::default(),
            bus_heartbeat: crate::bus::DEFAULT_HEARTBEAT,
            stream_token_ttl: DEFAULT_STREAM_TOKEN_TTL,
            mcp_session_ttl: MCP_SESSION_TTL,
            demo_seller_delay_scale: 1.0,
            webhook_secret_key: None,
            webhook_timeout: None,
            lease_seconds: None,
            webhook_log_retention_days: None,
            shutdown_grace: 10,
            catalog_feed_timeout: None,
            catalog_feed_max_mb: None,
            outbox: Default::default(),
            webhook_delivery: Default::default(),
            oauth: Default::default(),
            catalog_feeds: Default::default(),
        }
    }

    pub fn url_policy(&self) -> UrlPolicy {
        UrlPolicy {
            allow_insecure: self.allow_insecure_urls,
        }
    }
}
