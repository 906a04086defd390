//! Per-IP rate limits: a general bucket per minute and an `/auth/*` bucket per
//! 15 minutes (GCRA from `governor`), with IETF draft-7 `RateLimit-*` headers
//! on every limited response and `Retry-After` on 429.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

type Limiter =
    RateLimiter<IpAddr, DefaultKeyedStateStore<IpAddr>, DefaultClock, StateInformationMiddleware>;

/// A limiter's answer (a plain value, so the error type needs no HTTP).
pub type Verdict = crate::error::RateLimit;

pub struct Bucket {
    limiter: Limiter,
    limit: u32,
    /// Time to earn back one request.
    period: Duration,
}

fn ceil_secs(d: Duration) -> u64 {
    let s = d.as_secs();
    if d.subsec_nanos() > 0 { s + 1 } else { s }
}

impl Bucket {
    /// `limit` requests per `window`, all usable as a burst.
    pub fn new(limit: u32, window: Duration) -> Self {
        let limit_nz = NonZeroU32::new(limit.max(1)).unwrap_or(NonZeroU32::MIN);
        let period = window / limit_nz.get();
        let quota = Quota::with_period(period.max(Duration::from_nanos(1)))
            .unwrap_or_else(|| Quota::per_second(limit_nz))
            .allow_burst(limit_nz);
        Bucket {
            limiter: RateLimiter::keyed(quota).with_middleware::<StateInformationMiddleware>(),
            limit: limit_nz.get(),
            period,
        }
    }

    pub fn check(&self, ip: IpAddr) -> Result<Verdict, Verdict> {
        match self.limiter.check_key(&ip) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let used = self.limit.saturating_sub(remaining);
                Ok(Verdict {
                    limit: self.limit,
                    remaining,
                    reset_secs: ceil_secs(self.period * used),
                })
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now());
                Err(Verdict {
                    limit: self.limit,
                    remaining: 0,
                    reset_secs: ceil_secs(wait).max(1),
                })
            }
        }
    }

    /// Forget idle keys so the map does not grow without bound.
    pub fn sweep(&self) {
        self.limiter.retain_recent();
        self.limiter.shrink_to_fit();
    }
}

pub struct RateLimits {
    pub general: Bucket,
    pub auth: Bucket,
    /// Paths whose handlers limit themselves (see [`RateLimits::bucket_for`]).
    self_limited: Vec<&'static str>,
}

impl RateLimits {
    pub fn new(per_minute: u32, auth_per_15_min: u32) -> Self {
        RateLimits {
            general: Bucket::new(per_minute, Duration::from_secs(60)),
            auth: Bucket::new(auth_per_15_min, Duration::from_secs(15 * 60)),
            self_limited: Vec::new(),
        }
    }

    /// The handlers of `path` and the paths under it draw from `general`
    /// themselves, for the requests they decide should (e.g. the carrier
    /// webhook and sellers' callbacks, for unverified events).
    pub fn self_limited(mut self, path: &'static str) -> Self {
        self.self_limited.push(path);
        self
    }

    /// Which bucket a path draws from; `None` for health probes and for
    /// self-limited paths: the carrier webhook's handler draws from `general`
    /// only for events that fail verification (a busy line's verified
    /// reports and opt-outs are never refused for their number).
    /// `/auth/*` includes every OAuth endpoint that takes a secret (the
    /// login form, the token endpoint) or writes (registration, consent,
    /// revocation); `GET /authorize` only shows the login page and draws
    /// from the general bucket, like the metadata documents.
    pub fn bucket_for(&self, path: &str) -> Option<&Bucket> {
        let self_limited = self.self_limited.iter().any(|p| {
            path.strip_prefix(p)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        });
        if path == "/healthz" || path == "/readyz" || self_limited {
            None
        } else if path.starts_with("/auth/") {
            Some(&self.auth)
        } else {
            Some(&self.general)
        }
    }
}
