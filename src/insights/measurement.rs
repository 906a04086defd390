//! The measurement engine: an advertiser's event sources (a site tag, an
//! app SDK, a CRM or offline upload, ... named by the buyer's
//! `eventSourceId`, the id campaign event goals name), conversion events
//! synced in batches (AdCP `log_event`; Meta CAPI / Google offline
//! conversions batches: up to [`MAX_BATCH`] events, deduplicated by
//! `eventId` per source, so a re-sent batch adds nothing), and the
//! conversions by day, source, campaign and event type.
//!
//! Events are attributed to a campaign whose `performanceConfig` has an
//! event goal naming the source (422 `CAPABILITY_NOT_SUPPORTED`
//! otherwise), and optionally to one of its media buys (from the landing
//! URL's `utm_media_buy`). A batch is all or nothing: one bad event and
//! nothing is written, every problem reported with its path. No user
//! identifiers are accepted (unknown fields are rejected).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Duration, Utc};
use chrono_tz::Tz;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Func, OnConflict, Query};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use entity::{campaign, conversion_event, event_source, media_buy};

use super::money;
use crate::buyer::campaigns::model::EVENT_TYPES;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues, Kind};
use crate::ops::{Access, Ctx, Filtered, Input, Json, Nothing, Operation, Paged, Pagination, Verb};

/// Most events in one batch.
pub const MAX_BATCH: usize = 500;
/// Oldest accepted event (as Google offline conversions).
pub const MAX_AGE_DAYS: i64 = 90;
/// Clock skew allowed for an event in the future.
pub const MAX_FUTURE_MINUTES: i64 = 5;
/// Rows per INSERT statement.
const CHUNK: usize = 100;
/// AdCP action sources.
pub const ACTION_SOURCES: &[&str] = &[
    "website",
    "app",
    "offline",
    "in_store",
    "phone_call",
    "chat",
    "email",
    "system_generated",
    "other",
];

// ---------------------------------------------------------------- sources

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventSourceIn {
    pub advertiser_id: String,
    /// The buyer's id of the source, 1 to 64 of `A-Z a-z 0-9 _ - . :`,
    /// unique per advertiser; campaign event goals name it.
    pub event_source_id: String,
    /// 1 to 255 characters.
    pub name: String,
    /// The AdCP event types it sends (e.g. `purchase`, `lead`); empty or
    /// left out: any.
    pub event_types: Option<Vec<String>>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventSourceOut {
    pub event_source_id: String,
    pub advertiser_id: String,
    pub name: String,
    pub event_types: Vec<String>,
    pub created_by: i64,
    pub created_at: DateTime<Utc>,
}

impl From<event_source::Model> for EventSourceOut {
    fn from(r: event_source::Model) -> Self {
        EventSourceOut {
            event_source_id: r.event_source_id,
            advertiser_id: r.advertiser_id,
            name: r.name,
            event_types: serde_json::from_str(&r.event_types).unwrap_or_default(),
            created_by: r.created_by,
            created_at: r.created_at,
        }
    }
}

#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventSourceFilter {
    /// Only this advertiser's sources (404 when not the account's).
    pub advertiser_id: Option<String>,
}

fn source_id_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.' | b':'))
}

pub struct ListEventSources;

impl Operation for ListEventSources {
    const NAME: &'static str = "list_event_sources";
    const DESCRIPTION: &'static str = "The account's measurement event sources (where conversion events come from), oldest first; filter by advertiserId.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/measurement-engine/event-sources";
    const ERRORS: &'static [(u16, &'static str)] =
        &[(404, "advertiserId names no advertiser of the account")];
    type Path = Nothing;
    type Query = Filtered<EventSourceFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<EventSourceOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let account = caller.account_id();
        let mut select =
            event_source::Entity::find().filter(event_source::Column::AccountId.eq(account));
        if let Some(a) = &filter.advertiser_id {
            super::own_advertiser(&ctx.db, account, a).await?;
            select = select.filter(event_source::Column::AdvertiserId.eq(a.as_str()));
        }
        let select = select
            .order_by_asc(event_source::Column::CreatedAt)
            .order_by_asc(event_source::Column::Id);
        Ok(page.fetch(&ctx.db, select, EventSourceOut::from).await?)
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct CreateEventSource;

impl Operation for CreateEventSource {
    const NAME: &'static str = "create_event_source";
    const DESCRIPTION: &'static str = "Register an advertiser's event source (AdCP sync_event_sources): eventSourceId (the id campaign event goals name, unique per advertiser), name and the event types it sends. Conversion events are then synced with sync_conversion_events.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/measurement-engine/event-sources";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (404, "advertiserId names no advertiser of the account"),
        (
            409,
            "the advertiser already has an event source with this eventSourceId",
        ),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<EventSourceIn>;
    type Output = EventSourceOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<EventSourceOut, ApiError> {
        let b = input.body.0;
        let mut issues = Issues::default();
        if !source_id_ok(&b.event_source_id) {
            issues.add(
                "eventSourceId",
                "must be 1 to 64 of A-Z, a-z, 0-9, _, -, . and :",
            );
        }
        let name = b.name.trim().to_string();
        if name.is_empty() || name.chars().count() > 255 {
            issues.add("name", "must be 1 to 255 characters");
        }
        let mut types: Vec<String> = Vec::new();
        for (i, t) in b.event_types.iter().flatten().enumerate() {
            if !EVENT_TYPES.contains(&t.as_str()) {
                issues.add(
                    format!("eventTypes[{i}]"),
                    "must be an AdCP event type (purchase, lead, add_to_cart, ...)",
                );
            } else if !types.contains(t) {
                types.push(t.clone());
            }
        }
        issues.into_result()?;
        let account = caller.account_id();
        super::own_advertiser(&ctx.db, account, &b.advertiser_id).await?;
        if find_source(&ctx.db, account, &b.advertiser_id, &b.event_source_id)
            .await?
            .is_some()
        {
            return Err(ApiError::Conflict {
                message: format!(
                    "the advertiser already has the event source '{}'",
                    b.event_source_id
                ),
                details: Some(json!({"eventSourceId": b.event_source_id})),
            });
        }
        let row = event_source::ActiveModel {
            id: Set(uuid::Uuid::new_v4().to_string()),
            account_id: Set(account.to_string()),
            advertiser_id: Set(b.advertiser_id),
            event_source_id: Set(b.event_source_id),
            name: Set(name),
            event_types: Set(serde_json::to_string(&types).map_err(ApiError::internal)?),
            created_by: Set(caller.user.id),
            created_at: Set(Utc::now()),
        }
        .insert(&ctx.db)
        .await?;
        Ok(row.into())
    }
}

async fn find_source(
    db: &impl ConnectionTrait,
    account: &str,
    advertiser: &str,
    id: &str,
) -> Result<Option<event_source::Model>, ApiError> {
    Ok(event_source::Entity::find()
        .filter(event_source::Column::AccountId.eq(account))
        .filter(event_source::Column::AdvertiserId.eq(advertiser))
        .filter(event_source::Column::EventSourceId.eq(id))
        .one(db)
        .await?)
}

// ----------------------------------------------------------------- events

/// One conversion event (AdCP `log_event`'s event, without user data).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventIn {
    /// The advertiser's id of the event, 1 to 128 characters: the dedup
    /// key within the source (a re-sent id is skipped).
    pub event_id: String,
    /// An AdCP event type (`purchase`, `lead`, ...), among the source's.
    pub event_type: String,
    /// RFC 3339; at most 90 days old and 5 minutes ahead.
    pub event_time: String,
    /// The campaign credited; it needs an event goal naming this source.
    pub campaign_id: String,
    /// The media buy credited (e.g. the landing URL's `utm_media_buy`),
    /// one of the campaign's.
    pub media_buy_id: Option<String>,
    /// The conversion's value (0 or more).
    pub value: Option<f64>,
    /// ISO 4217; must be the advertiser's `primaryCurrency` (the default).
    pub currency: Option<String>,
    /// `website` (default), `app`, `offline`, `in_store`, `phone_call`,
    /// `chat`, `email`, `system_generated` or `other`.
    pub action_source: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EventBatchIn {
    pub advertiser_id: String,
    /// The source's `eventSourceId`.
    pub event_source_id: String,
    /// 1 to 500 events.
    pub events: Vec<EventIn>,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct EventBatchOut {
    pub event_source_id: String,
    /// Events in the batch.
    pub events_received: u64,
    /// Events stored by this call.
    pub events_recorded: u64,
    /// Events skipped: their eventId was already stored for this source,
    /// or came earlier in the batch.
    pub duplicates: u64,
}

pub struct SyncConversionEvents;

impl Operation for SyncConversionEvents {
    const NAME: &'static str = "sync_conversion_events";
    const DESCRIPTION: &'static str = "Sync a batch of 1 to 500 conversion events of one event source (AdCP log_event): each with eventId (dedup key: re-sent ids are skipped, so a batch may be retried), eventType, eventTime, campaignId (a campaign with an event goal naming the source), optional mediaBuyId, value, currency, actionSource. All or nothing: one invalid event and nothing is stored.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/measurement-engine/events";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "VALIDATION_ERROR (every bad event field with its path, e.g. events[3].eventTime), or CURRENCY_MISMATCH (a currency other than the advertiser's)",
        ),
        (
            404,
            "the advertiser, the event source or a campaign (details.missingCampaignIds) is not the account's",
        ),
        (
            422,
            "CAPABILITY_NOT_SUPPORTED: a campaign has no event goal naming this event source (details.campaignIds)",
        ),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<EventBatchIn>;
    type Output = EventBatchOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<EventBatchOut, ApiError> {
        sync(ctx, caller, input.body.0).await
    }
}

/// A checked event, ready to store.
struct Checked {
    time: DateTime<Utc>,
    action: String,
}

fn check_event(e: &EventIn, i: usize, now: DateTime<Utc>, issues: &mut Issues) -> Checked {
    let p = |f: &str| format!("events[{i}].{f}");
    if e.event_id.is_empty() || e.event_id.len() > 128 {
        issues.add(p("eventId"), "must be 1 to 128 characters");
    }
    if !EVENT_TYPES.contains(&e.event_type.as_str()) {
        issues.add(
            p("eventType"),
            "must be an AdCP event type (purchase, lead, add_to_cart, ...)",
        );
    }
    let time = match DateTime::parse_from_rfc3339(&e.event_time) {
        Ok(t) => {
            let t = t.with_timezone(&Utc);
            if t > now + Duration::minutes(MAX_FUTURE_MINUTES) {
                issues.add(p("eventTime"), "must not be in the future");
            } else if t < now - Duration::days(MAX_AGE_DAYS) {
                issues.add(
                    p("eventTime"),
                    format!("must be at most {MAX_AGE_DAYS} days old"),
                );
            }
            t
        }
        Err(_) => {
            issues.add(p("eventTime"), "must be an RFC 3339 date-time");
            now
        }
    };
    if e.campaign_id.is_empty() || e.campaign_id.len() > 64 {
        issues.add(p("campaignId"), "must be a campaign id (cmp_...)");
    }
    if e.media_buy_id
        .as_deref()
        .is_some_and(|b| b.is_empty() || b.len() > 64)
    {
        issues.add(p("mediaBuyId"), "must be a media buy id");
    }
    if let Some(v) = e.value
        && !(v.is_finite() && v >= 0.0)
    {
        issues.add(p("value"), "must be a number, 0 or more");
    }
    if let Some(c) = &e.currency
        && !(c.len() == 3 && c.bytes().all(|b| b.is_ascii_uppercase()))
    {
        issues.add(p("currency"), "must be an ISO 4217 code (e.g. EUR)");
    }
    let action = e.action_source.clone().unwrap_or_else(|| "website".into());
    if !ACTION_SOURCES.contains(&action.as_str()) {
        issues.add(
            p("actionSource"),
            format!("must be one of {}", ACTION_SOURCES.join(", ")),
        );
    }
    Checked { time, action }
}

/// Does the campaign have an event goal naming `source`?
pub fn has_event_goal(c: &campaign::Model, source: &str) -> bool {
    let Some(cfg) = c
        .performance_config
        .as_deref()
        .and_then(|s| serde_json::from_str::<Value>(s).ok())
    else {
        return false;
    };
    cfg.get("optimizationGoals")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|g| g.get("kind").and_then(Value::as_str) == Some("event"))
        .flat_map(|g| {
            g.get("eventSources")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        })
        .any(|s| s.get("eventSourceId").and_then(Value::as_str) == Some(source))
}

async fn sync(ctx: &Ctx, caller: &CallerInfo, b: EventBatchIn) -> Result<EventBatchOut, ApiError> {
    let now = Utc::now();
    let mut issues = Issues::default();
    if !source_id_ok(&b.event_source_id) {
        issues.add("eventSourceId", "must be an event source id");
    }
    if b.events.is_empty() || b.events.len() > MAX_BATCH {
        issues.add(
            "events",
            format!("must hold 1 to {MAX_BATCH} events (send more in further batches)"),
        );
    }
    let checked: Vec<Checked> = b
        .events
        .iter()
        .take(MAX_BATCH)
        .enumerate()
        .map(|(i, e)| check_event(e, i, now, &mut issues))
        .collect();
    issues.into_result()?;

    let account = caller.account_id();
    let advertiser = super::own_advertiser(&ctx.db, account, &b.advertiser_id).await?;
    let source = find_source(&ctx.db, account, &advertiser.id, &b.event_source_id)
        .await?
        .ok_or_else(|| ApiError::not_found("event source"))?;
    let allowed: Vec<String> = serde_json::from_str(&source.event_types).unwrap_or_default();

    // The campaigns and media buys credited: the account's, or 404.
    let wanted: Vec<String> = b
        .events
        .iter()
        .map(|e| e.campaign_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let campaigns: HashMap<String, campaign::Model> = campaign::Entity::find()
        .filter(campaign::Column::AccountId.eq(account))
        .filter(campaign::Column::Id.is_in(wanted.clone()))
        .all(&ctx.db)
        .await?
        .into_iter()
        .map(|c| (c.id.clone(), c))
        .collect();
    let mut missing: Vec<&String> = wanted
        .iter()
        .filter(|c| !campaigns.contains_key(*c))
        .collect();
    if !missing.is_empty() {
        missing.sort();
        return Err(ApiError::coded(
            Kind::NotFound,
            "NOT_FOUND",
            "campaign not found",
            json!({"missingCampaignIds": missing}),
        ));
    }
    let buy_ids: Vec<String> = b
        .events
        .iter()
        .filter_map(|e| e.media_buy_id.clone())
        .collect::<HashSet<_>>()
        .into_iter()
        .collect();
    let buys: HashMap<String, String> = if buy_ids.is_empty() {
        HashMap::new()
    } else {
        media_buy::Entity::find()
            .filter(media_buy::Column::AccountId.eq(account))
            .filter(media_buy::Column::Id.is_in(buy_ids))
            .all(&ctx.db)
            .await?
            .into_iter()
            .map(|m| (m.id, m.campaign_id))
            .collect()
    };
    let mut issues = Issues::default();
    for (i, e) in b.events.iter().enumerate() {
        if !allowed.is_empty() && !allowed.contains(&e.event_type) {
            issues.add(
                format!("events[{i}].eventType"),
                format!(
                    "is not among the event source's types ({})",
                    allowed.join(", ")
                ),
            );
        }
        if campaigns
            .get(&e.campaign_id)
            .is_some_and(|c| c.advertiser_id != advertiser.id)
        {
            issues.add(
                format!("events[{i}].campaignId"),
                "is a campaign of another advertiser",
            );
        }
        if let Some(m) = &e.media_buy_id
            && buys.get(m) != Some(&e.campaign_id)
        {
            issues.add(
                format!("events[{i}].mediaBuyId"),
                "is not a media buy of the event's campaign",
            );
        }
    }
    issues.into_result()?;
    let mut without: Vec<&String> = campaigns
        .values()
        .filter(|c| !has_event_goal(c, &source.event_source_id))
        .map(|c| &c.id)
        .collect();
    if !without.is_empty() {
        without.sort();
        return Err(ApiError::coded(
            Kind::Unprocessable,
            "CAPABILITY_NOT_SUPPORTED",
            format!(
                "measurement data is only for campaigns with an event goal naming the event source '{}' (performanceConfig.optimizationGoals[].eventSources)",
                source.event_source_id
            ),
            json!({"reason": "no_event_goal", "campaignIds": without, "eventSourceId": source.event_source_id}),
        ));
    }
    for (i, e) in b.events.iter().enumerate() {
        if let Some(c) = &e.currency
            && *c != advertiser.primary_currency
        {
            return Err(ApiError::Coded {
                kind: Kind::Invalid,
                code: "CURRENCY_MISMATCH",
                message: format!(
                    "events[{i}].currency: must be the advertiser's currency, {}",
                    advertiser.primary_currency
                ),
                field: Some(format!("events[{i}].currency")),
                details: Some(json!({"expected": advertiser.primary_currency, "received": c})),
            });
        }
    }

    // Store: the first of each event id in the batch; ids already stored
    // are skipped by the unique index.
    let tz: Tz = advertiser
        .preferred_timezone
        .as_deref()
        .and_then(|t| t.parse().ok())
        .unwrap_or(Tz::UTC);
    let mut seen = HashSet::new();
    let rows: Vec<conversion_event::ActiveModel> = b
        .events
        .iter()
        .zip(checked)
        .filter(|(e, _)| seen.insert(e.event_id.clone()))
        .map(|(e, c)| conversion_event::ActiveModel {
            account_id: Set(account.to_string()),
            advertiser_id: Set(advertiser.id.clone()),
            event_source_id: Set(source.event_source_id.clone()),
            event_id: Set(e.event_id.clone()),
            event_type: Set(e.event_type.clone()),
            event_time: Set(c.time),
            date: Set(c.time.with_timezone(&tz).date_naive().to_string()),
            campaign_id: Set(e.campaign_id.clone()),
            media_buy_id: Set(e.media_buy_id.clone()),
            value: Set(e.value),
            currency: Set(advertiser.primary_currency.clone()),
            action_source: Set(c.action),
            received_at: Set(now),
            ..Default::default()
        })
        .collect();
    let received = b.events.len() as u64;
    let mut recorded = 0u64;
    {
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            let chunk: Vec<_> = rows.by_ref().take(CHUNK).collect();
            recorded += conversion_event::Entity::insert_many(chunk)
                .on_conflict(
                    OnConflict::columns([
                        conversion_event::Column::AdvertiserId,
                        conversion_event::Column::EventSourceId,
                        conversion_event::Column::EventId,
                    ])
                    .do_nothing()
                    .to_owned(),
                )
                .exec_without_returning(&txn)
                .await?;
        }
        txn.commit().await?;
    }
    Ok(EventBatchOut {
        event_source_id: source.event_source_id,
        events_received: received,
        events_recorded: recorded,
        duplicates: received.saturating_sub(recorded),
    })
}

// ------------------------------------------------------------ conversions

#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversionsFilter {
    /// Only this advertiser's conversions (404 when not the account's).
    pub advertiser_id: Option<String>,
    /// Only this campaign's (404 when not the account's).
    pub campaign_id: Option<String>,
    /// Only this event source's.
    pub event_source_id: Option<String>,
    /// Only this AdCP event type.
    pub event_type: Option<String>,
    /// First day, `YYYY-MM-DD`, the advertiser's date (inclusive).
    pub start_date: Option<String>,
    /// Last day, `YYYY-MM-DD` (inclusive).
    pub end_date: Option<String>,
}

/// Conversions of one day, event source, campaign and event type.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ConversionRow {
    /// The advertiser's date of the events (its `preferredTimezone` when
    /// they were synced; UTC when unset).
    pub date: String,
    pub advertiser_id: String,
    pub event_source_id: String,
    pub campaign_id: String,
    pub event_type: String,
    pub conversions: u64,
    /// Summed values (events without a value count 0).
    pub value: f64,
    pub currency: String,
}

pub struct ListConversions;

impl Operation for ListConversions {
    const NAME: &'static str = "list_conversions";
    const DESCRIPTION: &'static str = "Conversions synced to the measurement engine, counted and valued per day, event source, campaign and event type (oldest day first); filter by advertiserId, campaignId, eventSourceId, eventType and startDate/endDate.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/measurement-engine/conversions";
    const ERRORS: &'static [(u16, &'static str)] = &[(
        404,
        "advertiserId or campaignId names no advertiser or campaign of the account",
    )];
    type Path = Nothing;
    type Query = Filtered<ConversionsFilter, 50, 200>;
    type Body = Nothing;
    type Output = Paged<ConversionRow>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let rows = conversions(&ctx.db, caller.account_id(), &filter).await?;
        let pagination = page.of(rows.len() as u64);
        let items = rows
            .into_iter()
            .skip(usize::try_from(page.skip).unwrap_or(usize::MAX))
            .take(usize::try_from(page.take).unwrap_or(usize::MAX))
            .collect();
        Ok(Paged { items, pagination })
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

fn date(field: &str, v: &Option<String>) -> Result<Option<chrono::NaiveDate>, ApiError> {
    v.as_deref()
        .map(|s| {
            chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map_err(|_| ApiError::invalid(field, "must be a date, YYYY-MM-DD"))
        })
        .transpose()
}

async fn conversions(
    db: &impl ConnectionTrait,
    account: &str,
    f: &ConversionsFilter,
) -> Result<Vec<ConversionRow>, ApiError> {
    let start = date("startDate", &f.start_date)?;
    let end = date("endDate", &f.end_date)?;
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        return Err(ApiError::invalid("endDate", "must not be before startDate"));
    }
    if let Some(t) = &f.event_type
        && !EVENT_TYPES.contains(&t.as_str())
    {
        return Err(ApiError::invalid("eventType", "must be an AdCP event type"));
    }
    if !super::scope(
        db,
        account,
        f.advertiser_id.as_deref(),
        f.campaign_id.as_deref(),
    )
    .await?
    {
        return Ok(Vec::new());
    }
    let t = Alias::new("conversion_events");
    let col = |c: &str| Expr::col((t.clone(), Alias::new(c)));
    let keys = [
        "date",
        "advertiser_id",
        "event_source_id",
        "campaign_id",
        "event_type",
        "currency",
    ];
    let mut q = Query::select();
    q.from(t.clone());
    for k in keys {
        q.column((t.clone(), Alias::new(k)));
        q.add_group_by([col(k)]);
    }
    q.expr_as(
        Expr::expr(Func::count(col("id"))).cast_as(Alias::new("BIGINT")),
        Alias::new("conversions"),
    )
    .expr_as(Func::sum(col("value")), Alias::new("value"))
    .and_where(col("account_id").eq(account));
    if let Some(a) = &f.advertiser_id {
        q.and_where(col("advertiser_id").eq(a.as_str()));
    }
    if let Some(c) = &f.campaign_id {
        q.and_where(col("campaign_id").eq(c.as_str()));
    }
    if let Some(s) = &f.event_source_id {
        q.and_where(col("event_source_id").eq(s.as_str()));
    }
    if let Some(e) = &f.event_type {
        q.and_where(col("event_type").eq(e.as_str()));
    }
    if let Some(s) = start {
        q.and_where(col("date").gte(s.to_string()));
    }
    if let Some(e) = end {
        q.and_where(col("date").lte(e.to_string()));
    }
    let stmt = db.get_database_backend().build(&q);
    let mut out = Vec::new();
    for r in db.query_all_raw(stmt).await? {
        out.push(ConversionRow {
            date: r.try_get("", "date")?,
            advertiser_id: r.try_get("", "advertiser_id")?,
            event_source_id: r.try_get("", "event_source_id")?,
            campaign_id: r.try_get("", "campaign_id")?,
            event_type: r.try_get("", "event_type")?,
            conversions: u64::try_from(r.try_get::<Option<i64>>("", "conversions")?.unwrap_or(0))
                .unwrap_or(0),
            value: money(r.try_get::<Option<f64>>("", "value")?.unwrap_or(0.0)),
            currency: r.try_get("", "currency")?,
        });
    }
    // Oldest day first, then source, campaign and type (one row per group).
    out.sort_by(|a, b| {
        (
            &a.date,
            &a.event_source_id,
            &a.campaign_id,
            &a.event_type,
            &a.advertiser_id,
            &a.currency,
        )
            .cmp(&(
                &b.date,
                &b.event_source_id,
                &b.campaign_id,
                &b.event_type,
                &b.advertiser_id,
                &b.currency,
            ))
    });
    Ok(out)
}
