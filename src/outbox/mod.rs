//! Durable background work, built once for every queue: webhook
//! deliveries now, text messages and faxes next.
//!
//! - **Jobs** are rows written with [`store::enqueue`] on the caller's
//!   connection, inside the transaction of the change that causes them (a
//!   transactional outbox): a job exists exactly when its cause committed.
//!   After the commit the caller [`announce`]s the lanes it touched on the
//!   bus, which wakes their workers here and on other instances.
//! - A **lane** (a webhook subscription, a phone line) is worked by one
//!   supervised actor ([`lane::Lane`], under actix's `Supervisor`) on one
//!   instance at a time: the instance holds a lease on it
//!   ([`store::claim`]), renews it while alive, and gives it up when it
//!   stops; a lane whose holder died is taken over once the lease runs out.
//!   The actor runs its lane's jobs one at a time, oldest first.
//! - A **queue** plugs in a [`Handler`]: how to open a lane, run one job, and
//!   record the domain side of an attempt. Each attempt is recorded in one
//!   transaction (job state plus the handler's effects), batched across
//!   lanes by the [`committer`], before the lane runs its next job.
//! - The **sweep** (at start, then periodically) restores lanes: those with
//!   due jobs and the handler's standing lanes, renews leases, and prunes
//!   finished jobs after the queue's retention.
//! - **Shutdown** ([`Outbox::stop`]): lanes take no new job, finish the
//!   attempt under way, record it and give their leases up; the process
//!   waits for that, within a grace.
//! - **Fencing**: a lane takes a job only while its lease is known to be
//!   live, but an outcome it learned is recorded even if the lease passed
//!   to another meanwhile (the job's record is fenced on its state, the
//!   handler's on its subject's: see [`store::finish_many`] and
//!   [`Handler::record_late`]), so a slow holder's carrier id or receiver
//!   answer is never dropped, and never moves anything backwards.
//!
//! A crash between an attempt and its record means the attempt runs again
//! after the restart (at least once); nothing committed is ever lost.

pub mod committer;
pub mod lane;
pub mod store;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr};
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::bus::{BusEvent, BusSink, EventBus};
use crate::db::WriteGate;

pub use entity::outbox_job::Model as Job;
pub use store::NewJob;

/// Bus topic of "these lanes have new jobs".
pub const TOPIC: &str = "outbox.ready";

/// What an attempt came to.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Finished successfully.
    Done(serde_json::Value),
    /// Finished unsuccessfully, for good.
    Failed(serde_json::Value),
    /// Not attempted and never will be (its subject is gone).
    Skipped(serde_json::Value),
    /// Try again after a while.
    Retry {
        after: Duration,
        result: serde_json::Value,
    },
    /// The outcome is unknown; an operator decides.
    Held(serde_json::Value),
}

impl Outcome {
    fn finish(&self) -> store::Finish<'static> {
        let (state, result, after) = match self {
            Outcome::Done(r) => (store::DONE, r, None),
            Outcome::Failed(r) => (store::FAILED, r, None),
            Outcome::Skipped(r) => (store::CANCELLED, r, None),
            Outcome::Held(r) => (store::HELD, r, None),
            Outcome::Retry { after, result } => (store::PENDING, result, Some(*after)),
        };
        store::Finish {
            state,
            result: Some(result.to_string()),
            available_at: after
                .map(|a| Utc::now() + chrono::Duration::from_std(a).unwrap_or_default()),
        }
    }
}

/// What recording an attempt says about its lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Go on with the next job.
    Continue,
    /// The lane has no more reason to run (its subscription failed or is
    /// gone): stop, and do not restore it.
    Retire,
}

/// Runs one lane's jobs; created by [`Handler::open`] when a lane starts.
#[async_trait::async_trait]
pub trait LaneWorker: Send {
    /// One attempt. `Err` is an infrastructure failure (the job is not
    /// recorded and runs again after the lane's supervised restart).
    async fn run(&mut self, job: &Job) -> anyhow::Result<Outcome>;
}

/// A queue's behaviour.
#[async_trait::async_trait]
pub trait Handler: Send + Sync + 'static {
    fn queue(&self) -> &'static str;

    /// Lanes that keep a worker even without jobs.
    async fn standing_lanes(&self, _db: &DatabaseConnection) -> Result<Vec<String>, DbErr> {
        Ok(Vec::new())
    }

    /// Prepares to work `lane`; `None` when the lane has no reason to run,
    /// and its pending jobs are cancelled.
    async fn open(
        &self,
        db: &DatabaseConnection,
        lane: &str,
    ) -> anyhow::Result<Option<Box<dyn LaneWorker>>>;

    /// The domain side of an attempt, in the transaction that records it.
    async fn record(
        &self,
        txn: &DatabaseTransaction,
        lane: &str,
        job: &Job,
        outcome: &Outcome,
    ) -> Result<Next, DbErr>;

    /// What attempts learned whose jobs were finished meanwhile by another
    /// (a holder that lost its lease while its attempt ran, and whose job
    /// the new holder or an operator finished); the jobs stay as they are.
    /// Whatever is written must be fenced on its subject's state, so it
    /// never moves it backwards. By default nothing.
    async fn record_late(
        &self,
        _txn: &DatabaseTransaction,
        _attempts: &[(&str, &Job, &Outcome)],
    ) -> Result<(), DbErr> {
        Ok(())
    }

    /// [`Handler::record`] for the attempts of several lanes (one each)
    /// recorded in one transaction, answered in the same order; by default
    /// one by one.
    async fn record_many(
        &self,
        txn: &DatabaseTransaction,
        attempts: &[(&str, &Job, &Outcome)],
    ) -> Result<Vec<Next>, DbErr> {
        let mut next = Vec::with_capacity(attempts.len());
        for (lane, job, outcome) in attempts {
            next.push(self.record(txn, lane, job, outcome).await?);
        }
        Ok(next)
    }

    /// Finished jobs are kept this long (the delivery log), then pruned.
    fn retention(&self) -> Duration {
        Duration::from_secs(7 * 24 * 3600)
    }

    /// Runs after finished jobs were pruned (to prune what only they used).
    async fn pruned(&self, _db: &DatabaseConnection) -> Result<(), DbErr> {
        Ok(())
    }

    /// Bus events about what this queue's records wrote, taken once their
    /// batch committed (persist first, then broadcast). By default none.
    fn committed(&self) -> Vec<BusEvent> {
        Vec::new()
    }
}

/// Timings of leases and the sweep.
#[derive(Debug, Clone)]
pub struct OutboxTuning {
    /// How long a lane's lease lasts unless renewed; a dead holder's lanes
    /// are taken over after this.
    pub lease: Duration,
    /// How often leases are renewed and lanes restored.
    pub sweep: Duration,
    /// Jobs read at once from a lane.
    pub batch: u64,
}

impl Default for OutboxTuning {
    fn default() -> Self {
        OutboxTuning {
            lease: Duration::from_secs(30),
            sweep: Duration::from_secs(5),
            batch: 32,
        }
    }
}

/// The lanes a commit gave new jobs, to [`announce`] once it committed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Kicks(pub Vec<(String, String)>);

impl Kicks {
    pub fn add(&mut self, queue: &str, lane: &str) {
        self.0.push((queue.to_string(), lane.to_string()));
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds another commit's lanes (each lane once).
    pub fn merge(&mut self, other: Kicks) {
        for k in other.0 {
            if !self.0.contains(&k) {
                self.0.push(k);
            }
        }
    }
}

/// Tells every instance (this one first) that lanes have new jobs.
pub fn announce(bus: &EventBus, kicks: &Kicks) {
    if kicks.is_empty() {
        return;
    }
    let event = BusEvent::new(
        TOPIC,
        "",
        bus.instance_id().to_string(),
        serde_json::json!({ "lanes": kicks.0 }),
    );
    let bus = bus.clone();
    tokio::spawn(async move { bus.publish(event).await });
}

/// This instance's outbox: the queues and their live lanes.
#[derive(Clone)]
pub struct Outbox {
    inner: Arc<Inner>,
    /// Subscribed to [`TOPIC`] for as long as the outbox lives.
    _sink: Arc<dyn BusSink>,
}

pub(crate) struct Inner {
    pub(crate) db: DatabaseConnection,
    pub(crate) writes: WriteGate,
    pub(crate) tuning: OutboxTuning,
    /// This process, as a lease owner.
    pub(crate) instance: String,
    pub(crate) queues: HashMap<&'static str, Arc<Queue>>,
    /// The server's shutdown, or [`Outbox::stop`].
    pub(crate) shutdown: CancellationToken,
    /// The lane actors alive, so shutdown can wait for them.
    pub(crate) running: lane::Running,
    pub(crate) committer: committer::Committer,
    arbiter: ArbiterHandle,
}

/// One queue: its handler and the lanes this instance works.
pub(crate) struct Queue {
    pub(crate) handler: Arc<dyn Handler>,
    lanes: parking_lot::Mutex<HashMap<String, LiveLane>>,
}

impl Queue {
    pub(crate) fn new(handler: Arc<dyn Handler>) -> Self {
        Queue {
            handler,
            lanes: Default::default(),
        }
    }
}

struct LiveLane {
    /// Tells this actor from a later one of the same lane.
    id: u64,
    _addr: Addr<lane::Lane>,
    wake: Arc<Notify>,
    /// Ends the lane's run (it lost its lease or its reason to run).
    stop: CancellationToken,
    /// When the lease runs out unless renewed (Unix milliseconds).
    lease: Arc<AtomicI64>,
}

impl Outbox {
    /// Starts the outbox with its queues: a thread of its own for the
    /// lanes, the committer, and the sweep (which restores lanes at once).
    pub fn start(
        db: DatabaseConnection,
        writes: WriteGate,
        bus: &EventBus,
        tuning: OutboxTuning,
        handlers: Vec<Arc<dyn Handler>>,
        shutdown: CancellationToken,
    ) -> Self {
        // Its own token, so the outbox can be stopped alone.
        let shutdown = shutdown.child_token();
        let arbiter = Arbiter::new().handle();
        let committer = committer::Committer::start(db.clone(), writes.clone(), bus.clone());
        let queues = handlers
            .into_iter()
            .map(|h| (h.queue(), Arc::new(Queue::new(h))))
            .collect();
        let inner = Arc::new(Inner {
            db,
            writes,
            tuning,
            instance: format!("{}-outbox", bus.instance_id()),
            queues,
            shutdown: shutdown.clone(),
            running: lane::Running::default(),
            committer,
            arbiter: arbiter.clone(),
        });
        let weak: Weak<Inner> = Arc::downgrade(&inner);
        let sink: Arc<dyn BusSink> = Arc::new(Sink {
            inner: weak.clone(),
            origin: bus.instance_id().to_string(),
        });
        bus.subscribe(TOPIC, Arc::downgrade(&sink));
        arbiter.spawn(sweep(weak, shutdown));
        Outbox { inner, _sink: sink }
    }

    /// Runs until no lane of `queue` has a due job left: restores lanes,
    /// wakes them and waits (for tests and operators).
    pub async fn drain(&self, queue: &str, limit: Duration) -> Result<(), DbErr> {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let due = store::due_lanes(&self.inner.db, queue, Utc::now(), 1000).await?;
            if due.is_empty() {
                return Ok(());
            }
            for lane in due {
                ensure_lane(&self.inner, queue, &lane).await?;
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(DbErr::Custom(format!(
                    "outbox queue {queue} did not drain within {limit:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The lanes of `queue` this instance works now.
    pub fn local_lanes(&self, queue: &str) -> Vec<String> {
        self.inner
            .queues
            .get(queue)
            .map(|q| q.lanes.lock().keys().cloned().collect())
            .unwrap_or_default()
    }

    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    /// Stops the outbox (the server's shutdown does too) and waits at most
    /// `grace` for its lanes: each takes no new job, finishes the attempt
    /// under way, records it and gives its lease up. Returns how many lanes
    /// were still busy when the grace ran out (their attempts run again, or
    /// are held, after the next start).
    pub async fn stop(&self, grace: Duration) -> usize {
        self.inner.shutdown.cancel();
        match tokio::time::timeout(grace, self.inner.running.idle()).await {
            Ok(()) => 0,
            Err(_) => self.inner.running.count(),
        }
    }
}

/// Wakes the lane if this instance works it; otherwise tries to take it
/// and starts its actor.
pub(crate) async fn ensure_lane(inner: &Arc<Inner>, queue: &str, lane: &str) -> Result<(), DbErr> {
    let Some(q) = inner.queues.get(queue) else {
        return Ok(());
    };
    if let Some(live) = q.lanes.lock().get(lane) {
        live.wake.notify_one();
        return Ok(());
    }
    if inner.shutdown.is_cancelled() {
        return Ok(());
    }
    let now = Utc::now();
    let until = now + chrono::Duration::from_std(inner.tuning.lease).unwrap_or_default();
    // A write like any other: through the gate, or SQLite's busy handler
    // makes it wait in 100 ms steps behind the gated writers.
    let claimed = {
        let _turn = inner.writes.enter().await;
        store::claim(&inner.db, queue, lane, &inner.instance, now, until).await?
    };
    if !claimed {
        return Ok(());
    }
    let mut lanes = q.lanes.lock();
    if let Some(live) = lanes.get(lane) {
        live.wake.notify_one();
        return Ok(());
    }
    let wake = Arc::new(Notify::new());
    let stop = inner.shutdown.child_token();
    let lease = Arc::new(AtomicI64::new(until.timestamp_millis()));
    static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ctx = lane::LaneCtx {
        id,
        outbox: Arc::downgrade(inner),
        queue: q.clone(),
        queue_name: q.handler.queue(),
        lane: lane.to_string(),
        wake: wake.clone(),
        stop: stop.clone(),
        lease: lease.clone(),
        _running: Arc::new(inner.running.enter()),
    };
    let addr = Supervisor::start_in_arbiter(&inner.arbiter, move |_| lane::Lane::new(ctx));
    lanes.insert(
        lane.to_string(),
        LiveLane {
            id,
            _addr: addr,
            wake,
            stop,
            lease,
        },
    );
    Ok(())
}

/// Forgets a lane this instance stopped working (its actor then stops for
/// good: the supervisor restarts only actors someone still holds).
/// `id` names the actor, so a stopping actor never forgets its successor.
pub(crate) fn forget_lane(q: &Queue, lane: &str, id: Option<u64>) {
    let mut lanes = q.lanes.lock();
    if lanes
        .get(lane)
        .is_some_and(|live| id.is_none_or(|id| live.id == id))
        && let Some(live) = lanes.remove(lane)
    {
        live.stop.cancel();
    }
}

struct Sink {
    inner: Weak<Inner>,
    origin: String,
}

impl BusSink for Sink {
    fn deliver(&self, event: &BusEvent) {
        let Some(inner) = self.inner.upgrade() else {
            return;
        };
        let Ok(lanes) =
            serde_json::from_value::<Vec<(String, String)>>(event.payload["lanes"].clone())
        else {
            return;
        };
        // Every instance wakes the lanes it works; only the instance whose
        // commit made the jobs tries to take a lane nobody works (the
        // others would only race it; the sweep covers a lost event).
        let mine = event.key == self.origin;
        let arbiter = inner.arbiter.clone();
        arbiter.spawn(async move {
            for (queue, lane) in lanes {
                let Some(q) = inner.queues.get(queue.as_str()) else {
                    continue;
                };
                if let Some(live) = q.lanes.lock().get(&lane) {
                    live.wake.notify_one();
                    continue;
                }
                if mine && let Err(err) = ensure_lane(&inner, &queue, &lane).await {
                    tracing::warn!(error = %err, %queue, "outbox: cannot take a lane");
                }
            }
        });
    }

    fn transport_lost(&self) {
        // The sweep restores whatever an event would have woken.
    }
}

/// Restores lanes at start and then periodically: renews this instance's
/// leases (stopping lanes whose lease was lost), then takes lanes with due
/// jobs and standing lanes nobody works, and prunes finished jobs. Once
/// the outbox stops, it only renews the leases of lanes still finishing an
/// attempt, until none is left.
async fn sweep(weak: Weak<Inner>, shutdown: CancellationToken) {
    let mut round: u64 = 0;
    loop {
        let Some(inner) = weak.upgrade() else { return };
        let every = inner.tuning.sweep;
        let stopping = shutdown.is_cancelled();
        // Every queue's leases first, so a slow sweep of one queue does not
        // let another's run out.
        for (name, q) in &inner.queues {
            if let Err(err) = renew(&inner, name, q).await {
                tracing::warn!(error = %err, queue = name, "outbox: cannot renew leases; retrying");
            }
        }
        if stopping {
            if inner.running.count() == 0 {
                return;
            }
        } else {
            for (name, q) in &inner.queues {
                if let Err(err) = sweep_queue(&inner, name, q, round).await {
                    tracing::warn!(error = %err, queue = name, "outbox: sweep failed; retrying");
                }
            }
        }
        drop(inner);
        round += 1;
        tokio::select! {
            _ = shutdown.cancelled(), if !stopping => {}
            _ = tokio::time::sleep(every) => {}
        }
    }
}

/// Renews this instance's leases on its lanes; a lane whose lease was lost
/// stops (after the attempt under way, which is still recorded).
async fn renew(inner: &Arc<Inner>, name: &'static str, q: &Arc<Queue>) -> Result<(), DbErr> {
    let local: Vec<String> = q.lanes.lock().keys().cloned().collect();
    if local.is_empty() {
        return Ok(());
    }
    let until = Utc::now() + chrono::Duration::from_std(inner.tuning.lease).unwrap_or_default();
    let held = {
        let _turn = inner.writes.enter().await;
        store::renew(&inner.db, name, &inner.instance, &local, until).await?
    };
    let held: std::collections::HashSet<String> = held.into_iter().collect();
    {
        let lanes = q.lanes.lock();
        for lane in held.iter().filter_map(|l| lanes.get(l)) {
            lane.lease
                .store(until.timestamp_millis(), Ordering::Relaxed);
        }
    }
    for lane in local.iter().filter(|l| !held.contains(*l)) {
        tracing::warn!(
            queue = name,
            "outbox: lost the lease on a lane; another instance works it"
        );
        forget_lane(q, lane, None);
    }
    Ok(())
}

async fn sweep_queue(
    inner: &Arc<Inner>,
    name: &'static str,
    q: &Arc<Queue>,
    round: u64,
) -> Result<(), DbErr> {
    let local: Vec<String> = q.lanes.lock().keys().cloned().collect();
    let now = Utc::now();
    let mut wanted = store::due_lanes(&inner.db, name, now, 10_000).await?;
    wanted.extend(q.handler.standing_lanes(&inner.db).await?);
    wanted.sort();
    wanted.dedup();
    // Lanes another instance holds are left alone without a write.
    let others: std::collections::HashSet<String> =
        store::held_by_others(&inner.db, name, &inner.instance, now)
            .await?
            .into_iter()
            .collect();
    for lane in wanted.iter().filter(|l| !others.contains(*l)) {
        ensure_lane(inner, name, lane).await?;
    }
    // Lanes with neither jobs nor a standing reason stop (a deleted
    // subscription's, say), and give their lease up.
    let wanted: std::collections::HashSet<&String> = wanted.iter().collect();
    for lane in local.iter().filter(|l| !wanted.contains(l)) {
        forget_lane(q, lane, None);
        let _turn = inner.writes.enter().await;
        store::release(&inner.db, name, lane, &inner.instance).await?;
    }
    // Pruning is not urgent: about once a minute with the default sweep.
    if round.is_multiple_of(12) {
        let before =
            Utc::now() - chrono::Duration::from_std(q.handler.retention()).unwrap_or_default();
        let _turn = inner.writes.enter().await;
        let gone = store::prune(&inner.db, name, before).await?;
        if gone > 0 {
            tracing::debug!(queue = name, gone, "outbox: pruned finished jobs");
        }
        q.handler.pruned(&inner.db).await?;
    }
    Ok(())
}
