//! The OpenAPI 3.1 document, generated from the registered handlers.

use actix_web::{HttpResponse, get, web};
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use crate::error::Issue;
use crate::http::envelope::{ErrorBody, ErrorEnvelope, PaginationMeta, ValidationDetails};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agentic-api",
        description = "Self-hostable server for AI-assisted advertising buyers. Every /api/v2 \
                       response is an envelope: `{data, error: null}` on success (`meta` on \
                       lists), `{data: null, error: {code, message, field?, details?}}` on failure."
    ),
    components(schemas(ErrorEnvelope, ErrorBody, Issue, ValidationDetails, PaginationMeta)),
    modifiers(&BearerAuth)
)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("API key (`agk_...`) or OAuth access token"))
                    .build(),
            ),
        );
    }
}

/// Documents the errors every operation can return (rate limit, internal error,
/// and for operations with a body: validation, size and media type), so the
/// document lists every status the server can actually produce.
pub fn add_common_responses(doc: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, ResponseBuilder};
    let error = |description: &str| {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name("ErrorEnvelope")))
                        .build(),
                )
                .build(),
        )
    };
    for (path, item) in doc.paths.paths.iter_mut() {
        let public = path == "/healthz" || path == "/readyz" || path.ends_with("/openapi.json");
        for op in [
            &mut item.get,
            &mut item.put,
            &mut item.post,
            &mut item.delete,
            &mut item.patch,
        ]
        .into_iter()
        .flatten()
        {
            let responses = &mut op.responses.responses;
            if !public {
                responses.entry("429".into()).or_insert_with(|| {
                    error("RATE_LIMITED; see Retry-After and RateLimit-* headers")
                });
            }
            responses
                .entry("500".into())
                .or_insert_with(|| error("INTERNAL_ERROR; safe to retry once"));
            if op.request_body.is_some() {
                responses
                    .entry("400".into())
                    .or_insert_with(|| error("VALIDATION_ERROR"));
                responses
                    .entry("413".into())
                    .or_insert_with(|| error("PAYLOAD_TOO_LARGE"));
                responses
                    .entry("415".into())
                    .or_insert_with(|| error("UNSUPPORTED_MEDIA_TYPE"));
            }
        }
    }
}

/// The rendered document, computed once at start-up.
pub struct OpenApiJson(pub Vec<u8>);

/// This document.
#[utoipa::path(tag = "meta", responses((status = 200, description = "OpenAPI 3.1 document")))]
#[get("/openapi.json")]
pub async fn openapi_json(doc: web::Data<OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(doc.0.clone())
}
