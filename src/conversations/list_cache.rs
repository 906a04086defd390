//! A read-through cache of serialized conversation lists. Dashboards poll
//! the list; it changes only when a conversation of the account changes or
//! someone enters or leaves a room. Entries are filed under the account's
//! *generation* and older generations are never read again. Where the
//! generation comes from depends on the deployment:
//!
//! - **Single instance** (SQLite, in-process bus): every change is a bus
//!   event on this very instance, which bumps an in-memory generation, so a
//!   cache hit costs no database work.
//! - **Several instances on one database** (PostgreSQL): a change made
//!   through another instance reaches this one's bus only some time after
//!   that instance answered its client, so the bus cannot tell whether an
//!   entry is current. The generation is instead the account's row in
//!   `conversation_list_versions`, incremented in the same transaction as
//!   every change a list shows ([`bump`]); it is read (one primary-key
//!   lookup) before every list, so the very next list through any instance
//!   sees a committed change: clients read their own writes across
//!   instances.
//!
//!   Concurrent lists of one account share their version reads: a request
//!   joins the next read that has not been sent yet (never one already in
//!   flight, which may have been answered before the request's own write
//!   committed), and at most one read per account is in flight at a time.
//!   Every request is still answered from a read sent after it arrived, so
//!   read-your-writes holds, while a busy account costs one read per round
//!   trip rather than one per request.
//!
//! Presence rows also go stale without any change (a crashed instance stops
//! refreshing them): an entry showing presence expires when the first row
//! it shows would, and every entry after the TTL at the latest.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, Set};
use serde_json::value::RawValue;
use tokio::sync::watch;

use entity::conversation_list_version as version;

use crate::bus::{BusEvent, BusSink, Generations};
use crate::ops::Pagination;

/// A serialized list page and its position.
pub type Page = (Box<RawValue>, Pagination);

#[derive(Clone, Hash, PartialEq, Eq)]
pub struct ListKey {
    pub account_id: String,
    pub user_id: i64,
    pub shared_enabled: bool,
    pub take: u64,
    pub skip: u64,
    pub generation: u64,
}

#[derive(Clone)]
struct Entry {
    body: Page,
    /// When a presence row the list shows goes stale.
    until: Option<Instant>,
}

pub struct ListCache {
    /// Generations come from the database's version rows (several instances
    /// share it) rather than from this instance's bus events.
    shared_database: bool,
    generations: Generations,
    entries: moka::sync::Cache<ListKey, Entry>,
    /// Version reads per account (shared database only).
    reads: Arc<Mutex<HashMap<String, Reads>>>,
}

type ReadResult = Option<Result<u64, String>>;

/// One version read, shared by every request that joined it before it was
/// sent.
struct Read(watch::Sender<ReadResult>);

impl Read {
    fn new() -> Arc<Read> {
        Arc::new(Read(watch::channel(None).0))
    }

    async fn result(&self) -> Result<u64, DbErr> {
        let mut rx = self.0.subscribe();
        let got = rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| DbErr::Custom("list version read abandoned".into()))?;
        match &*got {
            Some(Ok(v)) => Ok(*v),
            Some(Err(e)) => Err(DbErr::Custom(e.clone())),
            None => Err(DbErr::Custom("list version read abandoned".into())),
        }
    }
}

#[derive(Default)]
struct Reads {
    /// Not sent yet: new requests join it.
    open: Option<Arc<Read>>,
    /// Sent, not answered yet: too late to join.
    running: Option<Arc<Read>>,
}

impl ListCache {
    pub fn new(ttl: Duration, shared_database: bool) -> Arc<Self> {
        Arc::new(ListCache {
            shared_database,
            generations: Generations::default(),
            entries: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
            reads: Default::default(),
        })
    }

    /// The account's version from a read sent after this call began; see the
    /// module doc.
    async fn shared_version(
        &self,
        db: &DatabaseConnection,
        account_id: &str,
    ) -> Result<u64, DbErr> {
        let (read, previous) = {
            let mut reads = self.reads.lock();
            let slot = reads.entry(account_id.to_string()).or_default();
            if let Some(open) = &slot.open {
                (open.clone(), None)
            } else {
                let read = Read::new();
                slot.open = Some(read.clone());
                (read.clone(), Some(slot.running.clone()))
            }
        };
        if let Some(previous) = previous {
            // This request opened the read: send it once the one in flight
            // is answered, in a task of its own so that a client going
            // away does not strand the requests that joined it.
            let reads = self.reads.clone();
            let db = db.clone();
            let account = account_id.to_string();
            let mine = read.clone();
            tokio::spawn(async move {
                if let Some(previous) = previous {
                    let _ = previous.result().await;
                }
                {
                    let mut reads = reads.lock();
                    let slot = reads.entry(account.clone()).or_default();
                    slot.open = None;
                    slot.running = Some(mine.clone());
                }
                let got = current(&db, &account).await.map_err(|e| e.to_string());
                mine.0.send_replace(Some(got));
                let mut reads = reads.lock();
                if let Some(slot) = reads.get_mut(&account) {
                    if slot.running.as_ref().is_some_and(|r| Arc::ptr_eq(r, &mine)) {
                        slot.running = None;
                    }
                    if slot.open.is_none() && slot.running.is_none() {
                        reads.remove(&account);
                    }
                }
            });
        }
        read.result().await
    }

    /// The account's current generation. Read it *before* querying the
    /// list, so a result computed across a concurrent change is filed under
    /// the older generation and never served for the newer one.
    pub async fn generation(
        &self,
        db: &DatabaseConnection,
        account_id: &str,
    ) -> Result<u64, DbErr> {
        if self.shared_database {
            return self.shared_version(db, account_id).await;
        }
        Ok(self.generations.get(account_id))
    }

    pub fn get(&self, key: &ListKey) -> Option<Page> {
        let entry = self.entries.get(key)?;
        match entry.until {
            Some(until) if until <= Instant::now() => {
                self.entries.invalidate(key);
                None
            }
            _ => Some(entry.body),
        }
    }

    /// Files `body` under `key`; `until` is when a presence row it shows
    /// goes stale (then the entry is not served any more).
    pub fn put(&self, key: ListKey, body: Page, until: Option<Instant>) {
        self.entries.insert(key, Entry { body, until });
    }

    pub fn invalidate_account(&self, account_id: &str) {
        self.generations.bump(account_id);
    }
}

impl BusSink for ListCache {
    fn deliver(&self, event: &BusEvent) {
        // With a shared database the version row is the truth; bumping the
        // in-memory generation would only be unused bookkeeping.
        if !self.shared_database {
            self.invalidate_account(event.account_id());
        }
    }

    fn transport_lost(&self) {
        // Only a distributed bus has a transport to lose, and then validity
        // comes from the database, not from events.
    }
}

/// The account's list version (0 before its first change).
pub async fn current(db: &impl ConnectionTrait, account_id: &str) -> Result<u64, DbErr> {
    Ok(version::Entity::find_by_id(account_id)
        .one(db)
        .await?
        .map_or(0, |row| row.version as u64))
}

/// Increments the account's list version. Call it inside the transaction
/// of every change a conversation list shows, last (so the row lock is held
/// briefly and always taken after the conversation's).
pub async fn bump(db: &impl ConnectionTrait, account_id: &str) -> Result<(), DbErr> {
    let row = version::ActiveModel {
        account_id: Set(account_id.to_string()),
        version: Set(1),
    };
    version::Entity::insert(row)
        .on_conflict(
            OnConflict::column(version::Column::AccountId)
                .value(
                    version::Column::Version,
                    Expr::col((version::Entity, version::Column::Version)).add(1),
                )
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}
