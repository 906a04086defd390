//! The HTTP carrier adapter, speaking Telnyx's v2 messaging API at
//! `AGENTIC_CARRIER_URL` with `Authorization: Bearer AGENTIC_CARRIER_API_KEY`:
//! SMS as `POST {base}/v2/messages` `{from, to, text, messaging_profile_id?}`,
//! RCS as `POST {base}/v2/messages/rcs` `{agent_id, to, messaging_profile_id,
//! agent_message: {content_message: {text}}}` (plain text only; no fallback).
//! The answer's `data.id` is the carrier's message id.
//!
//! Outcomes: 2xx → accepted; 429 → not sent (retried); other 4xx →
//! rejected for good; 5xx, a timeout, or a connection lost once the
//! request may have left → unknown (held, rule 10). A failure to connect
//! (nothing left) → not sent. Every request goes through the SSRF guard.

use std::time::Duration;

use awc::error::SendRequestError;
use serde_json::{Value, json};

use super::carrier::{Carrier, Outgoing, Submission};
use crate::net::Outbound;

const MAX_ANSWER: usize = 64 * 1024;

pub struct Telnyx {
    outbound: Outbound,
    base: String,
    api_key: String,
    timeout: Duration,
}

impl Telnyx {
    pub fn new(outbound: Outbound, base: &str, api_key: String, timeout: Duration) -> Self {
        Telnyx {
            outbound,
            base: base.trim_end_matches('/').to_string(),
            api_key,
            timeout,
        }
    }

    /// The request for one message: path and JSON body.
    pub fn request(m: &Outgoing) -> (&'static str, Value) {
        if m.channel == "rcs" {
            let profile = m.messaging_profile.clone().unwrap_or_default();
            (
                "/v2/messages/rcs",
                json!({
                    "agent_id": profile,
                    "to": m.to,
                    "messaging_profile_id": profile,
                    "agent_message": { "content_message": { "text": m.text } },
                }),
            )
        } else {
            let mut body = json!({ "from": m.from, "to": m.to, "text": m.text });
            if let Some(p) = &m.messaging_profile {
                body["messaging_profile_id"] = json!(p);
            }
            ("/v2/messages", body)
        }
    }
}

#[async_trait::async_trait]
impl Carrier for Telnyx {
    async fn submit(&self, m: &Outgoing) -> Submission {
        let (path, body) = Self::request(m);
        let url = format!("{}{}", self.base, path);
        let auth = format!("Bearer {}", self.api_key);
        let timeout = self.timeout;
        let sent = self
            .outbound
            .run(move |client| async move {
                let attempt = async {
                    let mut res = match client
                        .post(url)
                        .timeout(timeout)
                        .insert_header(("Authorization", auth))
                        .insert_header(("Accept", "application/json"))
                        .send_json(&body)
                        .await
                    {
                        Ok(res) => res,
                        Err(SendRequestError::Connect(e)) => {
                            return Submission::NotSent(format!(
                                "cannot connect to the carrier: {e}"
                            ));
                        }
                        Err(e) => {
                            return Submission::Unknown(format!("the carrier did not answer: {e}"));
                        }
                    };
                    let code = res.status().as_u16();
                    let answer = crate::net::read_body(&mut res, MAX_ANSWER).await;
                    match code {
                        200..=299 => {
                            let id = answer
                                .ok()
                                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                                .and_then(|v| v["data"]["id"].as_str().map(String::from));
                            match id {
                                Some(carrier_id) => Submission::Accepted {
                                    carrier_id,
                                    report: None,
                                },
                                None => Submission::Unknown(format!(
                                    "the carrier answered {code} without a message id"
                                )),
                            }
                        }
                        429 => Submission::NotSent("the carrier asked to slow down (429)".into()),
                        400..=499 => {
                            let detail = answer
                                .ok()
                                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
                                .and_then(|v| v["errors"][0]["detail"].as_str().map(String::from))
                                .unwrap_or_default();
                            Submission::Rejected(format!(
                                "the carrier refused it ({code}) {detail}"
                            ))
                        }
                        _ => Submission::Unknown(format!("the carrier answered {code}")),
                    }
                };
                tokio::time::timeout(timeout, attempt)
                    .await
                    .unwrap_or(Submission::Unknown("the carrier timed out".into()))
            })
            .await;
        match sent {
            Ok(s) => s,
            Err(e) => Submission::NotSent(format!("outbound HTTP unavailable: {e}")),
        }
    }
}
