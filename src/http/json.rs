//! Reading a JSON request body at the edge: the content type checked, the
//! body bounded (`BodyLimit`), every failure an envelope. Parsing it, with the
//! exact field path of a schema error (`utmConfig[3].paramKey`), is the
//! operations' own (`crate::ops::json`).

use actix_web::http::header;
use actix_web::{HttpRequest, dev::Payload};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;

use crate::error::ApiError;

/// Default maximum JSON body size.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// Per-app (or per-scope) body limit, as app data.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

fn is_json(req: &HttpRequest) -> bool {
    let Some(ct) = req.headers().get(header::CONTENT_TYPE) else {
        return false;
    };
    let Ok(ct) = ct.to_str() else { return false };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

/// Reads a JSON body within the limit. With `allow_empty`, a request with no
/// body at all may omit the content type.
pub(crate) fn read_body(
    req: &HttpRequest,
    payload: &mut Payload,
    allow_empty: bool,
) -> LocalBoxFuture<'static, Result<bytes::Bytes, ApiError>> {
    let limit = req
        .app_data::<BodyLimit>()
        .map(|l| l.0)
        .unwrap_or(DEFAULT_BODY_LIMIT);
    let json = is_json(req);
    let has_content_type = req.headers().contains_key(header::CONTENT_TYPE);
    let declared = declared_length(req);
    let payload = payload.take();
    let media_error =
        || ApiError::UnsupportedMediaType("Content-Type must be application/json".into());
    Box::pin(async move {
        // Without a JSON content type only a bodiless request may pass.
        if !json && (!allow_empty || has_content_type) {
            return Err(media_error());
        }
        let body = read_limited(payload, declared, limit).await?;
        if !json && !body.is_empty() {
            return Err(media_error());
        }
        Ok(body)
    })
}

/// The request's `Content-Length`, if it declares one.
pub(crate) fn declared_length(req: &HttpRequest) -> Option<usize> {
    req.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
}

/// Reads a whole body of at most `limit` bytes: 413 for a declared length
/// over it (nothing read), or as soon as what arrives passes it.
pub(crate) async fn read_limited(
    mut payload: Payload,
    declared: Option<usize>,
    limit: usize,
) -> Result<bytes::Bytes, ApiError> {
    if declared.is_some_and(|n| n > limit) {
        return Err(ApiError::PayloadTooLarge { limit });
    }
    // A body that arrives in one chunk is kept as it is; one in several
    // is gathered into a buffer of its declared length.
    let mut first: Option<bytes::Bytes> = None;
    let mut body = bytes::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| match e {
            actix_web::error::PayloadError::Overflow => ApiError::PayloadTooLarge { limit },
            other => ApiError::BadRequest(format!("could not read request body: {other}")),
        })?;
        let held = first.as_ref().map_or(0, |f| f.len()) + body.len();
        if held + chunk.len() > limit {
            return Err(ApiError::PayloadTooLarge { limit });
        }
        match first.take() {
            None if body.is_empty() => first = Some(chunk),
            Some(f) => {
                body.reserve(declared.unwrap_or(0).clamp(f.len() + chunk.len(), limit));
                body.extend_from_slice(&f);
                body.extend_from_slice(&chunk);
            }
            None => body.extend_from_slice(&chunk),
        }
    }
    Ok(first.unwrap_or_else(|| body.freeze()))
}
