//! Structured logs on stderr (stdout is reserved for the operator contract's
//! output: JSON from `admin`, the `listening on` line, the demo key).

use std::io::IsTerminal;

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header;
use actix_web::{Error, HttpMessage, web};
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RequestId, RootSpanBuilder};
use tracing_subscriber::EnvFilter;

use crate::http::AppState;
use crate::http::client_ip::client_ip;

pub use crate::config::LogFormat;

pub fn init(filter: &str, format: LogFormat) {
    // Migration chatter is noise on the admin CLI; keep it at warn unless asked.
    let spec = if filter.contains("sea_orm_migration") {
        filter.to_string()
    } else {
        format!("{filter},sea_orm_migration=warn")
    };
    let filter = EnvFilter::try_new(spec).unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        // Colour codes only for a person at a terminal, never in files or collectors.
        LogFormat::Text => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
    };
}

/// The request span of `TracingLogger`, plus one event per failed request:
/// server errors at ERROR, client errors at DEBUG (a client's mistake is
/// not the operator's problem; `AGENTIC_LOG=info,agentic_api=debug` shows them).
pub struct RequestSpan;

impl RootSpanBuilder for RequestSpan {
    /// The default span's fields, except `http.client_ip`: the default takes
    /// the left-most `Forwarded`/`X-Forwarded-For` entry from anyone, which
    /// a client can spoof. Ours is the address rate limits use.
    fn on_request_start(request: &ServiceRequest) -> Span {
        let method = request.method().as_str();
        let route = request.match_pattern();
        let route = route.as_deref().unwrap_or("default");
        let request_id = request
            .extensions()
            .get::<RequestId>()
            .map(ToString::to_string)
            .unwrap_or_default();
        let client = request.peer_addr().map(|peer| {
            let state = request.app_data::<web::Data<AppState>>();
            match state {
                Some(state) => {
                    client_ip(&state.config.trusted_proxies, peer.ip(), request.headers())
                }
                None => peer.ip(),
            }
        });
        let info = request.connection_info();
        tracing::info_span!(
            "HTTP request",
            http.method = %method,
            http.route = %route,
            http.flavor = ?request.version(),
            http.scheme = %info.scheme(),
            http.host = %info.host(),
            http.client_ip = %client.map(|ip| ip.to_string()).unwrap_or_default(),
            http.user_agent = %request
                .headers()
                .get(header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
            http.target = %request.uri().path_and_query().map(|p| p.as_str()).unwrap_or(""),
            http.status_code = tracing::field::Empty,
            otel.name = %format!("{method} {route}"),
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            request_id = %request_id,
            exception.message = tracing::field::Empty,
            exception.details = tracing::field::Empty,
        )
    }

    fn on_request_end<B: MessageBody>(span: Span, outcome: &Result<ServiceResponse<B>, Error>) {
        let failure = match outcome {
            Ok(res) => res
                .response()
                .error()
                .map(|e| (res.status(), e.to_string())),
            Err(e) => Some((e.as_response_error().status_code(), e.to_string())),
        };
        DefaultRootSpanBuilder::on_request_end(span, outcome);
        let Some((status, error)) = failure else {
            return;
        };
        let code = status.as_u16();
        if status.is_server_error() {
            tracing::error!(status = code, %error, "request failed");
        } else {
            tracing::debug!(status = code, %error, "request rejected");
        }
    }
}
