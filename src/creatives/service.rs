//! Creatives: the library (create, get, list, update) and assignments to
//! media buys, every query scoped to the caller's account (another
//! account's creative is a 404), each change with its audit entry.

use std::collections::HashMap;

use chrono::Utc;
use sea_orm::sea_query::Query;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{advertiser, creative, creative_assignment as assignment, media_buy};

use super::model::{
    self, ACTIVE, AssignIn, AssignmentOut, CreativeEnvelope, CreativeIn, CreativeOut,
    CreativePatch, CreativesFilter, FormatId, OUTDATED, PENDING, SYNCED,
};
use crate::buyer::audit;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues, Kind};
use crate::media_buys::package::package_id;
use crate::ops::{Ctx, Page, Paged};

/// Media-buy statuses a creative cannot be assigned to.
const ENDED: &[&str] = &["failed", "rejected", "canceled", "completed"];

fn assignment_out(a: assignment::Model, revision: i64) -> AssignmentOut {
    let sync_status = if a.sync_status == SYNCED && a.synced_revision != Some(revision) {
        OUTDATED.to_string()
    } else {
        a.sync_status
    };
    AssignmentOut {
        package_id: package_id(&a.media_buy_id),
        media_buy_id: a.media_buy_id,
        campaign_id: a.campaign_id,
        storefront_id: a.storefront_id,
        weight: a.weight,
        adcp_creative_id: a.adcp_creative_id,
        click_url: a.click_url,
        sync_status,
        action: a.action,
        review_status: a.review_status,
        errors: serde_json::from_str(&a.errors).unwrap_or_else(|_| json!([])),
        synced_at: a.synced_at,
    }
}

fn creative_out(c: creative::Model, assignments: Vec<assignment::Model>) -> CreativeOut {
    let format: FormatId = serde_json::from_str(&c.format).unwrap_or(FormatId {
        agent_url: String::new(),
        id: String::new(),
        width: None,
        height: None,
        duration_ms: None,
    });
    let revision = c.revision;
    CreativeOut {
        creative_id: c.id,
        advertiser_id: c.advertiser_id,
        name: c.name,
        format_id: format,
        assets: serde_json::from_str(&c.assets).unwrap_or_else(|_| json!({})),
        click_url: c.click_url,
        status: c.status,
        revision,
        assignments: assignments
            .into_iter()
            .map(|a| assignment_out(a, revision))
            .collect(),
        created_at: c.created_at,
        updated_at: c.updated_at,
    }
}

/// The records of `rows`, with their assignments (one query for all).
async fn outs(
    db: &impl ConnectionTrait,
    rows: Vec<creative::Model>,
) -> Result<Vec<CreativeOut>, ApiError> {
    let ids: Vec<String> = rows.iter().map(|c| c.id.clone()).collect();
    let mut by_creative: HashMap<String, Vec<assignment::Model>> = HashMap::new();
    if !ids.is_empty() {
        for a in assignment::Entity::find()
            .filter(assignment::Column::CreativeId.is_in(ids))
            .order_by_asc(assignment::Column::CreatedAt)
            .order_by_asc(assignment::Column::MediaBuyId)
            .all(db)
            .await?
        {
            by_creative
                .entry(a.creative_id.clone())
                .or_default()
                .push(a);
        }
    }
    Ok(rows
        .into_iter()
        .map(|c| {
            let a = by_creative.remove(&c.id).unwrap_or_default();
            creative_out(c, a)
        })
        .collect())
}

async fn one_out(db: &impl ConnectionTrait, row: creative::Model) -> Result<CreativeOut, ApiError> {
    outs(db, vec![row])
        .await?
        .pop()
        .ok_or_else(|| ApiError::internal("creative vanished"))
}

/// The caller's creative, or 404 (another account's is never visible).
pub async fn load(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
    lock: bool,
) -> Result<creative::Model, ApiError> {
    let id = model::creative_id(id)?;
    let mut q = creative::Entity::find_by_id(id)
        .filter(creative::Column::AccountId.eq(caller.account_id()));
    if lock {
        q = q.lock_exclusive();
    }
    q.one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("creative"))
}

pub async fn get(ctx: &Ctx, caller: &CallerInfo, id: &str) -> Result<CreativeEnvelope, ApiError> {
    let row = load(&ctx.db, caller, id, false).await?;
    Ok(CreativeEnvelope {
        creative: one_out(&ctx.db, row).await?,
    })
}

/// The account's assignments matching a campaign or a media buy, as a
/// subquery of creative ids.
fn assigned_where(
    caller: &CallerInfo,
    column: assignment::Column,
    value: &str,
) -> sea_orm::sea_query::SelectStatement {
    Query::select()
        .column(assignment::Column::CreativeId)
        .from(assignment::Entity)
        .and_where(assignment::Column::AccountId.eq(caller.account_id()))
        .and_where(column.eq(value))
        .to_owned()
}

pub async fn list(
    ctx: &Ctx,
    caller: &CallerInfo,
    page: Page<20, 100>,
    filter: CreativesFilter,
) -> Result<Paged<CreativeOut>, ApiError> {
    let mut issues = Issues::default();
    let mut select =
        creative::Entity::find().filter(creative::Column::AccountId.eq(caller.account_id()));
    if let Some(raw) = &filter.advertiser_id {
        match crate::buyer::advertisers::model::advertiser_id(raw) {
            Ok(id) => select = select.filter(creative::Column::AdvertiserId.eq(id)),
            Err(_) => issues.add("advertiserId", "must be an advertiser id (a UUID)"),
        }
    }
    if let Some(id) = &filter.campaign_id {
        select = select.filter(creative::Column::Id.in_subquery(assigned_where(
            caller,
            assignment::Column::CampaignId,
            id,
        )));
    }
    if let Some(id) = &filter.media_buy_id {
        select = select.filter(creative::Column::Id.in_subquery(assigned_where(
            caller,
            assignment::Column::MediaBuyId,
            id,
        )));
    }
    if let Some(s) = &filter.status {
        let s = model::status(s, &mut issues);
        select = select.filter(creative::Column::Status.eq(s));
    }
    issues.into_result()?;
    let select = select
        .order_by_desc(creative::Column::CreatedAt)
        .order_by_desc(creative::Column::Id);
    let rows = page.fetch(&ctx.db, select, |r| r).await?;
    Ok(Paged {
        items: outs(&ctx.db, rows.items).await?,
        pagination: rows.pagination,
    })
}

fn advertiser_not_found() -> ApiError {
    ApiError::Coded {
        kind: Kind::NotFound,
        code: "NOT_FOUND",
        message: "advertiser not found".into(),
        field: Some("advertiserId".into()),
        details: None,
    }
}

pub async fn create(
    ctx: &Ctx,
    caller: &CallerInfo,
    body: CreativeIn,
) -> Result<CreativeEnvelope, ApiError> {
    let mut issues = Issues::default();
    let advertiser_id = match crate::buyer::advertisers::model::advertiser_id(&body.advertiser_id) {
        Ok(id) => Some(id),
        Err(_) => {
            issues.add("advertiserId", "must be an advertiser id (a UUID)");
            None
        }
    };
    let name = model::name(&body.name, &mut issues);
    model::format_id(&body.format_id, &mut issues);
    model::assets(&body.assets, &mut issues);
    let click_url = body
        .click_url
        .as_deref()
        .map(|u| model::click_url(u, &mut issues));
    issues.into_result()?;
    let advertiser_id = advertiser_id.ok_or_else(advertiser_not_found)?;
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let adv = advertiser::Entity::find_by_id(advertiser_id.clone())
        .filter(advertiser::Column::AccountId.eq(caller.account_id()))
        .one(&txn)
        .await?
        .ok_or_else(advertiser_not_found)?;
    crate::buyer::advertisers::service::refuse_archived(&adv, "creatives")?;
    let now = Utc::now();
    let row = creative::ActiveModel {
        id: Set(model::new_id()),
        account_id: Set(caller.account_id().to_string()),
        advertiser_id: Set(advertiser_id),
        name: Set(name),
        format: Set(crate::buyer::to_json(&body.format_id)),
        assets: Set(Value::Object(body.assets).to_string()),
        click_url: Set(click_url),
        status: Set(ACTIVE.into()),
        revision: Set(1),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    let out = one_out(&txn, row).await?;
    let after = serde_json::to_value(&out).map_err(ApiError::internal)?;
    audit::record(
        &txn,
        caller,
        "creative.created",
        "creative",
        &out.creative_id,
        audit::diff(&Value::Null, &after),
    )
    .await?;
    txn.commit().await?;
    Ok(CreativeEnvelope { creative: out })
}

pub async fn update(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    body: CreativePatch,
) -> Result<CreativeEnvelope, ApiError> {
    let mut issues = Issues::default();
    if body.advertiser_id.is_some() {
        issues.add(
            "advertiserId",
            "a creative cannot move to another advertiser",
        );
    }
    let name = body.name.as_deref().map(|n| model::name(n, &mut issues));
    if let Some(f) = &body.format_id {
        model::format_id(f, &mut issues);
    }
    if let Some(a) = &body.assets {
        model::assets(a, &mut issues);
    }
    let click_url = body
        .click_url
        .as_ref()
        .map(|u| u.as_deref().map(|u| model::click_url(u, &mut issues)));
    let status = body
        .status
        .as_deref()
        .map(|s| model::status(s, &mut issues));
    issues.into_result()?;
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let current = load(&txn, caller, id, true).await?;
    let before =
        serde_json::to_value(one_out(&txn, current.clone()).await?).map_err(ApiError::internal)?;
    let mut row = current.clone().into_active_model();
    let mut content = false;
    if let Some(v) = name
        && v != current.name
    {
        row.name = Set(v);
        content = true;
    }
    if let Some(f) = body.format_id {
        let f = crate::buyer::to_json(&f);
        if f != current.format {
            row.format = Set(f);
            content = true;
        }
    }
    if let Some(a) = body.assets {
        let a = Value::Object(a).to_string();
        if a != current.assets {
            row.assets = Set(a);
            content = true;
        }
    }
    if let Some(u) = click_url
        && u != current.click_url
    {
        row.click_url = Set(u);
        content = true;
    }
    let status_changed = status.as_ref().is_some_and(|s| *s != current.status);
    if let Some(s) = status {
        row.status = Set(s);
    }
    if !content && !status_changed {
        // Nothing changes: no write, no audit entry.
        let out = one_out(&txn, current).await?;
        txn.commit().await?;
        return Ok(CreativeEnvelope { creative: out });
    }
    if content {
        row.revision = Set(current.revision + 1);
    }
    row.updated_at = Set(Utc::now());
    let row = row.update(&txn).await?;
    let out = one_out(&txn, row).await?;
    let after = serde_json::to_value(&out).map_err(ApiError::internal)?;
    audit::record(
        &txn,
        caller,
        "creative.updated",
        "creative",
        &out.creative_id,
        audit::diff(&before, &after),
    )
    .await?;
    txn.commit().await?;
    Ok(CreativeEnvelope { creative: out })
}

/// Makes `body.assignments` the creative's assignments: new ones start
/// `pending`, ones left out are removed, a changed weight makes one
/// `pending` again. Media buys must be the creative's advertiser's and not
/// ended; an archived creative takes none (409).
pub async fn assign(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    body: AssignIn,
) -> Result<CreativeEnvelope, ApiError> {
    let mut issues = Issues::default();
    model::assignments(&body.assignments, &mut issues);
    issues.into_result()?;
    let mut issues = Issues::default();
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let c = load(&txn, caller, id, true).await?;
    if c.status != ACTIVE && !body.assignments.is_empty() {
        return Err(ApiError::Conflict {
            message: "the creative is archived: set its status to active before assigning it"
                .into(),
            details: Some(json!({ "status": c.status })),
        });
    }
    let ids: Vec<String> = body
        .assignments
        .iter()
        .map(|a| a.media_buy_id.clone())
        .collect();
    let buys: HashMap<String, media_buy::Model> = if ids.is_empty() {
        HashMap::new()
    } else {
        media_buy::Entity::find()
            .filter(media_buy::Column::AccountId.eq(caller.account_id()))
            .filter(media_buy::Column::AdvertiserId.eq(c.advertiser_id.clone()))
            .filter(media_buy::Column::Id.is_in(ids))
            .all(&txn)
            .await?
            .into_iter()
            .map(|b| (b.id.clone(), b))
            .collect()
    };
    for (i, a) in body.assignments.iter().enumerate() {
        match buys.get(&a.media_buy_id) {
            None => issues.add(
                format!("assignments[{i}].mediaBuyId"),
                "no media buy of the creative's advertiser with this id",
            ),
            Some(b) if ENDED.contains(&b.status.as_str()) => issues.add(
                format!("assignments[{i}].mediaBuyId"),
                format!("the media buy is {}: it takes no creatives", b.status),
            ),
            Some(_) => {}
        }
    }
    issues.into_result()?;
    let before =
        serde_json::to_value(one_out(&txn, c.clone()).await?).map_err(ApiError::internal)?;
    let existing: HashMap<String, assignment::Model> = assignment::Entity::find()
        .filter(assignment::Column::CreativeId.eq(c.id.clone()))
        .all(&txn)
        .await?
        .into_iter()
        .map(|a| (a.media_buy_id.clone(), a))
        .collect();
    let now = Utc::now();
    let keep: Vec<&str> = body
        .assignments
        .iter()
        .map(|a| a.media_buy_id.as_str())
        .collect();
    let gone: Vec<String> = existing
        .keys()
        .filter(|k| !keep.contains(&k.as_str()))
        .cloned()
        .collect();
    let mut changed = !gone.is_empty();
    if !gone.is_empty() {
        assignment::Entity::delete_many()
            .filter(assignment::Column::CreativeId.eq(c.id.clone()))
            .filter(assignment::Column::MediaBuyId.is_in(gone))
            .exec(&txn)
            .await?;
    }
    for a in &body.assignments {
        let Some(buy) = buys.get(&a.media_buy_id) else {
            continue;
        };
        match existing.get(&a.media_buy_id) {
            Some(e) if e.weight == a.weight => {}
            Some(e) => {
                let mut row = e.clone().into_active_model();
                row.weight = Set(a.weight);
                row.sync_status = Set(PENDING.into());
                row.updated_at = Set(now);
                row.update(&txn).await?;
                changed = true;
            }
            None => {
                assignment::ActiveModel {
                    creative_id: Set(c.id.clone()),
                    media_buy_id: Set(buy.id.clone()),
                    account_id: Set(caller.account_id().to_string()),
                    campaign_id: Set(buy.campaign_id.clone()),
                    storefront_id: Set(buy.storefront_id),
                    weight: Set(a.weight),
                    adcp_creative_id: Set(model::adcp_creative_id(&c.id, &buy.id)),
                    click_url: Set(None),
                    sync_status: Set(PENDING.into()),
                    action: Set(None),
                    review_status: Set(None),
                    synced_revision: Set(None),
                    errors: Set("[]".into()),
                    synced_at: Set(None),
                    created_at: Set(now),
                    updated_at: Set(now),
                }
                .insert(&txn)
                .await?;
                changed = true;
            }
        }
    }
    let out = one_out(&txn, c).await?;
    if changed {
        let after = serde_json::to_value(&out).map_err(ApiError::internal)?;
        audit::record(
            &txn,
            caller,
            "creative.assigned",
            "creative",
            &out.creative_id,
            audit::diff(&before, &after),
        )
        .await?;
    }
    txn.commit().await?;
    Ok(CreativeEnvelope { creative: out })
}
