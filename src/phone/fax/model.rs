//! Faxes on the wire: the request as sent, the validated fax (parse, don't
//! validate) and the answers.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::fax;

use crate::error::{ApiError, Issues};
use crate::types::{E164, OutboundUrl, UrlPolicy};

/// `POST /communications/faxes`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[schema(as = FaxCreate)]
pub struct FaxIn {
    /// UUID owned by the caller, bound to the line, the destination and the
    /// PDF's digest.
    #[schema(example = "3f1c2a9e-8d4b-4c6f-9a1e-2b7d5c8e0f13")]
    pub request_id: String,
    /// The fax line's id, a numeric string.
    #[schema(example = "7")]
    pub endpoint_id: String,
    /// E.164 destination.
    #[schema(example = "+14155550124")]
    pub to: String,
    /// Temporary HTTPS URL the carrier fetches the PDF from (no embedded
    /// credentials, no cookies or special headers needed).
    #[schema(example = "https://files.example.com/t/4f2a/offer.pdf")]
    pub media_url: String,
    /// Lowercase hex SHA-256 of the PDF.
    #[schema(pattern = "^[0-9a-f]{64}$")]
    pub media_sha256: String,
}

/// A fax request that passed every field check.
#[derive(Debug, Clone)]
pub struct Fax {
    pub request_id: uuid::Uuid,
    pub line_id: i64,
    pub to: E164,
    pub media_url: OutboundUrl,
    pub media_sha256: String,
}

impl FaxIn {
    /// Checks every field and reports every problem with its path.
    pub fn parse(self, policy: UrlPolicy) -> Result<Fax, ApiError> {
        let mut issues = Issues::default();
        let (request_id, line_id, to) = crate::phone::model::common_fields(
            &mut issues,
            &self.request_id,
            &self.endpoint_id,
            &self.to,
        );
        let media_url = OutboundUrl::parse(&self.media_url, policy)
            .map_err(|m| issues.add("mediaUrl", m))
            .ok();
        let digest_ok = self.media_sha256.len() == 64
            && self
                .media_sha256
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !digest_ok {
            issues.add(
                "mediaSha256",
                "must be the PDF's SHA-256 as 64 lowercase hex characters",
            );
        }
        issues.into_result()?;
        let (Some(request_id), Some(line_id), Some(to), Some(media_url)) =
            (request_id, line_id, to, media_url)
        else {
            return Err(ApiError::internal("validated fields missing"));
        };
        Ok(Fax {
            request_id,
            line_id,
            to,
            media_url,
            media_sha256: self.media_sha256,
        })
    }
}

/// The spec's fax result.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FaxResult {
    /// The carrier's fax id (a UUID); keep it for support and status.
    #[schema(example = "0f5a2b8c-1d3e-4f6a-9b7c-2e1d0a9b8c7d")]
    pub provider_fax_id: String,
    /// `queued` on acceptance: the carrier took it, nothing is delivered yet.
    #[schema(example = "queued")]
    pub provider_status: String,
    /// `true` when the result of an earlier request with the same
    /// `requestId` is returned.
    pub duplicate: bool,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FaxResultData {
    pub fax: FaxResult,
}

/// A sent fax as its sender reads it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct FaxStatus {
    pub provider_fax_id: String,
    /// `queued`, `media.processed`, `sending`, `delivered` or `failed`.
    pub provider_status: String,
    /// The line's id.
    pub endpoint_id: String,
    pub to: String,
    #[schema(format = "uuid")]
    pub request_id: String,
    pub media_sha256: String,
    /// Why it failed, as the carrier said.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failure_reason: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<fax::Model> for FaxStatus {
    fn from(m: fax::Model) -> Self {
        FaxStatus {
            provider_fax_id: m.provider_fax_id.unwrap_or_default(),
            provider_status: m.status,
            endpoint_id: m.line_id.to_string(),
            to: m.to_number,
            request_id: m.request_id,
            media_sha256: m.media_sha256,
            failure_reason: m.failure_reason,
            created_at: m.created_at,
            updated_at: m.updated_at,
        }
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct FaxStatusData {
    pub fax: FaxStatus,
}

/// Statuses a fax moves through after `queued`, in order; a report never
/// moves a fax backwards, and the final ones never change.
pub fn rank(status: &str) -> Option<u8> {
    match status {
        "queued" => Some(1),
        "media.processed" => Some(2),
        "sending" => Some(3),
        "delivered" | "failed" => Some(4),
        _ => None,
    }
}
