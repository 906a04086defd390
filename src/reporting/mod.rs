//! Reporting: the sellers' delivery as rows (store.rs: written by the
//! media-buys poller's delivery pull, restatements replacing) and the
//! report over them (metrics.rs: `GET /buyer/reporting/metrics`), answered
//! from the database only.

pub mod metrics;
pub mod store;

use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[&def::<metrics::GetReportingMetrics>()];
