//! Prometheus metrics: HTTP requests by route pattern, database pool usage
//! (read at scrape time), open SSE streams, open rooms and bus health.
//!
//! Metrics go through the `metrics` facade to one recorder per process, so
//! any code can record without a handle. Until [`install`] runs, recording is
//! a no-op. `/metrics` is served on a listener of its own ([`serve`],
//! `AGENTIC_METRICS_BIND`, loopback by default), never on the API's, as
//! Prometheus exporters do: it has no authentication.

use std::net::{SocketAddr, TcpListener};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::middleware::Next;
use actix_web::{App, Error, HttpResponse, HttpServer, web};
use anyhow::Context;
use metrics::{counter, describe_counter, describe_gauge, describe_histogram, gauge, histogram};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use sea_orm::{DatabaseBackend, DatabaseConnection};

pub const HTTP_REQUESTS: &str = "agentic_http_requests_total";
pub const HTTP_DURATION: &str = "agentic_http_request_duration_seconds";
pub const SSE_STREAMS_OPEN: &str = "agentic_sse_streams_open";
pub const ROOMS_OPEN: &str = "agentic_rooms_open";
pub const BUS_HEALTHY: &str = "agentic_bus_healthy";
pub const DB_POOL_SIZE: &str = "agentic_db_pool_connections";
pub const DB_POOL_IDLE: &str = "agentic_db_pool_idle_connections";
pub const DB_POOL_MAX: &str = "agentic_db_pool_max_connections";
pub const FAXES_SENT: &str = "agentic_faxes_sent_total";
pub const FAX_STATUSES: &str = "agentic_fax_statuses_total";
pub const FAX_INBOUND_STAGES: &str = "agentic_fax_inbound_stages_total";
pub const FAX_STAGE_SECONDS: &str = "agentic_fax_inbound_stage_seconds";

/// The `route` label of requests that matched no route (bounded cardinality).
pub const UNMATCHED_ROUTE: &str = "unmatched";

const DURATION_BUCKETS: &[f64] = &[
    0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// Inbound fax stages take from milliseconds (rendering) to seconds (a model).
const FAX_STAGE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0, 10.0, 30.0,
];

static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();

/// Installs the process-wide recorder once (later calls, e.g. from a second
/// app in the same process, reuse it). `None` if another recorder owns the
/// process.
pub fn install() -> Option<&'static PrometheusHandle> {
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new()
                .set_buckets_for_metric(Matcher::Full(HTTP_DURATION.into()), DURATION_BUCKETS)
                .and_then(|b| {
                    b.set_buckets_for_metric(
                        Matcher::Full(FAX_STAGE_SECONDS.into()),
                        FAX_STAGE_BUCKETS,
                    )
                })
                .unwrap_or_else(|_| PrometheusBuilder::new());
            let recorder = builder.build_recorder();
            let handle = recorder.handle();
            if let Err(err) = metrics::set_global_recorder(recorder) {
                tracing::warn!(error = %err, "metrics: a recorder is already installed");
                return None;
            }
            describe();
            // Histograms buffer samples until drained; scrapes drain too, but
            // an unscraped process must not grow without bound.
            let upkeep = handle.clone();
            let spawned = std::thread::Builder::new()
                .name("metrics-upkeep".into())
                .spawn(move || {
                    loop {
                        std::thread::sleep(Duration::from_secs(5));
                        upkeep.run_upkeep();
                    }
                });
            if let Err(err) = spawned {
                tracing::warn!(error = %err, "metrics: cannot start the upkeep thread");
            }
            Some(handle)
        })
        .as_ref()
}

fn describe() {
    describe_counter!(
        HTTP_REQUESTS,
        "HTTP requests by route pattern, method and status"
    );
    describe_histogram!(
        HTTP_DURATION,
        metrics::Unit::Seconds,
        "time to the response head (a stream's lifetime is not included)"
    );
    describe_gauge!(SSE_STREAMS_OPEN, "open server-sent event streams by kind");
    describe_gauge!(ROOMS_OPEN, "conversation rooms open on this instance");
    describe_gauge!(
        BUS_HEALTHY,
        "1 while the event bus delivers between instances, else 0"
    );
    describe_gauge!(DB_POOL_SIZE, "database pool connections, idle and in use");
    describe_counter!(
        FAXES_SENT,
        "fax submissions to the carrier by outcome (queued, rejected, not_sent, unknown)"
    );
    describe_counter!(
        FAX_INBOUND_STAGES,
        "inbound fax pipeline stages done, by stage (stored, extracted, replied, rendered, sent, expired) and outcome (ok, failed, retry)"
    );
    describe_histogram!(
        FAX_STAGE_SECONDS,
        metrics::Unit::Seconds,
        "time one inbound fax pipeline stage took"
    );
    describe_counter!(
        FAX_STATUSES,
        "fax statuses recorded from the carrier after queued"
    );
    describe_gauge!(DB_POOL_IDLE, "idle database pool connections");
    describe_gauge!(DB_POOL_MAX, "database pool size limit");
}

/// Counts an open SSE stream while it lives: keep it inside the stream so it
/// drops when the stream ends, however it ends.
#[must_use = "the stream counts as open only while the guard lives"]
pub struct StreamGauge {
    kind: &'static str,
}

pub fn stream_opened(kind: &'static str) -> StreamGauge {
    gauge!(SSE_STREAMS_OPEN, "kind" => kind).increment(1.0);
    StreamGauge { kind }
}

impl Drop for StreamGauge {
    fn drop(&mut self) {
        gauge!(SSE_STREAMS_OPEN, "kind" => self.kind).decrement(1.0);
    }
}

pub fn room_opened() {
    gauge!(ROOMS_OPEN).increment(1.0);
}

pub fn room_closed() {
    gauge!(ROOMS_OPEN).decrement(1.0);
}

pub fn set_rooms_open(n: usize) {
    gauge!(ROOMS_OPEN).set(n as f64);
}

/// A fax submission's outcome (a fixed set of labels).
pub fn fax_submitted(outcome: &'static str) {
    counter!(FAXES_SENT, "outcome" => outcome).increment(1);
}

/// An inbound fax's stage, done (`ok`), given up (`failed`) or to be tried
/// again (`retry`).
pub fn fax_stage(stage: &'static str, outcome: &'static str) {
    counter!(FAX_INBOUND_STAGES, "stage" => stage, "outcome" => outcome).increment(1);
}

/// How long one inbound fax stage took.
pub fn fax_stage_time(stage: &'static str, took: Duration) {
    histogram!(FAX_STAGE_SECONDS, "stage" => stage).record(took.as_secs_f64());
}

/// A fax status the carrier reported (only statuses of `rank`).
pub fn fax_status(status: &str) {
    let label: &'static str = match status {
        "queued" => "queued",
        "media.processed" => "media.processed",
        "sending" => "sending",
        "delivered" => "delivered",
        _ => "failed",
    };
    counter!(FAX_STATUSES, "status" => label).increment(1);
}

pub fn set_bus_healthy(healthy: bool) {
    gauge!(BUS_HEALTHY).set(if healthy { 1.0 } else { 0.0 });
}

/// A fixed set of method labels, so arbitrary methods add no series.
fn method_label(method: &Method) -> &'static str {
    match *method {
        Method::GET => "GET",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::HEAD => "HEAD",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Counts and times every request, labelled by the route *pattern*
/// (`/api/v2/buyer/advertisers/{advertiserId}`), never the raw path.
pub async fn track(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let start = Instant::now();
    let method = method_label(req.method());
    let res = next.call(req).await;
    let (route, status) = match &res {
        Ok(res) => (
            res.request()
                .match_pattern()
                .unwrap_or_else(|| UNMATCHED_ROUTE.into()),
            res.status(),
        ),
        Err(err) => (
            UNMATCHED_ROUTE.into(),
            err.as_response_error().status_code(),
        ),
    };
    let labels = [
        ("method", method.to_string()),
        ("route", route),
        ("status", status.as_str().to_string()),
    ];
    counter!(HTTP_REQUESTS, &labels).increment(1);
    histogram!(HTTP_DURATION, &labels).record(start.elapsed().as_secs_f64());
    res.map(ServiceResponse::map_into_boxed_body)
}

/// Pool usage, read when scraped rather than sampled in the background.
fn record_pool(db: &DatabaseConnection) {
    let (size, idle, max) = match db.get_database_backend() {
        DatabaseBackend::Postgres => {
            let pool = db.get_postgres_connection_pool();
            (
                pool.size(),
                pool.num_idle(),
                pool.options().get_max_connections(),
            )
        }
        DatabaseBackend::Sqlite => {
            let pool = db.get_sqlite_connection_pool();
            (
                pool.size(),
                pool.num_idle(),
                pool.options().get_max_connections(),
            )
        }
        _ => return,
    };
    gauge!(DB_POOL_SIZE).set(f64::from(size));
    gauge!(DB_POOL_IDLE).set(idle as f64);
    gauge!(DB_POOL_MAX).set(f64::from(max));
}

/// `GET /metrics` in the Prometheus text format.
async fn scrape(db: web::Data<DatabaseConnection>) -> HttpResponse {
    let Some(handle) = install() else {
        return HttpResponse::NotFound().finish();
    };
    record_pool(&db);
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4; charset=utf-8")
        .body(handle.render())
}

/// Starts the metrics listener on `AGENTIC_METRICS_BIND` (port 0 picks a
/// free port): `GET /metrics` and nothing else, until the app's shutdown
/// token is cancelled. `None` when metrics are off (`AGENTIC_METRICS=false`
/// or an empty bind) or another recorder owns the process.
pub fn serve(
    enabled: bool,
    bind: &str,
    db: &DatabaseConnection,
    shutdown: &tokio_util::sync::CancellationToken,
) -> anyhow::Result<Option<SocketAddr>> {
    let bind = bind.trim();
    if !enabled || bind.is_empty() || install().is_none() {
        return Ok(None);
    }
    let listener = TcpListener::bind(bind).with_context(|| {
        format!(
            "cannot bind the metrics listener {bind} (AGENTIC_METRICS_BIND; empty turns it off)"
        )
    })?;
    let addr = listener.local_addr()?;
    let db = web::Data::new(db.clone());
    let server = HttpServer::new(move || {
        App::new()
            .app_data(db.clone())
            .route("/metrics", web::get().to(scrape))
    })
    .workers(1)
    .listen(listener)?
    .disable_signals()
    .shutdown_timeout(1)
    .run();
    let handle = server.handle();
    let shutdown = shutdown.clone();
    actix_rt::spawn(server);
    actix_rt::spawn(async move {
        shutdown.cancelled().await;
        handle.stop(false).await;
    });
    Ok(Some(addr))
}
