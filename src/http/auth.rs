//! The bearer-credential extractor: yields the authenticated caller.

use std::sync::Arc;

use actix_web::http::header;
use actix_web::{FromRequest, HttpRequest, dev::Payload, web};
use futures_util::future::LocalBoxFuture;

use crate::auth::caller::CallerInfo;
use crate::error::ApiError;
use crate::state::AppState;

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

/// A caller allowed to write, for the few write routes that are not
/// operations (the caller's own profile and keys): the same check as every
/// operation's, made before the body is read.
pub struct Writer(pub Caller);

impl FromRequest for Writer {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        Box::pin(async move {
            let caller = caller.await?;
            crate::ops::authorize(&caller, crate::ops::Access::Write)?;
            Ok(Writer(caller))
        })
    }
}
