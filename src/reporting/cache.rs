//! A read-through cache of computed reports. Dashboards ask for the same
//! report over and over, while its rows change only when the poller stores
//! a delivery pull (every `AGENTIC_MEDIA_BUY_DELIVERY_SECONDS` per buy) or
//! an advertiser's time zone moves its days. Entries are filed under the
//! account's generation ([`Generations`]), which those two bus events bump
//! after their commits, on every instance (with PostgreSQL, through
//! LISTEN/NOTIFY; a lost transport bumps every account). A report read on
//! another instance in the moment between a pull's commit and its event's
//! arrival shows the figures from just before that pull.

use std::sync::{Arc, Weak};
use std::time::Duration;

use sea_orm::ConnectionTrait;

use super::metrics::{MetricsFilter, MetricsRow, metrics};
use crate::bus::{BusEvent, BusSink, EventBus, Generations};
use crate::error::ApiError;

/// The poller stored delivery for the account's buys. Key: the account.
pub const DELIVERY_RECORDED: &str = "reporting.delivery_recorded";

pub fn delivery_recorded(account_id: &str) -> BusEvent {
    BusEvent::new(
        DELIVERY_RECORDED,
        account_id,
        account_id,
        serde_json::Value::Null,
    )
}

/// Unused entries leave after this; validity comes from the generation.
const IDLE: Duration = Duration::from_secs(300);
/// At most this many report rows are kept, over all entries.
const MAX_ROWS: u64 = 200_000;

#[derive(Clone, Hash, PartialEq, Eq)]
struct Key {
    account_id: String,
    generation: u64,
    filter: MetricsFilter,
}

pub struct ReportCache {
    generations: Generations,
    entries: moka::sync::Cache<Key, Arc<Vec<MetricsRow>>>,
}

impl ReportCache {
    /// A cache subscribed to what changes reports.
    pub fn start(bus: &EventBus) -> Arc<Self> {
        let cache = Arc::new(ReportCache {
            generations: Generations::default(),
            entries: moka::sync::Cache::builder()
                .weigher(|_, rows: &Arc<Vec<MetricsRow>>| {
                    u32::try_from(rows.len() + 1).unwrap_or(u32::MAX)
                })
                .max_capacity(MAX_ROWS)
                .time_to_idle(IDLE)
                .build(),
        });
        let sink: Arc<dyn BusSink> = cache.clone();
        let sink: Weak<dyn BusSink> = Arc::downgrade(&sink);
        bus.subscribe(DELIVERY_RECORDED, sink.clone());
        bus.subscribe(crate::buyer::advertisers::events::CHANGED, sink);
        cache
    }

    /// The report for `account` and `filter`: a cached one computed at the
    /// current generation, else computed now (errors are not kept).
    pub async fn report(
        &self,
        db: &impl ConnectionTrait,
        account_id: &str,
        filter: MetricsFilter,
    ) -> Result<Arc<Vec<MetricsRow>>, ApiError> {
        let key = Key {
            account_id: account_id.to_string(),
            generation: self.generations.get(account_id),
            filter,
        };
        if let Some(rows) = self.entries.get(&key) {
            return Ok(rows);
        }
        let rows = Arc::new(metrics(db, account_id, &key.filter).await?);
        self.entries.insert(key, rows.clone());
        Ok(rows)
    }
}

impl BusSink for ReportCache {
    fn deliver(&self, event: &BusEvent) {
        self.generations.bump(event.account_id());
    }

    fn transport_lost(&self) {
        self.generations.bump_all();
    }
}
