//! Carrier webhooks at `POST /carrier/events` (outside `/api/v2`: the
//! carrier, not an API client, calls it): inbound messages (STOP and its
//! synonyms opt the sender out of the line, START/UNSTOP opt back in),
//! delivery reports and fax status events, in Telnyx's v2 format.
//!
//! Verified before anything is parsed, with Telnyx's scheme: the header
//! `telnyx-signature-ed25519` is the base64 Ed25519 signature of
//! `{telnyx-timestamp}|{raw body}` under the carrier's public key
//! (`AGENTIC_CARRIER_PUBLIC_KEY`); the timestamp (Unix seconds) must be
//! within 5 minutes of now. Anything else is 401 and changes nothing.
//!
//! Verified events are not rate-limited: the carrier sends a busy line's
//! delivery reports and opt-outs from a few addresses, and a 429 could lose
//! a STOP (spec rule 8). Requests that fail verification draw from the
//! general per-client bucket, so forging costs as much as any API call.

use actix_web::{HttpRequest, HttpResponse, ResponseError, web};
use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};

use entity::{phone_line, phone_message, phone_opt_out};

use super::keywords::{self, Keyword};
use super::signature::{DEFAULT_TOLERANCE_SECS, SIGNATURE_HEADER, TIMESTAMP_HEADER};
use super::telnyx_wire::{CarrierEvent, Delivery, parse_event};
use crate::error::ApiError;
use crate::http::AppState;

pub const PATH: &str = "/carrier/events";
/// Carrier events are a few KiB.
const MAX_BODY: usize = 256 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(PATH)
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .route(web::post().to(carrier_events)),
    );
}

fn refuse(status: actix_web::http::StatusCode, code: &str, why: String) -> HttpResponse {
    HttpResponse::build(status)
        .json(serde_json::json!({"data": null, "error": {"code": code, "message": why}}))
}

async fn carrier_events(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    use actix_web::http::StatusCode;
    let header = |name: &str| req.headers().get(name).map(|v| v.as_bytes());
    let verified = match &state.config.carrier_public_key {
        None => Err("carrier webhooks are not configured (AGENTIC_CARRIER_PUBLIC_KEY)".into()),
        Some(key) => key
            .verify(
                header(SIGNATURE_HEADER),
                header(TIMESTAMP_HEADER),
                &body,
                Utc::now().timestamp(),
                DEFAULT_TOLERANCE_SECS,
            )
            .map_err(|why| why.to_string()),
    };
    if let Err(why) = verified {
        // Only what fails verification draws from the client's bucket.
        let key = crate::http::middleware::rate_key(&state, &req);
        if let Err(verdict) = state.limits.general.check(key) {
            return ApiError::RateLimited(verdict).error_response();
        }
        return refuse(StatusCode::UNAUTHORIZED, "UNAUTHORIZED", why);
    }
    let event = match parse_event(&body) {
        Ok(e) => e,
        Err(e) => return refuse(StatusCode::BAD_REQUEST, "VALIDATION_ERROR", e.to_string()),
    };
    match handle(&state, event).await {
        Ok(()) => {
            HttpResponse::Ok().json(serde_json::json!({"data": {"received": true}, "error": null}))
        }
        Err(e) => {
            tracing::warn!(error = %e, "carrier webhook: cannot record; the carrier will retry");
            refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                "SERVICE_UNAVAILABLE",
                "retry later".into(),
            )
        }
    }
}

/// The message status a delivery report moves to, if any.
fn reported(delivery: Delivery) -> Option<&'static str> {
    match delivery {
        Delivery::Delivered => Some("delivered"),
        Delivery::Read => Some("read"),
        Delivery::Failed => Some("failed"),
        // Not final, or final without news: the message stays `submitted`.
        Delivery::Sent | Delivery::Unconfirmed => None,
    }
}

async fn handle(state: &AppState, event: CarrierEvent) -> Result<(), sea_orm::DbErr> {
    match event {
        CarrierEvent::Inbound { from, to, text, .. } => {
            let keyword = keywords::classify(&text);
            if keyword == Keyword::None {
                return Ok(());
            }
            let Some(line) = phone_line::Entity::find()
                .filter(phone_line::Column::Number.eq(to.as_str()))
                .one(&state.db)
                .await?
            else {
                return Ok(());
            };
            let _turn = state.writes.enter().await;
            if keyword == Keyword::OptOut {
                phone_opt_out::Entity::insert(phone_opt_out::ActiveModel {
                    line_id: Set(line.id),
                    recipient: Set(from),
                    created_at: Set(Utc::now()),
                })
                .on_conflict(
                    OnConflict::columns([
                        phone_opt_out::Column::LineId,
                        phone_opt_out::Column::Recipient,
                    ])
                    .do_nothing()
                    .to_owned(),
                )
                .exec_without_returning(&state.db)
                .await?;
            } else {
                phone_opt_out::Entity::delete_many()
                    .filter(phone_opt_out::Column::LineId.eq(line.id))
                    .filter(phone_opt_out::Column::Recipient.eq(from))
                    .exec(&state.db)
                    .await?;
            }
            Ok(())
        }
        CarrierEvent::Status {
            message_id,
            delivery,
            ..
        } => {
            let Some(status) = reported(delivery) else {
                return Ok(());
            };
            let Some(msg) = phone_message::Entity::find()
                .filter(phone_message::Column::CarrierMessageId.eq(message_id))
                .one(&state.db)
                .await?
            else {
                return Ok(());
            };
            let _turn = state.writes.enter().await;
            super::sender::record_report(&state.db, &msg, status).await?;
            Ok(())
        }
        CarrierEvent::FaxStatus {
            fax_id,
            status,
            failure_reason,
            ..
        } => {
            // An unknown fax id (another system's fax) is acknowledged and dropped.
            super::fax::service::report(&state.db, &state.writes, &fax_id, status, failure_reason)
                .await
                .map(|_| ())
        }
        CarrierEvent::FaxReceived {
            fax_id,
            from,
            to,
            media_url,
            ..
        } => super::fax::receive::receive(&state.ctx, &fax_id, &from, &to, media_url)
            .await
            .map_err(sea_orm::DbErr::Custom),
        CarrierEvent::Other { .. } => Ok(()),
    }
}
