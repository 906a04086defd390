//! The HTTP carrier adapter: Telnyx v2 messaging ([`super::telnyx_wire`])
//! at `AGENTIC_CARRIER_URL`, bearer-authenticated with
//! `AGENTIC_CARRIER_API_KEY`, through the shared outbound client (SSRF
//! guard, no redirects, its timeout).
//!
//! An answer decides the outcome only when it says so: a 2xx with the
//! carrier's message id is accepted; a 4xx is a refusal (the request was
//! read and turned down), except 408 and 429, which the carrier did not act
//! on and which may be tried again, like 503; a connection that never
//! opened sent nothing. Anything else (a timeout, a connection cut after
//! the request left, a 500/502/504, a 2xx we cannot read) may have sent the
//! message, so it is unknown: held for an operator, never re-sent (rule 10).

use std::time::Duration;

use super::carrier::{Carrier, Outgoing, Submission};
use super::fax::carrier::{FaxCarrier, OutgoingFax};
use super::telnyx_wire::{Accepted, Errors, FaxRequest, RcsRequest, SmsRequest};
use crate::net::{NetError, Outbound, may_have_arrived, read_body};

/// Largest carrier answer read (they are a few KiB).
const MAX_ANSWER: usize = 256 * 1024;

pub use crate::config::phone::ApiKey;

pub struct Telnyx {
    outbound: Outbound,
    base: String,
    api_key: Option<ApiKey>,
    timeout: Duration,
}

impl std::fmt::Debug for Telnyx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Telnyx")
            .field("base", &self.base)
            .field("api_key", &self.api_key.as_ref().map(|_| "(set)"))
            .finish()
    }
}

/// What one HTTP exchange came to, before it is read as a [`Submission`].
enum Exchange {
    Answered(u16, bytes::Bytes),
    NotConnected(String),
    Lost(String),
}

impl Telnyx {
    /// `base` is the API's base URL (`https://api.telnyx.com`); requests go
    /// to `{base}/v2/messages` and `{base}/v2/messages/rcs`.
    pub fn new(outbound: Outbound, base: &str, api_key: Option<ApiKey>, timeout: Duration) -> Self {
        Telnyx {
            outbound,
            base: base.trim_end_matches('/').to_string(),
            api_key,
            timeout,
        }
    }

    async fn post(&self, path: &'static str, body: Vec<u8>) -> Exchange {
        let url = format!("{}{path}", self.base);
        let auth = self.api_key.as_ref().map(|k| format!("Bearer {}", k.0));
        let timeout = self.timeout;
        let ran = self
            .outbound
            .run(move |client| async move {
                let mut req = client
                    .post(url)
                    .timeout(timeout)
                    .insert_header(("content-type", "application/json"))
                    .insert_header(("accept", "application/json"));
                if let Some(a) = auth {
                    req = req.insert_header(("authorization", a));
                }
                match req.send_body(body).await {
                    Ok(mut res) => {
                        let status = res.status().as_u16();
                        match read_body(&mut res, MAX_ANSWER).await {
                            Ok(b) => Exchange::Answered(status, b),
                            Err(e) => Exchange::Lost(format!("reading the answer ({status}): {e}")),
                        }
                    }
                    Err(e) if !may_have_arrived(&e) => {
                        Exchange::NotConnected(NetError::from(e).to_string())
                    }
                    Err(e) => Exchange::Lost(NetError::from(e).to_string()),
                }
            })
            .await;
        ran.unwrap_or_else(|e| Exchange::NotConnected(e.to_string()))
    }
}

/// Reads an answer as the submission's outcome (see the module's rules).
fn outcome(exchange: Exchange) -> Submission {
    match exchange {
        Exchange::NotConnected(why) => Submission::NotSent(why),
        Exchange::Lost(why) => Submission::Unknown(why),
        Exchange::Answered(status, body) if (200..300).contains(&status) => {
            match serde_json::from_slice::<Accepted>(&body) {
                Ok(a) => Submission::Accepted {
                    carrier_id: a.data.id,
                    report: None,
                },
                Err(e) => Submission::Unknown(format!("unreadable {status} answer: {e}")),
            }
        }
        Exchange::Answered(status @ (408 | 429 | 503), body) => {
            Submission::NotSent(format!("carrier answered {status}: {}", summary(&body)))
        }
        Exchange::Answered(status @ 400..=499, body) => {
            Submission::Rejected(format!("carrier answered {status}: {}", summary(&body)))
        }
        Exchange::Answered(status, body) => {
            Submission::Unknown(format!("carrier answered {status}: {}", summary(&body)))
        }
    }
}

fn summary(body: &[u8]) -> String {
    match serde_json::from_slice::<Errors>(body) {
        Ok(e) if !e.errors.is_empty() => e.summary(),
        _ => String::from_utf8_lossy(&body[..body.len().min(200)]).into_owned(),
    }
}

#[async_trait::async_trait]
impl Carrier for Telnyx {
    async fn submit(&self, m: &Outgoing) -> Submission {
        let profile = m.messaging_profile.as_deref();
        let (path, body) = if m.channel == "rcs" {
            // The line's number names its verified RCS agent at the carrier.
            let req = RcsRequest::text(&m.from, &m.to, profile, &m.text);
            ("/v2/messages/rcs", serde_json::to_vec(&req))
        } else {
            let req = SmsRequest {
                from: &m.from,
                to: &m.to,
                text: &m.text,
                messaging_profile_id: profile,
                kind: "SMS",
            };
            ("/v2/messages", serde_json::to_vec(&req))
        };
        match body {
            Ok(body) => outcome(self.post(path, body).await),
            Err(e) => Submission::Rejected(format!("cannot encode the message: {e}")),
        }
    }
}

#[async_trait::async_trait]
impl FaxCarrier for Telnyx {
    /// `POST /v2/faxes`: answered like a text message's send.
    async fn send_fax(&self, f: &OutgoingFax) -> Submission {
        let req = FaxRequest {
            connection_id: f.connection.as_deref(),
            media_url: &f.media_url,
            to: &f.to,
            from: &f.from,
        };
        match serde_json::to_vec(&req) {
            Ok(body) => outcome(self.post("/v2/faxes", body).await),
            Err(e) => Submission::Rejected(format!("cannot encode the fax: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(status: u16, body: &str) -> Submission {
        outcome(Exchange::Answered(
            status,
            bytes::Bytes::from(body.to_string()),
        ))
    }

    #[test]
    fn answers_decide_only_when_they_say_what_happened() {
        assert_eq!(
            answered(200, r#"{"data":{"id":"m-1","to":[{"status":"queued"}]}}"#),
            Submission::Accepted {
                carrier_id: "m-1".into(),
                report: None
            }
        );
        assert!(matches!(answered(200, "<html>"), Submission::Unknown(_)));
        assert!(matches!(
            answered(422, r#"{"errors":[{"code":"40310","title":"Invalid 'to'"}]}"#),
            Submission::Rejected(e) if e.contains("40310: Invalid 'to'")
        ));
        for s in [408, 429, 503] {
            assert!(matches!(answered(s, "{}"), Submission::NotSent(_)), "{s}");
        }
        for s in [500, 502, 504] {
            assert!(matches!(answered(s, ""), Submission::Unknown(_)), "{s}");
        }
        assert!(matches!(
            outcome(Exchange::NotConnected("refused".into())),
            Submission::NotSent(_)
        ));
        assert!(matches!(
            outcome(Exchange::Lost("timed out".into())),
            Submission::Unknown(_)
        ));
    }
}
