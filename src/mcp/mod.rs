//! Agent access over MCP (Streamable HTTP only): `/mcp/buyer` and
//! `/mcp/storefront` serve the registry's operations as tools, each its
//! surface's ([`tools`]); `/mcp/v3` the typed tools ([`v3`]). rmcp's Streamable HTTP
//! server does the protocol (sessions with `Mcp-Session-Id`, JSON or SSE
//! answers, `DELETE` to end a session, `Host`/`Origin` checks against DNS
//! rebinding); this module authenticates the bearer credential first (a 401
//! names the protected-resource metadata), admits a request that names a
//! session only for that session's owner ([`sessions`]: sessions live in
//! the database and any instance serves them), and adapts actix's request
//! and response to the `http` 1.x types rmcp speaks. The body is read only
//! once the caller is known, up to [`MAX_BODY`].

pub mod library;
pub mod sessions;
pub mod tools;
pub mod v3;

use std::sync::Arc;

use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{
    SessionManager, StreamableHttpServerConfig, StreamableHttpService,
};

use crate::error::ApiError;
use crate::http::AppState;
use crate::http::auth::bearer_token;
use crate::http::json::{declared_length, read_limited};

/// Largest MCP request body (1 MiB): a stranger's body is not read at all;
/// a caller's over it is 413 `PAYLOAD_TOO_LARGE`.
pub const MAX_BODY: usize = 1024 * 1024;

/// One MCP server (`/mcp/buyer`, `/mcp/storefront`, `/mcp/v3`), built once per app.
pub struct Endpoint<S> {
    service: StreamableHttpService<S, LocalSessionManager>,
    /// The sessions this instance holds in memory (rmcp's).
    local: Arc<LocalSessionManager>,
    /// Every instance's sessions of this endpoint, with their owners.
    sessions: Arc<sessions::Sessions>,
    /// Its path, for the protected-resource metadata it names on a 401.
    path: &'static str,
}

/// The servers of this app.
#[derive(Clone)]
pub struct Endpoints {
    buyer: Arc<Endpoint<tools::RegistryTools>>,
    storefront: Arc<Endpoint<tools::RegistryTools>>,
    v3: Arc<Endpoint<v3::V3Tools>>,
}

impl Endpoints {
    pub fn new(state: &AppState) -> Self {
        let buyer = registry_endpoint(state, "/mcp/buyer", &tools::BUYER);
        let storefront = registry_endpoint(state, "/mcp/storefront", &tools::STOREFRONT);
        let ctx = state.ctx.clone();
        let list = Arc::new(v3::tools(state.operations));
        let v3 = endpoint(state, "/mcp/v3", move || {
            v3::V3Tools::new(ctx.clone(), list.clone())
        });
        Endpoints {
            buyer: Arc::new(buyer),
            storefront: Arc::new(storefront),
            v3: Arc::new(v3),
        }
    }
}

fn registry_endpoint(
    state: &AppState,
    path: &'static str,
    surface: &'static tools::Surface,
) -> Endpoint<tools::RegistryTools> {
    let ctx = state.ctx.clone();
    let list = Arc::new(tools::tools(state.operations, surface));
    endpoint(state, path, move || {
        tools::RegistryTools::new(ctx.clone(), surface, list.clone())
    })
}

fn endpoint<S: rmcp::ServerHandler + Send + 'static>(
    state: &AppState,
    path: &'static str,
    make: impl Fn() -> S + Send + Sync + 'static,
) -> Endpoint<S> {
    let sessions = Arc::new(sessions::Sessions::new(
        state.db.clone(),
        path,
        state.config.mcp_session_ttl,
    ));
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(allowed_hosts(state))
        .with_allowed_origins(allowed_origins(state))
        .enforce_origin_validation()
        .with_cancellation_token(state.shutdown.child_token());
    config.session_store = Some(sessions.clone());
    let local = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(move || Ok(make()), local.clone(), config);
    Endpoint {
        service,
        local,
        sessions,
        path,
    }
}

/// The names this server answers to: the public URL's host and the
/// loopback names (a DNS-rebinding page has neither as its `Host`).
fn allowed_hosts(state: &AppState) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_string(),
        "127.0.0.1".into(),
        "[::1]".into(),
        "::1".into(),
    ];
    for url in [state.public_url.as_ref(), &state.listen_url()] {
        if let Ok(u) = url::Url::parse(url)
            && let Some(h) = u.host_str()
        {
            hosts.push(h.to_string());
        }
    }
    hosts.sort();
    hosts.dedup();
    hosts
}

/// Browser origins allowed to call: the public URL's, the configured CORS
/// origins and loopback pages. Requests without `Origin` (agents, not
/// browsers) pass.
fn allowed_origins(state: &AppState) -> Vec<String> {
    let mut origins: Vec<String> = state.config.cors_origins.as_slice().to_vec();
    if let Ok(u) = url::Url::parse(&state.public_url) {
        origins.push(u.origin().ascii_serialization());
    }
    // Pages on this machine (a rebinding page's origin is its own public
    // name, never a loopback one); they still need a bearer credential.
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        origins.push(format!("http://{host}:*"));
    }
    origins
}

/// Routes (not part of the REST OpenAPI document).
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource("/mcp/buyer")
            .route(web::post().to(buyer))
            .route(web::get().to(buyer))
            .route(web::delete().to(buyer)),
    )
    .service(
        web::resource("/mcp/storefront")
            .route(web::post().to(storefront))
            .route(web::get().to(storefront))
            .route(web::delete().to(storefront)),
    )
    .service(
        web::resource("/mcp/v3")
            .route(web::post().to(typed))
            .route(web::get().to(typed))
            .route(web::delete().to(typed)),
    );
}

async fn buyer(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    endpoints: web::Data<Endpoints>,
) -> Result<HttpResponse, ApiError> {
    serve(req, body, &state, &endpoints.buyer).await
}

async fn storefront(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    endpoints: web::Data<Endpoints>,
) -> Result<HttpResponse, ApiError> {
    serve(req, body, &state, &endpoints.storefront).await
}

async fn typed(
    req: HttpRequest,
    body: web::Payload,
    state: web::Data<AppState>,
    endpoints: web::Data<Endpoints>,
) -> Result<HttpResponse, ApiError> {
    serve(req, body, &state, &endpoints.v3).await
}

async fn serve<S: rmcp::ServerHandler + Send + 'static>(
    req: HttpRequest,
    body: web::Payload,
    state: &AppState,
    endpoint: &Endpoint<S>,
) -> Result<HttpResponse, ApiError> {
    let caller = match bearer_token(&req) {
        Ok(token) => state.auth.authenticate(&token).await?,
        Err(_) => None,
    };
    let Some(caller) = caller else {
        let presented = req.headers().contains_key("authorization");
        return Ok(unauthorized(state, endpoint.path, presented));
    };
    let body = read_limited(body.into_inner(), declared_length(&req), MAX_BODY).await?;
    let owner = sessions::Owner::of(&caller);
    if let Some(id) = req
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
    {
        match endpoint.sessions.admit(id, &owner).await? {
            sessions::Admission::Admitted => {}
            sessions::Admission::Stranger => return Ok(session_not_found()),
            sessions::Admission::Unknown => {
                // Ended or expired (perhaps through another instance): this
                // instance's worker for it, if any, goes too.
                let id: rmcp::transport::streamable_http_server::SessionId = id.into();
                if endpoint.local.has_session(&id).await.unwrap_or(false)
                    && let Err(e) = endpoint.local.close_session(&id).await
                {
                    tracing::warn!(error = %e, "closing an ended MCP session");
                }
                return Ok(session_not_found());
            }
        }
    }
    let method_is_delete = req.method() == actix_web::http::Method::DELETE;
    let mut builder = http::Request::builder()
        .method(req.method().as_str())
        .uri(req.uri().to_string());
    for (name, value) in req.headers() {
        builder = builder.header(name.as_str(), value.as_bytes());
    }
    let mut request = builder
        .body(http_body_util::Full::new(body))
        .map_err(ApiError::internal)?;
    request.extensions_mut().insert(caller);
    request
        .extensions_mut()
        .insert(actix_rt::Arbiter::current());
    let response = sessions::as_caller(owner, endpoint.service.handle(request)).await;
    let (parts, body) = response.into_parts();
    let mut status = parts.status.as_u16();
    // A session ended by DELETE is gone, not pending: 204 (the reference
    // clients take 202 for a failed termination).
    if method_is_delete && status == 202 {
        status = 204;
    }
    let mut out = HttpResponse::build(
        actix_web::http::StatusCode::from_u16(status)
            .unwrap_or(actix_web::http::StatusCode::INTERNAL_SERVER_ERROR),
    );
    for (name, value) in parts.headers.iter() {
        out.append_header((name.as_str(), value.as_bytes()));
    }
    // No body (204, or rmcp's empty 202): written as such. Streamed, it
    // would be chunked, and a 204 followed by the chunked terminator
    // corrupts the kept-alive connection for the client's next request.
    if status == 204 || http_body::Body::size_hint(&body).exact() == Some(0) {
        return Ok(out.finish());
    }
    // SSE answers stream; JSON answers are one frame.
    let stream = body
        .into_data_stream()
        .map(|chunk| chunk.map_err(|never| match never {}));
    Ok(out.streaming(stream))
}

/// rmcp's answer to a session it does not know (the MCP spec's 404, after
/// which a client opens a new session).
fn session_not_found() -> HttpResponse {
    HttpResponse::NotFound()
        .content_type("text/plain; charset=utf-8")
        .body("Not Found: Session not found")
}

/// 401 with the RFC 9728 pointer agents follow to find how to sign in.
fn unauthorized(state: &AppState, path: &str, presented: bool) -> HttpResponse {
    let challenge = if presented {
        crate::auth::oauth::www_authenticate_invalid_token(&state.public_url, path)
    } else {
        crate::auth::oauth::www_authenticate_for(&state.public_url, path)
    };
    let err = ApiError::Unauthorized("a bearer API key or access token is required".into());
    let mut res = actix_web::ResponseError::error_response(&err);
    if let Ok(v) = actix_web::http::header::HeaderValue::from_str(&challenge) {
        res.headers_mut()
            .insert(actix_web::http::header::WWW_AUTHENTICATE, v);
    }
    res
}
