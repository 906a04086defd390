//! `ApiJson<T>`: a JSON body extractor whose every failure is an envelope.
//! Checks the content type, bounds the body, and reports the exact field path
//! of a schema error (`utmConfig[3].paramKey`).

use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, dev::Payload};
use futures_util::StreamExt;
use futures_util::future::LocalBoxFuture;
use serde::de::DeserializeOwned;

use crate::error::{ApiError, Issue};

/// Default maximum JSON body size.
pub const DEFAULT_BODY_LIMIT: usize = 256 * 1024;

/// Per-app (or per-scope) body limit, as app data.
#[derive(Clone, Copy, Debug)]
pub struct BodyLimit(pub usize);

pub struct ApiJson<T>(pub T);

impl<T> ApiJson<T> {
    pub fn into_inner(self) -> T {
        self.0
    }
}

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

impl<T: DeserializeOwned + 'static> FromRequest for ApiJson<T> {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let body = read_body(req, payload, false);
        Box::pin(async move { parse_json(&body.await?).map(ApiJson) })
    }
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

/// Deserialize a body, turning serde's error into a field-level validation error.
pub fn parse_json<'de, T: serde::Deserialize<'de>>(body: &'de [u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::invalid(
            "",
            "request body is empty; a JSON object is required",
        ));
    }
    // Every body of this API is an object; serde would also read a struct
    // from an array, which no client means.
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde_json::Value>(body).is_ok()
    {
        return Err(ApiError::invalid(
            "",
            "the request body must be a JSON object",
        ));
    }
    // Well-formed bodies are read without path tracking (it costs a
    // string per field); a body that fails is read again with it, for the
    // exact path of its error.
    // The text is checked as UTF-8 once, not string by string.
    if first == Some(&b'{')
        && let Ok(text) = std::str::from_utf8(body)
        && let Ok(value) = serde_json::from_str::<T>(text)
    {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if inner.is_syntax() || inner.is_eof() || inner.is_io() {
            return ApiError::Validation {
                message: format!("malformed JSON: {}", strip_position(&inner.to_string())),
                field: None,
                issues: vec![Issue {
                    path: String::new(),
                    message: "malformed JSON".into(),
                }],
            };
        }
        let msg = strip_position(&inner.to_string());
        schema_error(&path, &msg)
    })?;
    de.end().map_err(|_| {
        ApiError::invalid("", "malformed JSON: trailing characters after the value")
    })?;
    Ok(value)
}

/// Map a serde data error at `path` to a validation error naming the field.
pub fn schema_error(path: &str, msg: &str) -> ApiError {
    let base = if path == "." || path.is_empty() {
        ""
    } else {
        path
    };
    // serde reports missing/unknown fields at the parent: name the field itself.
    let named = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|p| msg.strip_prefix(p))
        .and_then(|rest| rest.split('`').next());
    let field = match named {
        // serde_path_to_error already ends the path with an unknown field's name.
        Some(name) if base == name || base.ends_with(&format!(".{name}")) => base.to_string(),
        Some(name) if base.is_empty() => name.to_string(),
        Some(name) => format!("{base}.{name}"),
        None => base.to_string(),
    };
    let message = if msg.starts_with("unknown field") {
        "unknown field".to_string()
    } else if msg.starts_with("missing field") {
        "is required".to_string()
    } else {
        msg.to_string()
    };
    ApiError::invalid(field, message)
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
