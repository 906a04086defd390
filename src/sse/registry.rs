//! The live actors of one kind on this instance, by key (a conversation
//! uid, a discovery id): started on demand, forgotten when they stop.

use std::collections::HashMap;

use actix::{Actor, Addr};
use parking_lot::Mutex;

pub struct Registry<A: Actor> {
    map: Mutex<HashMap<String, Addr<A>>>,
}

impl<A: Actor> Default for Registry<A> {
    fn default() -> Self {
        Registry {
            map: Mutex::new(HashMap::new()),
        }
    }
}

impl<A: Actor> Registry<A> {
    /// The running actor for `key`, or the one `start` starts.
    pub fn get_or_start(&self, key: &str, start: impl FnOnce() -> Addr<A>) -> Addr<A> {
        let mut map = self.map.lock();
        if let Some(addr) = map.get(key)
            && addr.connected()
        {
            return addr.clone();
        }
        let addr = start();
        map.insert(key.to_string(), addr.clone());
        addr
    }

    /// Forgets `addr` (only if it is still the one registered for `key`).
    pub fn forget(&self, key: &str, addr: &Addr<A>) {
        let mut map = self.map.lock();
        if map.get(key) == Some(addr) {
            map.remove(key);
        }
    }

    pub fn get(&self, key: &str) -> Option<Addr<A>> {
        self.map.lock().get(key).cloned()
    }

    pub fn any_open(&self, keys: &[&str]) -> bool {
        let map = self.map.lock();
        keys.iter().any(|k| map.contains_key(*k))
    }

    /// Every running actor (to broadcast an instance-wide event).
    pub fn all(&self) -> Vec<Addr<A>> {
        self.map.lock().values().cloned().collect()
    }

    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
