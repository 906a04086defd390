//! The library's shared vocabulary: statuses, destinations, budgets, the
//! text rules, and the account's own records a body may name.

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};

/// Material statuses. `reserved`, `uploading` and `failed` belong to an
/// upload reservation; the lifecycle proper starts at `uploaded` (a file)
/// or `draft` (a note).
pub const RESERVED: &str = "reserved";
pub const UPLOADING: &str = "uploading";
pub const FAILED: &str = "failed";
pub const UPLOADED: &str = "uploaded";
pub const DRAFT: &str = "draft";
pub const CANDIDATE: &str = "candidate";
pub const ACCEPTED: &str = "accepted";
pub const REJECTED: &str = "rejected";
pub const ARCHIVED: &str = "archived";

pub const MATERIAL_STATUSES: [&str; 9] = [
    RESERVED, UPLOADING, FAILED, UPLOADED, DRAFT, CANDIDATE, ACCEPTED, REJECTED, ARCHIVED,
];

/// Material kinds.
pub const FILE: &str = "file";
pub const NOTE: &str = "note";

/// Library request and RFP statuses.
pub const OPEN: &str = "open";
pub const CLOSED: &str = "closed";

pub const MAX_TITLE: usize = 255;
pub const MAX_TEXT: usize = 20_000;
pub const MAX_REASON: usize = 1_000;

/// Where a material is proposed to: the account's shared library, or one
/// advertiser of the account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Destination {
    /// `library` or `advertiser`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The advertiser's id, with `type: advertiser`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
}

impl Destination {
    pub fn library() -> Self {
        Destination {
            kind: "library".into(),
            id: None,
        }
    }
}

/// An RFP's budget.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    /// Greater than 0.
    pub amount: f64,
    /// ISO 4217, three upper-case letters.
    pub currency: String,
}

/// `value` as a title: trimmed, 1 to 255 characters, no control characters.
pub fn title(value: &str, field: &str, issues: &mut Issues) -> String {
    let t = value.trim();
    if t.is_empty() || t.chars().count() > MAX_TITLE {
        issues.add(
            field,
            format!("must be 1 to {MAX_TITLE} characters, not blank"),
        );
    } else if t.chars().any(char::is_control) {
        issues.add(field, "must not contain control characters");
    }
    t.to_string()
}

/// `value` as free text of at most `max` characters (`min_one`: not blank).
pub fn text(value: &str, field: &str, max: usize, min_one: bool, issues: &mut Issues) -> String {
    let t = value.trim();
    if (min_one && t.is_empty()) || t.chars().count() > max {
        let least = if min_one { 1 } else { 0 };
        issues.add(field, format!("must be {least} to {max} characters"));
    } else if t
        .chars()
        .any(|c| c.is_control() && c != '\n' && c != '\r' && c != '\t')
    {
        issues.add(field, "must not contain control characters");
    }
    t.to_string()
}

pub fn check_budget(b: &Budget, issues: &mut Issues) {
    if !(b.amount.is_finite() && b.amount > 0.0 && b.amount < 1e15) {
        issues.add("budget.amount", "must be a number greater than 0");
    }
    if !(b.currency.len() == 3 && b.currency.bytes().all(|c| c.is_ascii_uppercase())) {
        issues.add("budget.currency", "must be an ISO 4217 code (e.g. USD)");
    }
}

pub fn check_date(d: &str, field: &str, issues: &mut Issues) {
    if chrono::NaiveDate::parse_from_str(d, "%Y-%m-%d").is_err() || d.len() != 10 {
        issues.add(field, "must be a date YYYY-MM-DD");
    }
}

/// The advertiser `id` of the caller's account, or 404 (another account's
/// advertiser does not exist for the caller).
pub async fn own_advertiser(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<(), ApiError> {
    entity::advertiser::Entity::find_by_id(id)
        .filter(entity::advertiser::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .map(|_| ())
        .ok_or_else(|| ApiError::not_found("advertiser"))
}

/// A destination as written, checked against the caller's account.
pub async fn destination(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    d: &Destination,
) -> Result<(String, Option<String>), ApiError> {
    match (d.kind.as_str(), &d.id) {
        ("library", None) => Ok(("library".into(), None)),
        ("advertiser", Some(id)) => {
            own_advertiser(db, caller, id).await?;
            Ok(("advertiser".into(), Some(id.clone())))
        }
        ("library", Some(_)) => Err(ApiError::invalid(
            "destination.id",
            "the library destination takes no id",
        )),
        ("advertiser", None) => Err(ApiError::invalid(
            "destination.id",
            "an advertiser destination needs the advertiser's id",
        )),
        _ => Err(ApiError::invalid(
            "destination.type",
            "must be library or advertiser",
        )),
    }
}

/// A status filter's value, checked against `allowed`.
pub fn status_filter(value: Option<&str>, allowed: &[&str]) -> Result<(), ApiError> {
    match value {
        Some(s) if !allowed.contains(&s) => Err(ApiError::invalid(
            "status",
            format!("must be one of {}", allowed.join(", ")),
        )),
        _ => Ok(()),
    }
}

pub fn new_id() -> String {
    uuid::Uuid::new_v4().to_string()
}

pub fn now() -> DateTime<Utc> {
    Utc::now()
}
