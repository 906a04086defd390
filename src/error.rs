//! The one error type of the HTTP API, mapped once to the spec's envelope
//! `{data: null, error: {code, message, field?, details?}}`.

use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

/// One problem found while validating input.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct Issue {
    /// Path of the offending field, e.g. `utmConfig[3].paramKey`.
    pub path: String,
    pub message: String,
}

/// Collects every problem with its path.
#[derive(Debug, Default)]
pub struct Issues(pub Vec<Issue>);

impl Issues {
    pub fn add(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(Issue {
            path: path.into(),
            message: message.into(),
        });
    }

    pub fn into_result(self) -> Result<(), ApiError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid_all(self.0))
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    #[error("{message}")]
    Validation {
        message: String,
        field: Option<String>,
        issues: Vec<Issue>,
    },
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    Unauthorized(String),
    #[error("{0}")]
    Forbidden(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{message}")]
    Conflict {
        message: String,
        details: Option<Value>,
    },
    #[error("method not allowed")]
    MethodNotAllowed { allow: Vec<String> },
    #[error("request body exceeds {limit} bytes")]
    PayloadTooLarge { limit: usize },
    #[error("{0}")]
    UnsupportedMediaType(String),
    #[error("rate limit exceeded")]
    RateLimited(RateLimit),
    #[error("{0}")]
    ServiceUnavailable(String),
    /// Any other spec code (e.g. `CURRENCY_MISMATCH`) with its status.
    #[error("{message}")]
    Coded {
        kind: Kind,
        code: &'static str,
        message: String,
        field: Option<String>,
        details: Option<Value>,
    },
    #[error(transparent)]
    Internal(#[from] anyhow::Error),
}

impl ApiError {
    /// A validation error on one field.
    pub fn invalid(field: impl Into<String>, message: impl Into<String>) -> Self {
        let field = field.into();
        let message = message.into();
        ApiError::Validation {
            issues: vec![Issue {
                path: field.clone(),
                message: message.clone(),
            }],
            message,
            field: Some(field),
        }
    }

    /// A validation error listing several issues; `field` is the first path.
    pub fn invalid_all(issues: Vec<Issue>) -> Self {
        let first = issues.first().cloned();
        ApiError::Validation {
            message: first
                .as_ref()
                .map(|i| format!("{}: {}", i.path, i.message))
                .unwrap_or_else(|| "invalid request".into()),
            field: first.map(|i| i.path),
            issues,
        }
    }

    pub fn not_found(what: &str) -> Self {
        ApiError::NotFound(format!("{what} not found"))
    }

    pub fn conflict(message: impl Into<String>) -> Self {
        ApiError::Conflict {
            message: message.into(),
            details: None,
        }
    }

    pub fn internal(cause: impl std::fmt::Display) -> Self {
        ApiError::Internal(anyhow::anyhow!("{cause}"))
    }

    pub fn code(&self) -> &'static str {
        match self {
            ApiError::Validation { .. } => "VALIDATION_ERROR",
            ApiError::BadRequest(_) => "BAD_REQUEST",
            ApiError::Unauthorized(_) => "UNAUTHORIZED",
            ApiError::Forbidden(_) => "FORBIDDEN",
            ApiError::NotFound(_) => "NOT_FOUND",
            ApiError::Conflict { .. } => "CONFLICT",
            ApiError::MethodNotAllowed { .. } => "METHOD_NOT_ALLOWED",
            ApiError::PayloadTooLarge { .. } => "PAYLOAD_TOO_LARGE",
            ApiError::UnsupportedMediaType(_) => "UNSUPPORTED_MEDIA_TYPE",
            ApiError::RateLimited(_) => "RATE_LIMITED",
            ApiError::ServiceUnavailable(_) => "SERVICE_UNAVAILABLE",
            ApiError::Coded { code, .. } => code,
            ApiError::Internal(_) => "INTERNAL_ERROR",
        }
    }

    /// The `error` object of the envelope.
    pub fn body(&self) -> Value {
        let message = match self {
            ApiError::Internal(_) => "internal error; safe to retry once".to_string(),
            other => other.to_string(),
        };
        let mut error = json!({ "code": self.code(), "message": message });
        let (field, details) = match self {
            ApiError::Validation { field, issues, .. } => {
                (field.clone(), Some(json!({ "issues": issues })))
            }
            ApiError::Conflict { details, .. } => (None, details.clone()),
            ApiError::Coded { field, details, .. } => (field.clone(), details.clone()),
            ApiError::PayloadTooLarge { limit } => (None, Some(json!({ "limitBytes": limit }))),
            ApiError::MethodNotAllowed { allow } => (None, Some(json!({ "allow": allow }))),
            ApiError::RateLimited(v) => (None, Some(json!({ "retryAfterSeconds": v.reset_secs }))),
            _ => (None, None),
        };
        if let Some(f) = field {
            error["field"] = Value::String(f);
        }
        if let Some(d) = details {
            error["details"] = d;
        }
        error
    }
}

impl From<sea_orm::DbErr> for ApiError {
    fn from(e: sea_orm::DbErr) -> Self {
        if let Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) = e.sql_err() {
            return ApiError::conflict("a record with the same unique value already exists");
        }
        ApiError::Internal(anyhow::Error::new(e))
    }
}

/// What kind of failure a spec code (`Coded`) is. Services say what went
/// wrong; the HTTP edge chooses the status (`crate::http::envelope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// The request is wrong (400).
    Invalid,
    /// The caller may not do this to what it names (403), e.g.
    /// `ACCESS_DENIED`.
    Denied,
    /// What it names does not exist for the caller (404).
    NotFound,
    /// It contradicts the state of what it names (409).
    Conflict,
    /// What it names existed and is no longer usable (410), e.g. an
    /// expired upload URL.
    Gone,
    /// It would commit spend beyond the account's credit (402).
    PaymentRequired,
    /// Well formed, but something it needs is not available (422).
    Unprocessable,
    /// Not built yet (501).
    NotImplemented,
    /// The outcome cannot be known now (503): e.g. a carrier that may have
    /// taken a submission.
    Unavailable,
}

impl ApiError {
    /// A spec code with its kind, message and structured details.
    pub fn coded(
        kind: Kind,
        code: &'static str,
        message: impl Into<String>,
        details: Value,
    ) -> Self {
        ApiError::Coded {
            kind,
            code,
            message: message.into(),
            field: None,
            details: Some(details),
        }
    }
}

/// A rate limiter's answer: the bucket's size, what is left and when it
/// refills (the `RateLimit-*` headers; `Retry-After` when limited).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    pub limit: u32,
    pub remaining: u32,
    /// Seconds until the bucket is full again (or, when limited, until the next request is allowed).
    pub reset_secs: u64,
}

impl RateLimit {
    pub fn header_pairs(&self) -> [(&'static str, String); 3] {
        [
            ("ratelimit-limit", self.limit.to_string()),
            ("ratelimit-remaining", self.remaining.to_string()),
            ("ratelimit-reset", self.reset_secs.to_string()),
        ]
    }
}

pub type ApiResult<T> = Result<T, ApiError>;
