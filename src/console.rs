//! The web console: static files embedded in the binary at build time
//! (`console/` at the repository root, plain HTML, CSS and JavaScript
//! modules; nothing to build), served at `/` and under `/console/`.
//!
//! The console is a client like any other: it signs in through the server's
//! own OAuth login as the built-in public client `agentic-console` (see
//! `auth::oauth::console`) and then uses only the public API under
//! `/api/v2`, stream tokens and `EventSource`. Every answer here carries a
//! strict Content-Security-Policy (scripts, styles and connections to this
//! origin only; no inline script or style; no framing), `nosniff`, no
//! referrer, and an `ETag` so a reload revalidates instead of downloading.

use std::collections::HashMap;
use std::sync::LazyLock;

use actix_web::http::header::{self, HeaderValue};
use actix_web::{HttpRequest, HttpResponse, web};
use serde_json::json;
use sha2::{Digest, Sha256};

use crate::auth::oauth::console as client;
use crate::error::ApiError;
use crate::ops::Ctx;

/// The console's policy: only this origin, nothing inline, no frames.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; \
     object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// The page every console route answers (the script reads the route).
const INDEX: &str = "index.html";

struct Asset {
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! assets {
    ($($path:literal => $content_type:expr),* $(,)?) => {
        &[$(Asset {
            path: $path,
            content_type: $content_type,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/console/", $path)),
        }),*]
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of the console, by its path under `/console/`.
static ASSETS: &[Asset] = assets![
    "index.html" => "text/html; charset=utf-8",
    "style.css" => "text/css; charset=utf-8",
    "favicon.svg" => "image/svg+xml",
    "app.js" => JS,
    "lib/api.js" => JS,
    "lib/auth.js" => JS,
    "lib/dom.js" => JS,
    "lib/stream.js" => JS,
    "pages/keys.js" => JS,
    "pages/conversations.js" => JS,
    "pages/room.js" => JS,
    "pages/discovery.js" => JS,
    "pages/campaigns.js" => JS,
    "pages/notifications.js" => JS,
    "pages/reference.js" => JS,
];

/// Each asset with its ETag (a strong validator: the bytes' SHA-256).
static BY_PATH: LazyLock<HashMap<&'static str, (&'static Asset, String)>> = LazyLock::new(|| {
    ASSETS
        .iter()
        .map(|a| (a.path, (a, etag_of(a.body))))
        .collect()
});

/// Routes at the root, outside `/api/v2` and its OpenAPI document.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(index))
        .route(client::CALLBACK_PATH, web::get().to(index))
        .route("/console/config.json", web::get().to(config))
        .route("/console/{path:.+}", web::get().to(asset));
}

/// The headers of every console answer.
fn secured(mut res: actix_web::HttpResponseBuilder) -> actix_web::HttpResponseBuilder {
    res.insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header(("cross-origin-opener-policy", "same-origin"));
    res
}

fn etag_of(body: &[u8]) -> String {
    format!("\"{}\"", hex::encode(&Sha256::digest(body)[..16]))
}

/// Development aid: with `AGENTIC_CONSOLE_DIR` set (read once), the
/// console's files (the same paths only) are read from that directory on
/// each request, so a change to them shows on reload without rebuilding.
static DEV_DIR: LazyLock<Option<std::path::PathBuf>> =
    LazyLock::new(|| std::env::var_os("AGENTIC_CONSOLE_DIR").map(Into::into));

fn from_disk(path: &str) -> Option<(Vec<u8>, String)> {
    let dir = DEV_DIR.as_ref()?;
    let body = std::fs::read(dir.join(path)).ok()?;
    let etag = etag_of(&body);
    Some((body, etag))
}

/// An asset, or 304 when the browser's copy is current.
fn serve(req: &HttpRequest, path: &str) -> Result<HttpResponse, ApiError> {
    let Some((asset, etag)) = BY_PATH.get(path) else {
        return Err(ApiError::NotFound(format!("no console file {path}")));
    };
    let disk = from_disk(asset.path);
    let etag = disk.as_ref().map_or(etag, |(_, e)| e);
    let fresh = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v.split(',')
                .any(|t| t.trim() == etag.as_str() || t.trim() == "*")
        });
    let mut res = secured(if fresh {
        HttpResponse::NotModified()
    } else {
        HttpResponse::Ok()
    });
    res.insert_header((header::ETAG, etag.as_str()))
        // Revalidated on every load: a new release is picked up at once.
        .insert_header((header::CACHE_CONTROL, "no-cache"));
    if fresh {
        return Ok(res.finish());
    }
    res.insert_header((
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    ));
    Ok(match disk {
        Some((body, _)) => res.body(body),
        None => res.body(asset.body),
    })
}

/// `GET /` and `GET /console/callback`: the console's page.
async fn index(req: HttpRequest) -> Result<HttpResponse, ApiError> {
    serve(&req, INDEX)
}

/// `GET /console/{path}`: a file of the console; anything else is a 404.
async fn asset(req: HttpRequest, path: web::Path<String>) -> Result<HttpResponse, ApiError> {
    serve(&req, &path)
}

/// `GET /console/config.json`: what the console needs to sign in here.
async fn config(state: web::Data<Ctx>) -> HttpResponse {
    secured(HttpResponse::Ok())
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .json(json!({
            "clientId": client::CLIENT_ID,
            "scope": client::SCOPE,
            "issuer": state.public_url.as_ref(),
            "redirectUris": client::redirect_uris(&state.public_url),
            "version": env!("CARGO_PKG_VERSION"),
        }))
}
