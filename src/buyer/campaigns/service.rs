//! Campaign operations: create (DRAFT), get, list, update and the status
//! transitions, each writing the audit log in its own transaction, and
//! [`save`], several of them in one.

use std::collections::BTreeSet;

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait,
    IntoActiveModel, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{advertiser, campaign, catalog, discovery_session, storefront};

use super::model::{
    self, Budget, CampaignEnvelope, CampaignIn, CampaignOut, FlightDates, Transition,
};
use super::targeting;
use crate::buyer::audit;
use crate::buyer::{from_json, to_json};
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues, Kind};
use crate::ops::{Ctx, Page, Paged};

/// The wire record; `names` adds the metro names (`fields=geo_metro_names`).
pub fn out(row: campaign::Model, names: bool) -> CampaignOut {
    let constraints: Value = serde_json::from_str(&row.constraints).unwrap_or_else(|_| json!({}));
    let effective = targeting::effective(&constraints);
    let (metro_names, metro_names_exclude) = if names {
        (
            Some(targeting::metro_names(&constraints, "geo_metros")),
            Some(targeting::metro_names(&constraints, "geo_metros_exclude")),
        )
    } else {
        (None, None)
    };
    let budget: Budget = serde_json::from_str(&row.budget).unwrap_or(Budget {
        total: 0.0,
        currency: String::new(),
        daily_cap: None,
        pacing: "even".into(),
    });
    CampaignOut {
        campaign_id: row.id,
        advertiser_id: row.advertiser_id,
        name: row.name,
        status: row.status,
        flight_dates: FlightDates {
            start_date: row.start_date,
            end_date: row.end_date,
        },
        budget,
        brief: row.brief,
        discovery_id: row.discovery_id,
        storefront_ids: from_json(&row.storefront_ids),
        autonomy: from_json(&row.autonomy),
        performance_config: row
            .performance_config
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok()),
        constraints,
        effective_targeting: effective,
        catalog_id: row.catalog_id,
        utm_config: row.utm_config.as_deref().map(from_json).unwrap_or_default(),
        geo_metro_names: metro_names,
        geo_metro_names_exclude: metro_names_exclude,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// The caller's campaign, or 404 (another account's is never visible).
pub async fn load(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<campaign::Model, ApiError> {
    let id = model::campaign_id(id)?;
    campaign::Entity::find_by_id(id)
        .filter(campaign::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("campaign"))
}

/// The caller's advertiser; `lock` takes its row lock (PostgreSQL) so the
/// currency and brand checks of `update_advertiser` see this campaign.
async fn advertiser_of(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
    lock: bool,
) -> Result<advertiser::Model, ApiError> {
    let mut q = advertiser::Entity::find_by_id(id)
        .filter(advertiser::Column::AccountId.eq(caller.account_id()));
    if lock {
        q = q.lock_exclusive();
    }
    q.one(db).await?.ok_or_else(|| ApiError::Coded {
        kind: Kind::NotFound,
        code: "NOT_FOUND",
        message: "advertiser not found".into(),
        field: Some("advertiserId".into()),
        details: None,
    })
}

fn mismatch(sent: &str, currency: &str) -> ApiError {
    ApiError::Coded {
        kind: Kind::Invalid,
        code: "CURRENCY_MISMATCH",
        message: format!(
            "budget currency {sent} differs from the advertiser's currency {currency}"
        ),
        field: Some("budget.currency".into()),
        details: Some(json!({ "sent": sent, "advertiserCurrency": currency })),
    }
}

/// Storefronts must exist (they are shared by every account).
async fn check_storefronts(
    db: &impl ConnectionTrait,
    ids: &[i64],
    issues: &mut Issues,
) -> Result<(), ApiError> {
    if ids.is_empty() {
        return Ok(());
    }
    let known: BTreeSet<i64> = storefront::Entity::find()
        .filter(storefront::Column::Id.is_in(ids.iter().copied()))
        .all(db)
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    for (i, id) in ids.iter().enumerate() {
        if *id > 0 && !known.contains(id) {
            issues.add(format!("storefrontIds[{i}]"), "no storefront with this id");
        }
    }
    Ok(())
}

/// A discovery session of the caller's account for this advertiser.
async fn check_discovery(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser_id: Option<&str>,
    id: &str,
    issues: &mut Issues,
) -> Result<(), ApiError> {
    let session = discovery_session::Entity::find_by_id(id)
        .filter(discovery_session::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?;
    match session {
        None => issues.add(
            "discoveryId",
            "no discovery session of this account with this id",
        ),
        Some(s) if advertiser_id.is_some_and(|a| a != s.advertiser_id) => issues.add(
            "discoveryId",
            "the discovery session belongs to another advertiser",
        ),
        Some(_) => {}
    }
    Ok(())
}

/// A catalog of the campaign's advertiser.
async fn check_catalog(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser_id: Option<&str>,
    id: &str,
    issues: &mut Issues,
) -> Result<(), ApiError> {
    let mut q =
        catalog::Entity::find_by_id(id).filter(catalog::Column::AccountId.eq(caller.account_id()));
    if let Some(a) = advertiser_id {
        q = q.filter(catalog::Column::AdvertiserId.eq(a));
    }
    if q.one(db).await?.is_none() {
        issues.add("catalogId", "no catalog of this advertiser with this id");
    }
    Ok(())
}

/// Fields common to create and update, validated; `None` where not sent.
struct Parsed {
    name: Option<String>,
    brief: Option<Option<String>>,
    discovery_id: Option<Option<String>>,
    storefront_ids: Option<Vec<i64>>,
    autonomy: Option<model::Autonomy>,
    performance_config: Option<Option<Value>>,
    constraints: Option<Value>,
    catalog_id: Option<Option<String>>,
    utm_config: Option<Vec<crate::buyer::advertisers::model::UtmParam>>,
    sent_currency: Option<String>,
}

fn parse(body: &mut CampaignIn, issues: &mut Issues) -> Parsed {
    model::no_root_dates(body, issues);
    let sent_currency = body
        .budget
        .as_mut()
        .and_then(|b| b.currency.take())
        .and_then(|c| model::budget_currency(&c, issues));
    Parsed {
        name: body.name.take().map(|n| model::name(&n, issues)),
        brief: body.brief.take().map(|b| model::brief(b, issues)),
        discovery_id: body.discovery_id.take(),
        storefront_ids: body
            .storefront_ids
            .take()
            .map(|s| model::storefront_ids(s, issues)),
        autonomy: body.autonomy.take().map(|a| model::autonomy(a, issues)),
        performance_config: body
            .performance_config
            .take()
            .map(|p| p.map(|v| model::performance_config(v, issues))),
        constraints: body
            .constraints
            .take()
            .map(|c| targeting::constraints(&c, issues)),
        catalog_id: body.catalog_id.take(),
        utm_config: body
            .utm_config
            .take()
            .map(|u| crate::buyer::advertisers::model::utm_config(u, issues)),
        sent_currency,
    }
}

/// Checks the references (storefronts, discovery session, catalog).
async fn check_references(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser_id: Option<&str>,
    p: &Parsed,
    issues: &mut Issues,
) -> Result<(), ApiError> {
    if let Some(ids) = &p.storefront_ids {
        check_storefronts(db, ids, issues).await?;
    }
    if let Some(Some(id)) = &p.discovery_id {
        check_discovery(db, caller, advertiser_id, id, issues).await?;
    }
    if let Some(Some(id)) = &p.catalog_id {
        check_catalog(db, caller, advertiser_id, id, issues).await?;
    }
    Ok(())
}

pub async fn create_campaign(
    ctx: &Ctx,
    caller: &CallerInfo,
    body: CampaignIn,
) -> Result<CampaignEnvelope, ApiError> {
    let new = check_new(&ctx.db, caller, body).await?;
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let created = insert(&txn, caller, new).await?;
    txn.commit().await?;
    Ok(created)
}

/// Creates a DRAFT campaign inside `txn` (the cart of `create_media_buys`
/// with `campaign.create`): the same checks and audit entry as
/// [`create_campaign`].
pub async fn create_in(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    body: CampaignIn,
) -> Result<CampaignEnvelope, ApiError> {
    let new = check_new(txn, caller, body).await?;
    insert(txn, caller, new).await
}

/// A status change inside `txn` (with its audit entry).
pub async fn transition_in(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    id: &str,
    t: Transition,
) -> Result<CampaignEnvelope, ApiError> {
    let id = model::campaign_id(id)?;
    apply_transition(txn, caller, &id, t).await
}

/// A new campaign's validated fields.
struct NewCampaign {
    advertiser_id: String,
    flight: FlightDates,
    budget: Budget,
    p: Parsed,
}

/// Validates a new campaign (every problem at once).
async fn check_new(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    mut body: CampaignIn,
) -> Result<NewCampaign, ApiError> {
    let mut issues = Issues::default();
    let advertiser_id = match body.advertiser_id.take() {
        None => {
            issues.add("advertiserId", "is required");
            None
        }
        Some(raw) => match crate::buyer::advertisers::model::advertiser_id(&raw) {
            Ok(id) => Some(id),
            Err(_) => {
                issues.add("advertiserId", "must be an advertiser id (a UUID)");
                None
            }
        },
    };
    if body.name.is_none() {
        issues.add("name", "is required");
    }
    let flight = match body.flight_dates.take() {
        Some(f) => model::flight_dates(f, None, &mut issues),
        None => {
            issues.add("flightDates", "is required (startDate and endDate)");
            None
        }
    };
    let p = parse(&mut body, &mut issues);
    let budget_in = body.budget.take();
    let budget = match budget_in {
        Some(b) => Some(model::budget(b, None, &mut issues)),
        None => {
            issues.add("budget", "is required (total, optional currency)");
            None
        }
    };
    check_references(db, caller, advertiser_id.as_deref(), &p, &mut issues).await?;
    issues.into_result()?;
    let (Some(advertiser_id), Some(flight), Some(budget)) = (advertiser_id, flight, budget) else {
        return Err(ApiError::invalid("", "incomplete campaign"));
    };
    Ok(NewCampaign {
        advertiser_id,
        flight,
        budget,
        p,
    })
}

/// Inserts a checked campaign as a DRAFT, with its audit entry.
async fn insert(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    new: NewCampaign,
) -> Result<CampaignEnvelope, ApiError> {
    let NewCampaign {
        advertiser_id,
        flight,
        mut budget,
        mut p,
    } = new;
    let adv = advertiser_of(txn, caller, &advertiser_id, true).await?;
    crate::buyer::advertisers::service::refuse_archived(&adv, "campaigns")?;
    if let Some(sent) = &p.sent_currency
        && *sent != adv.primary_currency
    {
        return Err(mismatch(sent, &adv.primary_currency));
    }
    budget.currency = adv.primary_currency.clone();
    let now = Utc::now();
    let id = model::new_id();
    let row = campaign::ActiveModel {
        id: Set(id.clone()),
        account_id: Set(caller.account_id().to_string()),
        advertiser_id: Set(advertiser_id),
        name: Set(p.name.take().unwrap_or_default()),
        status: Set("DRAFT".into()),
        archived_from: Set(None),
        start_date: Set(flight.start_date),
        end_date: Set(flight.end_date),
        budget: Set(to_json(&budget)),
        brief: Set(p.brief.take().flatten()),
        discovery_id: Set(p.discovery_id.take().flatten()),
        storefront_ids: Set(to_json(&p.storefront_ids.take().unwrap_or_default())),
        autonomy: Set(to_json(&p.autonomy.take().unwrap_or_default())),
        performance_config: Set(p.performance_config.take().flatten().map(|v| to_json(&v))),
        constraints: Set(to_json(&p.constraints.take().unwrap_or_else(|| json!({})))),
        catalog_id: Set(p.catalog_id.take().flatten()),
        utm_config: Set(p
            .utm_config
            .take()
            .filter(|u| !u.is_empty())
            .map(|u| to_json(&u))),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(txn)
    .await?;
    let created = out(row, false);
    let after = serde_json::to_value(&created).map_err(ApiError::internal)?;
    audit::record(
        txn,
        caller,
        "campaign.created",
        "campaign",
        &id,
        audit::diff(&Value::Null, &after),
    )
    .await?;
    Ok(CampaignEnvelope { campaign: created })
}

pub async fn get_campaign(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    names: bool,
) -> Result<CampaignEnvelope, ApiError> {
    let row = load(&ctx.db, caller, id).await?;
    Ok(CampaignEnvelope {
        campaign: out(row, names),
    })
}

/// The caller's campaigns, newest first, optionally of one advertiser and
/// one status.
pub async fn list_campaigns(
    ctx: &Ctx,
    caller: &CallerInfo,
    page: Page<20, 100>,
    advertiser_id: Option<String>,
    status: Option<String>,
    names: bool,
) -> Result<Paged<CampaignOut>, ApiError> {
    let mut query =
        campaign::Entity::find().filter(campaign::Column::AccountId.eq(caller.account_id()));
    if let Some(a) = advertiser_id {
        query = query.filter(campaign::Column::AdvertiserId.eq(a));
    }
    if let Some(s) = status {
        query = query.filter(campaign::Column::Status.eq(s));
    }
    let total = query.clone().count(&ctx.db).await?;
    let rows = query
        .order_by_desc(campaign::Column::CreatedAt)
        .order_by_desc(campaign::Column::Id)
        .offset(page.skip)
        .limit(page.take)
        .all(&ctx.db)
        .await?;
    Ok(Paged {
        items: rows.into_iter().map(|r| out(r, names)).collect(),
        pagination: page.of(total),
    })
}

/// Where a campaign's fields may no longer change.
fn frozen(status: &str) -> Option<ApiError> {
    matches!(status, "ARCHIVED" | "COMPLETED").then(|| ApiError::Conflict {
        message: format!("a {status} campaign cannot be changed (restore it first if archived)"),
        details: Some(json!({ "reason": "illegal_state", "status": status })),
    })
}

pub async fn update_campaign(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    body: CampaignIn,
) -> Result<CampaignEnvelope, ApiError> {
    let change = check_change(&ctx.db, caller, id, body).await?;
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let updated = apply_change(&txn, caller, change).await?;
    txn.commit().await?;
    Ok(updated)
}

/// A checked change of a campaign's fields.
struct Change {
    seen: campaign::Model,
    flight: Option<Option<FlightDates>>,
    budget: Option<Budget>,
    p: Parsed,
}

/// Validates a change of campaign `id` (every problem at once).
async fn check_change(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
    mut body: CampaignIn,
) -> Result<Change, ApiError> {
    let seen = load(db, caller, id).await?;
    let mut issues = Issues::default();
    if let Some(raw) = body.advertiser_id.take()
        && crate::buyer::advertisers::model::advertiser_id(&raw).ok()
            != Some(seen.advertiser_id.clone())
    {
        issues.add(
            "advertiserId",
            "a campaign cannot move to another advertiser",
        );
    }
    let flight_in = body.flight_dates.take();
    let p = parse(&mut body, &mut issues);
    let budget_in = body.budget.take();
    check_references(db, caller, Some(&seen.advertiser_id), &p, &mut issues).await?;
    let seen_flight = FlightDates {
        start_date: seen.start_date,
        end_date: seen.end_date,
    };
    let flight = flight_in.map(|f| model::flight_dates(f, Some(&seen_flight), &mut issues));
    let seen_budget: Option<Budget> = serde_json::from_str(&seen.budget).ok();
    let budget = budget_in.map(|b| model::budget(b, seen_budget.as_ref(), &mut issues));
    issues.into_result()?;
    Ok(Change {
        seen,
        flight,
        budget,
        p,
    })
}

/// A new budget must still hold the campaign's media buys that spend (409
/// `INSUFFICIENT_MEDIA_BUDGET`), and cannot change while a buy's fee terms
/// are unknown (an auction buy without a bid: 409 `PRICING_NOT_CONFIGURED`
/// with `details.unpricedBuyIds`).
async fn check_buys_allow(
    txn: &DatabaseTransaction,
    campaign_id: &str,
    budget: &Budget,
) -> Result<(), ApiError> {
    use entity::media_buy;
    let buys: Vec<(String, f64, bool)> = media_buy::Entity::find()
        .select_only()
        .column(media_buy::Column::Id)
        .column(media_buy::Column::Budget)
        .column(media_buy::Column::Priced)
        .filter(media_buy::Column::CampaignId.eq(campaign_id))
        .filter(media_buy::Column::Status.is_not_in(["failed", "rejected", "canceled"]))
        .into_tuple()
        .all(txn)
        .await?;
    let unpriced: Vec<&str> = buys
        .iter()
        .filter(|(_, _, priced)| !priced)
        .map(|(id, _, _)| id.as_str())
        .collect();
    if !unpriced.is_empty() {
        return Err(ApiError::coded(
            Kind::Conflict,
            "PRICING_NOT_CONFIGURED",
            "the campaign has media buys whose fee terms are unknown (auction buys without a bid): set their bids before changing the budget",
            json!({ "unpricedBuyIds": unpriced }),
        ));
    }
    let spent: f64 = buys.iter().map(|(_, b, _)| b).sum();
    if spent > budget.total + 1e-9 {
        return Err(ApiError::coded(
            Kind::Conflict,
            "INSUFFICIENT_MEDIA_BUDGET",
            format!(
                "the campaign's media buys total {spent} {}; the budget cannot go below that",
                budget.currency
            ),
            json!({
                "campaignBudget": budget.total,
                "mediaBuysTotal": spent,
                "currency": budget.currency,
                "shortfall": spent - budget.total,
            }),
        ));
    }
    Ok(())
}

/// Writes a checked change, with its audit entry; archived and completed
/// campaigns are frozen.
async fn apply_change(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    change: Change,
) -> Result<CampaignEnvelope, ApiError> {
    let Change {
        seen,
        flight,
        budget,
        mut p,
    } = change;
    let adv = advertiser_of(txn, caller, &seen.advertiser_id, true).await?;
    let current = campaign::Entity::find_by_id(seen.id.clone())
        .filter(campaign::Column::AccountId.eq(caller.account_id()))
        .lock_exclusive()
        .one(txn)
        .await?
        .ok_or_else(|| ApiError::not_found("campaign"))?;
    if let Some(e) = frozen(&current.status) {
        return Err(e);
    }
    if let Some(sent) = &p.sent_currency
        && *sent != adv.primary_currency
    {
        return Err(mismatch(sent, &adv.primary_currency));
    }
    let before = serde_json::to_value(out(current.clone(), false)).map_err(ApiError::internal)?;
    let mut row = current.into_active_model();
    if let Some(v) = p.name.take() {
        row.name = Set(v);
    }
    if let Some(Some(f)) = flight {
        row.start_date = Set(f.start_date);
        row.end_date = Set(f.end_date);
    }
    if let Some(mut b) = budget {
        b.currency = adv.primary_currency.clone();
        check_buys_allow(txn, &seen.id, &b).await?;
        row.budget = Set(to_json(&b));
    }
    if let Some(v) = p.brief.take() {
        row.brief = Set(v);
    }
    if let Some(v) = p.discovery_id.take() {
        row.discovery_id = Set(v);
    }
    if let Some(v) = p.storefront_ids.take() {
        row.storefront_ids = Set(to_json(&v));
    }
    if let Some(v) = p.autonomy.take() {
        row.autonomy = Set(to_json(&v));
    }
    if let Some(v) = p.performance_config.take() {
        row.performance_config = Set(v.map(|v| to_json(&v)));
    }
    if let Some(v) = p.constraints.take() {
        row.constraints = Set(to_json(&v));
    }
    if let Some(v) = p.catalog_id.take() {
        row.catalog_id = Set(v);
    }
    if let Some(v) = p.utm_config.take() {
        row.utm_config = Set((!v.is_empty()).then(|| to_json(&v)));
    }
    row.updated_at = Set(Utc::now());
    let row = row.update(txn).await?;
    let updated = out(row, false);
    let after = serde_json::to_value(&updated).map_err(ApiError::internal)?;
    audit::record(
        txn,
        caller,
        "campaign.updated",
        "campaign",
        &updated.campaign_id,
        audit::diff(&before, &after),
    )
    .await?;
    Ok(CampaignEnvelope { campaign: updated })
}

/// Pause, resume, archive or restore. A repeat is a no-op (no audit row);
/// an illegal change is 409 CONFLICT.
pub async fn transition(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    t: Transition,
) -> Result<CampaignEnvelope, ApiError> {
    let id = model::campaign_id(id)?;
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let changed = apply_transition(&txn, caller, &id, t).await?;
    txn.commit().await?;
    Ok(changed)
}

/// Applies a status change (with its audit entry) in `txn`.
async fn apply_transition(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    id: &str,
    t: Transition,
) -> Result<CampaignEnvelope, ApiError> {
    let current = campaign::Entity::find_by_id(id)
        .filter(campaign::Column::AccountId.eq(caller.account_id()))
        .lock_exclusive()
        .one(txn)
        .await?
        .ok_or_else(|| ApiError::not_found("campaign"))?;
    let next = t
        .apply(&current.status, current.archived_from.as_deref())
        .map_err(|message| ApiError::Conflict {
            message,
            details: Some(json!({
                "reason": "illegal_transition",
                "status": current.status,
                "transition": t.name(),
            })),
        })?;
    let Some((status, archived_from)) = next else {
        return Ok(CampaignEnvelope {
            campaign: out(current, false),
        });
    };
    let before = serde_json::to_value(out(current.clone(), false)).map_err(ApiError::internal)?;
    let mut row = current.into_active_model();
    row.status = Set(status);
    row.archived_from = Set(archived_from);
    row.updated_at = Set(Utc::now());
    let row = row.update(txn).await?;
    let changed = out(row, false);
    let after = serde_json::to_value(&changed).map_err(ApiError::internal)?;
    audit::record(
        txn,
        caller,
        t.action(),
        "campaign",
        id,
        audit::diff(&before, &after),
    )
    .await?;
    Ok(CampaignEnvelope { campaign: changed })
}

/// How many campaigns an advertiser has (the advertiser lock).
pub async fn count_for_advertiser(
    db: &impl ConnectionTrait,
    advertiser_id: &str,
) -> Result<u64, ApiError> {
    Ok(campaign::Entity::find()
        .filter(campaign::Column::AdvertiserId.eq(advertiser_id))
        .count(db)
        .await?)
}

/// Changes that [`save`] makes together, in this order: a restore (an
/// archived campaign is frozen), the fields, a pause or resume, an archive.
#[derive(Debug, Default)]
pub struct Save {
    /// The campaign to change; `None` creates one from `fields`.
    pub campaign_id: Option<String>,
    pub fields: Option<CampaignIn>,
    pub restore: bool,
    /// `Some(true)` pauses, `Some(false)` resumes.
    pub pause: Option<bool>,
    pub archive: bool,
}

/// Applies a [`Save`] in one transaction, audit entries included: every
/// step, or none (a step that fails leaves the campaign as it was).
pub async fn save(
    ctx: &Ctx,
    caller: &CallerInfo,
    save: Save,
) -> Result<CampaignEnvelope, ApiError> {
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let mut last = None;
    let id = match save.campaign_id {
        None => {
            let new = check_new(&txn, caller, save.fields.unwrap_or_default()).await?;
            let created = insert(&txn, caller, new).await?;
            let id = created.campaign.campaign_id.clone();
            last = Some(created);
            id
        }
        Some(id) => {
            let seen = load(&txn, caller, &id).await?;
            // The advertiser's lock before the campaign's, the order
            // `update_campaign` takes them in.
            advertiser_of(&txn, caller, &seen.advertiser_id, true).await?;
            if save.restore {
                last = Some(apply_transition(&txn, caller, &seen.id, Transition::Restore).await?);
            }
            if let Some(fields) = save.fields {
                let change = check_change(&txn, caller, &seen.id, fields).await?;
                last = Some(apply_change(&txn, caller, change).await?);
            }
            seen.id
        }
    };
    let step = |t| apply_transition(&txn, caller, &id, t);
    match save.pause {
        Some(true) => last = Some(step(Transition::Pause).await?),
        Some(false) => last = Some(step(Transition::Resume).await?),
        None => {}
    }
    if save.archive {
        last = Some(step(Transition::Archive).await?);
    }
    let saved = match last {
        Some(saved) => saved,
        None => CampaignEnvelope {
            campaign: out(load(&txn, caller, &id).await?, false),
        },
    };
    txn.commit().await?;
    Ok(saved)
}
