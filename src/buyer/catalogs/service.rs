//! The catalog transactions. Feeds are fetched before any transaction
//! opens; each change takes the catalog's row lock first, then writes the
//! version, the row and the audit entry together.

use std::collections::BTreeMap;

use chrono::Utc;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, PaginatorTrait,
    QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{
    advertiser, catalog, catalog_activation_job as job, catalog_activation_plan as saved_plan,
    catalog_version,
};

use super::feed::Feeds;
use super::model::{
    self, CatalogOut, CatalogSpec, Checked, ExecuteIn, ExecutionOut, FeedError, PlanOut,
    PlanSummary, PreviewIn, RefreshIn, RefreshOut, Source, SyncCatalogsIn, SyncCatalogsOut,
    SyncResult,
};
use crate::buyer::advertisers::model::advertiser_id;
use crate::buyer::audit;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Ctx, Page, Paged};

pub const JOB_PENDING: &str = "pending";

/// The caller's advertiser, or 404.
async fn advertiser_of(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    raw: &str,
) -> Result<advertiser::Model, ApiError> {
    let id = advertiser_id(raw)?;
    advertiser::Entity::find_by_id(id)
        .filter(advertiser::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))
}

/// The caller's catalog of that advertiser, or 404.
async fn catalog_of(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser: &str,
    id: &str,
) -> Result<catalog::Model, ApiError> {
    catalog::Entity::find_by_id(id)
        .filter(catalog::Column::AccountId.eq(caller.account_id()))
        .filter(catalog::Column::AdvertiserId.eq(advertiser))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("catalog"))
}

/// Takes the catalog's row lock (concurrent syncs, refreshes and
/// executions of one catalog are serialised) and reads it again.
async fn lock(
    txn: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser: &str,
    id: &str,
) -> Result<catalog::Model, ApiError> {
    let touched = catalog::Entity::update_many()
        .col_expr(catalog::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(catalog::Column::Id.eq(id))
        .filter(catalog::Column::AccountId.eq(caller.account_id()))
        .exec(txn)
        .await?;
    if touched.rows_affected == 0 {
        return Err(ApiError::not_found("catalog"));
    }
    catalog_of(txn, caller, advertiser, id).await
}

/// What a sync or refresh brought back.
enum Outcome {
    Synced { format: String, checked: Checked },
    Failed(FeedError),
}

async fn outcome(feeds: &Feeds, source: &Source) -> Outcome {
    match source {
        Source::Inline(items) => Outcome::Synced {
            format: model::SOURCE_INLINE.into(),
            checked: model::check_items(items.clone()),
        },
        Source::Url { url, format } => match feeds.fetch(url, format.as_deref()).await {
            Ok((checked, format)) => Outcome::Synced {
                format: format.into(),
                checked,
            },
            Err(e) => Outcome::Failed(e),
        },
    }
}

fn snapshot(row: &catalog::Model) -> Result<Value, ApiError> {
    serde_json::to_value(CatalogOut::from(row.clone())).map_err(ApiError::internal)
}

/// Records an outcome on a locked (or just created) catalog: a new version
/// when it synced, the failure otherwise; then the audit entry.
async fn apply(
    txn: &impl ConnectionTrait,
    caller: &CallerInfo,
    mut row: catalog::Model,
    before: Value,
    action: &str,
    outcome: Outcome,
) -> Result<(SyncResult, catalog::Model), ApiError> {
    let now = Utc::now();
    let created = before.is_null();
    let mut result = SyncResult {
        catalog_id: row.id.clone(),
        name: row.name.clone(),
        action: if created { "created" } else { "updated" }.into(),
        status: model::STATUS_FAILED.into(),
        version: None,
        item_count: 0,
        rejected_count: 0,
        rejected: Vec::new(),
        error: None,
    };
    match outcome {
        Outcome::Synced { format, checked } => {
            let version = row.latest_version.unwrap_or(0) + 1;
            let items = checked.items.len() as i64;
            let rejected = checked.rejected_count as i64;
            catalog_version::ActiveModel {
                catalog_id: Set(row.id.clone()),
                version: Set(version),
                format: Set(format),
                item_count: Set(items),
                rejected_count: Set(rejected),
                items: Set(Value::Array(checked.items).to_string()),
                rejected: Set(serde_json::to_string(&checked.rejected)
                    .map_err(ApiError::internal)?),
                created_at: Set(now),
                ..Default::default()
            }
            .insert(txn)
            .await?;
            row.sync_status = model::STATUS_SYNCED.into();
            row.latest_version = Some(version);
            row.item_count = items;
            row.rejected_count = rejected;
            row.last_synced_at = Some(now);
            row.last_error = None;
            result.status = model::STATUS_SYNCED.into();
            result.version = Some(version);
            result.item_count = items;
            result.rejected_count = rejected;
            result.rejected = checked.rejected;
        }
        Outcome::Failed(e) => {
            // The previous version (if any) stays the one served.
            row.sync_status = model::STATUS_FAILED.into();
            row.last_error = Some(format!("{}: {}", e.code, e.message));
            result.error = Some(e);
        }
    }
    row.health = model::health(
        &row.sync_status,
        row.latest_version.is_some(),
        row.item_count,
        row.rejected_count,
    )
    .into();
    row.updated_at = now;
    let row = row.into_active_model().reset_all().update(txn).await?;
    let after = snapshot(&row)?;
    audit::record(
        txn,
        caller,
        action,
        "catalog",
        &row.id,
        audit::diff(&before, &after),
    )
    .await?;
    Ok((result, row))
}

/// `sync_catalogs`: validates everything, resolves each catalog (by id, by
/// name, or new), fetches URL feeds concurrently, then records every
/// outcome in one transaction.
pub async fn sync_catalogs(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser: &str,
    body: SyncCatalogsIn,
) -> Result<SyncCatalogsOut, ApiError> {
    let specs = model::sync_specs(body, ctx.config.url_policy())?;
    let adv = advertiser_of(&ctx.db, caller, advertiser).await?;
    let mut targets: Vec<(CatalogSpec, Option<String>)> = Vec::new();
    for spec in specs {
        let existing = match (&spec.catalog_id, &spec.name) {
            (Some(id), _) => Some(catalog_of(&ctx.db, caller, &adv.id, id).await?.id),
            (None, Some(name)) => catalog::Entity::find()
                .filter(catalog::Column::AccountId.eq(caller.account_id()))
                .filter(catalog::Column::AdvertiserId.eq(adv.id.as_str()))
                .filter(catalog::Column::Name.eq(name.as_str()))
                .one(&ctx.db)
                .await?
                .map(|c| c.id),
            (None, None) => None,
        };
        targets.push((spec, existing));
    }
    let feeds = ctx.get::<Feeds>()?;
    let outcomes =
        futures_util::future::join_all(targets.iter().map(|(s, _)| outcome(feeds, &s.source)))
            .await;

    // SQLite's writers take turns (see `db::WriteGate`).
    let turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let mut results = Vec::new();
    for ((spec, existing), outcome) in targets.into_iter().zip(outcomes) {
        let (kind, url, format) = match spec.source {
            Source::Inline(_) => (model::SOURCE_INLINE, None, None),
            Source::Url { url, format } => (model::SOURCE_URL, Some(url), format),
        };
        let (mut row, before, action) = match existing {
            Some(id) => {
                let row = lock(&txn, caller, &adv.id, &id).await?;
                let before = snapshot(&row)?;
                (row, before, "catalog.synced")
            }
            None => {
                let now = Utc::now();
                let row = catalog::ActiveModel {
                    id: Set(model::new_catalog_id()),
                    account_id: Set(caller.account_id().to_string()),
                    advertiser_id: Set(adv.id.clone()),
                    name: Set(spec.name.clone().unwrap_or_default()),
                    catalog_type: Set(spec
                        .catalog_type
                        .clone()
                        .unwrap_or_else(|| "product".into())),
                    source_kind: Set(kind.into()),
                    feed_url: Set(url.clone()),
                    feed_format: Set(format.clone()),
                    sync_status: Set(model::STATUS_PENDING.into()),
                    health: Set(model::HEALTHY.into()),
                    item_count: Set(0),
                    rejected_count: Set(0),
                    latest_version: Set(None),
                    activated_version: Set(None),
                    last_synced_at: Set(None),
                    last_error: Set(None),
                    created_at: Set(now),
                    updated_at: Set(now),
                }
                .insert(&txn)
                .await?;
                (row, Value::Null, "catalog.created")
            }
        };
        if let Some(name) = spec.name {
            row.name = name;
        }
        if let Some(t) = spec.catalog_type {
            row.catalog_type = t;
        }
        row.source_kind = kind.into();
        row.feed_url = url;
        row.feed_format = format;
        let (result, _) = apply(&txn, caller, row, before, action, outcome).await?;
        results.push(result);
    }
    let notices = notify_failed(&txn, caller, &adv.id, &results).await?;
    txn.commit().await?;
    drop(turn);
    notices.publish(&ctx.bus).await;
    Ok(SyncCatalogsOut { catalogs: results })
}

/// `catalog.sync_failed` for each failed sync, in the caller's
/// transaction, after its catalog locks.
async fn notify_failed(
    txn: &sea_orm::DatabaseTransaction,
    caller: &CallerInfo,
    advertiser_id: &str,
    results: &[SyncResult],
) -> Result<crate::notifications::Notices, ApiError> {
    let mut notices = crate::notifications::Notices::default();
    let now = Utc::now();
    for r in results {
        let Some(e) = &r.error else { continue };
        let n = crate::notifications::New {
            account_id: caller.account_id().to_string(),
            topic: crate::notifications::topics::CATALOG_SYNC_FAILED,
            title: format!("Catalog {} failed to sync", r.name),
            body: format!(
                "{}: {}. The previous version stays served.",
                e.code, e.message
            ),
            data: serde_json::json!({
                "catalogId": r.catalog_id,
                "advertiserId": advertiser_id,
                "errorCode": e.code,
            }),
        };
        notices.merge(crate::notifications::notify(txn, n, now).await?);
    }
    Ok(notices)
}

/// The advertiser's catalogs, newest first.
pub async fn list_catalogs(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser: &str,
    page: Page<20, 100>,
) -> Result<Paged<CatalogOut>, ApiError> {
    let adv = advertiser_of(&ctx.db, caller, advertiser).await?;
    let query = catalog::Entity::find()
        .filter(catalog::Column::AccountId.eq(caller.account_id()))
        .filter(catalog::Column::AdvertiserId.eq(adv.id.as_str()));
    let total = query.clone().count(&ctx.db).await?;
    let rows = query
        .order_by_desc(catalog::Column::CreatedAt)
        .order_by_desc(catalog::Column::Id)
        .offset(page.skip)
        .limit(page.take)
        .all(&ctx.db)
        .await?;
    Ok(Paged {
        items: rows.into_iter().map(CatalogOut::from).collect(),
        pagination: page.of(total),
    })
}

/// `refresh_catalog`: fetches a URL catalog's feed again into a new
/// version (a failed fetch is recorded and keeps the previous version).
/// Inline catalogs have nothing to fetch: 409.
pub async fn refresh_catalog(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser: &str,
    catalog_id: &str,
    body: RefreshIn,
) -> Result<RefreshOut, ApiError> {
    let id = model::catalog_id(catalog_id, "catalogId")?;
    let adv = advertiser_of(&ctx.db, caller, advertiser).await?;
    let row = catalog_of(&ctx.db, caller, &adv.id, &id).await?;
    let Some(url) = row
        .feed_url
        .clone()
        .filter(|_| row.source_kind == model::SOURCE_URL)
    else {
        return Err(ApiError::Conflict {
            message:
                "an inline catalog has no feed to fetch again; send its items with sync_catalogs"
                    .into(),
            details: Some(json!({ "reason": "inline_catalog" })),
        });
    };
    let source = Source::Url {
        url,
        format: row.feed_format.clone(),
    };
    let fetched = outcome(ctx.get::<Feeds>()?, &source).await;
    // SQLite's writers take turns (see `db::WriteGate`).
    let turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let row = lock(&txn, caller, &adv.id, &id).await?;
    let before = snapshot(&row)?;
    let (sync, row) = apply(&txn, caller, row, before, "catalog.refreshed", fetched).await?;
    let notices = notify_failed(&txn, caller, &adv.id, std::slice::from_ref(&sync)).await?;
    txn.commit().await?;
    drop(turn);
    notices.publish(&ctx.bus).await;
    let activation = if body.execute_activation.unwrap_or(false) && sync.version.is_some() {
        Some(execute(ctx, caller, &adv.id, &id, false, None).await?)
    } else {
        None
    };
    let catalog = match activation {
        Some(_) => CatalogOut::from(catalog_of(&ctx.db, caller, &adv.id, &id).await?),
        None => CatalogOut::from(row),
    };
    Ok(RefreshOut {
        sync,
        catalog,
        activation,
    })
}

async fn items_of(
    db: &impl ConnectionTrait,
    catalog_id: &str,
    version: i32,
) -> Result<Vec<Value>, ApiError> {
    let row = catalog_version::Entity::find()
        .filter(catalog_version::Column::CatalogId.eq(catalog_id))
        .filter(catalog_version::Column::Version.eq(version))
        .one(db)
        .await?
        .ok_or_else(|| {
            ApiError::internal(format!("catalog {catalog_id} lacks version {version}"))
        })?;
    serde_json::from_str(&row.items).map_err(ApiError::internal)
}

fn keyed(items: Vec<Value>) -> BTreeMap<String, Value> {
    items
        .into_iter()
        .filter_map(|v| Some((v.get("item_id")?.as_str()?.to_string(), v)))
        .collect()
}

/// The plan from the activated version to the latest: items to activate
/// (new), update (changed content), deactivate (gone); the rest unchanged.
async fn plan(db: &impl ConnectionTrait, row: &catalog::Model) -> Result<PlanOut, ApiError> {
    let Some(to) = row.latest_version else {
        return Err(ApiError::Conflict {
            message: "the catalog has no synced version yet".into(),
            details: Some(json!({ "reason": "no_version" })),
        });
    };
    let from = row.activated_version;
    let target = keyed(items_of(db, &row.id, to).await?);
    let current = match from {
        Some(v) => keyed(items_of(db, &row.id, v).await?),
        None => BTreeMap::new(),
    };
    let (mut activate, mut update, mut deactivate, mut unchanged) = (vec![], vec![], vec![], 0);
    for (id, item) in &target {
        match current.get(id) {
            None => activate.push(id.clone()),
            Some(old) if old != item => update.push(id.clone()),
            Some(_) => unchanged += 1,
        }
    }
    for id in current.keys() {
        if !target.contains_key(id) {
            deactivate.push(id.clone());
        }
    }
    Ok(PlanOut {
        catalog_id: row.id.clone(),
        plan_id: None,
        from_version: from,
        to_version: to,
        summary: PlanSummary {
            activate: activate.len(),
            update: update.len(),
            deactivate: deactivate.len(),
            unchanged,
        },
        activate,
        update,
        deactivate,
    })
}

/// `preview_catalog_activation_plan`: writes nothing unless `save`.
pub async fn preview(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser: &str,
    catalog_id: &str,
    body: PreviewIn,
) -> Result<PlanOut, ApiError> {
    let id = model::catalog_id(catalog_id, "catalogId")?;
    let adv = advertiser_of(&ctx.db, caller, advertiser).await?;
    let row = catalog_of(&ctx.db, caller, &adv.id, &id).await?;
    let mut out = plan(&ctx.db, &row).await?;
    if body.save.unwrap_or(false) {
        let plan_id = format!("plan_{}", uuid::Uuid::new_v4().simple());
        out.plan_id = Some(plan_id.clone());
        // SQLite's writers take turns (see `db::WriteGate`).
        let turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        saved_plan::ActiveModel {
            id: Set(plan_id.clone()),
            account_id: Set(caller.account_id().to_string()),
            catalog_id: Set(id.clone()),
            from_version: Set(out.from_version),
            to_version: Set(out.to_version),
            plan: Set(serde_json::to_string(&out).map_err(ApiError::internal)?),
            created_at: Set(Utc::now()),
        }
        .insert(&txn)
        .await?;
        let mut changes = serde_json::Map::new();
        changes.insert(
            "plan".into(),
            json!({ "from": null, "to": { "planId": plan_id, "fromVersion": out.from_version,
                    "toVersion": out.to_version, "summary": out.summary } }),
        );
        audit::record(
            &txn,
            caller,
            "catalog.activation_plan_saved",
            "catalog",
            &id,
            changes,
        )
        .await?;
        txn.commit().await?;
        drop(turn);
    }
    Ok(out)
}

fn execution(j: job::Model, dry_run: bool) -> Result<ExecutionOut, ApiError> {
    Ok(ExecutionOut {
        job_id: Some(j.id),
        status: Some(j.status),
        dry_run,
        created: false,
        plan: serde_json::from_str(&j.plan).map_err(ApiError::internal)?,
    })
}

async fn job_for(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    catalog_id: &str,
    version: i32,
) -> Result<Option<job::Model>, ApiError> {
    Ok(job::Entity::find()
        .filter(job::Column::AccountId.eq(caller.account_id()))
        .filter(job::Column::CatalogId.eq(catalog_id))
        .filter(job::Column::Version.eq(version))
        .one(db)
        .await?)
}

/// `execute_catalog_activation_plan`.
pub async fn execute_plan(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser: &str,
    catalog_id: &str,
    body: ExecuteIn,
) -> Result<ExecutionOut, ApiError> {
    let id = model::catalog_id(catalog_id, "catalogId")?;
    let adv = advertiser_of(&ctx.db, caller, advertiser).await?;
    let saved = match &body.plan_id {
        Some(plan_id) => Some(saved_plan_of(&ctx.db, caller, &id, plan_id).await?),
        None => None,
    };
    let mut out = execute(
        ctx,
        caller,
        &adv.id,
        &id,
        body.dry_run.unwrap_or(false),
        saved.as_ref(),
    )
    .await?;
    if let Some(p) = saved {
        out.plan.plan_id = Some(p.id);
    }
    Ok(out)
}

/// A saved plan of the caller's catalog; any other is not found. (`execute`
/// then reads the catalog under the advertiser, which refuses a catalog of
/// another advertiser.)
async fn saved_plan_of(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    catalog_id: &str,
    plan_id: &str,
) -> Result<saved_plan::Model, ApiError> {
    saved_plan::Entity::find_by_id(plan_id)
        .filter(saved_plan::Column::AccountId.eq(caller.account_id()))
        .filter(saved_plan::Column::CatalogId.eq(catalog_id))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("activation plan"))
}

/// Whether the versions about to be executed are the saved plan's: a plan
/// saved before the catalog moved on (a newer sync, another execution) is
/// refused rather than silently replaced by a different one.
fn still_planned(
    saved: Option<&saved_plan::Model>,
    from: Option<i32>,
    to: i32,
) -> Result<(), ApiError> {
    match saved {
        Some(p) if (p.from_version, p.to_version) != (from, to) => Err(ApiError::Conflict {
            message: format!(
                "the catalog has changed since plan {} was saved; preview and save a new plan",
                p.id
            ),
            details: Some(json!({
                "reason": "plan_stale",
                "planned": { "fromVersion": p.from_version, "toVersion": p.to_version },
                "current": { "fromVersion": from, "toVersion": to },
            })),
        }),
        _ => Ok(()),
    }
}

/// Records the latest version's plan as one `pending` job and marks the
/// version activated. A version is executed once: a second execution (or
/// a dry run after the first) returns the first job.
async fn execute(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser: &str,
    id: &str,
    dry_run: bool,
    saved: Option<&saved_plan::Model>,
) -> Result<ExecutionOut, ApiError> {
    let row = catalog_of(&ctx.db, caller, advertiser, id).await?;
    if let Some(v) = row.latest_version
        && let Some(j) = job_for(&ctx.db, caller, id, v).await?
    {
        still_planned(saved, j.from_version, j.version)?;
        return execution(j, dry_run);
    }
    if dry_run {
        let planned = plan(&ctx.db, &row).await?;
        still_planned(saved, planned.from_version, planned.to_version)?;
        return Ok(ExecutionOut {
            job_id: None,
            status: None,
            dry_run: true,
            created: false,
            plan: planned,
        });
    }
    // SQLite's writers take turns (see `db::WriteGate`).
    let turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let row = lock(&txn, caller, advertiser, id).await?;
    // Another execution may have won the lock first.
    if let Some(v) = row.latest_version
        && let Some(j) = job_for(&txn, caller, id, v).await?
    {
        txn.rollback().await?;
        still_planned(saved, j.from_version, j.version)?;
        return execution(j, false);
    }
    let before = snapshot(&row)?;
    let planned = plan(&txn, &row).await?;
    if let Err(e) = still_planned(saved, planned.from_version, planned.to_version) {
        txn.rollback().await?;
        return Err(e);
    }
    let job_id = format!("cjob_{}", uuid::Uuid::new_v4().simple());
    let inserted = job::Entity::insert(job::ActiveModel {
        id: Set(job_id.clone()),
        account_id: Set(caller.account_id().to_string()),
        catalog_id: Set(id.to_string()),
        version: Set(planned.to_version),
        from_version: Set(planned.from_version),
        plan: Set(serde_json::to_string(&planned).map_err(ApiError::internal)?),
        status: Set(JOB_PENDING.into()),
        created_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::columns([job::Column::CatalogId, job::Column::Version])
            .do_nothing()
            .to_owned(),
    )
    .exec_without_returning(&txn)
    .await?;
    if inserted == 0 {
        txn.rollback().await?;
        let j = job_for(&ctx.db, caller, id, planned.to_version)
            .await?
            .ok_or_else(|| ApiError::internal("activation job vanished"))?;
        return execution(j, false);
    }
    let mut row = row;
    row.activated_version = Some(planned.to_version);
    row.updated_at = Utc::now();
    let row = row.into_active_model().reset_all().update(&txn).await?;
    let mut changes = audit::diff(&before, &snapshot(&row)?);
    changes.insert(
        "activationJob".into(),
        json!({ "from": null, "to": { "jobId": job_id, "status": JOB_PENDING,
                "summary": planned.summary } }),
    );
    audit::record(
        &txn,
        caller,
        "catalog.activation_executed",
        "catalog",
        id,
        changes,
    )
    .await?;
    txn.commit().await?;
    drop(turn);
    Ok(ExecutionOut {
        job_id: Some(job_id),
        status: Some(JOB_PENDING.into()),
        dry_run: false,
        created: true,
        plan: planned,
    })
}
