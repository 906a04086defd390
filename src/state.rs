//! Shared application state, one per server (cloned into every worker).

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::auth::AuthService;
use crate::bus::EventBus;
use crate::config::Config;
use crate::conversations::Rooms;
use crate::conversations::list_cache::ListCache;
use crate::http::rate_limit::RateLimits;

#[derive(Clone)]
pub struct AppState {
    pub db: DatabaseConnection,
    pub config: Arc<Config>,
    pub auth: AuthService,
    pub limits: Arc<RateLimits>,
    /// `AGENTIC_PUBLIC_URL`, or `http://{bound address}`.
    pub public_url: Arc<str>,
    /// The address actually bound (the real port when 0 was asked for).
    pub bound: std::net::SocketAddr,
    /// Cancelled on SIGINT/SIGTERM: long-lived streams end, workers drain.
    pub shutdown: tokio_util::sync::CancellationToken,
    /// Fan-out between requests and instances.
    pub bus: EventBus,
    /// This instance's conversation rooms.
    pub rooms: Rooms,
    /// Serialized conversation lists, invalidated through the bus.
    pub conversation_lists: std::sync::Arc<ListCache>,
    /// Where brand identities are resolved and saved.
    pub brands: std::sync::Arc<dyn crate::buyer::brands::BrandRegistry>,
}

impl AppState {
    pub fn new(db: DatabaseConnection, config: Config, bound: std::net::SocketAddr) -> Self {
        let public_url = config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"));
        let instance_id = uuid::Uuid::new_v4().simple().to_string();
        let bus = if db.get_database_backend() == sea_orm::DbBackend::Postgres {
            EventBus::postgres(instance_id, db.get_postgres_connection_pool().clone())
        } else {
            EventBus::in_process(instance_id)
        };
        let rooms = Rooms::new(db.clone(), bus.clone(), config.rooms.clone());
        let conversation_lists = ListCache::new(config.rooms.presence_ttl(), bus.is_distributed());
        let sink: std::sync::Arc<dyn crate::bus::BusSink> = conversation_lists.clone();
        bus.register(std::sync::Arc::downgrade(&sink));
        AppState {
            brands: std::sync::Arc::new(crate::buyer::brands::LocalRegistry::new(db.clone())),
            conversation_lists,
            bus,
            rooms,
            public_url: public_url.trim_end_matches('/').into(),
            bound,
            shutdown: tokio_util::sync::CancellationToken::new(),
            auth: AuthService::new(db.clone()),
            limits: Arc::new(RateLimits::new(
                config.rate_limit_per_minute,
                config.auth_rate_limit,
            )),
            db,
            config: Arc::new(config),
        }
    }
}

impl AppState {
    pub fn listen_url(&self) -> String {
        format!("http://{}", self.bound)
    }
}
