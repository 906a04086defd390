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
