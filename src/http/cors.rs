//! Cross-origin access for browser clients on operator-listed origins
//! (`AGENTIC_CORS_ORIGINS`). The policy itself is `actix-cors`; this module
//! parses the operator's list once, at start-up, and builds the middleware.
//!
//! - Only exact origins are allowed (no wildcard, no credentials: callers
//!   authenticate with a bearer key or a stream token, never a cookie).
//! - A request from any other origin is still served (a non-browser client
//!   may send any `Origin`), but without CORS headers, so a browser blocks
//!   the page from reading it.

use actix_cors::Cors;
use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::{Method, header};
use actix_web::middleware::Next;

/// Request headers a browser client may send cross-origin.
pub const ALLOWED_HEADERS: [header::HeaderName; 4] = [
    header::AUTHORIZATION,
    header::CONTENT_TYPE,
    header::ACCEPT,
    header::HeaderName::from_static("last-event-id"),
];

/// Response headers a page may read, beyond the CORS-safelisted ones.
pub const EXPOSED_HEADERS: [&str; 7] = [
    "x-request-id",
    "ratelimit-limit",
    "ratelimit-remaining",
    "ratelimit-reset",
    "retry-after",
    "www-authenticate",
    "allow",
];

/// How long a browser may cache a preflight answer, in seconds.
pub const PREFLIGHT_MAX_AGE: usize = 600;

pub use crate::config::http::AllowedOrigins;

/// The CORS middleware for these origins.
pub fn cors(origins: &AllowedOrigins) -> Cors {
    let mut cors = Cors::default()
        .allowed_methods([
            Method::GET,
            Method::POST,
            Method::PUT,
            Method::PATCH,
            Method::DELETE,
        ])
        .allowed_headers(ALLOWED_HEADERS)
        .expose_headers(EXPOSED_HEADERS)
        .max_age(PREFLIGHT_MAX_AGE)
        .block_on_origin_mismatch(false);
    for origin in origins.as_slice() {
        cors = cors.allowed_origin(origin);
    }
    cors
}

/// `actix-cors` lists exposed headers on every response; keep CORS headers
/// for the allowed origins only (a response without
/// `Access-Control-Allow-Origin` carries no `Access-Control-*` header).
pub async fn only_for_allowed_origins(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let mut res = next.call(req).await?;
    let headers = res.headers_mut();
    if !headers.contains_key(header::ACCESS_CONTROL_ALLOW_ORIGIN) {
        headers.remove(header::ACCESS_CONTROL_EXPOSE_HEADERS);
    }
    Ok(res)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn exact_origins_are_accepted_and_blank_entries_ignored() {
        let o = AllowedOrigins::parse(
            " https://app.example.com, ,http://127.0.0.1:3000,https://app.example.com",
        )
        .unwrap();
        assert_eq!(
            o.as_slice(),
            ["https://app.example.com", "http://127.0.0.1:3000"]
        );
        assert!(AllowedOrigins::parse("").unwrap().is_empty());
        assert!(AllowedOrigins::parse(" , ").unwrap().is_empty());
        assert_eq!(
            AllowedOrigins::parse("http://[::1]:8080")
                .unwrap()
                .as_slice(),
            ["http://[::1]:8080"]
        );
    }

    #[test]
    fn anything_a_browser_would_never_send_is_refused() {
        for (bad, why) in [
            ("*", "wildcard"),
            ("app.example.com", "absolute URL"),
            ("ftp://app.example.com", "scheme"),
            ("https://app.example.com/", "path"),
            ("https://app.example.com/ui", "path"),
            ("https://App.Example.com", "lowercase"),
            ("https://app.example.com:443", "default port"),
            ("https://user@app.example.com", "credentials"),
            ("https://app.example.com?x=1", "query"),
            ("null", "absolute URL"),
        ] {
            let err =
                AllowedOrigins::parse(&format!("https://ok.example.com,{bad}")).expect_err(bad);
            assert!(err.contains(bad), "{err}");
            assert!(err.contains(why), "{bad}: {err}");
        }
    }
}
