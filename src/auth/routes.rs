//! `GET /api/v2/me`: lets an integrator check what a key can do.

use actix_web::{HttpResponse, get};
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use crate::error::ApiResult;
use crate::http::auth::{AccountInfo, UserInfo};
use crate::http::{Caller, Envelope, ErrorEnvelope, envelope};
use crate::types::Permission;

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(me);
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeOut {
    pub account: AccountInfo,
    pub user: UserInfo,
    pub permissions: Vec<Permission>,
}

/// The caller behind the bearer credential.
#[utoipa::path(
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, body = Envelope<MeOut>),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[get("/me")]
pub async fn me(caller: Caller) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(MeOut {
        account: caller.account.clone(),
        user: caller.user.clone(),
        permissions: caller.permissions.clone(),
    }))
}
