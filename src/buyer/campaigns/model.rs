//! Campaign inputs (as sent, then validated into domain values with exact
//! field paths), the stored shapes and the wire record.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;

/// Names follow the advertisers' rule (1 to 255 characters after trimming).
pub use crate::buyer::advertisers::model::name;
use crate::error::{ApiError, Issues};

pub const STATUSES: &[&str] = &["DRAFT", "ACTIVE", "PAUSED", "COMPLETED", "ARCHIVED"];
pub const PACINGS: &[&str] = &["even", "asap", "front_loaded"];
pub const INVENTORY_SELECTIONS: &[&str] = &["automatic", "manual"];
/// AdCP event types an event goal may optimise for (`enums/event-type.json`).
pub const EVENT_TYPES: &[&str] = &[
    "page_view",
    "view_content",
    "select_content",
    "select_item",
    "search",
    "share",
    "add_to_cart",
    "remove_from_cart",
    "viewed_cart",
    "add_to_wishlist",
    "initiate_checkout",
    "add_payment_info",
    "purchase",
    "refund",
    "lead",
    "qualify_lead",
    "close_convert_lead",
    "disqualify_lead",
    "complete_registration",
    "subscribe",
    "start_trial",
    "app_install",
    "app_launch",
    "contact",
    "schedule",
    "donate",
    "submit_application",
    "custom",
];
/// Seller-native delivery metrics a metric goal may optimise for (AdCP).
pub const METRICS: &[&str] = &[
    "clicks",
    "views",
    "completed_views",
    "viewed_seconds",
    "attention_seconds",
    "attention_score",
    "engagements",
    "follows",
    "saves",
    "profile_visits",
    "reach",
];
pub const WINDOW_UNITS: &[&str] = &["minutes", "hours", "days", "weeks", "months"];
/// AdCP caps a package at ten goals; a campaign's defaults follow it.
pub const MAX_GOALS: usize = 10;
pub const MAX_BRIEF_CHARS: usize = 100_000;
pub const MAX_STOREFRONTS: usize = 100;
/// Largest budget amount: inside every backend's exact float range.
pub const MAX_AMOUNT: f64 = 1e12;

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct FlightDatesIn {
    /// ISO 8601 date-time with offset, e.g. `2027-01-01T00:00:00Z`.
    pub start_date: Option<String>,
    /// ISO 8601 date-time, after `startDate`.
    pub end_date: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BudgetIn {
    /// Positive amount in the advertiser's currency.
    pub total: Option<f64>,
    /// ISO 4217; must equal the advertiser's `primaryCurrency` or be omitted.
    pub currency: Option<String>,
    /// Optional positive daily cap, at most `total`.
    pub daily_cap: Option<f64>,
    /// `even` (default), `asap` or `front_loaded`.
    pub pacing: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct AutonomyIn {
    /// `automatic` enables automatic product selection; `manual` (default).
    pub inventory_selection: Option<String>,
}

/// `create_campaign` and `update_campaign` body. Every field is optional to
/// serde so that all problems are reported at once; create requires
/// `advertiserId`, `name`, `flightDates` and `budget`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CampaignIn {
    /// The caller's advertiser (create only; a campaign never moves).
    pub advertiser_id: Option<String>,
    #[schema(min_length = 1, max_length = 255)]
    pub name: Option<String>,
    pub flight_dates: Option<FlightDatesIn>,
    pub budget: Option<BudgetIn>,
    /// The client's brief, kept whole.
    #[schema(max_length = 100000)]
    pub brief: Option<String>,
    /// A discovery session of the caller's account; `null` detaches.
    #[serde(default, deserialize_with = "crate::buyer::nullable")]
    #[schema(value_type = Option<String>)]
    pub discovery_id: Option<Option<String>>,
    /// Storefronts that pin discovery for this campaign; `[]` clears.
    pub storefront_ids: Option<Vec<i64>>,
    pub autonomy: Option<AutonomyIn>,
    /// `{optimizationGoals: [...]}` (at least one goal); `null` clears.
    #[serde(default, deserialize_with = "crate::buyer::nullable")]
    #[schema(value_type = Option<Object>)]
    pub performance_config: Option<Option<Value>>,
    /// Targeting constraints (see `validate_targeting`); `{}` clears.
    #[schema(value_type = Option<Object>)]
    pub constraints: Option<Value>,
    /// A catalog of the campaign's advertiser; `null` detaches.
    #[serde(default, deserialize_with = "crate::buyer::nullable")]
    #[schema(value_type = Option<String>)]
    pub catalog_id: Option<Option<String>>,
    /// The campaign's utm parameters (at most 20, each key once), the same
    /// items as the advertiser's `utmConfig`: each overrides the
    /// advertiser's parameter of that key on this campaign's click URLs
    /// and packages; keys it does not name keep the advertiser's. Update
    /// replaces all; `[]` clears (the advertiser's apply unchanged).
    #[schema(max_items = 20)]
    pub utm_config: Option<Vec<crate::buyer::advertisers::model::UtmParam>>,
    /// Not accepted: dates live in `flightDates` (named so the error can say so).
    #[schema(ignore)]
    pub start_date: Option<Value>,
    #[schema(ignore)]
    pub end_date: Option<Value>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FlightDates {
    pub start_date: DateTime<Utc>,
    pub end_date: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Budget {
    pub total: f64,
    /// Always the advertiser's currency.
    pub currency: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub daily_cap: Option<f64>,
    pub pacing: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Autonomy {
    pub inventory_selection: String,
}

impl Default for Autonomy {
    fn default() -> Self {
        Autonomy {
            inventory_selection: "manual".into(),
        }
    }
}

/// The wire record of a campaign.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignOut {
    /// `cmp_` followed by 32 hex digits.
    pub campaign_id: String,
    pub advertiser_id: String,
    pub name: String,
    /// `DRAFT`, `ACTIVE`, `PAUSED`, `COMPLETED` or `ARCHIVED`.
    pub status: String,
    pub flight_dates: FlightDates,
    pub budget: Budget,
    pub brief: Option<String>,
    pub discovery_id: Option<String>,
    pub storefront_ids: Vec<i64>,
    pub autonomy: Autonomy,
    #[schema(value_type = Option<Object>)]
    pub performance_config: Option<Value>,
    #[schema(value_type = Object)]
    pub constraints: Value,
    /// What the campaign targets after its include and exclude lists combine.
    #[schema(value_type = Object)]
    pub effective_targeting: Value,
    pub catalog_id: Option<String>,
    /// The campaign's utm overrides (`[]`: none; the advertiser's apply).
    pub utm_config: Vec<crate::buyer::advertisers::model::UtmParam>,
    /// With `fields=geo_metro_names`: the names of `geo_metros` codes.
    /// Named as the spec names them (snake_case, like the constraints).
    #[serde(rename = "geo_metro_names", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<crate::buyer::targeting::constraints::MetroLabel>>)]
    pub geo_metro_names: Option<Value>,
    #[serde(
        rename = "geo_metro_names_exclude",
        skip_serializing_if = "Option::is_none"
    )]
    #[schema(value_type = Option<Vec<crate::buyer::targeting::constraints::MetroLabel>>)]
    pub geo_metro_names_exclude: Option<Value>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// Responses wrap the record, as buyer APIs do: `{campaign: {...}}`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct CampaignEnvelope {
    pub campaign: CampaignOut,
}

pub fn campaign_id(raw: &str) -> Result<String, ApiError> {
    let ok = raw
        .strip_prefix("cmp_")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(raw.to_ascii_lowercase())
    } else {
        Err(ApiError::not_found("campaign"))
    }
}

pub fn new_id() -> String {
    format!("cmp_{}", uuid::Uuid::new_v4().simple())
}

fn instant(raw: Option<&str>, path: &str, issues: &mut Issues) -> Option<DateTime<Utc>> {
    let Some(raw) = raw else {
        issues.add(path, "is required");
        return None;
    };
    match DateTime::parse_from_rfc3339(raw.trim()) {
        Ok(t) => Some(t.with_timezone(&Utc)),
        Err(_) => {
            issues.add(
                path,
                "must be an ISO 8601 date-time with offset, e.g. 2027-01-01T00:00:00Z",
            );
            None
        }
    }
}

/// Both dates, end after start. `current` fills a date a PUT leaves out.
pub fn flight_dates(
    raw: FlightDatesIn,
    current: Option<&FlightDates>,
    issues: &mut Issues,
) -> Option<FlightDates> {
    let start = match (&raw.start_date, current) {
        (None, Some(c)) => Some(c.start_date),
        _ => instant(raw.start_date.as_deref(), "flightDates.startDate", issues),
    };
    let end = match (&raw.end_date, current) {
        (None, Some(c)) => Some(c.end_date),
        _ => instant(raw.end_date.as_deref(), "flightDates.endDate", issues),
    };
    let (start, end) = (start?, end?);
    if end <= start {
        issues.add("flightDates.endDate", "must be after flightDates.startDate");
        return None;
    }
    Some(FlightDates {
        start_date: start,
        end_date: end,
    })
}

fn amount(v: f64, path: &str, issues: &mut Issues) {
    if !(v.is_finite() && v > 0.0 && v <= MAX_AMOUNT) {
        issues.add(
            path,
            format!("must be a number above 0 and at most {MAX_AMOUNT}"),
        );
    }
}

/// A budget; `current` fills what a PUT leaves out. The currency is the
/// advertiser's, filled in by the caller: a sent one is checked on its own
/// (`budget_currency`, then `CURRENCY_MISMATCH`).
pub fn budget(raw: BudgetIn, current: Option<&Budget>, issues: &mut Issues) -> Budget {
    let total = match (raw.total, current) {
        (Some(t), _) => {
            amount(t, "budget.total", issues);
            t
        }
        (None, Some(c)) => c.total,
        (None, None) => {
            issues.add("budget.total", "is required");
            0.0
        }
    };
    let daily_cap = match (raw.daily_cap, current) {
        (Some(d), _) => {
            amount(d, "budget.dailyCap", issues);
            Some(d)
        }
        (None, Some(c)) => c.daily_cap,
        (None, None) => None,
    };
    if let Some(d) = daily_cap
        && d > total
        && total > 0.0
    {
        issues.add("budget.dailyCap", "must be at most budget.total");
    }
    let pacing = match (raw.pacing, current) {
        (Some(p), _) => {
            if !PACINGS.contains(&p.as_str()) {
                issues.add("budget.pacing", format!("must be one of {PACINGS:?}"));
            }
            p
        }
        (None, Some(c)) => c.pacing.clone(),
        (None, None) => "even".into(),
    };
    Budget {
        total,
        currency: current.map(|c| c.currency.clone()).unwrap_or_default(),
        daily_cap,
        pacing,
    }
}

/// The sent budget currency, upper-cased, if it is a real ISO 4217 code.
pub fn budget_currency(raw: &str, issues: &mut Issues) -> Option<String> {
    let code = raw.trim().to_ascii_uppercase();
    if code.len() != 3 || iso_currency::Currency::from_code(&code).is_none() {
        issues.add(
            "budget.currency",
            "must be an ISO 4217 currency code such as USD",
        );
        return None;
    }
    Some(code)
}

pub fn brief(raw: String, issues: &mut Issues) -> Option<String> {
    if raw.chars().count() > MAX_BRIEF_CHARS {
        issues.add(
            "brief",
            format!("must be at most {MAX_BRIEF_CHARS} characters"),
        );
    }
    // Kept whole: never trimmed or shortened.
    (!raw.trim().is_empty()).then_some(raw)
}

pub fn storefront_ids(raw: Vec<i64>, issues: &mut Issues) -> Vec<i64> {
    if raw.len() > MAX_STOREFRONTS {
        issues.add(
            "storefrontIds",
            format!("must list at most {MAX_STOREFRONTS} storefronts"),
        );
    }
    let mut seen = BTreeSet::new();
    for (i, id) in raw.iter().enumerate() {
        if *id <= 0 {
            issues.add(format!("storefrontIds[{i}]"), "must be a positive integer");
        } else if !seen.insert(*id) {
            issues.add(format!("storefrontIds[{i}]"), "is listed twice");
        }
    }
    raw
}

pub fn autonomy(raw: AutonomyIn, issues: &mut Issues) -> Autonomy {
    let sel = raw.inventory_selection.unwrap_or_else(|| "manual".into());
    if !INVENTORY_SELECTIONS.contains(&sel.as_str()) {
        issues.add(
            "autonomy.inventorySelection",
            format!("must be one of {INVENTORY_SELECTIONS:?}"),
        );
    }
    Autonomy {
        inventory_selection: sel,
    }
}

/// Checks that `v` is an object with only `allowed` keys.
fn object<'a>(
    v: &'a Value,
    path: &str,
    allowed: &[&str],
    issues: &mut Issues,
) -> Option<&'a Map<String, Value>> {
    let Some(o) = v.as_object() else {
        issues.add(path, "must be an object");
        return None;
    };
    for k in o.keys() {
        if !allowed.contains(&k.as_str()) {
            issues.add(format!("{path}.{k}"), "is not a known field");
        }
    }
    Some(o)
}

fn required_str<'a>(
    o: &'a Map<String, Value>,
    key: &str,
    path: &str,
    issues: &mut Issues,
) -> Option<&'a str> {
    match o.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() && s.len() <= 255 => Some(s),
        Some(_) => {
            issues.add(
                format!("{path}.{key}"),
                "must be a string of 1 to 255 characters",
            );
            None
        }
        None => {
            issues.add(format!("{path}.{key}"), "is required");
            None
        }
    }
}

fn one_of(o: &Map<String, Value>, key: &str, path: &str, list: &[&str], issues: &mut Issues) {
    if let Some(s) = required_str(o, key, path, issues)
        && !list.contains(&s)
    {
        issues.add(format!("{path}.{key}"), format!("must be one of {list:?}"));
    }
}

fn positive_int(v: Option<&Value>, path: &str, issues: &mut Issues) -> Option<i64> {
    let v = v?;
    match v.as_i64() {
        Some(n) if n >= 1 => Some(n),
        _ => {
            issues.add(path, "must be a positive integer");
            None
        }
    }
}

fn window(v: &Value, path: &str, issues: &mut Issues) {
    let Some(o) = object(v, path, &["interval", "unit"], issues) else {
        return;
    };
    if positive_int(o.get("interval"), &format!("{path}.interval"), issues).is_none()
        && o.get("interval").is_none()
    {
        issues.add(format!("{path}.interval"), "is required");
    }
    one_of(o, "unit", path, WINDOW_UNITS, issues);
}

/// `target`: `kinds` lists what this goal kind allows; `maximize_value`
/// carries no value, the others a positive one.
fn target(v: &Value, path: &str, kinds: &[&str], issues: &mut Issues) -> Option<String> {
    let o = object(v, path, &["kind", "value"], issues)?;
    let kind = required_str(o, "kind", path, issues)?.to_string();
    if !kinds.contains(&kind.as_str()) {
        issues.add(format!("{path}.kind"), format!("must be one of {kinds:?}"));
        return None;
    }
    if kind == "maximize_value" {
        if o.contains_key("value") {
            issues.add(format!("{path}.value"), "maximize_value takes no value");
        }
        return Some(kind);
    }
    match o.get("value").and_then(Value::as_f64) {
        Some(x) if x.is_finite() && x > 0.0 && (kind != "threshold_rate" || x <= 1.0) => {}
        Some(_) if kind == "threshold_rate" => issues.add(
            format!("{path}.value"),
            "must be a rate above 0 and at most 1",
        ),
        Some(_) => issues.add(format!("{path}.value"), "must be a number above 0"),
        None => issues.add(format!("{path}.value"), "is required and must be a number"),
    }
    Some(kind)
}

fn goal(v: &Value, path: &str, issues: &mut Issues) -> Option<i64> {
    let Some(o) = v.as_object() else {
        issues.add(path, "must be an object");
        return None;
    };
    let priority = positive_int(o.get("priority"), &format!("{path}.priority"), issues);
    match o.get("kind").and_then(Value::as_str) {
        Some("event") => {
            object(
                v,
                path,
                &[
                    "kind",
                    "eventSources",
                    "target",
                    "attributionWindow",
                    "priority",
                ],
                issues,
            );
            let sources = match o.get("eventSources") {
                Some(Value::Array(a)) if !a.is_empty() => a.as_slice(),
                Some(_) => {
                    issues.add(format!("{path}.eventSources"), "must be a non-empty array");
                    &[]
                }
                None => {
                    issues.add(format!("{path}.eventSources"), "is required");
                    &[]
                }
            };
            let mut valued = false;
            for (i, s) in sources.iter().enumerate() {
                let sp = format!("{path}.eventSources[{i}]");
                let Some(so) = object(
                    s,
                    &sp,
                    &["eventSourceId", "eventType", "valueField"],
                    issues,
                ) else {
                    continue;
                };
                required_str(so, "eventSourceId", &sp, issues);
                one_of(so, "eventType", &sp, EVENT_TYPES, issues);
                if so.contains_key("valueField") {
                    valued |= required_str(so, "valueField", &sp, issues).is_some();
                }
            }
            let kinds = ["cost_per", "per_ad_spend", "maximize_value"];
            if let Some(t) = o.get("target")
                && let Some(kind) = target(t, &format!("{path}.target"), &kinds, issues)
                && kind != "cost_per"
                && !valued
                && !sources.is_empty()
            {
                issues.add(
                    format!("{path}.target.kind"),
                    "per_ad_spend and maximize_value need an event source with a valueField",
                );
            }
            if let Some(w) = o.get("attributionWindow") {
                let wp = format!("{path}.attributionWindow");
                if let Some(wo) = object(w, &wp, &["postClick", "postView"], issues) {
                    for (k, wv) in wo {
                        window(wv, &format!("{wp}.{k}"), issues);
                    }
                }
            }
        }
        Some("metric") => {
            object(v, path, &["kind", "metric", "target", "priority"], issues);
            one_of(o, "metric", path, METRICS, issues);
            if let Some(t) = o.get("target") {
                target(
                    t,
                    &format!("{path}.target"),
                    &["cost_per", "threshold_rate"],
                    issues,
                );
            }
        }
        _ => issues.add(format!("{path}.kind"), "must be \"event\" or \"metric\""),
    }
    priority
}

/// `performanceConfig`: `{optimizationGoals: [goal, ...]}`, one to ten
/// goals, priorities unique. Returned as sent once valid.
pub fn performance_config(v: Value, issues: &mut Issues) -> Value {
    let path = "performanceConfig";
    let Some(o) = object(&v, path, &["optimizationGoals"], issues) else {
        return v;
    };
    match o.get("optimizationGoals") {
        Some(Value::Array(goals)) if !goals.is_empty() && goals.len() <= MAX_GOALS => {
            let mut priorities = BTreeSet::new();
            for (i, g) in goals.iter().enumerate() {
                let gp = format!("{path}.optimizationGoals[{i}]");
                if let Some(p) = goal(g, &gp, issues)
                    && !priorities.insert(p)
                {
                    issues.add(format!("{gp}.priority"), "is used by another goal");
                }
            }
        }
        Some(_) => issues.add(
            format!("{path}.optimizationGoals"),
            format!("must be an array of 1 to {MAX_GOALS} goals"),
        ),
        None => issues.add(format!("{path}.optimizationGoals"), "is required"),
    }
    v
}

/// Rejects root-level dates with a pointer to where they belong.
pub fn no_root_dates(body: &CampaignIn, issues: &mut Issues) {
    for (sent, name) in [
        (body.start_date.is_some(), "startDate"),
        (body.end_date.is_some(), "endDate"),
    ] {
        if sent {
            issues.add(
                name,
                format!("is not a root field: send flightDates.{name}"),
            );
        }
    }
}

/// Why a status change is illegal, if it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transition {
    Pause,
    Resume,
    Archive,
    Restore,
}

impl Transition {
    pub fn name(self) -> &'static str {
        match self {
            Transition::Pause => "pause",
            Transition::Resume => "resume",
            Transition::Archive => "archive",
            Transition::Restore => "restore",
        }
    }

    pub fn action(self) -> &'static str {
        match self {
            Transition::Pause => "campaign.paused",
            Transition::Resume => "campaign.resumed",
            Transition::Archive => "campaign.archived",
            Transition::Restore => "campaign.restored",
        }
    }

    /// The next `(status, archived_from)`, `Ok(None)` when already there
    /// (a repeat is a no-op), or the conflict.
    pub fn apply(
        self,
        status: &str,
        archived_from: Option<&str>,
    ) -> Result<Option<(String, Option<String>)>, String> {
        let to = |s: &str, from: Option<String>| Ok(Some((s.to_string(), from)));
        match (self, status) {
            (Transition::Pause, "ACTIVE") => to("PAUSED", None),
            (Transition::Pause, "PAUSED") => Ok(None),
            (Transition::Resume, "PAUSED") => to("ACTIVE", None),
            (Transition::Resume, "ACTIVE") => Ok(None),
            (Transition::Archive, "ARCHIVED") => Ok(None),
            (Transition::Archive, s) => to("ARCHIVED", Some(s.to_string())),
            // Restoring never restarts spend: an archived running campaign
            // comes back paused.
            (Transition::Restore, "ARCHIVED") => match archived_from {
                Some("ACTIVE") | Some("PAUSED") => to("PAUSED", None),
                Some(s) if STATUSES.contains(&s) => to(s, None),
                _ => to("DRAFT", None),
            },
            (Transition::Restore, _) => Ok(None),
            (Transition::Pause, s) => Err(format!(
                "a {s} campaign cannot be paused (only an ACTIVE one)"
            )),
            (Transition::Resume, s) => Err(format!(
                "a {s} campaign cannot be resumed (only a PAUSED one; a DRAFT launches)"
            )),
        }
    }
}
