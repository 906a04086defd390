//! The wire shapes of creatives, their assignments and syncs, and the
//! checks of what callers send.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

use crate::error::{ApiError, Issues};

/// The library statuses of a creative.
pub const ACTIVE: &str = "active";
pub const ARCHIVED: &str = "archived";
pub const STATUSES: &[&str] = &[ACTIVE, ARCHIVED];
/// The sync statuses of an assignment.
pub const PENDING: &str = "pending";
pub const SYNCED: &str = "synced";
pub const SUBMITTED: &str = "submitted";
pub const FAILED: &str = "failed";
/// A synced assignment whose creative changed since (computed, not stored).
pub const OUTDATED: &str = "outdated";
/// The asset role the click URL is sent under (an AdCP URL asset,
/// `url_type: clickthrough`).
pub const CLICK_ROLE: &str = "click_url";
/// Most assets (roles) of a creative; most assignments of one.
pub const MAX_ASSETS: usize = 50;
pub const MAX_ASSIGNMENTS: usize = 200;
/// Most AdCP creatives in one `sync_creatives` call (the schema's cap).
pub const SYNC_BATCH: usize = 100;

/// AdCP `format_id`: the format's declaring agent and its id there.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FormatId {
    /// The agent that defines the format (an `http(s)` URL), e.g.
    /// `https://creative.adcontextprotocol.org`.
    #[schema(max_length = 2048)]
    pub agent_url: String,
    /// The format's id at that agent: letters, digits, `_` and `-`.
    #[schema(min_length = 1, max_length = 128, pattern = "^[a-zA-Z0-9_-]+$")]
    pub id: String,
    /// Parameterised formats: width and height together.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub width: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub height: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 1)]
    pub duration_ms: Option<i64>,
}

impl FormatId {
    /// AdCP's snake_case form.
    pub fn adcp(&self) -> Value {
        let mut m = Map::new();
        m.insert("agent_url".into(), Value::from(self.agent_url.clone()));
        m.insert("id".into(), Value::from(self.id.clone()));
        for (k, v) in [
            ("width", self.width),
            ("height", self.height),
            ("duration_ms", self.duration_ms),
        ] {
            if let Some(v) = v {
                m.insert(k.into(), Value::from(v));
            }
        }
        Value::Object(m)
    }
}

/// `create_creative` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreativeIn {
    /// The caller's advertiser the creative belongs to (it never moves).
    pub advertiser_id: String,
    #[schema(min_length = 1, max_length = 255)]
    pub name: String,
    pub format_id: FormatId,
    /// AdCP assets keyed by role (`^[a-z0-9_]+$`, at most 50): each an AdCP
    /// asset object (`{asset_type: "image", url, width, height}`, ...) or
    /// an array of them, sent to sellers as given. The click URL is not
    /// an asset here: send `clickUrl`.
    #[schema(value_type = Object)]
    pub assets: Map<String, Value>,
    /// The landing page (`http(s)`); the utm parameters are added per
    /// assignment when it is synced.
    #[schema(max_length = 2048)]
    pub click_url: Option<String>,
}

/// `update_creative` body: what is sent changes, the rest stays.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreativePatch {
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    pub format_id: Option<FormatId>,
    /// Replaces all the assets.
    #[schema(value_type = Option<Object>)]
    pub assets: Option<Map<String, Value>>,
    /// `null` removes the click URL.
    #[serde(default, deserialize_with = "crate::buyer::nullable")]
    #[schema(value_type = Option<String>)]
    pub click_url: Option<Option<String>>,
    /// `active` or `archived` (archived creatives are neither assigned nor
    /// synced).
    pub status: Option<String>,
    /// Not accepted: a creative never moves (named so the error says so).
    #[schema(ignore)]
    pub advertiser_id: Option<Value>,
}

/// A creative as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreativeOut {
    /// `cr_` and 32 hex digits; also its AdCP `creative_id` base.
    pub creative_id: String,
    pub advertiser_id: String,
    pub name: String,
    pub format_id: FormatId,
    #[schema(value_type = Object)]
    pub assets: Value,
    pub click_url: Option<String>,
    /// `active` or `archived`.
    pub status: String,
    /// 1 at creation; every change adds one.
    pub revision: i64,
    /// Its media buys (packages), with each one's sync status at the seller.
    pub assignments: Vec<AssignmentOut>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// One assignment of a creative to a media buy (its package).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AssignmentOut {
    pub media_buy_id: String,
    pub campaign_id: String,
    pub storefront_id: i64,
    /// Our package id of the buy (`pkg_…`, what `{PACKAGE_ID}` resolves to).
    pub package_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weight: Option<f64>,
    /// The AdCP `creative_id` the seller knows this assignment's creative by.
    pub adcp_creative_id: String,
    /// The click URL last sent, utm parameters resolved.
    pub click_url: Option<String>,
    /// `pending` (never synced), `synced`, `outdated` (the creative changed
    /// since), `submitted` (the seller took it as a task) or `failed`.
    pub sync_status: String,
    /// The seller's action at the last sync (`created`, `updated`,
    /// `unchanged`, `failed`).
    pub action: Option<String>,
    /// The seller's review status (AdCP creative status: `processing`,
    /// `pending_review`, `approved`, `suspended`, `rejected`, `archived`).
    pub review_status: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub errors: Value,
    pub synced_at: Option<DateTime<Utc>>,
}

/// `{creative: {...}}`, as campaign answers wrap theirs.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreativeEnvelope {
    pub creative: CreativeOut,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreativesFilter {
    /// Only this advertiser's creatives.
    pub advertiser_id: Option<String>,
    /// Only creatives assigned to a media buy of this campaign.
    pub campaign_id: Option<String>,
    /// Only creatives assigned to this media buy.
    pub media_buy_id: Option<String>,
    /// `active` or `archived`.
    pub status: Option<String>,
}

/// `assign_creative` body: the creative's assignments, all of them.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssignIn {
    /// Media buys of the creative's advertiser (at most 200, each once);
    /// `[]` unassigns from all.
    #[schema(max_items = 200)]
    pub assignments: Vec<AssignmentIn>,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AssignmentIn {
    pub media_buy_id: String,
    /// AdCP rotation weight, 0 to 100; equal rotation when omitted.
    #[schema(minimum = 0, maximum = 100)]
    pub weight: Option<f64>,
}

/// `sync_creatives` body: which assignments to send (every filter narrows;
/// none: all of the account's).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncIn {
    pub advertiser_id: Option<String>,
    pub campaign_id: Option<String>,
    /// At most 100 creatives.
    #[schema(max_items = 100)]
    pub creative_ids: Option<Vec<String>>,
    /// Ask the sellers to check without applying (AdCP `dry_run`); nothing
    /// is recorded.
    #[serde(default)]
    pub dry_run: bool,
}

/// One assignment's outcome of a sync.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncResult {
    pub creative_id: String,
    pub media_buy_id: String,
    pub storefront_id: i64,
    pub adcp_creative_id: String,
    pub click_url: Option<String>,
    /// `synced`, `submitted` or `failed`.
    pub sync_status: String,
    pub action: Option<String>,
    pub review_status: Option<String>,
    #[schema(value_type = Vec<Object>)]
    pub errors: Value,
}

/// An assignment the sync left out, and why.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Skipped {
    pub creative_id: String,
    pub media_buy_id: String,
    pub reason: String,
}

/// `sync_creatives` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncOut {
    pub dry_run: bool,
    pub results: Vec<SyncResult>,
    pub skipped: Vec<Skipped>,
}

/// `cr_` and 32 lowercase hex digits.
pub fn new_id() -> String {
    format!("cr_{}", uuid::Uuid::new_v4().simple())
}

/// The AdCP `creative_id` of a creative on one media buy: one AdCP
/// creative per assignment, since the click URL differs per package.
pub fn adcp_creative_id(creative_id: &str, media_buy_id: &str) -> String {
    format!("{creative_id}.{media_buy_id}")
}

pub fn name(raw: &str, issues: &mut Issues) -> String {
    let n = raw.trim();
    if n.is_empty() || n.chars().count() > 255 {
        issues.add("name", "must be 1 to 255 characters");
    }
    n.to_string()
}

fn http_url(raw: &str) -> bool {
    raw.len() <= 2048
        && url::Url::parse(raw)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host_str().is_some())
}

pub fn format_id(f: &FormatId, issues: &mut Issues) {
    if !http_url(&f.agent_url) {
        issues.add("formatId.agentUrl", "must be an http(s) URL");
    }
    let id_ok = (1..=128).contains(&f.id.len())
        && f.id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-'));
    if !id_ok {
        issues.add(
            "formatId.id",
            "must be 1 to 128 letters, digits, '_' or '-'",
        );
    }
    if f.width.is_some() != f.height.is_some() {
        issues.add("formatId", "width and height go together");
    }
    for (k, v) in [
        ("width", f.width),
        ("height", f.height),
        ("durationMs", f.duration_ms),
    ] {
        if v.is_some_and(|v| v < 1) {
            issues.add(format!("formatId.{k}"), "must be at least 1");
        }
    }
}

pub fn assets(a: &Map<String, Value>, issues: &mut Issues) {
    if a.is_empty() || a.len() > MAX_ASSETS {
        issues.add("assets", format!("must have 1 to {MAX_ASSETS} roles"));
    }
    for (role, v) in a {
        let role_ok = (1..=64).contains(&role.len())
            && role
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if !role_ok {
            issues.add(
                format!("assets.{role}"),
                "a role is 1 to 64 lowercase letters, digits or '_'",
            );
            continue;
        }
        if role == CLICK_ROLE {
            issues.add(
                format!("assets.{role}"),
                "send the landing page as clickUrl (the utm parameters are added to it)",
            );
            continue;
        }
        let ok = match v {
            Value::Object(o) => asset_ok(o),
            Value::Array(items) => {
                !items.is_empty() && items.iter().all(|i| i.as_object().is_some_and(asset_ok))
            }
            _ => false,
        };
        if !ok {
            issues.add(
                format!("assets.{role}"),
                "must be an AdCP asset object with asset_type, or a non-empty array of them",
            );
        }
    }
}

fn asset_ok(o: &Map<String, Value>) -> bool {
    o.get("asset_type")
        .and_then(Value::as_str)
        .is_some_and(|t| !t.trim().is_empty())
}

pub fn click_url(raw: &str, issues: &mut Issues) -> String {
    let u = raw.trim();
    if !http_url(u) {
        issues.add(
            "clickUrl",
            "must be an http(s) URL of at most 2,048 characters",
        );
    }
    u.to_string()
}

pub fn status(raw: &str, issues: &mut Issues) -> String {
    if !STATUSES.contains(&raw) {
        issues.add("status", "must be active or archived");
    }
    raw.to_string()
}

/// The assignments, each media buy once, weights in range.
pub fn assignments(raw: &[AssignmentIn], issues: &mut Issues) {
    if raw.len() > MAX_ASSIGNMENTS {
        issues.add(
            "assignments",
            format!("at most {MAX_ASSIGNMENTS} media buys"),
        );
    }
    let mut seen = HashSet::new();
    for (i, a) in raw.iter().enumerate() {
        if !seen.insert(a.media_buy_id.as_str()) {
            issues.add(format!("assignments[{i}].mediaBuyId"), "is repeated");
        }
        if a.weight
            .is_some_and(|w| !(0.0..=100.0).contains(&w) || !w.is_finite())
        {
            issues.add(format!("assignments[{i}].weight"), "must be 0 to 100");
        }
    }
}

/// A creative id as sent; a malformed one is a 404 (nothing has it).
pub fn creative_id(raw: &str) -> Result<String, ApiError> {
    let ok = raw.len() == 35
        && raw.starts_with("cr_")
        && raw[3..].chars().all(|c| c.is_ascii_hexdigit());
    if ok {
        Ok(raw.to_ascii_lowercase())
    } else {
        Err(ApiError::not_found("creative"))
    }
}
