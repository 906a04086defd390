//! Credential extractors: `Caller` (a bearer credential) and
//! `StreamCaller` (a bearer credential, or a stream token in the URL for
//! clients that cannot send headers, such as a browser's `EventSource`).

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use futures_util::future::LocalBoxFuture;

use crate::auth::stream_tokens;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::http::AppState;

/// Cheap to clone; shared with the auth cache.
#[derive(Debug, Clone)]
pub struct Caller(pub Arc<CallerInfo>);

impl std::ops::Deref for Caller {
    type Target = CallerInfo;
    fn deref(&self) -> &CallerInfo {
        &self.0
    }
}

/// The token of an `Authorization: Bearer <token>` header.
pub fn bearer_token(req: &HttpRequest) -> Result<String, ApiError> {
    let value = req
        .headers()
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::Unauthorized("missing bearer token".into()))?;
    let value = value
        .to_str()
        .map_err(|_| ApiError::Unauthorized("malformed Authorization header".into()))?;
    let mut parts = value.trim().splitn(2, ' ');
    let scheme = parts.next().unwrap_or("");
    let token = parts.next().unwrap_or("").trim();
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return Err(ApiError::Unauthorized(
            "Authorization must be 'Bearer <token>'".into(),
        ));
    }
    Ok(token.to_string())
}

impl FromRequest for Caller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let token = bearer_token(req);
        let state = req.app_data::<web::Data<AppState>>().cloned();
        Box::pin(async move {
            let token = token?;
            let state = state.ok_or_else(|| ApiError::internal("app state missing"))?;
            state
                .auth
                .authenticate(&token)
                .await?
                .map(Caller)
                .ok_or_else(|| ApiError::Unauthorized("invalid or revoked token".into()))
        })
    }
}

/// The query parameter that carries a stream token.
pub const STREAM_TOKEN_PARAM: &str = "streamToken";

/// A stream token taken out of the request URI by
/// `middleware::redact_stream_token` (so no log line ever sees it).
#[derive(Debug, Clone)]
pub struct StreamTokenParam(pub String);

/// The caller of an event stream: from `Authorization: Bearer` if present
/// (it wins), else from a `streamToken` query parameter minted for exactly
/// this stream path. The token's API key is re-resolved through the auth
/// service, so a revoked key or a removed user is refused like a bearer key.
#[derive(Debug, Clone)]
pub struct StreamCaller(pub Caller);

impl std::ops::Deref for StreamCaller {
    type Target = CallerInfo;
    fn deref(&self) -> &CallerInfo {
        &self.0
    }
}

impl FromRequest for StreamCaller {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        if req.headers().contains_key(header::AUTHORIZATION) {
            let bearer = Caller::from_request(req, payload);
            return Box::pin(async move { bearer.await.map(StreamCaller) });
        }
        use actix_web::HttpMessage;
        let token = req
            .extensions()
            .get::<StreamTokenParam>()
            .map(|t| t.0.clone());
        let state = req.app_data::<web::Data<AppState>>().cloned();
        // Compared in canonical form when the path is a known stream.
        let path = state
            .as_ref()
            .and_then(|s| s.streams.parse(req.path()).ok())
            .map_or_else(|| req.path().to_string(), |s| s.path());
        Box::pin(async move {
            let token = token.filter(|t| !t.is_empty()).ok_or_else(|| {
                ApiError::Unauthorized(format!(
                    "missing bearer token or {STREAM_TOKEN_PARAM} query parameter"
                ))
            })?;
            let state = state.ok_or_else(|| ApiError::internal("app state missing"))?;
            let grant = stream_tokens::redeem(&state.db, &token, &path)
                .await?
                .map_err(|refusal| ApiError::Unauthorized(refusal.message().into()))?;
            let caller = state
                .auth
                .authenticate_api_key(grant.api_key_id)
                .await?
                .filter(|caller| caller.user.id == grant.user_id)
                .ok_or_else(|| ApiError::Unauthorized("invalid or revoked token".into()))?;
            // Minted with an OAuth access token: the stream ends with it.
            let caller = match grant.credential_expires_at {
                None => caller,
                Some(at) => Arc::new(CallerInfo {
                    expires_at: Some(at),
                    ..(*caller).clone()
                }),
            };
            Ok(StreamCaller(Caller(caller)))
        })
    }
}
