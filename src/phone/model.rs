//! Text messages on the wire: the request as sent, the validated message
//! (parse, don't validate) and the answer.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::error::ApiError;
use crate::error::Issues;
use crate::types::E164;

use super::segments::{self, Count};

/// Text length in characters (the spec's limits).
pub const TEXT_MAX: usize = 1600;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Channel {
    Sms,
    Rcs,
}

impl Channel {
    pub fn as_str(self) -> &'static str {
        match self {
            Channel::Sms => "sms",
            Channel::Rcs => "rcs",
        }
    }
}

/// `POST /communications/messages` and `/communications/rcs/messages`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = TextMessageCreate)]
pub struct TextMessageIn {
    /// UUID owned by the caller, reused only to retry the same request.
    #[schema(example = "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5c8e0f13")]
    pub request_id: String,
    /// The line's id, a numeric string.
    #[schema(example = "1")]
    pub endpoint_id: String,
    /// E.164 destination.
    #[schema(example = "+14155550124")]
    pub to: String,
    /// Plain text, 1 to 1,600 characters.
    #[schema(min_length = 1, max_length = 1600)]
    pub text: String,
}

/// A request that passed every field check.
#[derive(Debug, Clone)]
pub struct TextMessage {
    pub channel: Channel,
    pub request_id: uuid::Uuid,
    pub line_id: i64,
    pub to: E164,
    /// ISO 3166-1 alpha-2 region of `to`, when the numbering plan says.
    pub country: Option<String>,
    pub text: String,
    pub count: Count,
}

impl TextMessageIn {
    /// Checks every field and reports every problem with its path.
    pub fn parse(self, channel: Channel) -> Result<TextMessage, ApiError> {
        let mut issues = Issues::default();
        let (request_id, line_id, to) =
            common_fields(&mut issues, &self.request_id, &self.endpoint_id, &self.to);
        let len = self.text.chars().count();
        if !(1..=TEXT_MAX).contains(&len) {
            issues.add(
                "text",
                format!("must be 1 to {TEXT_MAX} characters (got {len})"),
            );
        }
        issues.into_result()?;
        let (Some(request_id), Some(line_id), Some(to)) = (request_id, line_id, to) else {
            return Err(ApiError::internal("validated fields missing"));
        };
        let country = region_of(&to);
        let count = segments::count(&self.text);
        Ok(TextMessage {
            channel,
            request_id,
            line_id,
            to,
            country,
            text: self.text,
            count,
        })
    }
}

/// The fields every phone-line command shares (spec: "All three commands
/// share these request rules"): `requestId` a UUID, `endpointId` a numeric
/// string, `to` E.164; each problem is added to `issues`.
pub fn common_fields(
    issues: &mut Issues,
    request_id: &str,
    endpoint_id: &str,
    to: &str,
) -> (Option<uuid::Uuid>, Option<i64>, Option<E164>) {
    let request_id = uuid::Uuid::parse_str(request_id)
        .map_err(|_| issues.add("requestId", "must be a UUID"))
        .ok();
    let line_id = (!endpoint_id.is_empty()
        && endpoint_id.len() <= 18
        && endpoint_id.bytes().all(|b| b.is_ascii_digit()))
    .then(|| endpoint_id.parse::<i64>().ok())
    .flatten();
    if line_id.is_none() {
        issues.add("endpointId", "must be a numeric string (the line id)");
    }
    let to = E164::parse(to).map_err(|m| issues.add("to", m)).ok();
    (request_id, line_id, to)
}

/// The region (ISO 3166-1 alpha-2) the numbering plan gives a number.
pub fn region_of(number: &E164) -> Option<String> {
    let parsed = phonenumber::parse(None, number.as_str()).ok()?;
    parsed.country().id().map(|id| id.as_ref().to_string())
}

/// The queued message as answered.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueuedMessage {
    /// Numeric string; keep it for support.
    #[schema(example = "42")]
    pub outbox_id: String,
    /// `rcs` on the RCS command; absent for SMS.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(example = "rcs")]
    pub channel: Option<String>,
    /// `pending`: durably queued.
    #[schema(example = "pending")]
    pub status: String,
    /// `true` when an earlier identical request is returned.
    pub duplicate: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct QueuedMessageData {
    pub message: QueuedMessage,
}
