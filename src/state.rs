//! Shared application state, one per server (cloned into every worker): the
//! operations' context plus what only the HTTP edge needs.

use std::sync::Arc;

use sea_orm::DatabaseConnection;

use crate::auth::AuthService;
use crate::bus::EventBus;
use crate::config::Config;
use crate::http::rate_limit::RateLimits;
use crate::ops::Ctx;
use crate::ops::context::Handles;

#[derive(Clone)]
pub struct AppState {
    /// Database, bus, config, shutdown and the domains' handles.
    pub ctx: Ctx,
    pub auth: AuthService,
    pub limits: Arc<RateLimits>,
    /// `AGENTIC_PUBLIC_URL`, or `http://{bound address}`.
    pub public_url: Arc<str>,
    /// The address actually bound (the real port when 0 was asked for).
    pub bound: std::net::SocketAddr,
}

impl std::ops::Deref for AppState {
    type Target = Ctx;
    fn deref(&self) -> &Ctx {
        &self.ctx
    }
}

impl AppState {
    pub fn new(db: DatabaseConnection, config: Config, bound: std::net::SocketAddr) -> Self {
        let public_url = config
            .public_url
            .clone()
            .unwrap_or_else(|| format!("http://{bound}"));
        let instance_id = uuid::Uuid::new_v4().simple().to_string();
        let bus = if db.get_database_backend() == sea_orm::DbBackend::Postgres {
            EventBus::postgres(
                instance_id,
                db.get_postgres_connection_pool().clone(),
                config.bus_heartbeat,
            )
        } else {
            EventBus::in_process(instance_id)
        };
        let config = Arc::new(config);
        let auth = AuthService::new(db.clone(), &bus);
        let shutdown = tokio_util::sync::CancellationToken::new();
        let writes = crate::db::WriteGate::for_db(&db);
        let mut handles = Handles::default();
        crate::conversations::register(&mut handles, &db, &bus, &config, &shutdown);
        crate::buyer::register(&mut handles, &db, &config);
        crate::discovery::register(&mut handles, &db, &writes, &bus, &config, &shutdown);
        // One outbox for every queue: webhook deliveries and text messages.
        let mut queues = Vec::new();
        queues.extend(crate::webhooks::register(&config));
        queues.extend(crate::phone::register(&mut handles, &db, &writes, &config));
        let mut outbox_tuning = config.outbox.clone();
        if let Some(secs) = config.lease_seconds {
            (outbox_tuning.lease, outbox_tuning.sweep) =
                crate::config::lease_and_sweep(secs, outbox_tuning.sweep);
        }
        handles.insert(crate::outbox::Outbox::start(
            db.clone(),
            writes.clone(),
            &bus,
            outbox_tuning,
            queues,
            shutdown.clone(),
        ));
        let limits = Arc::new(
            RateLimits::new(config.rate_limit_per_minute, config.auth_rate_limit)
                .self_limited(crate::phone::inbound::PATH),
        );
        let ctx = Ctx::new(db, bus, config, shutdown, writes, handles);
        AppState {
            ctx,
            auth,
            limits,
            public_url: public_url.trim_end_matches('/').into(),
            bound,
        }
    }

    pub fn listen_url(&self) -> String {
        format!("http://{}", self.bound)
    }
}
