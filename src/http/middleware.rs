//! Cross-cutting middleware: rate limits, request ids, and
//! a last-resort rewrite of any framework error into the envelope.

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::{ErrorHandlerResponse, Next};
use actix_web::{Error, HttpResponse, ResponseError, web};
use serde_json::json;

use crate::error::ApiError;
use crate::http::client_ip;
use crate::state::AppState;

pub const REQUEST_ID: &str = "x-request-id";

/// Per-client rate limiting (see `client_ip`); headers on every limited response.
pub async fn rate_limit(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    let Some(state) = req.app_data::<web::Data<AppState>>().cloned() else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let Some(bucket) = state.limits.bucket_for(req.path()) else {
        return next
            .call(req)
            .await
            .map(ServiceResponse::map_into_boxed_body);
    };
    let peer = req
        .peer_addr()
        .map(|a| a.ip())
        .unwrap_or(std::net::IpAddr::from([0, 0, 0, 0]));
    let client = client_ip::client_ip(&state.config.trusted_proxies, peer, req.headers());
    match bucket.check(client_ip::bucket_key(client)) {
        Err(verdict) => {
            let res = ApiError::RateLimited(verdict).error_response();
            Ok(req.into_response(res))
        }
        Ok(verdict) => {
            let mut res = next.call(req).await?.map_into_boxed_body();
            let headers = res.headers_mut();
            for (name, value) in verdict.header_pairs() {
                if let Ok(v) = HeaderValue::from_str(&value) {
                    headers.insert(HeaderName::from_static(name), v);
                }
            }
            Ok(res)
        }
    }
}

/// Adds the tracing request id to the response, so a client can quote it.
pub async fn request_id(
    req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    use actix_web::HttpMessage;
    let id = req
        .extensions()
        .get::<tracing_actix_web::RequestId>()
        .map(|id| id.to_string());
    let mut res = next.call(req).await?.map_into_boxed_body();
    if let Some(v) = id.and_then(|id| HeaderValue::from_str(&id).ok()) {
        res.headers_mut()
            .insert(HeaderName::from_static(REQUEST_ID), v);
    }
    Ok(res)
}

/// Any error response that is not already JSON (the framework's own plain-text
/// errors) becomes an envelope with a code derived from its status.
pub fn envelope_errors<B: MessageBody + 'static>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let is_json = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if is_json {
        return Ok(ErrorHandlerResponse::Response(res.map_into_left_body()));
    }
    let status = res.status();
    let (code, message) = match status.as_u16() {
        400 => ("BAD_REQUEST", "bad request"),
        401 => ("UNAUTHORIZED", "unauthorized"),
        403 => ("FORBIDDEN", "forbidden"),
        404 => ("NOT_FOUND", "not found"),
        405 => ("METHOD_NOT_ALLOWED", "method not allowed"),
        408 => ("REQUEST_TIMEOUT", "request timed out"),
        413 => ("PAYLOAD_TOO_LARGE", "request body too large"),
        415 => ("UNSUPPORTED_MEDIA_TYPE", "unsupported media type"),
        429 => ("RATE_LIMITED", "rate limit exceeded"),
        503 => ("SERVICE_UNAVAILABLE", "service unavailable"),
        s if s >= 500 => ("INTERNAL_ERROR", "internal error; safe to retry once"),
        _ => ("BAD_REQUEST", "bad request"),
    };
    let (req, old) = res.into_parts();
    let mut new = HttpResponse::build(status);
    for (k, v) in old.headers() {
        if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
            new.append_header((k.clone(), v.clone()));
        }
    }
    let new = new.json(json!({ "data": null, "error": { "code": code, "message": message } }));
    Ok(ErrorHandlerResponse::Response(
        ServiceResponse::new(req, new).map_into_right_body(),
    ))
}
