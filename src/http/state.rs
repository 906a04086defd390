//! The HTTP edge's state, one per server (cloned into every worker): the
//! operations' context plus what only the edge needs. It is assembled, with
//! every domain, at the top (`crate::app`).

use std::sync::Arc;

use crate::auth::AuthService;
use crate::http::rate_limit::RateLimits;
use crate::ops::Ctx;

#[derive(Clone)]
pub struct AppState {
    /// Database, bus, config, public URL, shutdown and the domains' handles.
    pub ctx: Ctx,
    pub auth: AuthService,
    pub limits: Arc<RateLimits>,
    /// The address actually bound (the real port when 0 was asked for).
    pub bound: std::net::SocketAddr,
}

impl std::ops::Deref for AppState {
    type Target = Ctx;
    fn deref(&self) -> &Ctx {
        &self.ctx
    }
}

impl AppState {
    pub fn listen_url(&self) -> String {
        format!("http://{}", self.bound)
    }
}
