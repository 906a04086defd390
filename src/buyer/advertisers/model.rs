//! Advertiser inputs (as sent, then validated into domain values with exact
//! field paths) and the wire record.

use std::collections::HashSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::buyer::brands::{LinkedBrand, parse_domain};
use crate::error::ApiError;
pub use crate::error::Issues;

/// Canonical AdCP 3.1 media channels (`enums/channels.json`).
pub const CHANNELS: &[&str] = &[
    "display",
    "olv",
    "social",
    "search",
    "ctv",
    "linear_tv",
    "radio",
    "streaming_audio",
    "podcast",
    "dooh",
    "ooh",
    "print",
    "cinema",
    "email",
    "gaming",
    "retail_media",
    "influencer",
    "affiliate",
    "product_placement",
    "sponsored_intelligence",
];
/// AdCP billing parties (`enums/billing-party.json`).
pub const BILLING_TYPES: &[&str] = &["operator", "agent", "advertiser"];
pub const CAP_UNITS: &[&str] = &["minutes", "hours", "days", "weeks", "months"];
pub const APPLY_MODES: &[&str] = &["AUTO", "MANUAL"];
pub const UTM_MAX: usize = 20;
/// The static `utm_source` of the default UTM config.
pub const UTM_SOURCE: &str = "agentic-api";

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema, PartialEq, Eq)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct UtmParam {
    /// Letters, digits, `_`, `-`, `.`; 1 to 64 characters; unique.
    #[schema(min_length = 1, max_length = 64)]
    pub param_key: String,
    /// A macro such as `{CAMPAIGN_ID}` or a static string; 1 to 512 characters.
    #[schema(min_length = 1, max_length = 512)]
    pub param_value: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CapWindowIn {
    #[schema(minimum = 1)]
    pub interval: i64,
    /// `minutes`, `hours`, `days`, `weeks` or `months`.
    pub unit: String,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FrequencyCapIn {
    #[schema(minimum = 1)]
    pub max_exposure: i64,
    pub window: CapWindowIn,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct CapWindow {
    pub interval: i64,
    pub unit: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct FrequencyCap {
    pub max_exposure: i64,
    pub window: CapWindow,
}

#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LinkedAccountIn {
    /// A registered storefront.
    pub storefront_id: i64,
    #[schema(min_length = 1, max_length = 255)]
    pub source_id: String,
    #[schema(min_length = 1, max_length = 255)]
    pub account_id: String,
    /// `operator`, `agent` or `advertiser`.
    pub billing_type: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq, Hash)]
#[serde(rename_all = "camelCase")]
pub struct LinkedAccount {
    pub storefront_id: i64,
    pub source_id: String,
    pub account_id: String,
    pub billing_type: Option<String>,
    /// In answers: `active` (locks brand and currency; media buys use it),
    /// `pending_review` or `rejected` (see `/buyer/advertiser-accounts`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// `create_advertiser` body. Every field is optional to serde so that all
/// problems are reported at once; `name`, `brand`, `primaryCurrency` are
/// required by validation.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdvertiserCreate {
    #[schema(required = true, min_length = 1, max_length = 255)]
    pub name: Option<String>,
    #[schema(max_length = 2000)]
    pub description: Option<String>,
    /// Brand domain, e.g. `nike.com` (stored lowercase).
    #[schema(required = true)]
    pub brand: Option<String>,
    /// ISO 4217, e.g. `USD`.
    #[schema(required = true, min_length = 3, max_length = 3)]
    pub primary_currency: Option<String>,
    /// ISO 3166-1 alpha-2 codes.
    pub brand_countries: Option<Vec<String>>,
    /// IANA time zone, e.g. `America/New_York`.
    pub preferred_timezone: Option<String>,
    /// No real spend; immutable after create.
    pub sandbox: Option<bool>,
    /// Canonical AdCP media channels.
    pub channels: Option<Vec<String>>,
    /// `AUTO` or `MANUAL` (default).
    pub optimization_apply_mode: Option<String>,
    pub linked_accounts: Option<Vec<LinkedAccountIn>>,
    /// At most 20; defaults when omitted.
    #[schema(max_items = 20)]
    pub utm_config: Option<Vec<UtmParam>>,
    pub frequency_caps: Option<Vec<FrequencyCapIn>>,
    /// Save the resolved brand identity to the registry.
    pub save_brand: Option<bool>,
}

/// `update_advertiser` body: every field optional; omitted leaves unchanged.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AdvertiserUpdate {
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    /// `null` clears.
    #[serde(default, deserialize_with = "crate::buyer::nullable")]
    #[schema(value_type = Option<String>, max_length = 2000)]
    pub description: Option<Option<String>>,
    /// A different brand only before the first campaign or seller-account binding.
    pub brand: Option<String>,
    pub brand_countries: Option<Vec<String>>,
    /// Only before the first campaign or seller-account binding.
    #[schema(min_length = 3, max_length = 3)]
    pub primary_currency: Option<String>,
    /// `null` clears.
    #[serde(default, deserialize_with = "crate::buyer::nullable")]
    #[schema(value_type = Option<String>)]
    pub preferred_timezone: Option<Option<String>>,
    /// Replaces fully; `[]` clears.
    pub channels: Option<Vec<String>>,
    /// Adds; never removes.
    pub linked_accounts: Option<Vec<LinkedAccountIn>>,
    pub optimization_apply_mode: Option<String>,
    /// Replaces all; `[]` clears.
    #[schema(max_items = 20)]
    pub utm_config: Option<Vec<UtmParam>>,
    /// Replaces all; `[]` clears.
    pub frequency_caps: Option<Vec<FrequencyCapIn>>,
    pub save_brand: Option<bool>,
    /// Immutable: accepted only when equal to the current value.
    pub sandbox: Option<bool>,
}

pub fn name(raw: &str, issues: &mut Issues) -> String {
    let n = raw.trim();
    if n.is_empty() || n.chars().count() > 255 {
        issues.add("name", "must be 1 to 255 characters after trimming");
    }
    n.to_string()
}

pub fn description(raw: Option<String>, issues: &mut Issues) -> Option<String> {
    let d = raw?.trim().to_string();
    if d.chars().count() > 2000 {
        issues.add("description", "must be at most 2000 characters");
    }
    (!d.is_empty()).then_some(d)
}

pub fn brand(raw: &str, issues: &mut Issues) -> String {
    parse_domain(raw).unwrap_or_else(|m| {
        issues.add("brand", m);
        String::new()
    })
}

pub fn currency(raw: &str, issues: &mut Issues) -> String {
    let code = raw.trim().to_ascii_uppercase();
    if code.len() != 3 || iso_currency::Currency::from_code(&code).is_none() {
        issues.add(
            "primaryCurrency",
            "must be an ISO 4217 currency code such as USD",
        );
    }
    code
}

pub fn countries(raw: Vec<String>, issues: &mut Issues) -> Vec<String> {
    countries_at("brandCountries", raw, issues)
}

/// ISO 3166-1 alpha-2 codes, upper-cased and de-duplicated; problems are
/// reported at `field[i]`.
pub fn countries_at(field: &str, raw: Vec<String>, issues: &mut Issues) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, c) in raw.into_iter().enumerate() {
        let code = c.trim().to_ascii_uppercase();
        if code.len() != 2 || isocountry::CountryCode::for_alpha2(&code).is_err() {
            issues.add(
                format!("{field}[{i}]"),
                "must be an ISO 3166-1 alpha-2 country code such as US",
            );
        } else if !out.contains(&code) {
            out.push(code);
        }
    }
    out
}

pub fn timezone(raw: &str, issues: &mut Issues) -> String {
    let tz = raw.trim();
    if tz.parse::<chrono_tz::Tz>().is_err() {
        issues.add(
            "preferredTimezone",
            "must be an IANA time zone such as America/New_York",
        );
    }
    tz.to_string()
}

pub fn channels(raw: Vec<String>, issues: &mut Issues) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for (i, c) in raw.into_iter().enumerate() {
        if !CHANNELS.contains(&c.as_str()) {
            issues.add(
                format!("channels[{i}]"),
                format!("must be an AdCP media channel: {}", CHANNELS.join(", ")),
            );
        } else if !out.contains(&c) {
            out.push(c);
        }
    }
    out
}

pub fn apply_mode(raw: &str, issues: &mut Issues) -> String {
    if !APPLY_MODES.contains(&raw) {
        issues.add("optimizationApplyMode", "must be AUTO or MANUAL");
    }
    raw.to_string()
}

/// Linked accounts, deduplicated; storefront existence is checked by the service.
pub fn linked_accounts(raw: Vec<LinkedAccountIn>, issues: &mut Issues) -> Vec<LinkedAccount> {
    let mut out: Vec<LinkedAccount> = Vec::new();
    for (i, a) in raw.into_iter().enumerate() {
        let source = a.source_id.trim().to_string();
        let account = a.account_id.trim().to_string();
        if a.storefront_id <= 0 {
            issues.add(
                format!("linkedAccounts[{i}].storefrontId"),
                "must be a storefront id",
            );
        }
        if source.is_empty() || source.chars().count() > 255 {
            issues.add(
                format!("linkedAccounts[{i}].sourceId"),
                "must be 1 to 255 characters",
            );
        }
        if account.is_empty() || account.chars().count() > 255 {
            issues.add(
                format!("linkedAccounts[{i}].accountId"),
                "must be 1 to 255 characters",
            );
        }
        if let Some(b) = &a.billing_type
            && !BILLING_TYPES.contains(&b.as_str())
        {
            issues.add(
                format!("linkedAccounts[{i}].billingType"),
                "must be operator, agent or advertiser",
            );
        }
        let item = LinkedAccount {
            storefront_id: a.storefront_id,
            source_id: source,
            account_id: account,
            billing_type: a.billing_type,
            status: None,
        };
        if !out.iter().any(|o| same_binding(o, &item)) {
            out.push(item);
        }
    }
    out
}

pub fn same_binding(a: &LinkedAccount, b: &LinkedAccount) -> bool {
    a.storefront_id == b.storefront_id && a.source_id == b.source_id && a.account_id == b.account_id
}

pub fn utm_config(raw: Vec<UtmParam>, issues: &mut Issues) -> Vec<UtmParam> {
    if raw.len() > UTM_MAX {
        issues.add("utmConfig", format!("must have at most {UTM_MAX} entries"));
    }
    let mut seen = HashSet::new();
    for (i, p) in raw.iter().enumerate() {
        let key_ok = (1..=64).contains(&p.param_key.chars().count())
            && p.param_key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !key_ok {
            issues.add(
                format!("utmConfig[{i}].paramKey"),
                "must be 1 to 64 letters, digits, '_', '-' or '.'",
            );
        } else if !seen.insert(p.param_key.clone()) {
            issues.add(format!("utmConfig[{i}].paramKey"), "is repeated");
        }
        let n = p.param_value.chars().count();
        if n == 0 || n > 512 || p.param_value.trim().is_empty() {
            issues.add(
                format!("utmConfig[{i}].paramValue"),
                "must be 1 to 512 characters",
            );
        }
    }
    raw
}

/// The UTM parameters an advertiser gets when it sends none.
pub fn default_utm_config() -> Vec<UtmParam> {
    [
        ("utm_source", UTM_SOURCE),
        ("utm_medium", "agentic"),
        ("utm_campaign", "{CAMPAIGN_ID}"),
        ("utm_content", "{CREATIVE_ID}"),
        ("utm_media_buy", "{MEDIA_BUY_ID}"),
        ("utm_package", "{PACKAGE_ID}"),
    ]
    .into_iter()
    .map(|(k, v)| UtmParam {
        param_key: k.into(),
        param_value: v.into(),
    })
    .collect()
}

pub fn frequency_caps(raw: Vec<FrequencyCapIn>, issues: &mut Issues) -> Vec<FrequencyCap> {
    raw.into_iter()
        .enumerate()
        .map(|(i, c)| {
            if c.max_exposure < 1 {
                issues.add(
                    format!("frequencyCaps[{i}].maxExposure"),
                    "must be a positive integer",
                );
            }
            if c.window.interval < 1 {
                issues.add(
                    format!("frequencyCaps[{i}].window.interval"),
                    "must be a positive integer",
                );
            }
            if !CAP_UNITS.contains(&c.window.unit.as_str()) {
                issues.add(
                    format!("frequencyCaps[{i}].window.unit"),
                    "must be minutes, hours, days, weeks or months",
                );
            }
            FrequencyCap {
                max_exposure: c.max_exposure,
                window: CapWindow {
                    interval: c.window.interval,
                    unit: c.window.unit,
                },
            }
        })
        .collect()
}

/// An advertiser as returned (`id`, never `advertiserId`).
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvertiserOut {
    #[schema(format = "uuid")]
    pub id: String,
    pub name: String,
    pub description: Option<String>,
    /// `ACTIVE`, or `ARCHIVED` once archived (`/mcp/v3` `save_advertiser`
    /// with `isArchived: true`).
    pub status: String,
    /// When it was archived; only present while archived.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<DateTime<Utc>>,
    pub brand: String,
    /// Set when the brand was resolved by enrichment rather than a registry entry.
    pub brand_warning: Option<String>,
    pub brand_countries: Vec<String>,
    pub primary_currency: String,
    pub preferred_timezone: Option<String>,
    pub sandbox: bool,
    pub channels: Vec<String>,
    pub optimization_apply_mode: String,
    pub linked_accounts: Vec<LinkedAccount>,
    pub utm_config: Vec<UtmParam>,
    pub frequency_caps: Vec<FrequencyCap>,
    pub linked_brand: LinkedBrand,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// `advertiserId` from a path: a UUID.
pub fn advertiser_id(raw: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| ApiError::invalid("advertiserId", "must be a UUID"))
}
