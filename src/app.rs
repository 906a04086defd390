//! Builds the HTTP application from each domain's `configure`, binds the
//! listener (port 0 allowed) and exposes the real port.

use std::net::TcpListener;
use std::time::Duration;

use actix_web::dev::{Server, ServerHandle};
use actix_web::middleware::{Condition, ErrorHandlers, from_fn};
use actix_web::{App, HttpServer, web};
use anyhow::Context;
use sea_orm::DatabaseConnection;
use tracing_actix_web::TracingLogger;

use crate::config::Config;
use crate::error::ApiError;
use crate::http::AppState;
use crate::http::fallback::{self, RouteTable};
use crate::http::json::{BodyLimit, DEFAULT_BODY_LIMIT};
use crate::http::{cors, middleware};
use crate::openapi::OpenApiJson;
use crate::ops::{Registry, StreamRoutes};
use crate::telemetry::RequestSpan;
use crate::{auth, buyer, conversations, health, openapi};

type ServiceConfig = web::ServiceConfig;

/// Every operation this server offers, domain by domain.
pub static OPERATIONS: Registry = Registry::new(&[
    auth::operations::OPERATIONS,
    buyer::advertisers::operations::OPERATIONS,
    buyer::OPERATIONS,
    buyer::campaigns::operations::OPERATIONS,
    buyer::catalogs::operations::OPERATIONS,
    crate::media_buys::OPERATIONS,
    crate::accounts::OPERATIONS,
    crate::accounts::STOREFRONT_OPERATIONS,
    crate::reporting::OPERATIONS,
    crate::insights::OPERATIONS,
    crate::creatives::OPERATIONS,
    buyer::targeting::operations::OPERATIONS,
    conversations::OPERATIONS,
    crate::assistant::OPERATIONS,
    crate::discovery::OPERATIONS,
    crate::webhooks::OPERATIONS,
    crate::phone::OPERATIONS,
    crate::library::OPERATIONS,
    crate::notifications::OPERATIONS,
]);

/// Every event stream a stream token can open.
pub static STREAMS: StreamRoutes = StreamRoutes::new(&[
    &conversations::routes::STREAM,
    &crate::discovery::routes::STREAM,
    &crate::notifications::inbox::STREAM,
]);

/// Every route under `/api/v2`: the registry's operations and the two
/// event streams.
pub fn api_v2(cfg: &mut ServiceConfig) {
    crate::http::operations::configure_static(cfg, OPERATIONS);
    conversations::configure(cfg);
    crate::discovery::configure(cfg);
    crate::notifications::configure(cfg);
    crate::widgets::routes::configure(cfg);
    crate::http::operations::configure_parameterised(cfg, OPERATIONS);
    cfg.route("/openapi.json", web::get().to(openapi::openapi_json));
}

/// The OpenAPI document, derived from the operation registry
/// ([`openapi::document`]), with the vocabularies (currency, country, zone
/// lists...) the derive cannot express.
pub fn openapi_document() -> serde_json::Value {
    let mut doc = openapi::document(OPERATIONS);
    buyer::advertisers::openapi::document(&mut doc);
    buyer::catalogs::document(&mut doc);
    buyer::targeting::openapi::document(&mut doc);
    doc
}

pub struct Application {
    port: u16,
    metrics: Option<std::net::SocketAddr>,
    server: Server,
    state: AppState,
}

impl Application {
    /// Connects, migrates and binds.
    pub async fn build(config: Config) -> anyhow::Result<Self> {
        let db = crate::db::connect_with(&config.database_url, config.sqlite_synchronous).await?;
        crate::db::migrate(&db).await?;
        Self::build_with_db(config, db).await
    }

    pub async fn build_with_db(mut config: Config, db: DatabaseConnection) -> anyhow::Result<Self> {
        config.webhook_secret_key =
            crate::webhooks::at_rest::prepare(config.webhook_secret_key.take(), &db).await?;
        let listener = TcpListener::bind(&config.bind)
            .with_context(|| format!("cannot bind {}", config.bind))?;
        let addr = listener.local_addr()?;
        let state = assemble(db, config, addr);
        let doc = openapi_document();
        let table = web::Data::new(RouteTable::from_openapi(&doc));
        let doc = web::Data::new(OpenApiJson(serde_json::to_vec(&doc)?));
        let data = web::Data::new(state.clone());
        // The OAuth endpoints need only the operations' context.
        let ctx = web::Data::new(state.ctx.clone());
        let mcp = web::Data::new(crate::mcp::Endpoints::new(&state));
        let metrics = crate::metrics::serve(
            state.config.metrics,
            &state.config.metrics_bind,
            &state.db,
            &state.shutdown,
        )?;
        let metrics_on = metrics.is_some();

        state.bus.start_listener(state.shutdown.clone());
        crate::db::spawn_checkpointer(state.db.clone(), state.shutdown.clone());
        auth::oauth::prune::spawn(
            state.db.clone(),
            state.config.oauth.prune_every,
            state.shutdown.clone(),
        );
        if !state.bus.wait_healthy(Duration::from_secs(5)).await {
            tracing::warn!("event bus listener not connected yet; /readyz says so until it is");
        }
        let limits = state.limits.clone();
        actix_rt::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(60));
            loop {
                tick.tick().await;
                limits.general.sweep();
                limits.auth.sweep();
            }
        });

        let cors_origins = state.config.cors_origins.clone();
        let workers = match state.config.workers {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        };
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .app_data(ctx.clone())
                .app_data(mcp.clone())
                .app_data(doc.clone())
                .app_data(table.clone())
                .app_data(BodyLimit(DEFAULT_BODY_LIMIT))
                .app_data(
                    web::PathConfig::default()
                        .error_handler(|e, _| ApiError::invalid("path", e.to_string()).into()),
                )
                .app_data(
                    web::QueryConfig::default()
                        .error_handler(|e, _| ApiError::invalid("query", e.to_string()).into()),
                )
                .app_data(
                    web::JsonConfig::default()
                        .limit(DEFAULT_BODY_LIMIT)
                        .error_handler(|e, _| ApiError::invalid("", e.to_string()).into()),
                )
                .wrap(from_fn(middleware::rate_limit))
                .wrap(cors::cors(&cors_origins))
                .wrap(from_fn(cors::only_for_allowed_origins))
                .wrap(ErrorHandlers::new().default_handler(middleware::envelope_errors))
                .wrap(from_fn(middleware::request_id))
                .wrap(Condition::new(metrics_on, from_fn(crate::metrics::track)))
                .wrap(TracingLogger::<RequestSpan>::new())
                .wrap(from_fn(middleware::redact_stream_token))
                .configure(health::configure)
                .service(web::scope("/api/v2").configure(api_v2))
                // Not in the OpenAPI document: MCP has its own description.
                .configure(crate::mcp::configure)
                // Not in the OpenAPI document either: the OAuth RFCs specify them.
                .configure(auth::oauth::configure)
                // The carrier's webhooks (signed; its own format).
                .configure(crate::phone::inbound::configure)
                .configure(crate::phone::fax::media::configure)
                // Upload write URLs (a single-use token instead of a bearer).
                .configure(crate::library::uploads::configure)
                // Sellers' callbacks (signed; AdCP's format).
                .configure(crate::media_buys::configure)
                // The web console's static files (its own headers; see `console`).
                .configure(crate::console::configure)
                .default_service(web::to(fallback::not_found))
        })
        // Small SSE frames and API responses go out at once instead of
        // waiting for the peer's delayed ACK (Nagle).
        .tcp_nodelay(true)
        .workers(workers)
        .listen(listener)?
        .shutdown_timeout(state.config.shutdown_grace)
        .disable_signals()
        .run();
        Ok(Application {
            port: addr.port(),
            metrics,
            server,
            state,
        })
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The metrics listener's address (its real port when 0 was asked
    /// for); `None` when metrics are off.
    pub fn metrics_addr(&self) -> Option<std::net::SocketAddr> {
        self.metrics
    }

    pub fn metrics_port(&self) -> Option<u16> {
        self.metrics.map(|a| a.port())
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    pub fn handle(&self) -> ServerHandle {
        self.server.handle()
    }

    /// Serves until `handle().stop()`.
    pub async fn run_until_stopped(self) -> std::io::Result<()> {
        self.server.await
    }

    /// Serves until SIGINT/SIGTERM (or the shutdown token), then shuts
    /// down gracefully within `AGENTIC_SHUTDOWN_GRACE`: the token ends open
    /// streams first, so in-flight requests can drain, while the outbox's
    /// lanes finish and record their attempts and give their leases up.
    pub async fn run_until_signal(self, signals: Signals) -> std::io::Result<()> {
        let handle = self.server.handle();
        let token = self.state.shutdown.clone();
        let grace = Duration::from_secs(self.state.config.shutdown_grace);
        let outbox = self.state.get::<crate::outbox::Outbox>().ok().cloned();
        let stopping = actix_rt::spawn(async move {
            tokio::select! {
                _ = signals.recv() => tracing::info!("shutdown signal received; draining"),
                _ = token.cancelled() => {}
            }
            token.cancel();
            // No new connections from here on; requests under way go on.
            handle.pause().await;
            // The lanes finish and record their attempts before the HTTP
            // workers stop: a PostgreSQL connection the pool opened on a
            // worker's runtime dies with that runtime, and a lane handed one
            // then could not record a text the carrier had taken.
            let busy = match outbox {
                Some(outbox) => outbox.stop(grace).await,
                None => 0,
            };
            if busy > 0 {
                tracing::warn!(
                    lanes = busy,
                    "shutdown grace ran out with outbox attempts under way; they are held or run again after the next start"
                );
            }
            // Requests still under way get what is left of the grace.
            handle.stop(busy == 0).await;
        });
        let served = self.server.await;
        // However serving ended, the background work is stopped and waited for.
        self.state.shutdown.cancel();
        let _ = stopping.await;
        served
    }
}

/// SIGTERM and SIGINT, listened for from the moment this is made: make it
/// before announcing the listener, so a signal sent as soon as the server
/// says it listens is never lost to the default action (exit by signal).
pub struct Signals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    int: tokio::signal::unix::Signal,
}

impl Signals {
    pub fn listen() -> std::io::Result<Signals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Signals {
                term: signal(SignalKind::terminate())?,
                int: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Signals {})
        }
    }

    async fn recv(mut self) {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => {}
                _ = self.int.recv() => {}
            }
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Assembles the server: the bus, every domain's handles and queues, the
/// outbox and the edge's limits. The one place that names every domain.
fn assemble(db: DatabaseConnection, config: Config, bound: std::net::SocketAddr) -> AppState {
    let public_url = config
        .public_url
        .clone()
        .unwrap_or_else(|| format!("http://{bound}"));
    let instance_id = uuid::Uuid::new_v4().simple().to_string();
    let bus = if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        crate::bus::EventBus::postgres(
            instance_id,
            db.get_postgres_connection_pool().clone(),
            config.bus_heartbeat,
        )
    } else {
        crate::bus::EventBus::in_process(instance_id)
    };
    let config = std::sync::Arc::new(config);
    let auth = crate::auth::AuthService::new(db.clone(), &bus);
    let shutdown = tokio_util::sync::CancellationToken::new();
    let writes = crate::db::WriteGate::for_db(&db);
    let mut handles = crate::ops::context::Handles::default();
    crate::conversations::register(&mut handles, &db, &bus, &config, &shutdown);
    crate::notifications::register(&mut handles, &db, &bus, &config, &shutdown);
    // One model for every agent of the server (the room's assistant, fax lines').
    let model = crate::agent::from_config(&config);
    crate::assistant::register(&mut handles, &config, &bus, model.clone());
    handles.insert(auth.clone());
    crate::buyer::register(&mut handles, &db, &config);
    crate::reporting::register(&mut handles, &bus);
    crate::library::register(&mut handles, &config);
    crate::discovery::register(&mut handles, &db, &writes, &bus, &config, &shutdown);
    // One outbox for every queue: webhook deliveries and text messages.
    let mut queues = Vec::new();
    queues.extend(crate::webhooks::register(&config));
    queues.extend(crate::phone::register(
        &mut handles,
        &db,
        &writes,
        &config,
        public_url.trim_end_matches('/'),
        model,
    ));
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
    let limits = std::sync::Arc::new(
        crate::http::rate_limit::RateLimits::new(
            config.rate_limit_per_minute,
            config.auth_rate_limit,
        )
        .self_limited(crate::phone::inbound::PATH)
        .self_limited(crate::media_buys::callbacks::PATH_PREFIX),
    );
    let public_url = public_url.trim_end_matches('/').into();
    let ctx = crate::ops::Ctx {
        db,
        bus,
        config,
        shutdown,
        writes,
        public_url,
        operations: OPERATIONS,
        streams: STREAMS,
        handles: handles.into(),
    };
    crate::media_buys::start(&ctx);
    crate::assistant::start(&ctx);
    crate::phone::fax::start(&ctx);
    crate::library::start(&ctx);
    AppState {
        ctx,
        auth,
        limits,
        bound,
    }
}
