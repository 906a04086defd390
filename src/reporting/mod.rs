//! Reporting: the report over the sellers' delivery rows (metrics.rs:
//! `GET /buyer/reporting/metrics`), answered from the database only. The
//! rows are written by the media-buys poller's delivery pull
//! (`media_buys::delivery_rows`, restatements replacing): reporting reads
//! what media buys write, and imports nothing of it. Reports are cached
//! until the next pull or time-zone change (cache.rs).

pub mod cache;
pub mod metrics;

use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[&def::<metrics::GetReportingMetrics>()];

/// Starts the report cache, a bus sink.
pub fn register(handles: &mut crate::ops::context::Handles, bus: &crate::bus::EventBus) {
    handles.insert(cache::ReportCache::start(bus));
}
