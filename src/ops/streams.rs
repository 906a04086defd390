//! The event streams a stream token can open. Each stream route is declared
//! once by its domain (path template and the route's own access check) and
//! listed at the top (`crate::app::STREAMS`, carried as `ctx.streams`), so
//! minting and redeeming tokens name no domain.

use super::{BoxFuture, Ctx};
use crate::caller::CallerInfo;
use crate::error::ApiError;

/// Every REST path is under this prefix.
pub const PREFIX: &str = "/api/v2";

/// The route's access check for the (canonical) value of its parameter:
/// `Ok` when the caller may open the stream now, else the route's own
/// answer (a 404).
pub type Check = fn(Ctx, CallerInfo, String) -> BoxFuture<Result<(), ApiError>>;

/// One event-stream route.
pub struct StreamRoute {
    /// Under [`PREFIX`], with one `{parameter}`, e.g.
    /// `/buyer/discovery/{discoveryId}/events`, or none (a stream of the
    /// caller's own, e.g. `/notifications/events`: its value is empty).
    pub template: &'static str,
    /// The parameter's canonical spelling, or a 400 naming `stream`.
    pub canonical: fn(&str) -> Result<String, ApiError>,
    pub check: Check,
}

impl StreamRoute {
    /// The parameter of `path` (a full path, under [`PREFIX`]), if it is
    /// this route's.
    fn parameter<'a>(&self, path: &'a str) -> Option<&'a str> {
        let rest = path.strip_prefix(PREFIX)?;
        let Some((head, tail)) = self.template.split_once('{') else {
            // A route without a parameter (the caller's own stream).
            return (rest == self.template).then_some("");
        };
        let (_, tail) = tail.split_once('}')?;
        rest.strip_prefix(head)?
            .strip_suffix(tail)
            .filter(|p| !p.is_empty() && !p.contains('/'))
    }
}

/// The server's stream routes.
#[derive(Clone, Copy)]
pub struct StreamRoutes(&'static [&'static StreamRoute]);

impl StreamRoutes {
    pub const fn new(routes: &'static [&'static StreamRoute]) -> Self {
        StreamRoutes(routes)
    }

    /// A stream path as a client names it (no scheme, host or query); a
    /// 400 naming `stream` when it is no stream route's.
    pub fn parse(&self, path: &str) -> Result<KnownStream, ApiError> {
        let (route, value) = self
            .0
            .iter()
            .find_map(|route| route.parameter(path).map(|value| (*route, value)))
            .ok_or_else(|| {
                let known: Vec<String> = self
                    .0
                    .iter()
                    .map(|r| format!("{PREFIX}{}", r.template))
                    .collect();
                ApiError::invalid(
                    "stream",
                    format!(
                        "must be the path of an event stream: {}",
                        known.join(" or ")
                    ),
                )
            })?;
        Ok(KnownStream {
            route,
            value: (route.canonical)(value)?,
        })
    }
}

/// A path of one of the stream routes.
#[derive(Clone)]
pub struct KnownStream {
    route: &'static StreamRoute,
    value: String,
}

impl std::fmt::Debug for KnownStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path())
    }
}

impl KnownStream {
    /// The canonical path, as stored with a token and returned to the client.
    pub fn path(&self) -> String {
        let (head, rest) = self
            .route
            .template
            .split_once('{')
            .unwrap_or((self.route.template, ""));
        let tail = rest.split_once('}').map_or("", |(_, t)| t);
        format!("{PREFIX}{head}{}{tail}", self.value)
    }

    /// The route's own access check, for `caller`, now.
    pub async fn check_readable(&self, ctx: &Ctx, caller: &CallerInfo) -> Result<(), ApiError> {
        (self.route.check)(ctx.clone(), caller.clone(), self.value.clone()).await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn open(_: Ctx, _: CallerInfo, _: String) -> BoxFuture<Result<(), ApiError>> {
        Box::pin(async { Ok(()) })
    }

    fn lower(value: &str) -> Result<String, ApiError> {
        Ok(value.to_ascii_lowercase())
    }

    static A: StreamRoute = StreamRoute {
        template: "/a/{id}/events",
        canonical: lower,
        check: open,
    };
    static B: StreamRoute = StreamRoute {
        template: "/b/{id}/events",
        canonical: lower,
        check: open,
    };
    static C: StreamRoute = StreamRoute {
        template: "/mine/events",
        canonical: lower,
        check: open,
    };
    static ROUTES: StreamRoutes = StreamRoutes::new(&[&A, &B]);
    static WITH_OWN: StreamRoutes = StreamRoutes::new(&[&A, &C]);

    #[test]
    fn a_route_without_a_parameter_matches_its_exact_path() {
        assert_eq!(
            WITH_OWN.parse("/api/v2/mine/events").unwrap().path(),
            "/api/v2/mine/events"
        );
        for bad in ["/api/v2/mine/events/x", "/api/v2/mine", "/mine/events"] {
            assert!(WITH_OWN.parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_path_is_parsed_by_its_route_and_written_back_canonical() {
        assert_eq!(
            ROUTES.parse("/api/v2/b/X1/events").unwrap().path(),
            "/api/v2/b/x1/events"
        );
        for bad in [
            "/api/v2/a//events",
            "/api/v2/a/x/y/events",
            "/a/x/events",
            "/api/v2/c/x/events",
        ] {
            let err = ROUTES.parse(bad).unwrap_err();
            assert_eq!(err.code(), "VALIDATION_ERROR", "{bad}");
            assert!(
                err.to_string()
                    .contains("/api/v2/a/{id}/events or /api/v2/b/{id}/events")
            );
        }
    }
}
