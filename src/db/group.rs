//! Group commit: callers hand in work and wait; each batch (everything
//! waiting once the writer's turn is ours, up to a bound) runs in one write
//! transaction with one commit. On SQLite with `synchronous=FULL` a commit
//! is an fsync, so under load this turns thousands of small transactions a
//! second into a few hundred. The outbox records attempts this way, and
//! the phone domain accepts messages this way.

use std::time::Duration;

use sea_orm::{DatabaseConnection, DatabaseTransaction, DbErr};
use tokio::sync::{mpsc, oneshot};

use super::{WriteGate, WriteTurn};

/// One kind of batched work: what runs inside the shared transaction.
#[async_trait::async_trait]
pub trait Batch: Send + Sync + 'static {
    type Item: Send + Sync + 'static;
    type Out: Send + 'static;

    /// Names the batch in logs.
    const NAME: &'static str;
    /// Most items in one transaction.
    const MAX: usize = 256;
    /// How often a failed batch is tried again (each time in a new turn).
    const RETRIES: u32 = 0;

    /// Runs every item in `txn`, one output per item, in order. An error
    /// fails the whole batch (nothing of it is committed); an item that
    /// must fail alone says so in its output, having undone its own writes
    /// (a savepoint: [`item`]).
    async fn run(
        &self,
        txn: &DatabaseTransaction,
        items: &[Self::Item],
    ) -> Result<Vec<Self::Out>, DbErr>;

    /// Runs once the batch committed, before its items are answered (and
    /// before the next batch runs): what must follow the commit, such as
    /// bus events about what it wrote.
    fn committed(&self, _items: &[Self::Item]) {}
}

/// Why a batch was not committed (the database's own message).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct NotCommitted(pub String);

type Reply<B> = oneshot::Sender<Result<<B as Batch>::Out, NotCommitted>>;

/// The queue in front of one batch kind's committing task.
pub struct GroupCommit<B: Batch> {
    tx: mpsc::UnboundedSender<(B::Item, Reply<B>)>,
}

impl<B: Batch> Clone for GroupCommit<B> {
    fn clone(&self) -> Self {
        GroupCommit {
            tx: self.tx.clone(),
        }
    }
}

impl<B: Batch> GroupCommit<B> {
    /// Starts the committing task; it ends when every handle is dropped.
    pub fn start(db: DatabaseConnection, writes: WriteGate, batch: B) -> Self {
        let (tx, mut rx) = mpsc::unbounded_channel::<(B::Item, Reply<B>)>();
        tokio::spawn(async move {
            while let Some(first) = rx.recv().await {
                // The writer's turn first, then the batch: work that
                // arrives while other writers hold the turn joins this
                // commit instead of waiting for the next one.
                let turn = writes.enter().await;
                let mut entries = vec![first];
                while entries.len() < B::MAX {
                    match rx.try_recv() {
                        Ok(e) => entries.push(e),
                        Err(_) => break,
                    }
                }
                let (items, replies): (Vec<_>, Vec<_>) = entries.into_iter().unzip();
                match commit_with_retries(&db, &writes, turn, &batch, &items).await {
                    Ok(outs) => {
                        batch.committed(&items);
                        for (reply, out) in replies.into_iter().zip(outs) {
                            let _ = reply.send(Ok(out));
                        }
                    }
                    Err(err) => {
                        let err = NotCommitted(err.to_string());
                        for reply in replies {
                            let _ = reply.send(Err(err.clone()));
                        }
                    }
                }
            }
        });
        GroupCommit { tx }
    }

    /// Runs `item` in the next batch; returns once that batch committed.
    pub async fn submit(&self, item: B::Item) -> Result<B::Out, NotCommitted> {
        let stopped = || NotCommitted(format!("{} committer stopped", B::NAME));
        let (reply, rx) = oneshot::channel();
        self.tx.send((item, reply)).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

async fn commit_with_retries<B: Batch>(
    db: &DatabaseConnection,
    writes: &WriteGate,
    turn: WriteTurn,
    batch: &B,
    items: &[B::Item],
) -> Result<Vec<B::Out>, DbErr> {
    let mut pause = Duration::from_millis(50);
    let mut tries = 0;
    let mut turn = Some(turn);
    loop {
        let held = match turn.take() {
            Some(t) => t,
            None => writes.enter().await,
        };
        match commit(db, held, batch, items).await {
            Ok(outs) => return Ok(outs),
            Err(err) if tries < B::RETRIES => {
                tracing::warn!(error = %err, batch = B::NAME, "cannot commit a batch; retrying");
                tries += 1;
                tokio::time::sleep(pause).await;
                pause *= 4;
            }
            Err(err) => {
                tracing::warn!(error = %err, batch = B::NAME, size = items.len(), "batch not committed");
                return Err(err);
            }
        }
    }
}

async fn commit<B: Batch>(
    db: &DatabaseConnection,
    _turn: WriteTurn,
    batch: &B,
    items: &[B::Item],
) -> Result<Vec<B::Out>, DbErr> {
    let txn = super::begin_write(db).await?;
    let outs = batch.run(&txn, items).await?;
    if outs.len() != items.len() {
        return Err(DbErr::Custom(format!(
            "{} answered {} of {} items",
            B::NAME,
            outs.len(),
            items.len()
        )));
    }
    txn.commit().await?;
    Ok(outs)
}

/// Runs one item of a batch in a savepoint: its writes are kept when it
/// returns `Ok`, and undone (the batch's other items unaffected) when it
/// returns `Err`.
pub async fn item<T, E, F>(txn: &DatabaseTransaction, work: F) -> Result<Result<T, E>, DbErr>
where
    F: AsyncFnOnce(&DatabaseTransaction) -> Result<T, E>,
{
    use sea_orm::TransactionTrait;
    let sp = txn.begin().await?;
    match work(&sp).await {
        Ok(v) => {
            sp.commit().await?;
            Ok(Ok(v))
        }
        Err(e) => {
            sp.rollback().await?;
            Ok(Err(e))
        }
    }
}
