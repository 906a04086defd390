//! Webhook subscriptions on the wire: the validated registration and the
//! record as returned (never with its secret).

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::webhook_subscription;

use crate::buyer::advertisers::model::Issues;
use crate::error::ApiError;
use crate::types::{OutboundUrl, UrlPolicy};

/// The webhook event catalog.
pub const EVENT_TYPES: &[&str] = &[
    "discovery.revision",
    "media_buy.status",
    "notification.created",
];

/// Secret length in characters (the spec's limits).
pub const SECRET_MIN: usize = 16;
pub const SECRET_MAX: usize = 256;

/// Consecutive failed deliveries that make a subscription `failed`.
pub const MAX_CONSECUTIVE_FAILURES: i32 = 10;

pub use crate::webhook_events::STATUS_ACTIVE;
pub const STATUS_FAILED: &str = "failed";

/// `POST /buyer/webhook-subscriptions`.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = WebhookSubscriptionCreate)]
pub struct SubscriptionCreate {
    /// HTTPS endpoint on a public host, without credentials.
    #[schema(example = "https://hooks.example.com/agentic")]
    pub url: String,
    /// Key of the `X-Webhook-Signature` HMAC-SHA256; write-only, never returned.
    #[schema(write_only, min_length = 16, max_length = 256)]
    pub secret: String,
    /// One or more catalog event types; duplicates are collapsed.
    #[schema(min_items = 1, inline, value_type = Vec<EventType>)]
    pub event_types: Vec<String>,
}

/// A catalog event type.
#[derive(ToSchema)]
#[schema(as = WebhookEventType)]
#[allow(dead_code)]
pub enum EventType {
    #[schema(rename = "discovery.revision")]
    DiscoveryRevision,
    #[schema(rename = "media_buy.status")]
    MediaBuyStatus,
    #[schema(rename = "notification.created")]
    NotificationCreated,
}

impl std::fmt::Debug for SubscriptionCreate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscriptionCreate")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .field("event_types", &self.event_types)
            .finish()
    }
}

/// A registration that passed every check.
pub struct ValidSubscription {
    pub url: OutboundUrl,
    pub secret: String,
    pub event_types: Vec<String>,
}

impl std::fmt::Debug for ValidSubscription {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ValidSubscription")
            .field("url", &self.url)
            .field("secret", &"<redacted>")
            .field("event_types", &self.event_types)
            .finish()
    }
}

impl SubscriptionCreate {
    /// Checks every field and reports every problem with its path.
    pub fn validate(self, policy: UrlPolicy) -> Result<ValidSubscription, ApiError> {
        let mut issues = Issues::default();
        // The reason without the URL itself, which may carry credentials.
        let url = OutboundUrl::parse(&self.url, policy)
            .map_err(|m| issues.add("url", m.replace(&format!(" '{}'", self.url), "")))
            .ok();
        let len = self.secret.chars().count();
        if !(SECRET_MIN..=SECRET_MAX).contains(&len) {
            // Never repeats the value.
            issues.add(
                "secret",
                format!("must be {SECRET_MIN} to {SECRET_MAX} characters (got {len})"),
            );
        }
        if self.event_types.is_empty() {
            issues.add(
                "eventTypes",
                format!(
                    "must hold at least one event type ({})",
                    EVENT_TYPES.join(", ")
                ),
            );
        }
        let mut event_types: Vec<String> = Vec::new();
        for (i, t) in self.event_types.into_iter().enumerate() {
            if !EVENT_TYPES.contains(&t.as_str()) {
                issues.add(
                    format!("eventTypes[{i}]"),
                    format!(
                        "unknown event type '{t}'; the catalog: {}",
                        EVENT_TYPES.join(", ")
                    ),
                );
            } else if !event_types.contains(&t) {
                event_types.push(t);
            }
        }
        issues.into_result()?;
        let url = url.ok_or_else(|| ApiError::invalid("url", "invalid URL"))?;
        Ok(ValidSubscription {
            url,
            secret: self.secret,
            event_types,
        })
    }
}

/// A webhook subscription as returned. The secret is never part of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = WebhookSubscription)]
pub struct SubscriptionOut {
    /// `wh_` and 24 letters or digits.
    #[schema(example = "wh_3kT9xQ2mB7vL1nR8pW4zY6aC")]
    pub id: String,
    pub url: String,
    #[schema(inline, value_type = Vec<EventType>)]
    pub event_types: Vec<String>,
    /// `active`, or `failed` after 10 consecutive failed deliveries.
    #[schema(example = "active")]
    pub status: String,
    /// Consecutive failed deliveries.
    pub failure_count: i32,
    pub last_success: Option<DateTime<Utc>>,
    pub last_failure: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl TryFrom<webhook_subscription::Model> for SubscriptionOut {
    type Error = ApiError;

    fn try_from(m: webhook_subscription::Model) -> Result<Self, ApiError> {
        let event_types: Vec<String> = serde_json::from_str(&m.event_types)
            .map_err(|e| ApiError::internal(format!("stored event types of {}: {e}", m.id)))?;
        Ok(SubscriptionOut {
            id: m.id,
            url: m.url,
            event_types,
            status: m.status,
            failure_count: m.failure_count,
            last_success: m.last_success,
            last_failure: m.last_failure,
            created_at: m.created_at,
            updated_at: m.updated_at,
        })
    }
}

/// `{subscription}`: the data of a creation or deletion.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = WebhookSubscriptionData)]
pub struct SubscriptionData {
    pub subscription: SubscriptionOut,
}

/// One delivery of an event to a subscription, as its log lists it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = WebhookDelivery)]
pub struct DeliveryOut {
    /// Sent as `X-Webhook-Id`; the same if a crash makes it go out again.
    #[schema(example = "whd_Q2mB7vL1nR8pW4zY6aC3kT9x")]
    pub delivery_id: Option<String>,
    #[schema(example = "evt_7vL1nR8pW4zY6aC3kT9xQ2mB")]
    pub event_id: Option<String>,
    #[schema(example = "discovery.revision")]
    pub event_type: Option<String>,
    /// `pending` (queued), `delivered` (2xx), `failed` (any other answer or
    /// none), `cancelled` (never sent: the subscription failed meanwhile,
    /// or the event expired).
    #[schema(example = "delivered")]
    pub status: String,
    pub queued_at: DateTime<Utc>,
    /// When the attempt started; absent until it did.
    pub attempted_at: Option<String>,
    /// The receiver's HTTP status, if it answered.
    pub status_code: Option<u16>,
    pub duration_ms: Option<u64>,
    /// `http_status`, `redirect`, `timeout`, `connection`, `tls`,
    /// `ssrf_blocked`, `expired`.
    pub error_class: Option<String>,
    pub error: Option<String>,
}

impl From<entity::outbox_job::Model> for DeliveryOut {
    fn from(job: entity::outbox_job::Model) -> Self {
        use crate::outbox::store;
        let d: Option<super::events::DeliveryJob> = serde_json::from_str(&job.payload).ok();
        let a: super::delivery::Attempt = job
            .result
            .as_deref()
            .and_then(|r| serde_json::from_str(r).ok())
            .unwrap_or_default();
        let status = match job.state.as_str() {
            store::DONE => "delivered",
            store::FAILED => "failed",
            store::PENDING => "pending",
            _ => "cancelled",
        };
        DeliveryOut {
            delivery_id: d.as_ref().map(|d| d.delivery_id.clone()),
            event_id: d.as_ref().map(|d| d.event_id.clone()),
            event_type: d.map(|d| d.event_type),
            status: status.into(),
            queued_at: job.created_at,
            attempted_at: a.attempted_at,
            status_code: a.status_code,
            duration_ms: a.duration_ms,
            error_class: a.error_class,
            error: a.error,
        }
    }
}

/// A new subscription id: `wh_` and 24 random letters or digits (~142 bits).
pub fn new_id() -> String {
    use rand::Rng;
    let tail: String = rand::rng()
        .sample_iter(&rand::distr::Alphanumeric)
        .take(24)
        .map(char::from)
        .collect();
    format!("wh_{tail}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn ids() {
        let id = new_id();
        assert_eq!(id.len(), 27);
        assert!(id.starts_with("wh_"));
        assert!(id[3..].chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(id, new_id());
    }

    #[test]
    fn every_problem_is_reported_and_duplicates_collapse() {
        let strict = UrlPolicy {
            allow_insecure: false,
        };
        let bad = SubscriptionCreate {
            url: "http://example.com".into(),
            secret: "short".into(),
            event_types: vec!["nope".into()],
        };
        let err = bad.validate(strict).unwrap_err().body();
        let text = err.to_string();
        for path in ["\"url\"", "\"secret\"", "\"eventTypes[0]\""] {
            assert!(text.contains(path), "{path} in {text}");
        }
        assert!(!text.contains("short"), "{text}");
        let ok = SubscriptionCreate {
            url: "https://example.com/hook".into(),
            secret: "s".repeat(16),
            event_types: vec!["discovery.revision".into(), "discovery.revision".into()],
        }
        .validate(strict)
        .unwrap();
        assert_eq!(ok.event_types, vec!["discovery.revision"]);
    }
}
