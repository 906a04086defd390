//! REST routes derived from the operation registry: one resource per
//! operation, bound to its verb and path (the OpenAPI document describes
//! the same declarations, see `crate::openapi`). The handler authenticates, checks the declared access
//! before the body is read, hands the transport-neutral input to the
//! operation and wraps its reply in the envelope.

use actix_web::body::SizedStream;
use actix_web::dev::{AppService, HttpServiceFactory};
use actix_web::http::{Method, StatusCode, header};
use actix_web::{FromRequest, HttpRequest, HttpResponse, guard, web};
use bytes::Bytes;

use crate::error::ApiError;
use crate::http::AppState;
use crate::http::Caller;
use crate::http::json::read_body;
use crate::ops::{BodyKind, OperationDef, RawInput, Registry, Reply, Verb, authorize};

/// Registers `def` as a REST route.
pub struct RestRoute(pub &'static OperationDef);

fn method(verb: Verb) -> Method {
    match verb {
        Verb::Get => Method::GET,
        Verb::Post => Method::POST,
        Verb::Put => Method::PUT,
        Verb::Patch => Method::PATCH,
        Verb::Delete => Method::DELETE,
    }
}

impl HttpServiceFactory for RestRoute {
    fn register(self, config: &mut AppService) {
        let def = self.0;
        web::resource(def.path)
            .name(def.name)
            .guard(guard::Method(method(def.verb)))
            .to(move |req: HttpRequest, payload: web::Payload| handle(def, req, payload))
            .register(config);
    }
}

/// The registered operations whose paths have no parameters, as REST
/// routes. They go ahead of every parameterised route: the router tries
/// routes in order and matches a parameterised one with a regex, so a
/// static path is found without running any, and it wins over a pattern
/// that would also match it.
pub fn configure_static(cfg: &mut web::ServiceConfig, operations: Registry) {
    for def in operations.iter().filter(|d| !d.path.contains('{')) {
        cfg.service(RestRoute(def));
    }
}

/// The other registered operations as REST routes.
pub fn configure_parameterised(cfg: &mut web::ServiceConfig, operations: Registry) {
    for def in operations.iter().filter(|d| d.path.contains('{')) {
        cfg.service(RestRoute(def));
    }
}

async fn handle(
    def: &'static OperationDef,
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let caller = Caller::extract(&req).await?;
    // Refused before the body is read or anything is looked up.
    authorize(&caller, def.access)?;
    let state = req
        .app_data::<web::Data<AppState>>()
        .cloned()
        .ok_or_else(|| ApiError::internal("app state missing"))?;
    let body = match def.body {
        BodyKind::None => None,
        kind => {
            let mut payload = payload.into_inner();
            let bytes = read_body(&req, &mut payload, kind == BodyKind::Optional).await?;
            (!bytes.is_empty() || kind == BodyKind::Required).then_some(bytes)
        }
    };
    let raw = RawInput {
        path: req
            .match_info()
            .iter()
            .map(|(k, v)| (k.to_string(), serde_json::Value::from(v)))
            .collect(),
        query: req.query_string().to_string(),
        body,
    };
    let reply = (def.call)(state.ctx.clone(), caller.0.clone(), raw).await?;
    respond(reply)
}

/// `{data, error: null, meta?}` around the operation's serialized data. The
/// data is already JSON, so it is sent between the envelope's two ends as it
/// is: neither parsed and written again nor copied into one buffer (the
/// server copies each piece once, into its write buffer).
pub fn respond(reply: Reply) -> Result<HttpResponse, ApiError> {
    let meta = reply
        .pagination
        .map(|pagination| serde_json::to_vec(&serde_json::json!({ "pagination": pagination })))
        .transpose()
        .map_err(ApiError::internal)?;
    let mut tail = Vec::with_capacity(16 + meta.as_ref().map_or(0, |m| m.len() + 8));
    tail.extend_from_slice(b",\"error\":null");
    if let Some(meta) = meta {
        tail.extend_from_slice(b",\"meta\":");
        tail.extend_from_slice(&meta);
    }
    tail.push(b'}');
    let status = StatusCode::from_u16(reply.status).map_err(ApiError::internal)?;
    let pieces = [
        Bytes::from_static(b"{\"data\":"),
        reply.data,
        Bytes::from(tail),
    ];
    // Sent in turn, with the whole length announced (`Content-Length`).
    let len = pieces.iter().map(|p| p.len() as u64).sum();
    let stream = futures_util::stream::iter(pieces.map(Ok::<_, std::convert::Infallible>));
    Ok(HttpResponse::build(status)
        .insert_header(header::ContentType::json())
        .body(SizedStream::new(len, stream)))
}
