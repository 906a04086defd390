//! OAuth 2.0 authorization server for agent hosts: dynamic client
//! registration (RFC 7591), authorization code with PKCE S256 (RFC 6749,
//! RFC 7636) through server-rendered login and consent pages, refresh with
//! rotation, revocation (RFC 7009) and discovery metadata (RFC 8414,
//! RFC 9728). Access tokens authenticate wherever an API key does: a
//! grant's credential is a row of `api_keys` (see `tokens`), whose
//! permissions are the grant's platform scopes (see `pages` for the
//! consent choice). Expired rows and unused clients are pruned (`prune`).
//! The web console is a built-in first-party client (`console`).
//!
//! Outside `/api/v2` and its envelope: clients read the RFCs' shapes.

pub mod authorize;
pub mod console;
pub mod endpoints;
pub mod error;
pub mod form;
pub mod metadata;
pub mod model;
pub mod pages;
pub mod password;
pub mod prune;
pub mod store;
pub mod tokens;

use actix_web::web;

use crate::error::ApiError;

pub use metadata::{www_authenticate_for, www_authenticate_invalid_token};
pub use tokens::OAuthTuning;

/// A resource that answers only `methods`: anything else is a 405 with
/// `Allow`, as on the API.
fn only(path: &str, methods: &[&str], route: actix_web::Route) -> actix_web::Resource {
    let allow: Vec<String> = methods.iter().map(|m| m.to_string()).collect();
    web::resource(path)
        .route(route)
        .default_service(web::to(move || {
            let allow = allow.clone();
            async move { Err::<actix_web::HttpResponse, _>(ApiError::MethodNotAllowed { allow }) }
        }))
}

/// Routes at the root (not under `/api/v2`), left out of the OpenAPI
/// document: they are specified by the RFCs above.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(only(
        "/authorize",
        &["GET"],
        web::get().to(authorize::authorize),
    ))
    .service(only(
        "/auth/login",
        &["POST"],
        web::post().to(authorize::login),
    ))
    .service(only(
        "/auth/consent",
        &["POST"],
        web::post().to(authorize::consent),
    ))
    .service(only(
        "/auth/register",
        &["POST"],
        web::post().to(endpoints::register),
    ))
    .service(only(
        "/auth/token",
        &["POST"],
        web::post().to(endpoints::token),
    ))
    .service(only(
        "/auth/revoke",
        &["POST"],
        web::post().to(endpoints::revoke),
    ))
    .service(only(
        metadata::METADATA_PATH,
        &["GET"],
        web::get().to(metadata::authorization_server_metadata),
    ))
    .service(only(
        metadata::RESOURCE_METADATA_PATH,
        &["GET"],
        web::get().to(metadata::resource_metadata),
    ))
    .service(only(
        "/.well-known/oauth-protected-resource/{resource:.+}",
        &["GET"],
        web::get().to(metadata::resource_metadata_for),
    ));
}
