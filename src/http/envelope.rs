//! The envelopes' parts as the OpenAPI document names them: `meta` of a
//! list, the `error` object, the failure envelope. (Success envelopes are
//! written by `http::operations::respond` around an operation's JSON.)

use actix_web::http::{StatusCode, header};
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use serde_json::json;
use utoipa::ToSchema;

use crate::error::{ApiError, Issue, Kind};

#[derive(Serialize, ToSchema, Clone, Copy, Debug)]
pub struct ListMeta {
    pub pagination: PaginationMeta,
}

/// The domain's list position, as `meta.pagination`.
pub use crate::ops::Pagination as PaginationMeta;

/// The `error` object of a failure envelope.
#[derive(Serialize, ToSchema)]
pub struct ErrorBody {
    /// Machine-readable code, e.g. `VALIDATION_ERROR`.
    pub code: String,
    pub message: String,
    /// Path of the offending field, for validation errors.
    pub field: Option<String>,
    /// Structured details; for validation errors `{issues: [{path, message}]}`.
    #[schema(value_type = Option<Object>)]
    pub details: Option<serde_json::Value>,
}

/// Every failure: `{data: null, error: {...}}`.
#[derive(Serialize, ToSchema)]
pub struct ErrorEnvelope {
    #[schema(value_type = Option<Object>)]
    pub data: Option<()>,
    pub error: ErrorBody,
}

/// Validation details as documented in the OpenAPI document.
#[derive(Serialize, ToSchema)]
pub struct ValidationDetails {
    pub issues: Vec<Issue>,
}

/// The HTTP edge of every domain error: its status (chosen here, from the
/// error's kind), its headers and the failure envelope.
impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        match self {
            ApiError::Validation { .. } | ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::Conflict { .. } => StatusCode::CONFLICT,
            ApiError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::RateLimited(_) => StatusCode::TOO_MANY_REQUESTS,
            ApiError::ServiceUnavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Coded { kind, .. } => match kind {
                Kind::Invalid => StatusCode::BAD_REQUEST,
                Kind::Denied => StatusCode::FORBIDDEN,
                Kind::NotFound => StatusCode::NOT_FOUND,
                Kind::Conflict => StatusCode::CONFLICT,
                Kind::Gone => StatusCode::GONE,
                Kind::PaymentRequired => StatusCode::PAYMENT_REQUIRED,
                Kind::Unprocessable => StatusCode::UNPROCESSABLE_ENTITY,
                Kind::NotImplemented => StatusCode::NOT_IMPLEMENTED,
                Kind::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            },
            ApiError::Internal(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        if let ApiError::Internal(cause) = self {
            tracing::error!(error = ?cause, "internal error");
        }
        let mut res = HttpResponse::build(self.status_code());
        match self {
            ApiError::Unauthorized(_) => {
                res.insert_header((header::WWW_AUTHENTICATE, "Bearer"));
            }
            ApiError::MethodNotAllowed { allow } => {
                res.insert_header((header::ALLOW, allow.join(", ")));
            }
            ApiError::RateLimited(v) => {
                res.insert_header((header::RETRY_AFTER, v.reset_secs.to_string()));
                for (name, value) in v.header_pairs() {
                    res.insert_header((name, value));
                }
            }
            _ => {}
        }
        res.json(json!({ "data": null, "error": self.body() }))
    }
}
