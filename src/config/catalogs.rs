//! Settings of catalog feed fetches (`AGENTIC_CATALOG_FEED_TIMEOUT`,
//! `AGENTIC_CATALOG_FEED_MAX_MB`).

use std::time::Duration;

/// Bounds of one feed fetch: 30 s and 10 MiB unless the operator sets
/// `AGENTIC_CATALOG_FEED_TIMEOUT` or `AGENTIC_CATALOG_FEED_MAX_MB` (tests
/// shorten them further).
#[derive(Debug, Clone)]
pub struct FeedTuning {
    /// From connecting to the last byte of the body.
    pub timeout: Duration,
    /// Largest feed body accepted.
    pub max_bytes: usize,
}

impl Default for FeedTuning {
    fn default() -> Self {
        FeedTuning {
            timeout: Duration::from_secs(30),
            max_bytes: 10 * 1024 * 1024,
        }
    }
}
