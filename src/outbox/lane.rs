//! The actor that works one lane: opens it with the queue's handler, then
//! runs its due jobs one at a time, oldest first, each recorded (through
//! the committer) before the next starts; sleeps until woken by new jobs.
//! It runs under actix's `Supervisor`: an infrastructure failure (database
//! down, handler error) stops it and the supervisor restarts it after a
//! growing pause; a lane with no more reason to run retires for good.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use tokio::sync::{Notify, watch};

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
    /// When the lease runs out unless the sweep renews it (Unix ms).
    pub(crate) lease: Arc<AtomicI64>,
    /// Counts the lane as alive until the actor and its last task are gone.
    pub(crate) _running: Arc<RunGuard>,
}

/// How many lane actors are alive on this instance.
#[derive(Clone, Default)]
pub(crate) struct Running(Arc<watch::Sender<usize>>);

/// One alive lane, counted until dropped.
pub(crate) struct RunGuard(Arc<watch::Sender<usize>>);

impl Running {
    pub(crate) fn enter(&self) -> RunGuard {
        self.0.send_modify(|n| *n += 1);
        RunGuard(self.0.clone())
    }

    pub(crate) fn count(&self) -> usize {
        *self.0.borrow()
    }

    /// Returns once no lane is alive.
    pub(crate) async fn idle(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`: waiting cannot fail.
        let _ = rx.wait_for(|n| *n == 0).await;
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
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
    /// Nothing more to do, ever (or the server is stopping, or the lease
    /// may have passed to another instance).
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

    fn retiring(&self) -> Retiring {
        Retiring {
            outbox: self.ctx.outbox.clone(),
            queue: self.ctx.queue.clone(),
            queue_name: self.ctx.queue_name,
            lane: self.ctx.lane.clone(),
            id: self.ctx.id,
            _running: self.ctx._running.clone(),
        }
    }
}

/// What retiring a lane needs: it is forgotten here and its lease given up.
struct Retiring {
    outbox: Weak<Inner>,
    queue: Arc<Queue>,
    queue_name: &'static str,
    lane: String,
    id: u64,
    _running: Arc<RunGuard>,
}

impl Retiring {
    async fn run(self) {
        forget_lane(&self.queue, &self.lane, Some(self.id));
        let Some(inner) = self.outbox.upgrade() else {
            return;
        };
        // A successor on this instance keeps the lease.
        if self.queue.lanes.lock().contains_key(&self.lane) {
            return;
        }
        let queue = self.queue_name;
        let released = {
            let _turn = inner.writes.enter().await;
            store::release(&inner.db, queue, &self.lane, &inner.instance).await
        };
        if let Err(err) = released {
            tracing::debug!(error = %err, queue, "outbox: cannot release a lane (its lease will run out)");
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
            self.retired = true;
            tokio::spawn(self.retiring().run());
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
            Run {
                queue: self.ctx.queue.clone(),
                name: self.ctx.queue_name,
                lane: self.ctx.lane.clone(),
                wake: self.ctx.wake.clone(),
                shutdown: self.ctx.stop.clone(),
                lease: self.ctx.lease.clone(),
                progress: self.progress.clone(),
            },
        );
        let stop = self.ctx.stop.clone();
        let retiring = self.retiring();
        // The run and, when it retires, the release of its lease are one
        // task: shutdown waits for both.
        let fut = async move {
            if !delay.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = stop.cancelled() => {
                        retiring.run().await;
                        return Some(Ok(End::Retire));
                    }
                }
            }
            crate::rt::detached(async move {
                let end = run.await;
                if matches!(end, Ok(End::Retire)) {
                    retiring.run().await;
                }
                end
            })
            .await
        };
        ctx.spawn(fut.into_actor(self).map(|res, lane, ctx| {
            match res {
                Some(Ok(End::Retire)) => lane.retired = true,
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

/// What one run of a lane works with.
struct Run {
    queue: Arc<Queue>,
    name: &'static str,
    lane: String,
    wake: Arc<Notify>,
    shutdown: tokio_util::sync::CancellationToken,
    lease: Arc<AtomicI64>,
    progress: Arc<AtomicBool>,
}

async fn work(inner: Arc<Inner>, run: Run) -> anyhow::Result<End> {
    let Run {
        queue,
        name,
        lane,
        wake,
        shutdown,
        lease,
        progress,
    } = run;
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
            // A job is taken only while the lease is known to be live: once
            // its renewal is overdue, another instance may work the lane.
            if Utc::now().timestamp_millis() >= lease.load(Ordering::Relaxed) {
                tracing::warn!(
                    queue = name,
                    "outbox: a lane's lease ran out before it was renewed; the lane stops"
                );
                return Ok(End::Retire);
            }
            // An attempt under way finishes even during shutdown (bounded by
            // the handler's own timeout and the shutdown grace), and its
            // outcome is recorded even if the lease was lost meanwhile.
            let outcome = worker.run(&job).await?;
            match committer
                .record(queue.clone(), lane.clone(), job, outcome)
                .await?
            {
                Recorded::Next(Next::Continue) => progress.store(true, Ordering::Relaxed),
                Recorded::Next(Next::Retire) => return Ok(End::Retire),
                // The job was finished by another meanwhile: what was read
                // is stale.
                Recorded::Gone => break,
            }
            if shutdown.is_cancelled() {
                return Ok(End::Retire);
            }
        }
    }
}
