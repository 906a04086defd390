//! The buyer API: advertisers with brand identity, and the audit log.

pub mod advertisers;
pub mod audit;
pub mod brands;

use actix_web::{HttpResponse, get, web};
use utoipa_actix_web::service_config::ServiceConfig;

use crate::error::ApiResult;
use crate::http::{Caller, ErrorEnvelope, ListEnvelope, Page, envelope};
use crate::state::AppState;

pub fn configure(cfg: &mut ServiceConfig) {
    advertisers::routes::configure(cfg);
    cfg.service(list_audit_logs);
}

/// The account's audit log, newest first.
#[utoipa::path(
    tag = "buyer",
    security(("bearer" = [])),
    params(Page<20, 200>),
    responses(
        (status = 200, body = ListEnvelope<Vec<audit::AuditEntry>>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[get("/buyer/audit-logs")]
pub async fn list_audit_logs(
    state: web::Data<AppState>,
    caller: Caller,
    page: Page<20, 200>,
) -> ApiResult<HttpResponse> {
    let (entries, total) = audit::list(&state.db, &caller, page.take, page.skip).await?;
    Ok(envelope::list(entries, page.meta(total)))
}
