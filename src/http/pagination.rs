//! The HTTP side of the domain's `Page`: its OpenAPI parameters and an
//! extractor for routes that are not operations.

use actix_web::{FromRequest, HttpRequest, dev::Payload};
use futures_util::future::{Ready, ready};
use utoipa::IntoParams;

use crate::error::ApiError;
use crate::ops::page::MAX_SKIP;
pub use crate::ops::{OptionalPage, Page};

/// Documents `take`/`skip` with this endpoint's own default and cap:
/// `params(Page<20, 100>)` in a `#[utoipa::path]`.
impl<const DEFAULT: u64, const MAX: u64> IntoParams for Page<DEFAULT, MAX> {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        params(
            MAX,
            Some(DEFAULT),
            format!("Page size, 1 to {MAX} (default {DEFAULT})."),
        )
    }
}

/// `params(OptionalPage<20, 100>)`: as [`Page`], but leaving both out
/// answers the whole list.
impl<const DEFAULT: u64, const MAX: u64> IntoParams for OptionalPage<DEFAULT, MAX> {
    fn into_params(
        _: impl Fn() -> Option<utoipa::openapi::path::ParameterIn>,
    ) -> Vec<utoipa::openapi::path::Parameter> {
        params(
            MAX,
            None,
            format!(
                "Page size, 1 to {MAX} (default {DEFAULT} when skip is given). Without take and skip, the whole list."
            ),
        )
    }
}

fn params(
    max: u64,
    default_take: Option<u64>,
    take: String,
) -> Vec<utoipa::openapi::path::Parameter> {
    use utoipa::openapi::path::{ParameterBuilder, ParameterIn};
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    let int = |min: u64, max: u64, default: Option<u64>| {
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(min as f64))
            .maximum(Some(max as f64))
            .default(default.map(Into::into))
            .build()
    };
    vec![
        ParameterBuilder::new()
            .name("take")
            .parameter_in(ParameterIn::Query)
            .description(Some(take))
            .schema(Some(int(1, max, default_take)))
            .build(),
        ParameterBuilder::new()
            .name("skip")
            .parameter_in(ParameterIn::Query)
            .description(Some("Rows to skip (default 0)."))
            .schema(Some(int(0, MAX_SKIP, Some(0))))
            .build(),
    ]
}

impl<const DEFAULT: u64, const MAX: u64> FromRequest for Page<DEFAULT, MAX> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(Self::parse(req.query_string()))
    }
}
