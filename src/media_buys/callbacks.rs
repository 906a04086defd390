//! Sellers' push notifications (spec: Authentication 6; AdCP 3.1's legacy
//! HMAC-SHA256 webhook scheme): `POST /adcp/callbacks/{storefrontId}` with
//! `X-ADCP-Signature: sha256=<hex>` (HMAC-SHA256 keyed with the
//! storefront's callback secret over `"{timestamp}.{raw body}"`) and
//! `X-ADCP-Timestamp` (Unix seconds, within 300 s of now). The signature is
//! checked, in constant time, before the body is parsed. An event is
//! applied once: its `idempotency_key` (or `notification_id`) is recorded
//! in the same transaction, and a replay inside the window is answered 200
//! and ignored.

use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use chrono::Utc;
use hmac::{Hmac, KeyInit, Mac};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter, Set, sea_query::OnConflict};
use serde_json::{Value, json};
use sha2::Sha256;

use entity::{adcp_callback_event, media_buy};

use super::model::FAILED;
use super::outcome::{self, Outcome};
use crate::error::ApiError;
use crate::http::AppState;

pub const PATH_PREFIX: &str = "/adcp/callbacks";
pub const SIGNATURE_HEADER: &str = "x-adcp-signature";
pub const TIMESTAMP_HEADER: &str = "x-adcp-timestamp";
/// How far the signing time may be from now, either way (AdCP: 300 s).
pub const TOLERANCE_SECS: i64 = 300;
/// Callbacks carry one task's result.
const MAX_BODY: usize = 256 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(format!("{PATH_PREFIX}/{{storefrontId}}"))
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .route(web::post().to(receive)),
    );
}

/// Why a callback is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the callback is not signed (X-ADCP-Signature and X-ADCP-Timestamp are required)")]
    Unsigned,
    #[error("the callback's signature or timestamp is malformed")]
    Malformed,
    #[error("the callback was signed too long ago (or in the future)")]
    Stale,
    #[error("the callback's signature does not match its body")]
    Forged,
}

/// Checks one callback: the headers as sent, the exact body, `now` in Unix
/// seconds. The signature first, so a forged callback learns nothing of
/// the clock.
pub fn verify(
    secret: &[u8],
    signature: Option<&[u8]>,
    timestamp: Option<&[u8]>,
    body: &[u8],
    now: i64,
) -> Result<(), Rejected> {
    let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
        return Err(Rejected::Unsigned);
    };
    let hex_sig = signature
        .strip_prefix(b"sha256=")
        .ok_or(Rejected::Malformed)?;
    let sig = hex::decode(hex_sig).map_err(|_| Rejected::Malformed)?;
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).map_err(|_| Rejected::Malformed)?;
    mac.update(timestamp);
    mac.update(b".");
    mac.update(body);
    mac.verify_slice(&sig).map_err(|_| Rejected::Forged)?;
    let at: i64 = std::str::from_utf8(timestamp)
        .ok()
        .and_then(|t| t.trim().parse().ok())
        .ok_or(Rejected::Malformed)?;
    if (now - at).abs() > TOLERANCE_SECS {
        return Err(Rejected::Stale);
    }
    Ok(())
}

/// The `X-ADCP-Signature` value for a body (sellers' side; tests).
pub fn sign(secret: &[u8], timestamp: &str, body: &[u8]) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret) else {
        return String::new();
    };
    mac.update(timestamp.as_bytes());
    mac.update(b".");
    mac.update(body);
    format!("sha256={}", hex::encode(mac.finalize().into_bytes()))
}

fn refuse(status: StatusCode, code: &str, why: String) -> HttpResponse {
    HttpResponse::build(status).json(json!({"data": null, "error": {"code": code, "message": why}}))
}

async fn receive(
    req: HttpRequest,
    state: web::Data<AppState>,
    path: web::Path<String>,
    body: web::Bytes,
) -> HttpResponse {
    let header = |name: &str| req.headers().get(name).map(|v| v.as_bytes());
    // Every refusal looks the same to the sender: an unknown storefront,
    // one that never got a secret, a bad signature.
    let unauthorized = |why: String| {
        let key = crate::http::middleware::rate_key(&state, &req);
        if let Err(verdict) = state.limits.general.check(key) {
            return ApiError::RateLimited(verdict).error_response();
        }
        refuse(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", why)
    };
    let Ok(storefront_id) = path.into_inner().parse::<i64>() else {
        return unauthorized("unknown callback address".into());
    };
    let secret = match super::secrets::read(&state.db, &state.config, storefront_id).await {
        Ok(Some(s)) => s,
        Ok(None) => return unauthorized("unknown callback address".into()),
        Err(e) => {
            tracing::error!(error = %e, storefront_id, "cannot read a storefront's callback secret");
            return refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "retry later".into(),
            );
        }
    };
    if let Err(why) = verify(
        secret.as_bytes(),
        header(SIGNATURE_HEADER),
        header(TIMESTAMP_HEADER),
        &body,
        Utc::now().timestamp(),
    ) {
        return unauthorized(why.to_string());
    }
    let event: Value = match serde_json::from_slice(&body) {
        Ok(v @ Value::Object(_)) => v,
        _ => {
            return refuse(
                StatusCode::BAD_REQUEST,
                "VALIDATION_ERROR",
                "the body must be a JSON object (AdCP mcp-webhook-payload)".into(),
            );
        }
    };
    match apply(&state, storefront_id, &event).await {
        Ok(applied) => HttpResponse::Ok()
            .json(json!({"data": {"received": true, "applied": applied}, "error": null})),
        Err(e) => {
            tracing::warn!(error = %e, storefront_id, "seller callback: cannot record; the seller will retry");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "retry later".into(),
            )
        }
    }
}

/// What a callback says about a buy: a completed task carries the
/// `create_media_buy` result, a failed one its errors; other states
/// (`working`, `input-required`) change nothing.
fn read_event(event: &Value) -> Option<Outcome> {
    let status = event.get("status").and_then(Value::as_str)?;
    let result = event.get("result").cloned().unwrap_or(Value::Null);
    match status {
        "completed" => match outcome::read_create(&result) {
            Outcome::Unknown { .. } => outcome::lifecycle(&result).map(|s| Outcome::Status {
                status: s.to_string(),
                revision: result.get("revision").and_then(Value::as_i64),
            }),
            o => Some(o),
        },
        "failed" | "rejected" | "canceled" => Some(Outcome::Refused {
            errors: result
                .get("errors")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_else(|| {
                    vec![json!({"code": "TASK_FAILED", "message": event.get("message").and_then(Value::as_str).unwrap_or("the seller's task failed")})]
                }),
            status: FAILED.into(),
        }),
        _ => None,
    }
}

/// Applies a verified callback; whether it changed anything. The buy is
/// found by the task id (this storefront's), else by the operation id
/// (our media buy id, sent in `push_notification_config`).
async fn apply(state: &AppState, storefront_id: i64, event: &Value) -> Result<bool, ApiError> {
    let text = |k: &str| event.get(k).and_then(Value::as_str).map(str::to_string);
    let Some(event_key) = text("idempotency_key").or_else(|| text("notification_id")) else {
        return Ok(false);
    };
    let mut find = Condition::any();
    if let Some(task) = text("task_id") {
        find = find.add(media_buy::Column::AdcpTaskId.eq(task));
    }
    if let Some(op) = text("operation_id") {
        find = find.add(media_buy::Column::Id.eq(op));
    }
    let Some(buy) = media_buy::Entity::find()
        .filter(media_buy::Column::StorefrontId.eq(storefront_id))
        .filter(find)
        .one(&state.db)
        .await?
    else {
        return Ok(false);
    };
    let Some(outcome) = read_event(event) else {
        return Ok(false);
    };
    let now = Utc::now();
    let (changed, launched, kicks, notices) = {
        let _turn = state.writes.enter().await;
        let txn = crate::db::begin_write(&state.db).await?;
        let first = adcp_callback_event::Entity::insert(adcp_callback_event::ActiveModel {
            storefront_id: Set(storefront_id),
            event_key: Set(event_key),
            received_at: Set(now),
        })
        .on_conflict(
            OnConflict::columns([
                adcp_callback_event::Column::StorefrontId,
                adcp_callback_event::Column::EventKey,
            ])
            .do_nothing()
            .to_owned(),
        )
        .exec_without_returning(&txn)
        .await?;
        if first == 0 {
            return Ok(false);
        }
        let changed: Vec<media_buy::Model> =
            outcome::apply(&txn, &buy.id, &outcome, now, super::poll_every(state))
                .await?
                .into_iter()
                .collect();
        let kicks = outcome::queue_webhooks(&txn, &changed, now).await?;
        let launched =
            outcome::launch_settled(&txn, std::slice::from_ref(&buy.campaign_id), now).await?;
        let notices = outcome::notify_changed(&txn, &changed, now).await?;
        txn.commit().await?;
        (changed, launched, kicks, notices)
    };
    notices.publish(&state.bus).await;
    for id in &launched {
        tracing::info!(campaign = %id, "campaign launched: its media buys are live");
    }
    for row in &changed {
        state.bus.publish(super::events::status(row)).await;
    }
    crate::outbox::announce(&state.bus, &kicks);
    Ok(!changed.is_empty())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn signature_round_trip_and_refusals() {
        let body = br#"{"task_id":"t1"}"#;
        let sig = sign(b"secret-secret-secret-secret-secret", "1000", body);
        let ok = verify(
            b"secret-secret-secret-secret-secret",
            Some(sig.as_bytes()),
            Some(b"1000"),
            body,
            1100,
        );
        assert_eq!(ok, Ok(()));
        assert_eq!(
            verify(
                b"secret-secret-secret-secret-secret",
                Some(sig.as_bytes()),
                Some(b"1000"),
                body,
                1400
            ),
            Err(Rejected::Stale)
        );
        assert_eq!(
            verify(
                b"other-secret",
                Some(sig.as_bytes()),
                Some(b"1000"),
                body,
                1100
            ),
            Err(Rejected::Forged)
        );
        assert_eq!(
            verify(
                b"secret-secret-secret-secret-secret",
                Some(sig.as_bytes()),
                Some(b"1001"),
                body,
                1100
            ),
            Err(Rejected::Forged)
        );
        assert_eq!(
            verify(b"s", Some(b"abc"), Some(b"1000"), body, 1000),
            Err(Rejected::Malformed)
        );
        assert_eq!(
            verify(b"s", None, Some(b"1000"), body, 1000),
            Err(Rejected::Unsigned)
        );
    }
}
