//! Errors of the OAuth endpoints that clients read as JSON
//! (`/auth/register`, `/auth/token`, `/auth/revoke`). OAuth clients parse
//! the RFC bodies `{error, error_description}` (RFC 6749 section 5.2,
//! RFC 7591 section 3.2.2), so these answer that shape instead of the
//! `/api/v2` envelope; every answer says `Cache-Control: no-store`.

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use serde_json::json;

#[derive(Debug, thiserror::Error)]
#[error("{error}: {description}")]
pub struct OAuthError {
    pub status: StatusCode,
    /// The RFC's error code, e.g. `invalid_grant`.
    pub error: &'static str,
    pub description: String,
}

impl OAuthError {
    fn new(status: StatusCode, error: &'static str, description: impl Into<String>) -> Self {
        OAuthError {
            status,
            error,
            description: description.into(),
        }
    }

    pub fn invalid_request(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_request", d)
    }

    /// An unknown client (RFC 6749 allows 401 for it).
    pub fn invalid_client(d: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "invalid_client", d)
    }

    pub fn invalid_grant(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_grant", d)
    }

    pub fn unsupported_grant_type(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "unsupported_grant_type", d)
    }

    pub fn invalid_scope(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_scope", d)
    }

    /// RFC 8707: a `resource` that is not this server.
    pub fn invalid_target(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_target", d)
    }

    pub fn invalid_redirect_uri(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_redirect_uri", d)
    }

    pub fn invalid_client_metadata(d: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid_client_metadata", d)
    }

    /// A failure of ours; the cause is logged, never sent.
    pub fn server_error(cause: impl std::fmt::Display) -> Self {
        tracing::error!(error = %cause, "oauth internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "server_error",
            "internal error; safe to retry once",
        )
    }
}

impl From<sea_orm::DbErr> for OAuthError {
    fn from(e: sea_orm::DbErr) -> Self {
        OAuthError::server_error(e)
    }
}

impl ResponseError for OAuthError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        HttpResponse::build(self.status)
            .insert_header((header::CACHE_CONTROL, "no-store"))
            .insert_header((header::PRAGMA, "no-cache"))
            .json(json!({ "error": self.error, "error_description": self.description }))
    }
}
