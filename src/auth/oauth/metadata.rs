//! Discovery documents: authorization server metadata (RFC 8414) and
//! protected resource metadata (RFC 9728), and the `WWW-Authenticate`
//! challenge that points a client at the latter.

use actix_web::{HttpResponse, web};
use serde_json::{Value, json};

use super::endpoints::GRANT_TYPES;
use super::model::{DEFAULT_SCOPES, SUPPORTED_SCOPES};
use crate::error::ApiError;
use crate::ops::Ctx;

/// Paths of protected resources that have their own metadata document at
/// `/.well-known/oauth-protected-resource{path}`; the bare document
/// describes the whole server.
pub const PROTECTED_RESOURCE_PATHS: &[&str] = &["/mcp/buyer", "/mcp/v3"];

pub const METADATA_PATH: &str = "/.well-known/oauth-authorization-server";
pub const RESOURCE_METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

pub fn authorization_server(public_url: &str) -> Value {
    json!({
        "issuer": public_url,
        "authorization_endpoint": format!("{public_url}/authorize"),
        "token_endpoint": format!("{public_url}/auth/token"),
        "registration_endpoint": format!("{public_url}/auth/register"),
        "revocation_endpoint": format!("{public_url}/auth/revoke"),
        "scopes_supported": SUPPORTED_SCOPES,
        "response_types_supported": ["code"],
        "response_modes_supported": ["query"],
        "grant_types_supported": GRANT_TYPES,
        "token_endpoint_auth_methods_supported": ["none"],
        "revocation_endpoint_auth_methods_supported": ["none"],
        "code_challenge_methods_supported": ["S256"],
        "authorization_response_iss_parameter_supported": true,
    })
}

/// RFC 9728: `resource` is exactly the identifier the document's URL was
/// built from. Its `scopes_supported` is the spec's scope alone: MCP hosts
/// ask for every scope listed here, and the platform scopes are for clients
/// that choose one (the authorization server metadata lists them).
pub fn protected_resource(public_url: &str, resource_path: &str) -> Value {
    json!({
        "resource": format!("{public_url}{resource_path}"),
        "authorization_servers": [public_url],
        "scopes_supported": DEFAULT_SCOPES,
        "bearer_methods_supported": ["header"],
    })
}

/// The challenge of a 401 from a protected resource at `resource_path`
/// (e.g. `/mcp/buyer`) when no token was sent.
pub fn www_authenticate_for(public_url: &str, resource_path: &str) -> String {
    format!("Bearer resource_metadata=\"{public_url}{RESOURCE_METADATA_PATH}{resource_path}\"")
}

/// The challenge when a token was presented and refused (RFC 6750
/// section 3.1: `error="invalid_token"`).
pub fn www_authenticate_invalid_token(public_url: &str, resource_path: &str) -> String {
    format!(
        "{}, error=\"invalid_token\"",
        www_authenticate_for(public_url, resource_path)
    )
}

pub async fn authorization_server_metadata(state: web::Data<Ctx>) -> HttpResponse {
    HttpResponse::Ok().json(authorization_server(&state.public_url))
}

pub async fn resource_metadata(state: web::Data<Ctx>) -> HttpResponse {
    HttpResponse::Ok().json(protected_resource(&state.public_url, ""))
}

pub async fn resource_metadata_for(
    state: web::Data<Ctx>,
    path: web::Path<String>,
) -> Result<HttpResponse, ApiError> {
    let resource = format!("/{}", path.into_inner());
    if !PROTECTED_RESOURCE_PATHS.contains(&resource.as_str()) {
        return Err(ApiError::not_found("protected resource"));
    }
    Ok(HttpResponse::Ok().json(protected_resource(&state.public_url, &resource)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_point_at_the_resource_metadata() {
        assert_eq!(
            www_authenticate_for("https://api.example.com", "/mcp/buyer"),
            "Bearer resource_metadata=\"https://api.example.com/.well-known/oauth-protected-resource/mcp/buyer\""
        );
        assert_eq!(
            www_authenticate_invalid_token("https://api.example.com", "/mcp/buyer"),
            "Bearer resource_metadata=\"https://api.example.com/.well-known/oauth-protected-resource/mcp/buyer\", error=\"invalid_token\""
        );
    }
}
