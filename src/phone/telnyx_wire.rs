//! Telnyx v2 messaging wire format (public API docs), the carrier adapter's
//! model: what we POST to `/v2/messages` (SMS) and `/v2/messages/rcs`
//! (RCS, plain text), what comes back, and the webhook events
//! (`message.received`, `message.sent`, `message.finalized`) read into
//! [`CarrierEvent`] once their signature is verified. Unknown fields are
//! ignored and unknown event types are reported as such, so the carrier can
//! add to its format without breaking us.

use serde::{Deserialize, Serialize};

/// `POST /v2/messages`.
#[derive(Debug, Serialize)]
pub struct SmsRequest<'a> {
    pub from: &'a str,
    pub to: &'a str,
    pub text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messaging_profile_id: Option<&'a str>,
    /// Always `SMS`: MMS is not offered, and no fallback is asked for.
    #[serde(rename = "type")]
    pub kind: &'static str,
}

/// `POST /v2/messages/rcs`: plain text only (spec rule 9).
#[derive(Debug, Serialize)]
pub struct RcsRequest<'a> {
    pub agent_id: &'a str,
    pub to: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub messaging_profile_id: Option<&'a str>,
    pub agent_message: RcsAgentMessage<'a>,
}

#[derive(Debug, Serialize)]
pub struct RcsAgentMessage<'a> {
    pub content_message: RcsContent<'a>,
}

#[derive(Debug, Serialize)]
pub struct RcsContent<'a> {
    pub text: &'a str,
}

impl<'a> RcsRequest<'a> {
    pub fn text(
        agent_id: &'a str,
        to: &'a str,
        messaging_profile_id: Option<&'a str>,
        text: &'a str,
    ) -> Self {
        RcsRequest {
            agent_id,
            to,
            messaging_profile_id,
            agent_message: RcsAgentMessage {
                content_message: RcsContent { text },
            },
        }
    }
}

/// `POST /v2/faxes`: the carrier fetches `media_url` itself.
#[derive(Debug, Serialize)]
pub struct FaxRequest<'a> {
    /// The carrier's fax application (the line's profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connection_id: Option<&'a str>,
    pub media_url: &'a str,
    pub to: &'a str,
    pub from: &'a str,
}

/// A 2xx answer to any send: the carrier's message or fax id.
#[derive(Debug, Deserialize)]
pub struct Accepted {
    pub data: AcceptedData,
}

#[derive(Debug, Deserialize)]
pub struct AcceptedData {
    pub id: String,
}

/// A 4xx/5xx answer: `{errors: [{code, title, detail}]}`.
#[derive(Debug, Default, Deserialize)]
pub struct Errors {
    #[serde(default)]
    pub errors: Vec<ErrorItem>,
}

#[derive(Debug, Deserialize)]
pub struct ErrorItem {
    #[serde(default)]
    pub code: Option<String>,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub detail: Option<String>,
}

impl Errors {
    /// One line for the message's record: `code title: detail; …`.
    pub fn summary(&self) -> String {
        self.errors
            .iter()
            .map(|e| {
                let mut s = e.code.clone().unwrap_or_default();
                for part in [&e.title, &e.detail].into_iter().flatten() {
                    if !s.is_empty() {
                        s.push_str(if s.ends_with(':') { " " } else { ": " });
                    }
                    s.push_str(part);
                }
                s
            })
            .collect::<Vec<_>>()
            .join("; ")
    }
}

#[derive(Debug, Deserialize)]
struct Envelope {
    data: EventData,
}

#[derive(Debug, Deserialize)]
struct EventData {
    id: String,
    event_type: String,
    /// Read as a [`Payload`] only for the message events: other events
    /// carry other shapes.
    #[serde(default)]
    payload: Option<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
struct Payload {
    /// The message's id (ours for reports; only reports need it).
    #[serde(default)]
    id: Option<String>,
    #[serde(default, rename = "type")]
    kind: Option<String>,
    #[serde(default)]
    from: Option<Party>,
    #[serde(default)]
    to: Vec<Party>,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Debug, Deserialize)]
struct Party {
    phone_number: String,
    #[serde(default)]
    status: Option<String>,
}

/// The channel a carrier event is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Sms,
    Rcs,
}

/// A delivery report's outcome, as far as we keep it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Handed on by the carrier (`sent`), not yet final.
    Sent,
    Delivered,
    /// Read by the recipient (RCS read receipts).
    Read,
    /// `sending_failed`, `delivery_failed`: final, not delivered.
    Failed,
    /// `delivery_unconfirmed` and any other final status.
    Unconfirmed,
}

/// A verified webhook event, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CarrierEvent {
    /// A recipient wrote to one of our lines.
    Inbound {
        event_id: String,
        message_id: String,
        channel: Channel,
        from: String,
        to: String,
        text: String,
    },
    /// News of a message we sent (`message_id` is the carrier's id).
    Status {
        event_id: String,
        message_id: String,
        channel: Channel,
        delivery: Delivery,
    },
    /// News of a fax we sent (`fax.queued`, `fax.media.processed`,
    /// `fax.sending.started`, `fax.delivered`, `fax.failed`), as our status.
    FaxStatus {
        event_id: String,
        fax_id: String,
        status: &'static str,
        failure_reason: Option<String>,
    },
    /// A fax arrived on one of our lines; `media_url` is the carrier's
    /// temporary URL of the PDF (copied, never stored).
    FaxReceived {
        event_id: String,
        fax_id: String,
        from: String,
        to: String,
        media_url: String,
    },
    /// An event type we do not act on (acknowledged, not processed).
    Other {
        event_id: String,
        event_type: String,
    },
}

/// Our status for a fax event type.
fn fax_status(event_type: &str) -> Option<&'static str> {
    Some(match event_type {
        "fax.queued" => "queued",
        "fax.media.processed" => "media.processed",
        "fax.sending.started" => "sending",
        "fax.delivered" => "delivered",
        "fax.failed" => "failed",
        _ => return None,
    })
}

#[derive(Debug, Deserialize)]
struct FaxReceivedPayload {
    fax_id: String,
    from: String,
    to: String,
    media_url: String,
}

#[derive(Debug, Deserialize)]
struct FaxPayload {
    fax_id: String,
    #[serde(default)]
    failure_reason: Option<String>,
}

/// Why a verified body cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("unreadable carrier event: {0}")]
pub struct Unreadable(String);

/// Reads a webhook body (already verified: see `signature`).
pub fn parse_event(body: &[u8]) -> Result<CarrierEvent, Unreadable> {
    let env: Envelope = serde_json::from_slice(body).map_err(|e| Unreadable(e.to_string()))?;
    let EventData {
        id: event_id,
        event_type,
        payload,
    } = env.data;
    if event_type == "fax.received" {
        let p: FaxReceivedPayload = payload
            .ok_or_else(|| Unreadable("fax.received without a payload".into()))
            .and_then(|p| {
                serde_json::from_value(p).map_err(|e| Unreadable(format!("fax.received: {e}")))
            })?;
        return Ok(CarrierEvent::FaxReceived {
            event_id,
            fax_id: p.fax_id,
            from: p.from,
            to: p.to,
            media_url: p.media_url,
        });
    }
    if let Some(status) = fax_status(&event_type) {
        let p: FaxPayload = payload
            .ok_or_else(|| Unreadable(format!("{event_type} without a payload")))
            .and_then(|p| {
                serde_json::from_value(p).map_err(|e| Unreadable(format!("{event_type}: {e}")))
            })?;
        return Ok(CarrierEvent::FaxStatus {
            event_id,
            fax_id: p.fax_id,
            status,
            failure_reason: p.failure_reason,
        });
    }
    let payload: Payload = match (&*event_type, payload) {
        ("message.received" | "message.sent" | "message.finalized", Some(p)) => {
            serde_json::from_value(p).map_err(|e| Unreadable(format!("{event_type}: {e}")))?
        }
        ("message.received" | "message.sent" | "message.finalized", None) => {
            return Err(Unreadable(format!("{event_type} without a payload")));
        }
        _ => {
            return Ok(CarrierEvent::Other {
                event_id,
                event_type,
            });
        }
    };
    let channel = match payload.kind.as_deref() {
        Some(k) if k.eq_ignore_ascii_case("rcs") => Channel::Rcs,
        _ => Channel::Sms,
    };
    let first_to = payload.to.into_iter().next();
    if event_type == "message.received" {
        let from = payload
            .from
            .ok_or_else(|| Unreadable("message.received without from".into()))?;
        let to = first_to.ok_or_else(|| Unreadable("message.received without to".into()))?;
        return Ok(CarrierEvent::Inbound {
            event_id,
            message_id: payload.id.unwrap_or_default(),
            channel,
            from: from.phone_number,
            to: to.phone_number,
            text: payload.text.unwrap_or_default(),
        });
    }
    let status = first_to.and_then(|t| t.status).unwrap_or_default();
    let delivery = match status.as_str() {
        "sent" | "queued" | "sending" => Delivery::Sent,
        "delivered" => Delivery::Delivered,
        "read" => Delivery::Read,
        "sending_failed" | "delivery_failed" | "failed" => Delivery::Failed,
        _ => Delivery::Unconfirmed,
    };
    let message_id = payload
        .id
        .ok_or_else(|| Unreadable(format!("{event_type} without the message's id")))?;
    Ok(CarrierEvent::Status {
        event_id,
        message_id,
        channel,
        delivery,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_have_the_carriers_field_names() {
        let sms = SmsRequest {
            from: "+15550000001",
            to: "+15550000002",
            text: "hi",
            messaging_profile_id: Some("mp-1"),
            kind: "SMS",
        };
        assert_eq!(
            serde_json::to_value(&sms).unwrap(),
            json!({"from": "+15550000001", "to": "+15550000002", "text": "hi",
                   "messaging_profile_id": "mp-1", "type": "SMS"})
        );
        let rcs = RcsRequest::text("agent-1", "+15550000002", None, "hi");
        assert_eq!(
            serde_json::to_value(&rcs).unwrap(),
            json!({"agent_id": "agent-1", "to": "+15550000002",
                   "agent_message": {"content_message": {"text": "hi"}}})
        );
        let ok: Accepted = serde_json::from_value(json!({"data": {
            "record_type": "message", "id": "4031938c-60d5", "to": [{"phone_number": "+15550000002", "status": "queued"}]
        }}))
        .unwrap();
        assert_eq!(ok.data.id, "4031938c-60d5");
        let err: Errors = serde_json::from_value(json!({"errors": [
            {"code": "40310", "title": "Invalid 'to' address", "detail": "not a mobile number"}
        ]}))
        .unwrap();
        assert_eq!(
            err.summary(),
            "40310: Invalid 'to' address: not a mobile number"
        );
    }

    #[test]
    fn inbound_messages_and_delivery_reports_are_read() {
        let inbound = json!({"data": {"record_type": "event", "id": "ev-1",
            "event_type": "message.received", "occurred_at": "2026-11-23T10:00:00Z",
            "payload": {"id": "msg-9", "direction": "inbound", "type": "SMS",
                "from": {"phone_number": "+15550000002", "carrier": "X"},
                "to": [{"phone_number": "+15550000001", "status": "webhook_delivered"}],
                "text": "STOP"}},
            "meta": {"attempt": 1}});
        assert_eq!(
            parse_event(inbound.to_string().as_bytes()).unwrap(),
            CarrierEvent::Inbound {
                event_id: "ev-1".into(),
                message_id: "msg-9".into(),
                channel: Channel::Sms,
                from: "+15550000002".into(),
                to: "+15550000001".into(),
                text: "STOP".into(),
            }
        );
        for (status, delivery) in [
            ("delivered", Delivery::Delivered),
            ("delivery_failed", Delivery::Failed),
            ("sending_failed", Delivery::Failed),
            ("sent", Delivery::Sent),
            ("read", Delivery::Read),
            ("delivery_unconfirmed", Delivery::Unconfirmed),
        ] {
            let ev = json!({"data": {"id": "ev-2", "event_type": "message.finalized",
                "payload": {"id": "out-1", "type": "RCS",
                    "to": [{"phone_number": "+15550000002", "status": status}]}}});
            assert_eq!(
                parse_event(ev.to_string().as_bytes()).unwrap(),
                CarrierEvent::Status {
                    event_id: "ev-2".into(),
                    message_id: "out-1".into(),
                    channel: Channel::Rcs,
                    delivery,
                },
                "{status}"
            );
        }
    }

    #[test]
    fn other_events_are_named_and_broken_ones_refused() {
        let other =
            json!({"data": {"id": "ev-3", "event_type": "number_order.complete", "payload": {}}});
        assert_eq!(
            parse_event(other.to_string().as_bytes()).unwrap(),
            CarrierEvent::Other {
                event_id: "ev-3".into(),
                event_type: "number_order.complete".into()
            }
        );
        assert!(parse_event(b"not json").is_err());
        let no_from = json!({"data": {"id": "e", "event_type": "message.received",
            "payload": {"id": "m", "to": [{"phone_number": "+15550000001"}], "text": "hi"}}});
        assert!(parse_event(no_from.to_string().as_bytes()).is_err());
        let no_payload = json!({"data": {"id": "e", "event_type": "message.sent"}});
        assert!(parse_event(no_payload.to_string().as_bytes()).is_err());
    }
}
