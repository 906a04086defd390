//! Structured logs on stderr (stdout is reserved for the operator contract's
//! output: JSON from `admin`, the `listening on` line, the demo key).

use std::io::IsTerminal;

use actix_web::Error;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use tracing::Span;
use tracing_actix_web::{DefaultRootSpanBuilder, RootSpanBuilder};
use tracing_subscriber::EnvFilter;

/// `AGENTIC_LOG_FORMAT`: human-readable lines, or one JSON object per line.
#[derive(clap::ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    #[default]
    Text,
    Json,
}

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
    fn on_request_start(request: &ServiceRequest) -> Span {
        DefaultRootSpanBuilder::on_request_start(request)
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
