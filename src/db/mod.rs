//! Database connection: SQLite (WAL, foreign keys, busy timeout) by default,
//! PostgreSQL for scale-out; same entities and migrations.

pub mod group;

use std::str::FromStr;
use std::time::Duration;

use anyhow::{Context, bail};
use migration::{Migrator, MigratorTrait};
use sea_orm::sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous,
};
use sea_orm::sqlx::{self, Connection};
use sea_orm::{
    ConnectOptions, Database, DatabaseConnection, DatabaseTransaction, DbBackend, DbErr,
    SqliteTransactionMode, SqlxSqliteConnector, TransactionOptions, TransactionTrait,
};

/// SQLite's `synchronous` setting (`AGENTIC_SQLITE_SYNCHRONOUS`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SqliteSync {
    /// Every commit is on disk before it is acknowledged (survives power loss).
    #[default]
    Full,
    /// Faster; in WAL mode the last commits can be lost on power loss
    /// (never corrupted).
    Normal,
}

/// Connects with the default (durable) SQLite settings.
pub async fn connect(url: &str) -> anyhow::Result<DatabaseConnection> {
    connect_with(url, SqliteSync::default()).await
}

pub async fn connect_with(url: &str, sync: SqliteSync) -> anyhow::Result<DatabaseConnection> {
    if url.starts_with("sqlite:") {
        let opts = SqliteConnectOptions::from_str(url)
            .with_context(|| format!("invalid SQLite URL {url}"))?
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(match sync {
                SqliteSync::Full => SqliteSynchronous::Full,
                SqliteSync::Normal => SqliteSynchronous::Normal,
            })
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // No checkpoint inside a commit: the server checkpoints in the
            // background (`spawn_checkpointer`), so copying the WAL back and
            // its fsyncs never sit in a writer's commit. A process without
            // it (an `admin` command) leaves the WAL to the next open.
            .pragma("wal_autocheckpoint", "0");
        let file = opts.get_filename().to_path_buf();
        let pool = SqlitePoolOptions::new()
            .max_connections(8)
            .min_connections(1)
            .connect_with(opts)
            .await
            .map_err(|e| match missing_sqlite_file(url, &file) {
                Some(why) => anyhow::anyhow!(why),
                None => anyhow::Error::new(e).context(format!("cannot open SQLite database {url}")),
            })?;
        Ok(SqlxSqliteConnector::from_sqlx_sqlite_pool(pool))
    } else {
        let mut opts = ConnectOptions::new(url.to_string());
        opts.max_connections(32)
            .min_connections(1)
            .connect_timeout(Duration::from_secs(10))
            .acquire_timeout(Duration::from_secs(10))
            .sqlx_logging(false);
        Database::connect(opts)
            .await
            .context("cannot connect to the database")
    }
}

/// Why a SQLite database could not be opened, when the cause is a missing
/// file or directory, in words that name the fix. SQLite creates the file
/// only when the URL asks (`?mode=rwc`), so a mistyped path is not quietly
/// a new empty database; the message says how to ask.
fn missing_sqlite_file(url: &str, file: &std::path::Path) -> Option<String> {
    if file.exists() {
        return None;
    }
    let dir = file.parent().filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir.filter(|d| !d.exists()) {
        return Some(format!(
            "cannot open SQLite database {url}: the directory {} does not exist; create it first",
            dir.display()
        ));
    }
    let mode = url.split_once('?').and_then(|(_, query)| {
        url::form_urlencoded::parse(query.as_bytes())
            .find(|(k, _)| k == "mode")
            .map(|(_, v)| v.into_owned())
    });
    match mode.as_deref() {
        Some("rwc") | Some("memory") => None,
        Some("ro") => Some(format!(
            "cannot open SQLite database {url}: the database file {} does not exist (and the URL opens it read-only)",
            file.display()
        )),
        _ => Some(format!(
            "cannot open SQLite database {url}: the database file {} does not exist; add ?mode=rwc to the URL (AGENTIC_DATABASE_URL) to create it",
            file.display()
        )),
    }
}

/// Begins a transaction that will write. On SQLite it takes the write lock
/// at `BEGIN IMMEDIATE`, waiting out the busy timeout there: a deferred
/// transaction that read first fails at once with SQLITE_BUSY when it tries
/// to write while another connection writes. PostgreSQL ignores the mode.
pub async fn begin_write<C: TransactionTrait<Transaction = DatabaseTransaction>>(
    db: &C,
) -> Result<DatabaseTransaction, DbErr> {
    tracing::debug!("beginning a write transaction");
    db.begin_with_options(TransactionOptions {
        sqlite_transaction_mode: Some(SqliteTransactionMode::Immediate),
        ..Default::default()
    })
    .await
}

/// How often the server copies SQLite's WAL back into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(250);

/// SQLite only: checkpoints the WAL in the background until `stop`. A
/// passive checkpoint takes no write lock, so commits go on meanwhile; it
/// copies what no reader still needs, and writers restart the WAL from the
/// top once it has all been copied. Replaces SQLite's automatic checkpoint,
/// which runs inside the commit that crosses 1,000 pages.
pub fn spawn_checkpointer(db: DatabaseConnection, stop: tokio_util::sync::CancellationToken) {
    if db.get_database_backend() != DbBackend::Sqlite {
        return;
    }
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(CHECKPOINT_EVERY);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            if let Err(err) = checkpoint(&db).await {
                tracing::warn!(error = %err, "sqlite: background checkpoint failed");
            }
        }
    });
}

/// One passive checkpoint; answers (WAL frames, frames copied back).
pub async fn checkpoint(db: &DatabaseConnection) -> Result<(i64, i64), DbErr> {
    use sea_orm::{ConnectionTrait, Statement};
    let row = db
        .query_one_raw(Statement::from_string(
            DbBackend::Sqlite,
            "PRAGMA wal_checkpoint(PASSIVE)",
        ))
        .await?
        .ok_or_else(|| DbErr::Custom("wal_checkpoint answered nothing".into()))?;
    Ok((row.try_get_by_index(1)?, row.try_get_by_index(2)?))
}

/// Key of the PostgreSQL advisory lock that serialises migrations ("agentic").
const MIGRATION_LOCK: i64 = 0x0061_6765_6e74_6963;

/// Applies pending migrations; safe when several instances start together.
pub async fn migrate(db: &DatabaseConnection) -> anyhow::Result<()> {
    if db.get_database_backend() == DbBackend::Postgres {
        // A session lock on one dedicated connection, held while the pool
        // migrates. The connection is detached from the pool, so dropping it
        // on any early exit closes it and releases the lock.
        let mut lock = db
            .get_postgres_connection_pool()
            .acquire()
            .await
            .context("cannot connect to the database")?
            .detach();
        sqlx::query("SELECT pg_advisory_lock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut lock)
            .await
            .context("cannot take the migration lock")?;
        let result = Migrator::up(db, None).await;
        let unlocked = sqlx::query("SELECT pg_advisory_unlock($1)")
            .bind(MIGRATION_LOCK)
            .execute(&mut lock)
            .await;
        lock.close().await.ok();
        // The migration's own error is the one worth reporting.
        result.context("migration failed")?;
        unlocked.context("cannot release the migration lock")?;
        Ok(())
    } else {
        // SQLite: one write transaction; a concurrent migrator waits for the
        // write lock, then finds nothing pending. DDL is transactional here.
        let txn = begin_write(db).await?;
        Migrator::up(&txn, None).await.context("migration failed")?;
        txn.commit().await.context("migration failed")
    }
}

/// The schema step of `admin`: a fresh database (nothing applied, so no
/// server runs on it) is migrated; a partly migrated one may be in use by a
/// running server of another version, so it is migrated only when asked.
pub async fn migrate_for_admin(db: &DatabaseConnection, allowed: bool) -> anyhow::Result<()> {
    let total = Migrator::migrations().len();
    let pending = Migrator::get_pending_migrations_read_only(db)
        .await
        .context("cannot read the migration status")?
        .len();
    if pending == 0 {
        return Ok(());
    }
    if pending == total || allowed {
        return migrate(db).await;
    }
    bail!(
        "the database has {pending} pending migration(s) of {total}; admin does not migrate a \
         schema a server may be using: run `agentic-api migrate` first, or pass --migrate to admin"
    )
}

/// This process's write transactions on SQLite, one at a time. SQLite has
/// one writer anyway; without the gate, concurrent writers on the pool's
/// connections find the database locked and SQLite's busy handler sleeps
/// in steps of up to 100 ms, which becomes the tail latency of every write
/// under load. Waiting here wakes the next writer at once, first come first
/// served, except that urgent writers (whose commit someone is watching
/// live, like a seller's answer) go before routine ones (like opening a
/// session). On PostgreSQL the gate is open (row locks order writers there).
#[derive(Clone, Default)]
pub struct WriteGate(Option<std::sync::Arc<Gate>>);

#[derive(Default)]
pub struct Gate {
    state: parking_lot::Mutex<GateState>,
}

#[derive(Default)]
struct GateState {
    busy: bool,
    urgent: std::collections::VecDeque<tokio::sync::oneshot::Sender<WriteTurn>>,
    routine: std::collections::VecDeque<tokio::sync::oneshot::Sender<WriteTurn>>,
}

/// The right to write; the next writer's turn starts when it is dropped.
pub struct WriteTurn(Option<std::sync::Arc<Gate>>);

impl Drop for WriteTurn {
    fn drop(&mut self) {
        let Some(gate) = self.0.take() else { return };
        let mut state = gate.state.lock();
        loop {
            let next = match state.urgent.pop_front() {
                Some(w) => w,
                None => match state.routine.pop_front() {
                    Some(w) => w,
                    None => {
                        state.busy = false;
                        return;
                    }
                },
            };
            // A waiter that gave up (its request was dropped) is skipped;
            // one that goes after receiving drops the turn, passing it on.
            match next.send(WriteTurn(Some(gate.clone()))) {
                Ok(()) => return,
                Err(mut turn) => {
                    turn.0 = None;
                }
            }
        }
    }
}

impl WriteGate {
    pub fn for_db(db: &DatabaseConnection) -> Self {
        match db.get_database_backend() {
            sea_orm::DbBackend::Sqlite => WriteGate(Some(Default::default())),
            _ => WriteGate(None),
        }
    }

    /// A routine writer's turn, held until its transaction ends.
    pub async fn enter(&self) -> WriteTurn {
        self.turn(false).await
    }

    /// An urgent writer's turn: ahead of every routine writer waiting.
    pub async fn enter_urgent(&self) -> WriteTurn {
        self.turn(true).await
    }

    async fn turn(&self, urgent: bool) -> WriteTurn {
        let Some(gate) = &self.0 else {
            return WriteTurn(None);
        };
        let rx = {
            let mut state = gate.state.lock();
            if !state.busy {
                state.busy = true;
                return WriteTurn(Some(gate.clone()));
            }
            let (tx, rx) = tokio::sync::oneshot::channel();
            if urgent {
                state.urgent.push_back(tx);
            } else {
                state.routine.push_back(tx);
            }
            rx
        };
        // The sender is only dropped after sending (a turn is never lost).
        rx.await.unwrap_or(WriteTurn(None))
    }
}

#[cfg(test)]
mod gate_tests {
    use super::*;

    #[tokio::test]
    async fn urgent_writers_go_first_and_a_dropped_waiter_loses_nothing() {
        let gate = WriteGate(Some(Default::default()));
        let first = gate.enter().await;
        let order = std::sync::Arc::new(parking_lot::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for (name, urgent) in [("r1", false), ("gone", false), ("u1", true), ("r2", false)] {
            let g = gate.clone();
            let o = order.clone();
            let t = tokio::spawn(async move {
                let _t = if urgent {
                    g.enter_urgent().await
                } else {
                    g.enter().await
                };
                o.lock().push(name);
            });
            tasks.push((name, t));
            tokio::task::yield_now().await;
        }
        // One waiter gives up before its turn.
        for (name, t) in &tasks {
            if *name == "gone" {
                t.abort();
            }
        }
        tokio::task::yield_now().await;
        drop(first);
        for (_, t) in tasks {
            let _ = t.await;
        }
        assert_eq!(*order.lock(), ["u1", "r1", "r2"]);
        // The gate is free again.
        let _again = gate.enter().await;
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod checkpoint_tests {
    use super::*;
    use sea_orm::ConnectionTrait;

    #[tokio::test]
    async fn commits_leave_the_wal_to_the_checkpointer_which_copies_it_all_back() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/c.db?mode=rwc", dir.path().display());
        let db = connect(&url).await.unwrap();
        db.execute_unprepared("CREATE TABLE t (v BLOB)")
            .await
            .unwrap();
        // Well past SQLite's automatic checkpoint (1,000 pages of 4 KiB).
        for _ in 0..40 {
            db.execute_unprepared(
                "INSERT INTO t SELECT randomblob(4000) FROM \
                 (WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50) \
                 SELECT i FROM n)",
            )
            .await
            .unwrap();
        }
        let (frames, copied) = checkpoint(&db).await.unwrap();
        assert!(frames > 1000, "no commit checkpointed: {frames} frames");
        assert_eq!(copied, frames);
    }
}
