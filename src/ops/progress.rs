//! Progress of a long operation, for callers that asked for it (an MCP
//! tool call with a progress token). The transport sets a sink around the
//! call with [`scope`]; an operation reports with [`report`], which does
//! nothing when nobody listens, so operations stay transport-agnostic.

use std::future::Future;
use std::sync::Arc;

/// Receives `(progress, total, message)`.
pub type Sink = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

tokio::task_local! {
    static SINK: Sink;
}

/// Runs `fut` with `sink` receiving its progress reports.
pub async fn scope<F: Future>(sink: Sink, fut: F) -> F::Output {
    SINK.scope(sink, fut).await
}

/// Whether the current call has a listener.
pub fn wanted() -> bool {
    SINK.try_with(|_| ()).is_ok()
}

/// Reports progress to the current call's listener, if any.
pub fn report(progress: f64, total: Option<f64>, message: Option<String>) {
    let _ = SINK.try_with(|sink| sink(progress, total, message));
}
