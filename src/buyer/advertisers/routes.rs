//! REST adapters over the advertiser operations.

use actix_web::{HttpResponse, get, post, put, web};
use utoipa_actix_web::service_config::ServiceConfig;

use super::model::{AdvertiserCreate, AdvertiserOut, AdvertiserUpdate};
use super::service;
use crate::error::ApiResult;
use crate::http::{ApiJson, Caller, Envelope, ErrorEnvelope, ListEnvelope, Page, envelope};
use crate::state::AppState;

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_advertisers)
        .service(create_advertiser)
        .service(get_advertiser)
        .service(update_advertiser);
}

/// `create_advertiser`
#[utoipa::path(
    tag = "buyer",
    operation_id = "create_advertiser",
    security(("bearer" = [])),
    request_body = AdvertiserCreate,
    responses(
        (status = 201, body = Envelope<AdvertiserOut>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[post("/buyer/advertisers")]
pub async fn create_advertiser(
    state: web::Data<AppState>,
    caller: Caller,
    body: ApiJson<AdvertiserCreate>,
) -> ApiResult<HttpResponse> {
    let created = service::create_advertiser(&state, &caller, body.0).await?;
    Ok(envelope::created(created))
}

/// `get_advertiser`
#[utoipa::path(
    tag = "buyer",
    operation_id = "get_advertiser",
    security(("bearer" = [])),
    params(("advertiserId" = uuid::Uuid, Path)),
    responses(
        (status = 200, body = Envelope<AdvertiserOut>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
    )
)]
#[get("/buyer/advertisers/{advertiserId}")]
pub async fn get_advertiser(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(
        service::get_advertiser(&state, &caller, &path).await?,
    ))
}

/// `update_advertiser`
#[utoipa::path(
    tag = "buyer",
    operation_id = "update_advertiser",
    security(("bearer" = [])),
    params(("advertiserId" = uuid::Uuid, Path)),
    request_body = AdvertiserUpdate,
    responses(
        (status = 200, body = Envelope<AdvertiserOut>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
        (status = 409, body = ErrorEnvelope, description = "brand or currency locked"),
    )
)]
#[put("/buyer/advertisers/{advertiserId}")]
pub async fn update_advertiser(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: ApiJson<AdvertiserUpdate>,
) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(
        service::update_advertiser(&state, &caller, &path, body.0).await?,
    ))
}

/// `list_advertisers`: newest first.
#[utoipa::path(
    tag = "buyer",
    operation_id = "list_advertisers",
    security(("bearer" = [])),
    params(Page<20, 100>),
    responses(
        (status = 200, body = ListEnvelope<Vec<AdvertiserOut>>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[get("/buyer/advertisers")]
pub async fn list_advertisers(
    state: web::Data<AppState>,
    caller: Caller,
    page: Page<20, 100>,
) -> ApiResult<HttpResponse> {
    let (data, meta) = service::list_advertisers(&state, &caller, page).await?;
    Ok(envelope::list(data, meta))
}
