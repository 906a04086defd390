//! Offset pagination (`take`/`skip`) shared by every list endpoint; each
//! endpoint picks its default and cap as const parameters.

use actix_web::{FromRequest, HttpRequest, dev::Payload};
use futures_util::future::{Ready, ready};
use serde::Deserialize;
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::http::PaginationMeta;

/// `Page<DEFAULT, MAX>`: `take` in 1..=MAX (default DEFAULT), `skip` >= 0.
#[derive(Debug, Clone, Copy)]
pub struct Page<const DEFAULT: u64 = 20, const MAX: u64 = 100> {
    pub take: u64,
    pub skip: u64,
}

/// Documents `take`/`skip` with this endpoint's own default and cap:
/// `params(Page<20, 100>)` in a `#[utoipa::path]`.
impl<const DEFAULT: u64, const MAX: u64> IntoParams for Page<DEFAULT, MAX> {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
        use utoipa::openapi::schema::{ObjectBuilder, Type};
        let int = |min: u64, max: u64, default: u64| {
            ObjectBuilder::new()
                .schema_type(Type::Integer)
                .minimum(Some(min as f64))
                .maximum(Some(max as f64))
                .default(Some(default.into()))
                .build()
        };
        vec![
            ParameterBuilder::new()
                .name("take")
                .parameter_in(ParameterIn::Query)
                .description(Some(format!("Page size, 1 to {MAX} (default {DEFAULT}).")))
                .schema(Some(int(1, MAX, DEFAULT)))
                .build(),
            ParameterBuilder::new()
                .name("skip")
                .parameter_in(ParameterIn::Query)
                .description(Some("Rows to skip (default 0)."))
                .schema(Some(int(0, MAX_SKIP, 0)))
                .build(),
        ]
    }
}

#[derive(Deserialize)]
struct Raw {
    take: Option<String>,
    skip: Option<String>,
}

/// Largest accepted `skip`: keeps offsets inside every backend's integer range.
const MAX_SKIP: u64 = 1_000_000_000;

impl<const DEFAULT: u64, const MAX: u64> Page<DEFAULT, MAX> {
    pub fn parse(query: &str) -> Result<Self, ApiError> {
        let raw: Raw = crate::http::query::parse_query(query)?;
        let take = match raw.take {
            None => DEFAULT,
            Some(t) => match t.parse::<u64>() {
                Ok(n) if (1..=MAX).contains(&n) => n,
                _ => {
                    return Err(ApiError::invalid(
                        "take",
                        format!("must be an integer from 1 to {MAX}"),
                    ));
                }
            },
        };
        let skip = match raw.skip {
            None => 0,
            Some(s) => match s.parse::<u64>() {
                Ok(n) if n <= MAX_SKIP => n,
                _ => {
                    return Err(ApiError::invalid(
                        "skip",
                        format!("must be an integer from 0 to {MAX_SKIP}"),
                    ));
                }
            },
        };
        Ok(Page { take, skip })
    }

    pub fn meta(&self, total: u64) -> PaginationMeta {
        PaginationMeta {
            skip: self.skip,
            take: self.take,
            total,
            has_more: self.skip.saturating_add(self.take) < total,
        }
    }
}

impl<const DEFAULT: u64, const MAX: u64> FromRequest for Page<DEFAULT, MAX> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Self::parse(req.query_string()))
    }
}
