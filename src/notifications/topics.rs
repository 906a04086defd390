//! The notification topics: what each is about and who receives it.

/// A media buy's status changed (the seller's answer, a refresh, a
/// callback).
pub const MEDIA_BUY_STATUS_CHANGED: &str = "media_buy.status_changed";
/// A discovery session's results are complete.
pub const DISCOVERY_COMPLETED: &str = "discovery.completed";
/// A catalog sync or refresh failed (the previous version stays served).
pub const CATALOG_SYNC_FAILED: &str = "catalog.sync_failed";
/// A webhook subscription failed for good after consecutive failures.
pub const WEBHOOK_SUBSCRIPTION_FAILED: &str = "webhook_subscription.failed";
/// Committed spend in a currency crossed 80% of the account's credit limit.
pub const CREDIT_LIMIT_NEAR: &str = "credit_limit.near";
/// A text message's outcome is unknown: held for an operator.
pub const PHONE_MESSAGE_HELD: &str = "phone.message_held";
/// A fax submission's outcome is unknown: unresolved, for an operator.
pub const FAX_UNRESOLVED: &str = "fax.unresolved";

/// The share of a credit limit at which `credit_limit.near` is sent.
pub const CREDIT_NEAR_SHARE: f64 = 0.8;

/// Who receives a topic's notifications.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    /// Every user of the account.
    Account,
    /// The account's admins and super-admins (operators).
    Admins,
}

impl Audience {
    pub fn as_str(self) -> &'static str {
        match self {
            Audience::Account => "account",
            Audience::Admins => "admins",
        }
    }
}

/// Every topic, with its audience.
pub const TOPICS: &[(&str, Audience)] = &[
    (MEDIA_BUY_STATUS_CHANGED, Audience::Account),
    (DISCOVERY_COMPLETED, Audience::Account),
    (CATALOG_SYNC_FAILED, Audience::Account),
    (WEBHOOK_SUBSCRIPTION_FAILED, Audience::Account),
    (CREDIT_LIMIT_NEAR, Audience::Account),
    (PHONE_MESSAGE_HELD, Audience::Admins),
    (FAX_UNRESOLVED, Audience::Admins),
];

pub fn audience(topic: &str) -> Option<Audience> {
    TOPICS.iter().find(|(t, _)| *t == topic).map(|(_, a)| *a)
}

pub fn names() -> Vec<&'static str> {
    TOPICS.iter().map(|(t, _)| *t).collect()
}

/// The delivery channels.
pub const CONSOLE: &str = "console";
pub const WEBHOOK: &str = "webhook";
pub const EMAIL: &str = "email";
pub const CHANNELS: &[&str] = &[CONSOLE, WEBHOOK, EMAIL];

/// A channel's setting when the user has not chosen.
pub fn default_on(channel: &str) -> bool {
    channel == CONSOLE
}
