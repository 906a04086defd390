//! Cross-cutting middleware: rate limits, request ids, and
//! a last-resort rewrite of any framework error into the envelope.

use std::net::IpAddr;

use actix_web::body::{BoxBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::http::{Uri, uri::PathAndQuery};
use actix_web::middleware::{ErrorHandlerResponse, Next};
use actix_web::{Error, HttpRequest, HttpResponse, ResponseError, web};
use serde_json::json;

use crate::error::ApiError;
use crate::http::AppState;
use crate::http::auth::{STREAM_TOKEN_PARAM, StreamTokenParam};
use crate::http::client_ip;

pub const REQUEST_ID: &str = "x-request-id";

/// Per-client rate limiting (see `client_ip`); headers on every limited
/// response. Carrier webhooks are limited by their handler instead, and only
/// when unverified (see `phone::inbound`).
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
    match bucket.check(rate_key(&state, req.request())) {
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

/// The key `req` draws from a rate-limit bucket under: its client's address
/// (see `client_ip`), IPv6 by /64.
pub fn rate_key(state: &AppState, req: &HttpRequest) -> IpAddr {
    let peer = req
        .peer_addr()
        .map(|a| a.ip())
        .unwrap_or(IpAddr::from([0, 0, 0, 0]));
    let client = client_ip::client_ip(&state.config.trusted_proxies, peer, req.headers());
    client_ip::bucket_key(client)
}

/// Takes a stream token out of the request URI before anything can log it:
/// the value moves into the request's extensions (read by `StreamCaller`)
/// and the URI keeps `streamToken=redacted`. Must wrap the request logger.
pub async fn redact_stream_token(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<BoxBody>, Error> {
    use actix_web::HttpMessage;
    if let Some((token, uri)) = split_stream_token(req.uri()) {
        req.head_mut().uri = uri.clone();
        req.match_info_mut().get_mut().update(&uri);
        req.extensions_mut().insert(StreamTokenParam(token));
    }
    next.call(req)
        .await
        .map(ServiceResponse::map_into_boxed_body)
}

/// The first stream token in `uri`'s query and the URI with every one redacted.
fn split_stream_token(uri: &Uri) -> Option<(String, Uri)> {
    let query = uri.query()?;
    let mut token = None;
    let mut kept = Vec::new();
    for pair in query.split('&') {
        let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
        let name: String = url::form_urlencoded::parse(name.as_bytes())
            .map(|(k, _)| k.into_owned())
            .collect();
        if name == STREAM_TOKEN_PARAM {
            if token.is_none() {
                token = Some(
                    url::form_urlencoded::parse(format!("v={value}").as_bytes())
                        .map(|(_, v)| v.into_owned())
                        .collect::<String>(),
                );
            }
            kept.push(REDACTED_STREAM_TOKEN);
        } else {
            kept.push(pair);
        }
    }
    let token = token?;
    let path_and_query = format!("{}?{}", uri.path(), kept.join("&"));
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = PathAndQuery::try_from(path_and_query).ok();
    // Unreachable in practice (the pieces came from a valid URI); if it
    // were, the whole query goes rather than the token staying.
    let redacted = Uri::from_parts(parts)
        .ok()
        .or_else(|| Uri::try_from(uri.path()).ok())?;
    Some((token, redacted))
}

const REDACTED_STREAM_TOKEN: &str = "streamToken=redacted";

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
/// errors) becomes an envelope with a code derived from its status. HTML is
/// left alone: the OAuth pages' errors are pages for a person.
pub fn envelope_errors<B: MessageBody + 'static>(
    res: ServiceResponse<B>,
) -> actix_web::Result<ErrorHandlerResponse<B>> {
    let keep_as_is = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json") || v.starts_with("text/html"));
    if keep_as_is {
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn stream_tokens_are_taken_out_of_the_query_and_every_copy_redacted() {
        let uri: Uri = "/s/events?after=0&streamToken=sst_a%5Fb&x=1&stream%54oken=other"
            .parse()
            .unwrap();
        let (token, redacted) = split_stream_token(&uri).unwrap();
        assert_eq!(token, "sst_a_b");
        assert_eq!(
            redacted.to_string(),
            "/s/events?after=0&streamToken=redacted&x=1&streamToken=redacted"
        );
        let plain: Uri = "/s/events?after=0&streamTokens=1".parse().unwrap();
        assert!(split_stream_token(&plain).is_none());
        assert!(split_stream_token(&"/s/events".parse().unwrap()).is_none());
    }
}
