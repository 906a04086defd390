//! Per-account generations for caches that bus events invalidate. A cache
//! reads the account's generation *before* computing an entry and files
//! the entry under it; the events the entry depends on bump the
//! generation, so an entry computed across a change is never served after
//! it. Losing the inter-instance transport bumps every account at once.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

#[derive(Default)]
pub struct Generations {
    /// Bumped when every account changes at once (events were lost).
    epoch: AtomicU64,
    accounts: Mutex<HashMap<String, u64>>,
}

impl Generations {
    /// The account's current generation: it only grows, and grows at every
    /// bump of the account or of all.
    pub fn get(&self, account_id: &str) -> u64 {
        let own = self.accounts.lock().get(account_id).copied().unwrap_or(0);
        self.epoch.load(Ordering::Acquire) + own
    }

    pub fn bump(&self, account_id: &str) {
        *self
            .accounts
            .lock()
            .entry(account_id.to_string())
            .or_default() += 1;
    }

    pub fn bump_all(&self) {
        self.epoch.fetch_add(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bump_moves_its_account_and_a_bump_of_all_moves_every_account() {
        let g = Generations::default();
        assert_eq!((g.get("a"), g.get("b")), (0, 0));
        g.bump("a");
        assert_eq!((g.get("a"), g.get("b")), (1, 0));
        g.bump_all();
        assert_eq!((g.get("a"), g.get("b")), (2, 1));
    }
}
