//! Group commit of attempts: lanes hand their outcomes here and wait; each
//! batch (everything waiting, up to a bound) is one transaction that
//! finishes the jobs and applies each handler's effects. Under load this
//! turns thousands of small transactions a second into a few hundred.

use std::sync::Arc;
use std::time::Duration;

use sea_orm::{DatabaseConnection, DbErr, TransactionTrait};
use tokio::sync::{mpsc, oneshot};

use super::{Job, Next, Outcome, Queue, store};
use crate::db::WriteGate;

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
                let mut batch = vec![first];
                while batch.len() < MAX_BATCH {
                    match rx.try_recv() {
                        Ok(e) => batch.push(e),
                        Err(_) => break,
                    }
                }
                let res = commit_with_retries(&db, &writes, &batch).await;
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

async fn commit_with_retries(
    db: &DatabaseConnection,
    writes: &WriteGate,
    batch: &[Entry],
) -> Result<Vec<Recorded>, DbErr> {
    let mut pause = Duration::from_millis(50);
    let mut tries = 0;
    loop {
        match commit(db, writes, batch).await {
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
    writes: &WriteGate,
    batch: &[Entry],
) -> Result<Vec<Recorded>, DbErr> {
    let _turn = writes.enter().await;
    let txn = db.begin().await?;
    let mut outs = Vec::with_capacity(batch.len());
    for e in batch {
        if !store::finish(&txn, e.job.id, &e.outcome.finish()).await? {
            outs.push(Recorded::Gone);
            continue;
        }
        let next = e
            .queue
            .handler
            .record(&txn, &e.lane, &e.job, &e.outcome)
            .await?;
        outs.push(Recorded::Next(next));
    }
    txn.commit().await?;
    Ok(outs)
}
