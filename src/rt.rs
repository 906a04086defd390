//! Database work started by actors and stream bodies runs as a task of the
//! tokio runtime, not inside the actor's (or the connection's) own future:
//! when a worker shuts down, actor futures are dropped outside any runtime
//! context, and a pooled connection dropped there cannot return itself to
//! the pool. A task is dropped inside its runtime, so it can.

use std::future::Future;

/// Runs `work` as a tokio task and waits for it; `None` if the task was
/// cancelled or panicked.
pub async fn detached<T: Send + 'static>(
    work: impl Future<Output = T> + Send + 'static,
) -> Option<T> {
    tokio::spawn(work).await.ok()
}
