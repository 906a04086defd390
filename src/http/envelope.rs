//! Success envelopes: `{data, error: null}` and, on lists, `meta.pagination`.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::Issue;

#[derive(Serialize, ToSchema)]
pub struct Envelope<T> {
    pub data: T,
    /// Always `null` on success.
    #[schema(value_type = Option<ErrorBody>)]
    pub error: Option<ErrorBody>,
}

#[derive(Serialize, ToSchema)]
pub struct ListEnvelope<T> {
    pub data: T,
    #[schema(value_type = Option<ErrorBody>)]
    pub error: Option<ErrorBody>,
    pub meta: ListMeta,
}

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

pub fn respond<T: Serialize>(status: StatusCode, data: T) -> HttpResponse {
    HttpResponse::build(status).json(Envelope { data, error: None })
}

pub fn ok<T: Serialize>(data: T) -> HttpResponse {
    respond(StatusCode::OK, data)
}

pub fn created<T: Serialize>(data: T) -> HttpResponse {
    respond(StatusCode::CREATED, data)
}

pub fn accepted<T: Serialize>(data: T) -> HttpResponse {
    respond(StatusCode::ACCEPTED, data)
}

pub fn list<T: Serialize>(data: T, pagination: PaginationMeta) -> HttpResponse {
    HttpResponse::Ok().json(ListEnvelope {
        data,
        error: None,
        meta: ListMeta { pagination },
    })
}
