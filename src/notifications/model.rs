//! Wire shapes of notifications and preferences.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use entity::notification as ntf;

/// A notification to the caller.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = Notification)]
pub struct NotificationOut {
    /// `ntf_...`.
    pub id: String,
    pub account_id: String,
    pub user_id: i64,
    /// Its number in the account's sequence: the stream's event id
    /// (`Last-Event-ID`), increasing in commit order.
    pub sequence: i64,
    /// See docs/api/notifications.md for every topic.
    #[schema(example = "media_buy.status_changed")]
    pub topic: String,
    pub title: String,
    pub body: String,
    /// The ids it is about, e.g. `mediaBuyId`, `campaignId`, `discoveryId`.
    #[schema(value_type = Object)]
    pub data: Value,
    pub created_at: DateTime<Utc>,
    /// When the caller first read it (getting it, or acknowledging it).
    pub read_at: Option<DateTime<Utc>>,
    pub acknowledged_at: Option<DateTime<Utc>>,
}

impl From<ntf::Model> for NotificationOut {
    fn from(n: ntf::Model) -> Self {
        NotificationOut {
            data: serde_json::from_str(&n.data).unwrap_or(Value::Null),
            id: n.id,
            account_id: n.account_id,
            user_id: n.user_id,
            sequence: n.seq,
            topic: n.topic,
            title: n.title,
            body: n.body,
            created_at: n.created_at,
            read_at: n.read_at,
            acknowledged_at: n.acknowledged_at,
        }
    }
}

/// `GET /notifications` filters.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NotificationsFilter {
    /// `true`: only notifications not read yet. Absent or `false`: all.
    pub unread: Option<bool>,
    /// Only this topic.
    pub topic: Option<String>,
}

/// `POST /notifications/acknowledge`: `ids` or `all: true`, not both.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = NotificationsAcknowledge)]
pub struct AcknowledgeIn {
    /// 1 to 200 of the caller's notification ids.
    pub ids: Option<Vec<String>>,
    /// Every notification of the caller.
    pub all: Option<bool>,
}

/// Acknowledging is idempotent: ids acknowledged before are not counted
/// again.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = NotificationsAcknowledged)]
pub struct AcknowledgeOut {
    /// How many this call acknowledged.
    pub acknowledged: u64,
    /// Their ids.
    pub ids: Vec<String>,
}

/// One topic's channels for the caller.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TopicPreference {
    pub topic: String,
    /// `account` (every user) or `admins` (admins and super-admins).
    pub audience: String,
    /// Listed, and sent on the stream (default on).
    pub console: bool,
    /// Recorded; see docs/api/notifications.md (default off).
    pub webhook: bool,
    /// The address is recorded on each notification for a later delivery;
    /// nothing is sent (default off).
    pub email: bool,
}

/// The caller's delivery preferences.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
#[schema(as = NotificationPreferences)]
pub struct PreferencesOut {
    /// Where the `email` channel records notifications for; the user's
    /// login e-mail when unset.
    pub email_address: Option<String>,
    pub topics: Vec<TopicPreference>,
}

/// Channels to change for one topic; those left out stay as they are.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TopicChange {
    pub topic: String,
    pub console: Option<bool>,
    pub webhook: Option<bool>,
    pub email: Option<bool>,
}

/// `PATCH /notifications/preferences`: what is sent changes, the rest stays.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = NotificationPreferencesUpdate)]
pub struct PreferencesIn {
    /// The `email` channel's address; `null` clears it (the login e-mail
    /// is then used).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<String>)]
    pub email_address: Option<Option<String>>,
    #[serde(default)]
    pub topics: Vec<TopicChange>,
}

fn double_option<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}
