//! Group commit of attempts: lanes hand their outcomes here and wait; each
//! batch (everything waiting once the writer's turn is ours, up to a bound)
//! is one transaction that finishes the jobs (one statement) and applies
//! each handler's effects (one call per queue,
//! [`super::Handler::record_many`]). Under load this turns thousands of
//! small transactions a second into a few hundred, of a few statements each.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{DatabaseConnection, DbErr, TransactionTrait};
use tokio::sync::{mpsc, oneshot};

use super::{Job, Next, Outcome, Queue, store};
use crate::db::{WriteGate, WriteTurn};

/// Most attempts recorded in one transaction.
const MAX_BATCH: usize = 256;

/// What recording an attempt came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    Next(Next),
    /// The job was no longer pending (cancelled meanwhile): nothing recorded.
    Gone,
}

struct Entry {
    queue: Arc<Queue>,
    lane: String,
    job: Job,
    outcome: Outcome,
    reply: oneshot::Sender<Result<Recorded, String>>,
}

#[derive(Clone)]
pub struct Committer {
    tx: mpsc::UnboundedSender<Entry>,
}

impl Committer {
    pub(crate) fn start(db: DatabaseConnection, writes: WriteGate) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<Entry>();
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                // The writer's turn first, then the batch: attempts that
                // arrive while other writers hold it join this commit
                // instead of waiting for the next turn.
                let turn = writes.enter().await;
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(e) => batch.push(e),
                        Err(_) => break,
                    }
                }
                let res = commit_with_retries(&db, &writes, turn, &batch).await;
                match res {
                    Ok(outs) => {
                        for (e, out) in batch.into_iter().zip(outs) {
                            let _ = e.reply.send(Ok(out));
                        }
                    }
                    Err(err) => {
                        let msg = err.to_string();
                        for e in batch {
                            let _ = e.reply.send(Err(msg.clone()));
                        }
                    }
                }
            }
        });
        Committer { tx }
    }

    /// Records an attempt and its domain effects; returns once committed.
    pub(crate) async fn record(
        &self,
        queue: Arc<Queue>,
        lane: String,
        job: Job,
        outcome: Outcome,
    ) -> anyhow::Result<Recorded> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Entry {
                queue,
                lane,
                job,
                outcome,
                reply,
            })
            .map_err(|_| anyhow::anyhow!("outbox committer stopped"))?;
        rx.await
            .map_err(|_| anyhow::anyhow!("outbox committer stopped"))?
            .map_err(|e| anyhow::anyhow!("cannot record an attempt: {e}"))
    }
}

/// Commits with the turn held, and retries a failure a few times (each
/// retry in a new turn).
async fn commit_with_retries(
    db: &DatabaseConnection,
    writes: &WriteGate,
    turn: WriteTurn,
    batch: &[Entry],
) -> Result<Vec<Recorded>, DbErr> {
    let mut pause = Duration::from_millis(50);
    let mut tries = 0;
    let mut turn = Some(turn);
    loop {
        let held = match turn.take() {
            Some(t) => t,
            None => writes.enter().await,
        };
        match commit(db, held, batch).await {
            Ok(outs) => return Ok(outs),
            Err(err) if tries < 3 => {
                tracing::warn!(error = %err, "outbox: cannot record attempts; retrying");
                tries += 1;
                tokio::time::sleep(pause).await;
                pause *= 4;
            }
            Err(err) => return Err(err),
        }
    }
}

async fn commit(
    db: &DatabaseConnection,
    _turn: WriteTurn,
    batch: &[Entry],
) -> Result<Vec<Recorded>, DbErr> {
    let txn = db.begin().await?;
    // Every job in one statement; those no longer pending stay as they are.
    let finishes: Vec<(i64, store::Finish<'static>)> = batch
        .iter()
        .map(|e| (e.job.id, e.outcome.finish()))
        .collect();
    let finished = store::finish_many(&txn, &finishes).await?;
    let mut outs = vec![Recorded::Gone; batch.len()];
    // The handlers' effects, one call per queue (a lane is in a batch at
    // most once: it waits for its attempt's record before the next).
    let mut queues: Vec<(&Arc<Queue>, Vec<usize>)> = Vec::new();
    for (i, e) in batch.iter().enumerate() {
        if !finished.contains(&e.job.id) {
            continue;
        }
        match queues.iter_mut().find(|(q, _)| Arc::ptr_eq(q, &e.queue)) {
            Some((_, idx)) => idx.push(i),
            None => queues.push((&e.queue, vec![i])),
        }
    }
    for (queue, idx) in queues {
        let attempts: Vec<(&str, &Job, &Outcome)> = idx
            .iter()
            .map(|&i| (batch[i].lane.as_str(), &batch[i].job, &batch[i].outcome))
            .collect();
        let next = queue.handler.record_many(&txn, &attempts).await?;
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
    txn.commit().await?;
    Ok(outs)
}
