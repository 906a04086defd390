//! Reporting: the report over the sellers' delivery rows (metrics.rs:
//! `GET /buyer/reporting/metrics`), answered from the database only. The
//! rows are written by the media-buys poller's delivery pull
//! (`media_buys::delivery_rows`, restatements replacing): reporting reads
//! what media buys write, and imports nothing of it.

pub mod metrics;

use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[&def::<metrics::GetReportingMetrics>()];
