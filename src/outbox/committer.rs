//! Group commit of attempts: lanes hand their outcomes to the shared
//! [`crate::db::group`] machinery and wait; each batch is one transaction
//! that finishes the jobs (one statement) and applies each handler's
//! effects (one call per queue, [`super::Handler::record_many`], or
//! [`super::Handler::record_late`] for jobs finished meanwhile).

use std::sync::Arc;

use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr};

use super::{Job, Next, Outcome, Queue, store};
use crate::bus::EventBus;
use crate::db::WriteGate;
use crate::db::group::{Batch, GroupCommit};

/// What recording an attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Next(Next),
    /// The job was finished meanwhile (cancelled, or by another holder or
    /// an operator): only [`super::Handler::record_late`] saw the attempt.
    Gone,
}

pub(crate) struct Attempt {
    queue: Arc<Queue>,
    lane: String,
    job: Job,
    outcome: Outcome,
}

pub(crate) struct Attempts {
    bus: EventBus,
}

#[async_trait::async_trait]
impl Batch for Attempts {
    type Item = Attempt;
    type Out = Recorded;
    const NAME: &'static str = "outbox attempts";
    // A lane waits for its attempt's record before its next one, so a
    // failed batch is retried rather than stalling every lane in it.
    const RETRIES: u32 = 3;

    async fn run(
        &self,
        txn: &DatabaseTransaction,
        batch: &[Attempt],
    ) -> Result<Vec<Recorded>, DbErr> {
        // Every job in one statement; those no longer pending stay as they are.
        let finishes: Vec<(i64, store::Finish<'static>)> = batch
            .iter()
            .map(|e| (e.job.id, e.outcome.finish()))
            .collect();
        let finished = store::finish_many(txn, &finishes).await?;
        let mut outs = vec![Recorded::Gone; batch.len()];
        // The handlers' effects, one call per queue (a lane is in a batch at
        // most once: it waits for its attempt's record before the next);
        // attempts whose jobs were finished meanwhile go to `record_late`.
        let mut queues: Vec<(&Arc<Queue>, Vec<usize>, Vec<usize>)> = Vec::new();
        for (i, e) in batch.iter().enumerate() {
            let at = match queues.iter().position(|(q, _, _)| Arc::ptr_eq(q, &e.queue)) {
                Some(at) => at,
                None => {
                    queues.push((&e.queue, Vec::new(), Vec::new()));
                    queues.len() - 1
                }
            };
            if finished.contains(&e.job.id) {
                queues[at].1.push(i);
            } else {
                queues[at].2.push(i);
            }
        }
        let attempts = |idx: &[usize]| -> Vec<(&str, &Job, &Outcome)> {
            idx.iter()
                .map(|&i| (batch[i].lane.as_str(), &batch[i].job, &batch[i].outcome))
                .collect()
        };
        for (queue, idx, late) in queues {
            if !late.is_empty() {
                queue.handler.record_late(txn, &attempts(&late)).await?;
            }
            if idx.is_empty() {
                continue;
            }
            let next = queue.handler.record_many(txn, &attempts(&idx)).await?;
            if next.len() != idx.len() {
                return Err(DbErr::Custom(format!(
                    "outbox queue {} answered {} of {} attempts",
                    queue.handler.queue(),
                    next.len(),
                    idx.len()
                )));
            }
            for (i, n) in idx.into_iter().zip(next) {
                outs[i] = Recorded::Next(n);
            }
        }
        Ok(outs)
    }

    /// What the queues' effects announce once committed (each queue once).
    fn committed(&self, batch: &[Attempt]) {
        let mut seen: Vec<&Arc<Queue>> = Vec::new();
        let mut events = Vec::new();
        for e in batch {
            if !seen.iter().any(|q| Arc::ptr_eq(q, &e.queue)) {
                seen.push(&e.queue);
                events.extend(e.queue.handler.committed());
            }
        }
        if events.is_empty() {
            return;
        }
        let bus = self.bus.clone();
        tokio::spawn(async move {
            for event in events {
                bus.publish(event).await;
            }
        });
    }
}

#[derive(Clone)]
pub struct Committer(GroupCommit<Attempts>);

impl Committer {
    pub(crate) fn start(db: DatabaseConnection, writes: WriteGate, bus: EventBus) -> Self {
        Committer(GroupCommit::start(db, writes, Attempts { bus }))
    }

    /// Records an attempt and its domain effects; returns once committed.
    pub(crate) async fn record(
        &self,
        queue: Arc<Queue>,
        lane: String,
        job: Job,
        outcome: Outcome,
    ) -> anyhow::Result<Recorded> {
        self.0
            .submit(Attempt {
                queue,
                lane,
                job,
                outcome,
            })
            .await
            .map_err(|e| anyhow::anyhow!("cannot record an attempt: {e}"))
    }
}
