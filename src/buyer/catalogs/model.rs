//! Catalog inputs (as sent, then validated with exact paths), feed items
//! (each checked on its own, so one bad item never fails its feed) and the
//! wire records.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use crate::error::{ApiError, Issues};
use crate::types::{OutboundUrl, UrlPolicy};

/// AdCP 3.1 catalog types (`enums/catalog-type.json`). `product` is the
/// default; every type shares the item rules below (an id and a title).
pub const CATALOG_TYPES: &[&str] = &[
    "product",
    "offering",
    "inventory",
    "store",
    "promotion",
    "hotel",
    "flight",
    "job",
    "vehicle",
    "real_estate",
    "education",
    "destination",
    "app",
];
pub const FORMATS: &[&str] = &["json", "csv"];
/// Product availability as feeds spell it (Google Merchant Center's values).
pub const AVAILABILITY: &[&str] = &["in_stock", "out_of_stock", "preorder", "backorder"];
/// Catalogs in one `sync_catalogs` call.
pub const MAX_CATALOGS: usize = 20;
/// Items in one version; a larger feed fails as a whole.
pub const MAX_ITEMS: usize = 100_000;
/// Rejections listed in a response (all are counted in `rejectedCount`).
pub const MAX_REPORTED: usize = 1_000;
pub const NAME_MAX: usize = 255;
const ITEM_ID_MAX: usize = 256;
const TITLE_MAX: usize = 500;
const DESCRIPTION_MAX: usize = 10_000;
const URL_MAX: usize = 2_048;

pub const SOURCE_INLINE: &str = "inline";
pub const SOURCE_URL: &str = "url";

pub const STATUS_PENDING: &str = "pending";
pub const STATUS_SYNCED: &str = "synced";
pub const STATUS_FAILED: &str = "failed";

pub const HEALTHY: &str = "healthy";
pub const DEGRADED: &str = "degraded";
pub const FAILING: &str = "failing";

/// One catalog of a `sync_catalogs` call: inline `items` or a `feedUrl`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CatalogIn {
    /// An existing catalog of the advertiser (`cat_…`) to sync again;
    /// without it, the advertiser's catalog of the same `name` is synced
    /// again, or a new one is created.
    pub catalog_id: Option<String>,
    /// 1 to 255 characters; unique per advertiser. Required for a new catalog.
    pub name: Option<String>,
    /// AdCP catalog type, default `product`.
    #[serde(rename = "type")]
    pub catalog_type: Option<String>,
    /// Inline items (AdCP product-catalog items: `item_id`, `title`,
    /// `price {amount, currency}`, `url`, `image_url`, `availability`, ...).
    #[schema(value_type = Option<Vec<Object>>)]
    pub items: Option<Vec<Value>>,
    /// A JSON or CSV feed fetched over HTTPS through the outbound guard.
    pub feed_url: Option<String>,
    /// `json` or `csv`; inferred from the answer's content type when omitted.
    pub format: Option<String>,
}

/// `sync_catalogs` body.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SyncCatalogsIn {
    /// 1 to 20 catalogs.
    pub catalogs: Option<Vec<CatalogIn>>,
}

/// `refresh_catalog` body (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RefreshIn {
    /// Also execute the activation plan of the new version.
    pub execute_activation: Option<bool>,
}

/// `preview_catalog_activation_plan` body (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PreviewIn {
    /// Store the plan and return its `planId`; otherwise nothing is written.
    pub save: Option<bool>,
}

/// `execute_catalog_activation_plan` body (optional).
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecuteIn {
    /// Compute what would be executed and write nothing.
    pub dry_run: Option<bool>,
    /// Execute this saved plan (`plan_…`, from a preview with `save: true`),
    /// and only while the catalog is still where the plan was computed:
    /// otherwise 409 `CONFLICT` with `details.reason: "plan_stale"`.
    pub plan_id: Option<String>,
}

/// Where a catalog's items come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    Inline(Vec<Value>),
    Url { url: String, format: Option<String> },
}

/// A validated catalog of a sync call.
#[derive(Debug)]
pub struct CatalogSpec {
    pub catalog_id: Option<String>,
    pub name: Option<String>,
    pub catalog_type: Option<String>,
    pub source: Source,
}

/// `cat_` and 32 lowercase hex digits.
pub fn catalog_id(raw: &str, field: &str) -> Result<String, ApiError> {
    let ok = raw
        .strip_prefix("cat_")
        .is_some_and(|h| h.len() == 32 && h.bytes().all(|b| b.is_ascii_hexdigit()));
    if ok {
        Ok(raw.to_ascii_lowercase())
    } else {
        Err(ApiError::invalid(field, "must be a catalog id (cat_…)"))
    }
}

pub fn new_catalog_id() -> String {
    format!("cat_{}", uuid::Uuid::new_v4().simple())
}

/// Validates a sync body, every problem at once.
pub fn sync_specs(body: SyncCatalogsIn, policy: UrlPolicy) -> Result<Vec<CatalogSpec>, ApiError> {
    let mut issues = Issues::default();
    let Some(catalogs) = body.catalogs else {
        return Err(ApiError::invalid("catalogs", "is required"));
    };
    if catalogs.is_empty() || catalogs.len() > MAX_CATALOGS {
        return Err(ApiError::invalid(
            "catalogs",
            format!("must list 1 to {MAX_CATALOGS} catalogs"),
        ));
    }
    let mut specs = Vec::new();
    let mut names: HashMap<String, usize> = HashMap::new();
    let mut ids: HashMap<String, usize> = HashMap::new();
    for (i, c) in catalogs.into_iter().enumerate() {
        let at = |f: &str| format!("catalogs[{i}].{f}");
        let catalog_id = match c
            .catalog_id
            .as_deref()
            .map(|id| catalog_id(id, &at("catalogId")))
        {
            Some(Ok(id)) => {
                if let Some(first) = ids.insert(id.clone(), i) {
                    issues.add(at("catalogId"), format!("repeats catalogs[{first}]"));
                }
                Some(id)
            }
            Some(Err(_)) => {
                issues.add(at("catalogId"), "must be a catalog id (cat_…)");
                None
            }
            None => None,
        };
        let name = c.name.map(|n| n.trim().to_string());
        match &name {
            Some(n) if n.is_empty() || n.chars().count() > NAME_MAX => {
                issues.add(at("name"), format!("must be 1 to {NAME_MAX} characters"));
            }
            Some(n) => {
                if let Some(first) = names.insert(n.clone(), i) {
                    issues.add(at("name"), format!("repeats catalogs[{first}].name"));
                }
            }
            None if c.catalog_id.is_none() => issues.add(at("name"), "is required"),
            None => {}
        }
        if let Some(t) = &c.catalog_type
            && !CATALOG_TYPES.contains(&t.as_str())
        {
            issues.add(
                at("type"),
                format!("must be one of {}", CATALOG_TYPES.join(", ")),
            );
        }
        if let Some(f) = &c.format
            && !FORMATS.contains(&f.as_str())
        {
            issues.add(at("format"), "must be json or csv");
        }
        let source = match (c.items, c.feed_url) {
            (Some(_), Some(_)) => {
                issues.add(at("feedUrl"), "give either items or feedUrl, not both");
                None
            }
            (None, None) => {
                issues.add(at("items"), "give either items or feedUrl");
                None
            }
            (Some(items), None) => {
                if c.format.is_some() {
                    issues.add(at("format"), "applies to feedUrl only");
                }
                if items.len() > MAX_ITEMS {
                    issues.add(at("items"), format!("at most {MAX_ITEMS} items"));
                }
                Some(Source::Inline(items))
            }
            (None, Some(url)) => match OutboundUrl::parse(&url, policy) {
                Ok(u) if u.as_str().len() <= URL_MAX => Some(Source::Url {
                    url: u.as_str().to_string(),
                    format: c.format.clone(),
                }),
                Ok(_) => {
                    issues.add(at("feedUrl"), format!("at most {URL_MAX} characters"));
                    None
                }
                Err(e) => {
                    issues.add(at("feedUrl"), e);
                    None
                }
            },
        };
        if let Some(source) = source {
            specs.push(CatalogSpec {
                catalog_id,
                name,
                catalog_type: c.catalog_type,
                source,
            });
        }
    }
    issues.into_result()?;
    Ok(specs)
}

/// One rejected item: its position in the feed (0-based; for CSV the data
/// row after the header), the field at fault and why.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    pub index: usize,
    /// The item's id when it had a readable one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub item_id: Option<String>,
    /// The offending field (`price.currency`); empty for the item as a whole.
    pub field: String,
    pub message: String,
}

/// The items of a feed after checking: the good ones (normalised) and a
/// report per bad one.
#[derive(Debug, Default)]
pub struct Checked {
    pub items: Vec<Value>,
    pub rejected: Vec<Rejection>,
    pub rejected_count: usize,
}

fn text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

fn web_url(raw: &str) -> bool {
    raw.len() <= URL_MAX
        && url::Url::parse(raw)
            .is_ok_and(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
}

fn currency_code(raw: &str) -> Option<String> {
    let code = raw.trim().to_ascii_uppercase();
    (code.len() == 3 && iso_currency::Currency::from_code(&code).is_some()).then_some(code)
}

/// `{amount, currency}`, or a `"12.50 USD"` string as merchant feeds write it.
fn price(v: &Value, problems: &mut Vec<(String, String)>) -> Option<Value> {
    let (amount, currency) = match v {
        Value::Object(o) => (o.get("amount").cloned(), o.get("currency").and_then(text)),
        Value::String(s) => {
            let mut parts = s.split_whitespace();
            let amount = parts.next().map(|a| Value::String(a.to_string()));
            (amount, parts.next().map(str::to_string))
        }
        _ => {
            problems.push((
                "price".into(),
                "must be {amount, currency} or \"12.50 USD\"".into(),
            ));
            return None;
        }
    };
    let amount = match amount {
        Some(Value::Number(n)) => n.as_f64(),
        Some(Value::String(s)) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    let mut ok = true;
    match amount {
        Some(a) if a.is_finite() && a >= 0.0 => {}
        _ => {
            problems.push(("price.amount".into(), "must be a number, 0 or more".into()));
            ok = false;
        }
    }
    let currency = currency.as_deref().and_then(currency_code);
    if currency.is_none() {
        problems.push((
            "price.currency".into(),
            "must be an ISO 4217 currency code such as USD".into(),
        ));
        ok = false;
    }
    match (ok, amount, currency) {
        (true, Some(a), Some(c)) => Some(json!({ "amount": a, "currency": c })),
        _ => None,
    }
}

/// An item's problems as (field, message), with its id when readable.
type Problems = (Option<String>, Vec<(String, String)>);

/// Checks one item: its id and normalised value, or its problems.
fn item(v: Value) -> Result<(String, Value), Problems> {
    let Value::Object(mut o) = v else {
        return Err((None, vec![(String::new(), "must be an object".into())]));
    };
    let mut problems = Vec::new();
    // `item_id` (AdCP) or `id` (merchant feeds).
    let id_field = if o.contains_key("item_id") {
        "item_id"
    } else {
        "id"
    };
    let id = o.remove(id_field).as_ref().and_then(text);
    o.remove("id");
    let id = match id {
        Some(id) if !id.is_empty() && id.chars().count() <= ITEM_ID_MAX => Some(id),
        Some(_) => {
            problems.push((
                "item_id".into(),
                format!("must be 1 to {ITEM_ID_MAX} characters"),
            ));
            None
        }
        None => {
            problems.push(("item_id".into(), "is required (item_id or id)".into()));
            None
        }
    };
    // `title`, or `name` for catalog types whose items have names.
    let title_field = if o.contains_key("title") {
        "title"
    } else {
        "name"
    };
    let title = o.remove(title_field);
    let title = match title.as_ref() {
        Some(Value::String(s)) if !s.trim().is_empty() && s.chars().count() <= TITLE_MAX => {
            Some(s.trim().to_string())
        }
        Some(_) => {
            problems.push((
                title_field.into(),
                format!("must be a string of 1 to {TITLE_MAX} characters"),
            ));
            None
        }
        None => {
            problems.push(("title".into(), "is required (title or name)".into()));
            None
        }
    };
    match o.get("description") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s.chars().count() <= DESCRIPTION_MAX => {}
        Some(_) => problems.push((
            "description".into(),
            format!("must be a string of at most {DESCRIPTION_MAX} characters"),
        )),
    }
    if let Some(p) = o.remove("price")
        && !p.is_null()
        && let Some(p) = price(&p, &mut problems)
    {
        o.insert("price".into(), p);
    }
    for field in ["url", "image_url"] {
        match o.get(field) {
            None | Some(Value::Null) => {}
            Some(Value::String(s)) if web_url(s.trim()) => {
                let s = s.trim().to_string();
                o.insert(field.into(), Value::String(s));
            }
            Some(_) => problems.push((field.into(), "must be an http(s) URL".into())),
        }
    }
    if let Some(a) = o.get("availability").filter(|a| !a.is_null()) {
        let norm = a
            .as_str()
            .map(|s| s.trim().to_ascii_lowercase().replace([' ', '-'], "_"));
        match norm {
            Some(s) if AVAILABILITY.contains(&s.as_str()) => {
                o.insert("availability".into(), Value::String(s));
            }
            _ => problems.push((
                "availability".into(),
                format!("must be one of {}", AVAILABILITY.join(", ")),
            )),
        }
    }
    match (id, title, problems.is_empty()) {
        (Some(id), Some(title), true) => {
            o.insert("item_id".into(), Value::String(id.clone()));
            o.insert("title".into(), Value::String(title));
            o.retain(|_, v| !v.is_null());
            Ok((id, Value::Object(o)))
        }
        (id, _, _) => Err((id, problems)),
    }
}

/// Checks every item; bad ones are reported by index and left out.
pub fn check_items(raw: Vec<Value>) -> Checked {
    check(raw.into_iter().map(Some).collect())
}

/// `None` marks a position already rejected (an unreadable CSV row).
fn check(raw: Vec<Option<Value>>) -> Checked {
    let mut out = Checked::default();
    let mut seen: HashMap<String, usize> = HashMap::new();
    let reject =
        |out: &mut Checked, index, item_id: Option<String>, problems: Vec<(String, String)>| {
            out.rejected_count += 1;
            for (field, message) in problems {
                if out.rejected.len() < MAX_REPORTED {
                    out.rejected.push(Rejection {
                        index,
                        item_id: item_id.clone(),
                        field,
                        message,
                    });
                }
            }
        };
    for (index, v) in raw.into_iter().enumerate() {
        let Some(v) = v else { continue };
        match item(v) {
            Ok((id, v)) => {
                if let Some(first) = seen.get(&id) {
                    let msg = format!("repeats the item at index {first}");
                    reject(&mut out, index, Some(id), vec![("item_id".into(), msg)]);
                    continue;
                }
                seen.insert(id, index);
                out.items.push(v);
            }
            Err((id, problems)) => reject(&mut out, index, id, problems),
        }
    }
    out
}

/// A feed's bytes as items: a JSON array (or an object with an `items`
/// array), or CSV with a header row. `Err` fails the whole feed.
pub fn parse_feed(bytes: &[u8], format: &str) -> Result<Checked, String> {
    let raw = match format {
        "csv" => csv_items(bytes)?,
        _ => json_items(bytes)?,
    };
    let mut checked = check(raw.items);
    // Rows the CSV reader could not read count as rejected items too.
    if !raw.rejected.is_empty() {
        checked.rejected_count += raw.rejected.len();
        checked.rejected.extend(raw.rejected);
        checked.rejected.sort_by_key(|r| r.index);
        checked.rejected.truncate(MAX_REPORTED);
    }
    Ok(checked)
}

struct RawItems {
    items: Vec<Option<Value>>,
    rejected: Vec<Rejection>,
}

fn json_items(bytes: &[u8]) -> Result<RawItems, String> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| format!("the feed is not valid JSON: {e}"))?;
    let items = match v {
        Value::Array(items) => items,
        Value::Object(mut o) => match o.remove("items") {
            Some(Value::Array(items)) => items,
            _ => {
                return Err(
                    "a JSON feed is an array of items or an object with an items array".into(),
                );
            }
        },
        _ => {
            return Err("a JSON feed is an array of items or an object with an items array".into());
        }
    };
    if items.len() > MAX_ITEMS {
        return Err(format!("the feed has more than {MAX_ITEMS} items"));
    }
    Ok(RawItems {
        items: items.into_iter().map(Some).collect(),
        rejected: Vec::new(),
    })
}

/// CSV rows as item objects keyed by the (lower-cased) header; empty cells
/// are absent. A `currency` column completes a bare `price`.
fn csv_items(bytes: &[u8]) -> Result<RawItems, String> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let headers: Vec<String> = reader
        .headers()
        .map_err(|e| format!("the CSV header cannot be read: {e}"))?
        .iter()
        .map(|h| h.trim_start_matches('\u{feff}').to_ascii_lowercase())
        .collect();
    if headers.iter().all(String::is_empty) {
        return Err("the CSV feed has no header row".into());
    }
    let mut items = Vec::new();
    let mut rejected = Vec::new();
    for (index, record) in reader.records().enumerate() {
        if index >= MAX_ITEMS {
            return Err(format!("the feed has more than {MAX_ITEMS} items"));
        }
        let record = match record {
            Ok(r) => r,
            Err(e) => {
                rejected.push(Rejection {
                    index,
                    item_id: None,
                    field: String::new(),
                    message: format!("unreadable row: {e}"),
                });
                // Keeps indexes aligned with rows.
                items.push(None);
                continue;
            }
        };
        if record.len() != headers.len() {
            rejected.push(Rejection {
                index,
                item_id: None,
                field: String::new(),
                message: format!(
                    "has {} cells where the header has {}",
                    record.len(),
                    headers.len()
                ),
            });
            items.push(None);
            continue;
        }
        let mut o: BTreeMap<String, String> = BTreeMap::new();
        for (h, cell) in headers.iter().zip(record.iter()) {
            if !cell.is_empty() && !h.is_empty() {
                o.insert(h.clone(), cell.to_string());
            }
        }
        if let Some(c) = o.remove("currency").or_else(|| o.remove("price_currency"))
            && let Some(p) = o.get_mut("price")
            && p.split_whitespace().count() == 1
        {
            *p = format!("{p} {c}");
        }
        let map: Map<String, Value> = o.into_iter().map(|(k, v)| (k, Value::String(v))).collect();
        items.push(Some(Value::Object(map)));
    }
    Ok(RawItems { items, rejected })
}

/// The health of a catalog from its last sync.
pub fn health(status: &str, has_version: bool, items: i64, rejected: i64) -> &'static str {
    match status {
        STATUS_FAILED if has_version => DEGRADED,
        STATUS_FAILED => FAILING,
        _ if rejected > 0 && items == 0 => FAILING,
        _ if rejected > 0 => DEGRADED,
        _ => HEALTHY,
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceOut {
    /// `inline` or `url`.
    pub kind: String,
    pub feed_url: Option<String>,
    /// `json` or `csv` as requested; `null` infers it per fetch.
    pub format: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct HealthOut {
    /// `healthy`, `degraded` or `failing`.
    pub status: String,
    /// Items of the latest version.
    pub item_count: i64,
    /// Items rejected by the latest successful sync.
    pub rejected_count: i64,
}

/// A catalog as listed.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogOut {
    /// `cat_…`
    pub id: String,
    pub advertiser_id: String,
    pub name: String,
    /// AdCP catalog type.
    #[serde(rename = "type")]
    pub catalog_type: String,
    pub source: SourceOut,
    /// `pending`, `synced` or `failed` (the last sync).
    pub sync_status: String,
    pub health: HealthOut,
    pub item_count: i64,
    /// `null` until a sync succeeds.
    pub latest_version: Option<i32>,
    /// The version the last executed activation plan moved to.
    pub activated_version: Option<i32>,
    pub last_synced_at: Option<DateTime<Utc>>,
    pub last_error: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<entity::catalog::Model> for CatalogOut {
    fn from(r: entity::catalog::Model) -> Self {
        CatalogOut {
            source: SourceOut {
                kind: r.source_kind,
                feed_url: r.feed_url,
                format: r.feed_format,
            },
            health: HealthOut {
                status: r.health,
                item_count: r.item_count,
                rejected_count: r.rejected_count,
            },
            id: r.id,
            advertiser_id: r.advertiser_id,
            name: r.name,
            catalog_type: r.catalog_type,
            sync_status: r.sync_status,
            item_count: r.item_count,
            latest_version: r.latest_version,
            activated_version: r.activated_version,
            last_synced_at: r.last_synced_at,
            last_error: r.last_error,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// Why a feed failed as a whole.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
pub struct FeedError {
    /// `FEED_TIMEOUT`, `FEED_TOO_LARGE`, `FEED_ADDRESS_REFUSED`,
    /// `FEED_HTTP_ERROR`, `FEED_UNREACHABLE` or `FEED_INVALID`.
    pub code: String,
    pub message: String,
}

/// The outcome of syncing one catalog.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncResult {
    pub catalog_id: String,
    pub name: String,
    /// `created` or `updated`.
    pub action: String,
    /// `synced` or `failed`.
    pub status: String,
    /// The new version; `null` when the sync failed.
    pub version: Option<i32>,
    /// Items accepted into the new version.
    pub item_count: i64,
    pub rejected_count: i64,
    /// The first 1,000 problems of rejected items, by index.
    pub rejected: Vec<Rejection>,
    pub error: Option<FeedError>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncCatalogsOut {
    pub catalogs: Vec<SyncResult>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PlanSummary {
    pub activate: usize,
    pub update: usize,
    pub deactivate: usize,
    pub unchanged: usize,
}

/// What an execution would do downstream: the latest version against the
/// version last activated (`fromVersion`, `null` before any execution).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlanOut {
    pub catalog_id: String,
    /// Set when the plan was saved.
    pub plan_id: Option<String>,
    pub from_version: Option<i32>,
    pub to_version: i32,
    /// Item ids new since `fromVersion`.
    pub activate: Vec<String>,
    /// Item ids whose content changed.
    pub update: Vec<String>,
    /// Item ids gone since `fromVersion`.
    pub deactivate: Vec<String>,
    pub summary: PlanSummary,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionOut {
    /// The downstream job (`cjob_…`); `null` on a dry run that would create one.
    pub job_id: Option<String>,
    /// `pending`: recorded; nothing here runs it, so nothing goes live.
    pub status: Option<String>,
    pub dry_run: bool,
    /// `false` when this version was executed before and its job is returned.
    pub created: bool,
    pub plan: PlanOut,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RefreshOut {
    pub sync: SyncResult,
    pub catalog: CatalogOut,
    /// With `executeActivation: true` and a successful refresh.
    pub activation: Option<ExecutionOut>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_items_are_reported_by_index_and_good_ones_kept() {
        let checked = check_items(vec![
            json!({"item_id": "a", "title": "A", "price": {"amount": 10, "currency": "usd"}}),
            json!({"title": "no id"}),
            json!({"id": 7, "title": "B", "price": "3.5 EUR", "availability": "In Stock"}),
            json!({"item_id": "a", "title": "again"}),
            json!("not an object"),
            json!({"item_id": "c", "title": "C", "price": {"amount": -1, "currency": "XXX1"}}),
        ]);
        assert_eq!(checked.items.len(), 2);
        assert_eq!(
            checked.items[0]["price"],
            json!({"amount": 10.0, "currency": "USD"})
        );
        assert_eq!(checked.items[1]["item_id"], "7");
        assert_eq!(checked.items[1]["availability"], "in_stock");
        assert_eq!(checked.rejected_count, 4);
        let at: Vec<(usize, &str)> = checked
            .rejected
            .iter()
            .map(|r| (r.index, r.field.as_str()))
            .collect();
        assert_eq!(
            at,
            vec![
                (1, "item_id"),
                (3, "item_id"),
                (4, ""),
                (5, "price.amount"),
                (5, "price.currency")
            ]
        );
    }

    #[test]
    fn csv_rows_become_items_with_a_price_currency_column() {
        let csv = "id,title,price,currency,url\n1,One,9.99,USD,https://x.example/1\n2,\"Two, quoted\",5,EUR,\n3,short\n";
        let checked = parse_feed(csv.as_bytes(), "csv").unwrap_or_default();
        assert_eq!(checked.items.len(), 2);
        assert_eq!(checked.items[1]["title"], "Two, quoted");
        assert_eq!(checked.items[1]["price"]["currency"], "EUR");
        assert_eq!(checked.rejected_count, 1);
        assert_eq!(checked.rejected[0].index, 2);
    }

    #[test]
    fn health_follows_the_last_sync() {
        assert_eq!(health(STATUS_SYNCED, true, 3, 0), HEALTHY);
        assert_eq!(health(STATUS_SYNCED, true, 3, 1), DEGRADED);
        assert_eq!(health(STATUS_SYNCED, true, 0, 1), FAILING);
        assert_eq!(health(STATUS_FAILED, true, 3, 0), DEGRADED);
        assert_eq!(health(STATUS_FAILED, false, 0, 0), FAILING);
    }
}
