//! A read-through cache of serialized conversation lists for a single
//! instance (with several instances lists are read from the database, so a
//! client always reads its own writes). Dashboards poll the list; it changes
//! only when a conversation of the account changes or someone enters or
//! leaves a room. Every such change is a bus event, which bumps the
//! account's generation, so older entries are never read again. A TTL
//! bounds what no event announces (presence rows expiring).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::value::RawValue;

use crate::bus::{BusEvent, BusSink};
use crate::ops::Pagination;

/// A serialized list page and its position.
pub type Entry = (Box<RawValue>, Pagination);

#[derive(Clone, Hash, PartialEq, Eq)]
pub struct ListKey {
    pub account_id: String,
    pub user_id: i64,
    pub shared_enabled: bool,
    pub take: u64,
    pub skip: u64,
    pub generation: u64,
}

pub struct ListCache {
    /// Off when several instances share the database (see the module doc).
    enabled: bool,
    generations: Mutex<HashMap<String, u64>>,
    entries: moka::sync::Cache<ListKey, Entry>,
}

impl ListCache {
    pub fn new(ttl: Duration, enabled: bool) -> Arc<Self> {
        Arc::new(ListCache {
            enabled,
            generations: Mutex::new(HashMap::new()),
            entries: moka::sync::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
        })
    }

    /// The account's current generation: read it *before* querying, so a
    /// result computed across a concurrent change is filed under the old one.
    pub fn generation(&self, account_id: &str) -> u64 {
        self.generations
            .lock()
            .get(account_id)
            .copied()
            .unwrap_or(0)
    }

    pub fn get(&self, key: &ListKey) -> Option<Entry> {
        if !self.enabled {
            return None;
        }
        self.entries.get(key)
    }

    pub fn put(&self, key: ListKey, body: Entry) {
        if self.enabled {
            self.entries.insert(key, body);
        }
    }

    pub fn invalidate_account(&self, account_id: &str) {
        *self
            .generations
            .lock()
            .entry(account_id.to_string())
            .or_default() += 1;
    }
}

impl BusSink for ListCache {
    fn deliver(&self, event: &BusEvent) {
        self.invalidate_account(event.account_id());
    }

    fn transport_lost(&self) {
        // Only a distributed bus has a transport to lose, and then the
        // cache is off.
    }
}
