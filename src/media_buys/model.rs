//! The wire shapes of media buys and the statuses they move through.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::buyer::campaigns::model::CampaignIn;
use crate::error::ApiError;

/// Staged, not yet sent to the seller.
pub const DRAFT: &str = "draft";
/// Sent (or being sent); the outcome is not known yet. A retry re-sends
/// with the same idempotency key, so the seller answers with the buy it
/// made, if any.
pub const DISPATCHING: &str = "dispatching";
/// The seller took the task asynchronously (a task id); a callback or
/// polling completes it.
pub const SUBMITTED: &str = "submitted";
/// Our own end state for a buy that never reached the seller or that the
/// seller refused in its answer (`errors[]`).
pub const FAILED: &str = "failed";
/// The AdCP 3.1 media-buy statuses a seller reports.
pub const ADCP_STATUSES: &[&str] = &[
    "pending_creatives",
    "pending_start",
    "active",
    "paused",
    "completed",
    "rejected",
    "canceled",
];
/// Statuses that end polling (the spec's list).
pub const TERMINAL: &[&str] = &["active", "completed", "failed", "rejected", "canceled"];
/// Statuses in which the seller holds a live buy (counted as committed
/// spend and as the campaign being live).
pub const LIVE: &[&str] = &["pending_creatives", "pending_start", "active", "paused"];

/// The pricing models a selection may buy with (spec: Discovery session).
pub const PRICING_MODELS: &[&str] = &["cpm", "vcpm", "cpc", "cpcv", "cpv", "cpp", "flat_rate"];

/// `create_media_buys` body.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateMediaBuysIn {
    /// A discovery session of the caller's (`disc_…`).
    pub product_query_id: String,
    /// The cart: an existing campaign, or a new DRAFT one.
    pub campaign: CampaignRef,
    /// `stage` writes DRAFT buys; `execute` (the buyer confirmed the
    /// purchase) stages, then sends them to the sellers.
    pub mode: Mode,
    /// `false` merges into the cart (a repeat changes nothing); `true`
    /// makes this batch the whole cart (other DRAFT buys are removed).
    #[serde(default)]
    pub replace: bool,
    #[schema(max_items = 200)]
    pub selections: Vec<SelectionIn>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignRef {
    /// An existing campaign of the session's advertiser.
    pub campaign_id: Option<String>,
    /// `create_campaign`'s body; `advertiserId` defaults to the session's.
    pub create: Option<CampaignIn>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Stage,
    Execute,
}

/// One selection: a product at a budget, or a seller's proposal at a total
/// budget.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SelectionIn {
    #[serde(rename_all = "camelCase")]
    Product {
        product_id: String,
        /// In the campaign's currency; above 0.
        budget: f64,
        /// The bid for an auction pricing option (at least its floor).
        bid_price: Option<f64>,
        /// The storefront, when several in the session offer this product id.
        storefront_id: Option<i64>,
        /// The pricing option; by default the product's first option in the
        /// campaign's currency.
        pricing_option_id: Option<String>,
        /// `targetable` placements of the product to run on.
        placement_ids: Option<Vec<String>>,
    },
    #[serde(rename_all = "camelCase")]
    Proposal {
        proposal_id: String,
        total_budget: f64,
        storefront_id: Option<i64>,
    },
}

/// A money amount in one currency.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
pub struct Money {
    pub amount: f64,
    pub currency: String,
}

/// A media buy as the API shows it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MediaBuyOut {
    /// Ours (`mb_…`).
    pub media_buy_id: String,
    pub campaign_id: String,
    pub advertiser_id: String,
    /// The discovery session the selection came from.
    pub product_query_id: String,
    pub storefront_id: i64,
    /// `product` or `proposal`.
    pub kind: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proposal_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing_option_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pricing_model: Option<String>,
    pub budget: Money,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bid_price: Option<f64>,
    /// The AdCP package sent to the seller (targeting overlay, frequency
    /// cap, landing-page utm parameters with the macros resolved).
    #[schema(value_type = Object)]
    pub package: Value,
    /// `draft`, `dispatching`, `submitted`, `failed`, or the seller's
    /// status (`pending_creatives`, `pending_start`, `active`, `paused`,
    /// `completed`, `rejected`, `canceled`).
    pub status: String,
    /// The seller's own status, as it last reported it.
    pub adcp_status: Option<String>,
    /// The seller's id of the buy, once it made one.
    pub adcp_media_buy_id: Option<String>,
    /// The seller's task id while the buy is `submitted`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Sent to the seller as a sandbox buy (a sandbox advertiser's).
    pub sandbox: bool,
    /// The seller's (or our) errors of the last attempt.
    #[schema(value_type = Vec<Object>)]
    pub errors: Value,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `create_media_buys` answer.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreateMediaBuysOut {
    pub campaign_id: String,
    /// Whether this call created the campaign (`campaign.create`).
    pub campaign_created: bool,
    pub mode: Mode,
    /// The campaign's buys after this call (the whole cart and what was
    /// sent), oldest first.
    pub media_buys: Vec<MediaBuyOut>,
}

/// One buy in `media-buy-status` (snake_case, as the spec gives it).
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusRow {
    pub media_buy_id: String,
    pub adcp_media_buy_id: Option<String>,
    pub storefront_id: i64,
    pub internal_status: String,
    pub adcp_status: Option<String>,
    pub previous_internal_status: Option<String>,
    pub previous_adcp_status: Option<String>,
    pub status_changed_at: DateTime<Utc>,
    pub last_checked_at: Option<DateTime<Utc>>,
    pub next_check_at: Option<DateTime<Utc>>,
    /// The seller's latest delivery report (AdCP `get_media_buy_delivery`),
    /// once one was pulled.
    pub delivery: Option<super::delivery::Delivery>,
}

/// A storefront asked about this campaign's buys.
#[derive(Debug, Serialize, ToSchema)]
pub struct AgentQueried {
    pub storefront_id: i64,
    pub storefront_name: String,
    pub media_buys: usize,
}

/// An error of one buy (the seller's, or reaching it).
#[derive(Debug, Serialize, ToSchema)]
pub struct StatusError {
    pub media_buy_id: String,
    pub storefront_id: i64,
    pub code: String,
    pub message: String,
}

/// `get_media_buy_status` answer.
#[derive(Debug, Serialize, ToSchema)]
pub struct MediaBuyStatusOut {
    pub media_buys: Vec<StatusRow>,
    pub agents_queried: Vec<AgentQueried>,
    pub errors: Vec<StatusError>,
}

/// `mb_` and 32 lowercase hex digits.
pub fn new_id() -> String {
    format!("mb_{}", uuid::Uuid::new_v4().simple())
}

/// The idempotency key a buy is created with: derived from the buy alone,
/// so every attempt (a retry, another instance, after a crash) sends the
/// same one.
pub fn idempotency_key(media_buy_id: &str) -> String {
    let hex = media_buy_id.trim_start_matches("mb_");
    match uuid::Uuid::parse_str(hex) {
        Ok(u) => u.hyphenated().to_string(),
        Err(_) => media_buy_id.to_string(),
    }
}

/// Checks a budget amount.
pub fn positive(v: f64, path: &str) -> Result<f64, ApiError> {
    if v.is_finite() && v > 0.0 && v <= 1e12 {
        Ok(v)
    } else {
        Err(ApiError::invalid(path, "must be above 0 and at most 1e12"))
    }
}
