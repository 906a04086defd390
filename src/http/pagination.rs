//! The HTTP side of the domain's `Page`: its OpenAPI parameters and an
//! extractor for routes that are not operations.

use actix_web::{FromRequest, HttpRequest, dev::Payload};
use futures_util::future::{Ready, ready};
use utoipa::IntoParams;

use crate::error::ApiError;
pub use crate::ops::Page;
use crate::ops::page::MAX_SKIP;

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

impl<const DEFAULT: u64, const MAX: u64> FromRequest for Page<DEFAULT, MAX> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Self::parse(req.query_string()))
    }
}
