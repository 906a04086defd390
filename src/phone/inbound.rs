//! Carrier webhooks at `POST /carrier/events` (outside `/api/v2`: the
//! carrier, not an API client, calls it): inbound messages (STOP and its
//! synonyms opt the sender out of the line, START/UNSTOP opt back in) and
//! delivery reports, in Telnyx's v2 format.
//!
//! Verified before anything is parsed, with Telnyx's scheme: the header
//! `telnyx-signature-ed25519` is the base64 Ed25519 signature of
//! `{telnyx-timestamp}|{raw body}` under the carrier's public key
//! (`AGENTIC_CARRIER_PUBLIC_KEY`); the timestamp (Unix seconds) must be
//! within 5 minutes of now. Anything else is 401 and changes nothing.

use actix_web::{HttpRequest, HttpResponse, web};
use base64::Engine;
use chrono::Utc;
use ed25519_dalek::{Signature, Verifier, VerifyingKey};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, Set};
use serde::Deserialize;

use entity::{phone_line, phone_message, phone_opt_out};

use crate::state::AppState;

pub const PATH: &str = "/carrier/events";
pub const SIGNATURE_HEADER: &str = "telnyx-signature-ed25519";
pub const TIMESTAMP_HEADER: &str = "telnyx-timestamp";
/// Largest accepted clock difference, in seconds.
pub const TOLERANCE_SECS: i64 = 300;
const MAX_BODY: usize = 256 * 1024;

/// Keywords (trimmed, any case) that opt a recipient out, and back in.
pub const STOP_WORDS: &[&str] = &["STOP", "STOPALL", "UNSUBSCRIBE", "CANCEL", "END", "QUIT"];
pub const START_WORDS: &[&str] = &["START", "UNSTOP"];

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(
        web::resource(PATH)
            .app_data(web::PayloadConfig::new(MAX_BODY))
            .route(web::post().to(carrier_events)),
    );
}

fn header<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

/// Checks the signature and freshness of a carrier webhook.
pub fn verify(
    public_key_b64: Option<&str>,
    signature_b64: Option<&str>,
    timestamp: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), &'static str> {
    let b64 = base64::engine::general_purpose::STANDARD;
    let key: [u8; 32] = public_key_b64
        .and_then(|k| b64.decode(k.trim()).ok())
        .and_then(|k| k.try_into().ok())
        .ok_or("no carrier public key is configured")?;
    let key = VerifyingKey::from_bytes(&key).map_err(|_| "the carrier public key is invalid")?;
    let sig: [u8; 64] = signature_b64
        .and_then(|s| b64.decode(s.trim()).ok())
        .and_then(|s| s.try_into().ok())
        .ok_or("missing or malformed signature")?;
    let ts = timestamp.ok_or("missing timestamp")?;
    let at: i64 = ts.trim().parse().map_err(|_| "malformed timestamp")?;
    if (now - at).abs() > TOLERANCE_SECS {
        return Err("stale timestamp");
    }
    let mut signed = Vec::with_capacity(ts.len() + 1 + body.len());
    signed.extend_from_slice(ts.as_bytes());
    signed.push(b'|');
    signed.extend_from_slice(body);
    key.verify(&signed, &Signature::from_bytes(&sig))
        .map_err(|_| "bad signature")
}

#[derive(Debug, Deserialize)]
struct Webhook {
    data: Event,
}

#[derive(Debug, Deserialize)]
struct Event {
    event_type: String,
    payload: Payload,
}

#[derive(Debug, Deserialize)]
struct Payload {
    id: Option<String>,
    from: Option<Party>,
    #[serde(default)]
    to: Vec<Party>,
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Party {
    phone_number: String,
    status: Option<String>,
}

fn refuse(why: &str) -> HttpResponse {
    HttpResponse::Unauthorized().json(serde_json::json!({ "error": why }))
}

async fn carrier_events(
    req: HttpRequest,
    state: web::Data<AppState>,
    body: web::Bytes,
) -> HttpResponse {
    if let Err(why) = verify(
        state.config.carrier_public_key.as_deref(),
        header(&req, SIGNATURE_HEADER),
        header(&req, TIMESTAMP_HEADER),
        &body,
        Utc::now().timestamp(),
    ) {
        return refuse(why);
    }
    let Ok(hook) = serde_json::from_slice::<Webhook>(&body) else {
        return HttpResponse::BadRequest().json(serde_json::json!({ "error": "unreadable event" }));
    };
    match handle(&state, hook.data).await {
        Ok(()) => HttpResponse::Ok().json(serde_json::json!({ "received": true })),
        Err(e) => {
            tracing::warn!(error = %e, "carrier webhook: cannot record; the carrier will retry");
            HttpResponse::ServiceUnavailable().json(serde_json::json!({ "error": "retry later" }))
        }
    }
}

async fn handle(state: &AppState, event: Event) -> Result<(), sea_orm::DbErr> {
    let p = event.payload;
    match event.event_type.as_str() {
        "message.received" => {
            let (Some(from), Some(to), Some(text)) = (p.from, p.to.first(), p.text) else {
                return Ok(());
            };
            let word = text.trim().to_ascii_uppercase();
            let stop = STOP_WORDS.contains(&word.as_str());
            let start = START_WORDS.contains(&word.as_str());
            if !stop && !start {
                return Ok(());
            }
            let Some(line) = phone_line::Entity::find()
                .filter(phone_line::Column::Number.eq(to.phone_number.as_str()))
                .one(&state.db)
                .await?
            else {
                return Ok(());
            };
            let _turn = state.writes.enter().await;
            if stop {
                phone_opt_out::Entity::insert(phone_opt_out::ActiveModel {
                    line_id: Set(line.id),
                    recipient: Set(from.phone_number),
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
                    .filter(phone_opt_out::Column::Recipient.eq(from.phone_number))
                    .exec(&state.db)
                    .await?;
            }
            Ok(())
        }
        "message.sent" | "message.finalized" => {
            let (Some(id), Some(status)) = (p.id, p.to.first().and_then(|t| t.status.clone()))
            else {
                return Ok(());
            };
            let Some(msg) = phone_message::Entity::find()
                .filter(phone_message::Column::CarrierMessageId.eq(id))
                .one(&state.db)
                .await?
            else {
                return Ok(());
            };
            let _turn = state.writes.enter().await;
            super::sender::record_report(&state.db, &msg, &status).await?;
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    #[test]
    fn signatures_over_timestamp_and_body_verify_and_anything_else_fails() {
        let sk = SigningKey::from_bytes(&[7; 32]);
        let b64 = base64::engine::general_purpose::STANDARD;
        let pk = b64.encode(sk.verifying_key().to_bytes());
        let body = br#"{"data":{}}"#;
        let sig = b64.encode(sk.sign(b"1700000000|{\"data\":{}}").to_bytes());
        let ok = |pk: Option<&str>, sig: Option<&str>, ts: Option<&str>, body: &[u8], now| {
            verify(pk, sig, ts, body, now)
        };
        assert_eq!(
            ok(
                Some(&pk),
                Some(&sig),
                Some("1700000000"),
                body,
                1_700_000_100
            ),
            Ok(())
        );
        assert_eq!(
            ok(
                Some(&pk),
                Some(&sig),
                Some("1700000000"),
                body,
                1_700_000_301
            ),
            Err("stale timestamp")
        );
        assert_eq!(
            ok(
                Some(&pk),
                Some(&sig),
                Some("1700000001"),
                body,
                1_700_000_000
            ),
            Err("bad signature")
        );
        assert_eq!(
            ok(
                Some(&pk),
                Some(&sig),
                Some("1700000000"),
                b"{}",
                1_700_000_000
            ),
            Err("bad signature")
        );
        assert!(ok(Some(&pk), None, Some("1700000000"), body, 1_700_000_000).is_err());
        assert!(ok(None, Some(&sig), Some("1700000000"), body, 1_700_000_000).is_err());
        assert!(ok(Some(&pk), Some(&sig), None, body, 1_700_000_000).is_err());
    }
}
