//! The actor that works one lane: opens it with the queue's handler, then
//! runs its due jobs one at a time, oldest first, each recorded (through
//! the committer) before the next starts; sleeps until woken by new jobs.
//! It runs under actix's `Supervisor`: an infrastructure failure (database
//! down, handler error) stops it and the supervisor restarts it after a
//! growing pause; a lane with no more reason to run retires for good.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use tokio::sync::Notify;

use super::committer::Recorded;
use super::{Inner, Next, Queue, forget_lane, store};

/// What a lane actor is given.
pub(crate) struct LaneCtx {
    pub(crate) id: u64,
    pub(crate) outbox: Weak<Inner>,
    pub(crate) queue: Arc<Queue>,
    pub(crate) queue_name: &'static str,
    pub(crate) lane: String,
    pub(crate) wake: Arc<Notify>,
    /// Cancelled when the lane must stop (lease lost, no reason to run,
    /// server shutting down).
    pub(crate) stop: tokio_util::sync::CancellationToken,
}

pub struct Lane {
    ctx: LaneCtx,
    restarts: u32,
    /// A job was recorded since the last (re)start: the next restart
    /// starts the backoff over.
    progress: Arc<AtomicBool>,
    retired: bool,
}

/// How a lane's run ended.
enum End {
    /// Nothing more to do, ever (or the server is stopping).
    Retire,
}

impl Lane {
    pub(crate) fn new(ctx: LaneCtx) -> Self {
        Lane {
            ctx,
            restarts: 0,
            progress: Arc::new(AtomicBool::new(false)),
            retired: false,
        }
    }

    /// Pause before a restart: 100 ms doubling up to 30 s.
    fn backoff(&self) -> Duration {
        match self.restarts {
            0 => Duration::ZERO,
            n => Duration::from_millis(100u64.saturating_mul(1 << n.min(9)))
                .min(Duration::from_secs(30)),
        }
    }

    fn retire(&mut self) {
        self.retired = true;
        forget_lane(&self.ctx.queue, &self.ctx.lane, Some(self.ctx.id));
        if let Some(inner) = self.ctx.outbox.upgrade() {
            let (queue, lane) = (self.ctx.queue_name, self.ctx.lane.clone());
            let q = self.ctx.queue.clone();
            tokio::spawn(async move {
                // A successor on this instance keeps the lease.
                if q.lanes.lock().contains_key(&lane) {
                    return;
                }
                let released = {
                    let _turn = inner.writes.enter().await;
                    store::release(&inner.db, queue, &lane, &inner.instance).await
                };
                if let Err(err) = released {
                    tracing::debug!(error = %err, queue, "outbox: cannot release a lane (its lease will run out)");
                }
            });
        }
    }
}

impl Actor for Lane {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        if self.retired {
            ctx.stop();
            return;
        }
        if self.ctx.stop.is_cancelled() {
            self.retire();
            ctx.stop();
            return;
        }
        let Some(inner) = self.ctx.outbox.upgrade() else {
            ctx.stop();
            return;
        };
        let delay = self.backoff();
        let run = work(
            inner,
            self.ctx.queue.clone(),
            self.ctx.queue_name,
            self.ctx.lane.clone(),
            self.ctx.wake.clone(),
            self.ctx.stop.clone(),
            self.progress.clone(),
        );
        let stop = self.ctx.stop.clone();
        let fut = async move {
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = stop.cancelled() => return Some(Ok(End::Retire)),
                }
            }
            crate::rt::detached(run).await
        };
        ctx.spawn(fut.into_actor(self).map(|res, lane, ctx| {
            match res {
                Some(Ok(End::Retire)) => lane.retire(),
                Some(Err(err)) => {
                    tracing::warn!(error = %err, queue = lane.ctx.queue_name, "outbox: lane failed; restarting it");
                }
                None => tracing::error!(queue = lane.ctx.queue_name, "outbox: lane panicked; restarting it"),
            }
            ctx.stop();
        }));
    }
}

impl Supervised for Lane {
    fn restarting(&mut self, _ctx: &mut Context<Self>) {
        if self.progress.swap(false, Ordering::Relaxed) {
            self.restarts = 1;
        } else {
            self.restarts = self.restarts.saturating_add(1);
        }
    }
}

async fn work(
    inner: Arc<Inner>,
    queue: Arc<Queue>,
    name: &'static str,
    lane: String,
    wake: Arc<Notify>,
    shutdown: tokio_util::sync::CancellationToken,
    progress: Arc<AtomicBool>,
) -> anyhow::Result<End> {
    let db = inner.db.clone();
    let writes = inner.writes.clone();
    let committer = inner.committer.clone();
    let batch = inner.tuning.batch;
    // The lane does not keep the outbox alive.
    drop(inner);
    let Some(mut worker) = queue.handler.open(&db, &lane).await? else {
        let _turn = writes.enter().await;
        store::cancel_lane(&db, name, &lane, "closed").await?;
        return Ok(End::Retire);
    };
    loop {
        if shutdown.is_cancelled() {
            return Ok(End::Retire);
        }
        let jobs = store::next_jobs(&db, name, &lane, Utc::now(), batch).await?;
        if jobs.is_empty() {
            tokio::select! {
                _ = wake.notified() => {}
                _ = shutdown.cancelled() => return Ok(End::Retire),
            }
            continue;
        }
        for job in jobs {
            // An attempt under way finishes even during shutdown (bounded by
            // the handler's own timeout), so it is recorded.
            let outcome = worker.run(&job).await?;
            match committer
                .record(queue.clone(), lane.clone(), job, outcome)
                .await?
            {
                Recorded::Next(Next::Continue) => progress.store(true, Ordering::Relaxed),
                Recorded::Next(Next::Retire) => return Ok(End::Retire),
                // The job was cancelled meanwhile: what was read is stale.
                Recorded::Gone => break,
            }
            if shutdown.is_cancelled() {
                return Ok(End::Retire);
            }
        }
    }
}
