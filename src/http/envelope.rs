//! The envelopes' parts as the OpenAPI document names them: `meta` of a
//! list, the `error` object, the failure envelope. (Success envelopes are
//! written by `http::operations::respond` around an operation's JSON.)

use serde::Serialize;
use utoipa::ToSchema;

use crate::error::Issue;

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
