//! Settings of the OAuth authorization server (lifetimes; tests shorten them).

/// Lifetimes of the authorization server's artefacts.
#[derive(Debug, Clone)]
pub struct OAuthTuning {
    /// Authorization codes.
    pub code_ttl: std::time::Duration,
    pub access_ttl: std::time::Duration,
    /// Each refresh issues a new refresh token with this lifetime.
    pub refresh_ttl: std::time::Duration,
    /// An authorization in progress (login and consent pages).
    pub request_ttl: std::time::Duration,
    /// How often expired rows and unused clients are pruned (`prune`).
    pub prune_every: std::time::Duration,
}

impl Default for OAuthTuning {
    fn default() -> Self {
        use std::time::Duration;
        OAuthTuning {
            code_ttl: Duration::from_secs(60),
            access_ttl: Duration::from_secs(3600),
            refresh_ttl: Duration::from_secs(30 * 24 * 3600),
            request_ttl: Duration::from_secs(600),
            prune_every: Duration::from_secs(600),
        }
    }
}
