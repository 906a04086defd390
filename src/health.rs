//! Liveness and readiness probes (outside `/api/v2`, not rate limited).

use actix_web::{HttpResponse, web};
use serde_json::json;

use crate::http::AppState;

/// Described in the OpenAPI document by `crate::openapi`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route("/healthz", web::get().to(healthz))
        .route("/readyz", web::get().to(readyz));
}

/// The process is up.
pub async fn healthz() -> HttpResponse {
    HttpResponse::Ok().json(json!({ "data": { "status": "ok" }, "error": null }))
}

/// The database answers and, with several instances, the event bus works.
pub async fn readyz(state: web::Data<AppState>) -> HttpResponse {
    let ping = tokio::time::timeout(std::time::Duration::from_secs(2), state.db.ping()).await;
    if matches!(ping, Ok(Ok(()))) && !state.bus.is_healthy() {
        // Events from other instances are not arriving (yet): streams here
        // still resynchronise from the database, but a balancer should
        // prefer another instance.
        return HttpResponse::ServiceUnavailable().json(json!({
            "data": null,
            "error": { "code": "SERVICE_UNAVAILABLE", "message": "event bus between instances unavailable" }
        }));
    }
    match ping {
        Ok(Ok(())) => HttpResponse::Ok().json(json!({
            "data": { "status": "ready", "database": format!("{:?}", state.db.get_database_backend()).to_lowercase() },
            "error": null
        })),
        other => {
            tracing::warn!(?other, "readiness check failed");
            HttpResponse::ServiceUnavailable().json(json!({
                "data": null,
                "error": { "code": "SERVICE_UNAVAILABLE", "message": "database unreachable" }
            }))
        }
    }
}
