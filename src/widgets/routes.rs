//! `GET /api/v2/mcp-apps/{view}/mcp-app.html`: a built widget's HTML for an
//! iframe host (passed to a sandboxed iframe as `srcdoc`), with the spec's
//! four headers and a strong `ETag` (`If-None-Match` answers 304). A route,
//! not an operation: it answers HTML, not the JSON envelope; the OpenAPI
//! document describes it (`crate::openapi`).

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, HttpResponseBuilder, web};

use crate::error::{ApiError, ApiResult};
use crate::http::Caller;

pub const PATH: &str = "/mcp-apps/{view}/mcp-app.html";

/// The spec's policy for the document when it is opened directly: nothing
/// runs and nothing loads (a host renders it as `srcdoc` under its own).
pub const CONTENT_SECURITY_POLICY: &str =
    "sandbox; default-src 'none'; script-src 'none'; base-uri 'none'; frame-ancestors 'none'";

pub const CACHE_CONTROL: &str = "private, max-age=300";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(PATH, web::get().to(widget_html));
}

/// Any valid credential may read a widget: it holds no account data.
async fn widget_html(
    req: HttpRequest,
    _caller: Caller,
    view: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let view = view.into_inner();
    if !super::valid_slug(&view) {
        return Err(ApiError::invalid(
            "view",
            "must be lowercase letters, digits and hyphens",
        ));
    }
    let widget = super::find(&view)
        .ok_or_else(|| ApiError::NotFound(format!("the view {view:?} has no built widget")))?;
    let etag = widget.etag();
    if matches(&req, etag) {
        return Ok(headers(HttpResponse::NotModified(), etag).finish());
    }
    Ok(headers(HttpResponse::Ok(), etag)
        .insert_header((header::CONTENT_TYPE, super::MIME_TYPE))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .insert_header((header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY))
        .body(widget.html))
}

fn headers(mut res: HttpResponseBuilder, etag: &str) -> HttpResponseBuilder {
    res.insert_header((header::CACHE_CONTROL, CACHE_CONTROL))
        .insert_header((header::ETAG, etag));
    res
}

/// `If-None-Match` names the current version (or `*`); weak comparison, as
/// RFC 9110 asks for this header.
fn matches(req: &HttpRequest, etag: &str) -> bool {
    req.headers()
        .get_all(header::IF_NONE_MATCH)
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim())
        .any(|t| t == "*" || t.trim_start_matches("W/") == etag)
}
