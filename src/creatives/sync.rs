//! Sending creatives to sellers: AdCP `sync_creatives`, one call per
//! storefront and advertiser (its account there), at most 100 creatives a
//! call, concurrently. Each assignment is one AdCP creative (the click URL
//! differs per package: its utm parameters name the buy and the package)
//! assigned to the buy's seller packages. Nothing is sent when a managed
//! storefront has no accepted account linkage for the advertiser (409
//! `MANAGED_ACCOUNT_LINKAGE_REQUIRED`). The idempotency key is derived from
//! the request, so a retry of the same content is the same request to the
//! seller; every answer is recorded in one transaction.

use std::collections::{BTreeMap, HashMap};

use chrono::Utc;
use futures_util::future::join_all;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use entity::{
    advertiser, advertiser_linked_account as linked, campaign, creative,
    creative_assignment as assignment, media_buy,
};

use super::model::{
    self, ACTIVE, CLICK_ROLE, FAILED, SUBMITTED, SYNC_BATCH, SYNCED, Skipped, SyncIn, SyncOut,
    SyncResult,
};
use crate::buyer::utm;
use crate::caller::CallerInfo;
use crate::discovery::seller::StorefrontTarget;
use crate::discovery::sellers::Sellers;
use crate::error::{ApiError, Issues, Kind};
use crate::media_buys::package::package_id;
use crate::ops::Ctx;

pub const SYNC_CREATIVES: &str = "sync_creatives";
/// Media-buy statuses whose packages take no creatives.
const ENDED: &[&str] = &["failed", "rejected", "canceled", "completed"];

/// One assignment ready to send.
struct Item {
    creative_id: String,
    media_buy_id: String,
    storefront_id: i64,
    advertiser_id: String,
    adcp_creative_id: String,
    revision: i64,
    click_url: Option<String>,
    creative: Value,
    assignments: Vec<Value>,
}

/// One `sync_creatives` call.
struct Call {
    storefront_id: i64,
    items: Vec<Item>,
    arguments: Map<String, Value>,
}

pub async fn sync(ctx: &Ctx, caller: &CallerInfo, body: SyncIn) -> Result<SyncOut, ApiError> {
    let mut issues = Issues::default();
    let advertiser_id = match &body.advertiser_id {
        Some(raw) => match crate::buyer::advertisers::model::advertiser_id(raw) {
            Ok(id) => Some(id),
            Err(_) => {
                issues.add("advertiserId", "must be an advertiser id (a UUID)");
                None
            }
        },
        None => None,
    };
    let mut creative_ids = Vec::new();
    if let Some(ids) = &body.creative_ids {
        if ids.is_empty() || ids.len() > SYNC_BATCH {
            issues.add(
                "creativeIds",
                format!("must hold 1 to {SYNC_BATCH} creative ids"),
            );
        }
        for (i, raw) in ids.iter().enumerate() {
            match model::creative_id(raw) {
                Ok(id) => creative_ids.push(id),
                Err(_) => issues.add(
                    format!("creativeIds[{i}]"),
                    "must be a creative id (cr_...)",
                ),
            }
        }
    }
    issues.into_result()?;

    let db = &ctx.db;
    let mut q =
        assignment::Entity::find().filter(assignment::Column::AccountId.eq(caller.account_id()));
    if let Some(c) = &body.campaign_id {
        q = q.filter(assignment::Column::CampaignId.eq(c.clone()));
    }
    if body.creative_ids.is_some() {
        q = q.filter(assignment::Column::CreativeId.is_in(creative_ids));
    }
    if let Some(a) = &advertiser_id {
        q = q.filter(
            assignment::Column::CreativeId.in_subquery(
                Query::select()
                    .column(creative::Column::Id)
                    .from(creative::Entity)
                    .and_where(creative::Column::AccountId.eq(caller.account_id()))
                    .and_where(creative::Column::AdvertiserId.eq(a.clone()))
                    .to_owned(),
            ),
        );
    }
    let rows = q
        .order_by_asc(assignment::Column::CreativeId)
        .order_by_asc(assignment::Column::MediaBuyId)
        .all(db)
        .await?;
    if rows.is_empty() {
        return Ok(SyncOut {
            dry_run: body.dry_run,
            results: Vec::new(),
            skipped: Vec::new(),
        });
    }
    let creatives = by_id(
        creative::Entity::find()
            .filter(creative::Column::AccountId.eq(caller.account_id()))
            .filter(creative::Column::Id.is_in(rows.iter().map(|r| r.creative_id.clone())))
            .all(db)
            .await?,
        |c| c.id.clone(),
    );
    let buys = by_id(
        media_buy::Entity::find()
            .filter(media_buy::Column::AccountId.eq(caller.account_id()))
            .filter(media_buy::Column::Id.is_in(rows.iter().map(|r| r.media_buy_id.clone())))
            .all(db)
            .await?,
        |b| b.id.clone(),
    );
    let campaigns = by_id(
        campaign::Entity::find()
            .filter(campaign::Column::AccountId.eq(caller.account_id()))
            .filter(campaign::Column::Id.is_in(rows.iter().map(|r| r.campaign_id.clone())))
            .all(db)
            .await?,
        |c| c.id.clone(),
    );
    let advertisers = by_id(
        advertiser::Entity::find()
            .filter(advertiser::Column::AccountId.eq(caller.account_id()))
            .filter(
                advertiser::Column::Id.is_in(creatives.values().map(|c| c.advertiser_id.clone())),
            )
            .all(db)
            .await?,
        |a| a.id.clone(),
    );

    let mut skipped = Vec::new();
    let mut items = Vec::new();
    for r in rows {
        let skip = |reason: &str| Skipped {
            creative_id: r.creative_id.clone(),
            media_buy_id: r.media_buy_id.clone(),
            reason: reason.to_string(),
        };
        let (Some(c), Some(b), Some(cmp)) = (
            creatives.get(&r.creative_id),
            buys.get(&r.media_buy_id),
            campaigns.get(&r.campaign_id),
        ) else {
            continue;
        };
        let Some(adv) = advertisers.get(&c.advertiser_id) else {
            continue;
        };
        if c.status != ACTIVE {
            skipped.push(skip("the creative is archived"));
            continue;
        }
        if ENDED.contains(&b.status.as_str()) {
            skipped.push(skip(&format!("the media buy is {}", b.status)));
            continue;
        }
        let packages: Vec<String> = b
            .adcp_package_ids
            .as_deref()
            .and_then(|p| serde_json::from_str(p).ok())
            .unwrap_or_default();
        if b.adcp_media_buy_id.is_none() || packages.is_empty() {
            skipped.push(skip(
                "the media buy is not at the seller yet (no seller package): sync once it is",
            ));
            continue;
        }
        items.push(item(&r, c, b, cmp, adv, &packages)?);
    }
    if items.is_empty() {
        return Ok(SyncOut {
            dry_run: body.dry_run,
            results: Vec::new(),
            skipped,
        });
    }
    require_linkage(db, &items).await?;

    let calls = calls(db, &advertisers, items, body.dry_run).await?;
    let sellers = ctx.get::<Sellers>()?.clone();
    let mut targets: HashMap<i64, Result<StorefrontTarget, String>> = HashMap::new();
    for c in &calls {
        if let std::collections::hash_map::Entry::Vacant(slot) = targets.entry(c.storefront_id) {
            let t =
                crate::discovery::storefronts::target(db, c.storefront_id, ctx.config.url_policy())
                    .await?
                    .unwrap_or_else(|| Err("the storefront is no longer registered".into()));
            slot.insert(t);
        }
    }
    let answers = join_all(calls.into_iter().map(|c| {
        let target = targets
            .get(&c.storefront_id)
            .cloned()
            .unwrap_or_else(|| Err("unknown storefront".into()));
        let sellers = sellers.clone();
        async move {
            let answer = match &target {
                Err(reason) => Err(json!({"code": "SELLER_ADDRESS_REFUSED", "message": reason})),
                Ok(t) => sellers
                    .for_storefront(t)
                    .call_task(t, SYNC_CREATIVES, c.arguments)
                    .await
                    .map_err(|e| json!({"code": e.code(), "message": e.to_string()})),
            };
            read(c.items, answer)
        }
    }))
    .await;
    let results: Vec<(SyncResult, i64)> = answers.into_iter().flatten().collect();
    if !body.dry_run {
        record(ctx, &results).await?;
    }
    Ok(SyncOut {
        dry_run: body.dry_run,
        results: results.into_iter().map(|(r, _)| r).collect(),
        skipped,
    })
}

fn by_id<T>(rows: Vec<T>, key: impl Fn(&T) -> String) -> HashMap<String, T> {
    rows.into_iter().map(|r| (key(&r), r)).collect()
}

/// The AdCP creative of one assignment: the creative's format and assets,
/// its click URL with the utm parameters of this buy, package, campaign
/// and creative as a clickthrough URL asset; assigned to the buy's
/// seller packages.
fn item(
    r: &assignment::Model,
    c: &creative::Model,
    b: &media_buy::Model,
    cmp: &campaign::Model,
    adv: &advertiser::Model,
    packages: &[String],
) -> Result<Item, ApiError> {
    let pkg = package_id(&b.id);
    let click_url = match &c.click_url {
        None => None,
        Some(landing) => {
            let params = utm::effective(&adv.utm_config, cmp.utm_config.as_deref());
            let pairs = utm::resolve(
                &params,
                utm::Ids {
                    campaign_id: Some(&cmp.id),
                    media_buy_id: Some(&b.id),
                    package_id: Some(&pkg),
                    creative_id: Some(&c.id),
                },
            );
            Some(utm::click_url(landing, &pairs).map_err(ApiError::internal)?)
        }
    };
    let mut assets: Map<String, Value> = serde_json::from_str(&c.assets).unwrap_or_default();
    if let Some(u) = &click_url {
        assets.insert(
            CLICK_ROLE.into(),
            json!({"asset_type": "url", "url_type": "clickthrough", "url": u}),
        );
    }
    let format: Value = serde_json::from_str::<model::FormatId>(&c.format)
        .map(|f| f.adcp())
        .unwrap_or(Value::Null);
    let creative = json!({
        "creative_id": r.adcp_creative_id,
        "name": c.name,
        "format_id": format,
        "assets": assets,
    });
    let assignments = packages
        .iter()
        .map(|p| {
            let mut a = json!({"creative_id": r.adcp_creative_id, "package_id": p});
            if let Some(w) = r.weight {
                a["weight"] = json!(w);
            }
            a
        })
        .collect();
    Ok(Item {
        creative_id: c.id.clone(),
        media_buy_id: b.id.clone(),
        storefront_id: b.storefront_id,
        advertiser_id: c.advertiser_id.clone(),
        adcp_creative_id: r.adcp_creative_id.clone(),
        revision: c.revision,
        click_url,
        creative,
        assignments,
    })
}

/// 409 `MANAGED_ACCOUNT_LINKAGE_REQUIRED` when a storefront operated on
/// this server would get creatives of an advertiser whose account mapping
/// there is not accepted (no active binding): the operator has not agreed
/// to trade with it.
async fn require_linkage(db: &impl ConnectionTrait, items: &[Item]) -> Result<(), ApiError> {
    let mut pairs: Vec<(i64, String)> = items
        .iter()
        .map(|i| (i.storefront_id, i.advertiser_id.clone()))
        .collect();
    pairs.sort();
    pairs.dedup();
    let mut missing = Vec::new();
    let mut managed: HashMap<i64, bool> = HashMap::new();
    for (sf, adv) in pairs {
        let is_managed = match managed.get(&sf) {
            Some(m) => *m,
            None => {
                let m = crate::accounts::sources::operator_of(db, sf)
                    .await?
                    .is_some();
                managed.insert(sf, m);
                m
            }
        };
        if !is_managed {
            continue;
        }
        let bound = linked::Entity::find()
            .filter(linked::Column::AdvertiserId.eq(adv.clone()))
            .filter(linked::Column::StorefrontId.eq(sf))
            .filter(linked::Column::Status.eq("active"))
            .one(db)
            .await?
            .is_some();
        if !bound {
            missing.push(json!({"storefrontId": sf, "advertiserId": adv}));
        }
    }
    if missing.is_empty() {
        return Ok(());
    }
    Err(ApiError::coded(
        Kind::Conflict,
        "MANAGED_ACCOUNT_LINKAGE_REQUIRED",
        "a managed storefront takes creatives only under an accepted account linkage: sync the advertiser's account there (sync_storefront_accounts) and have the storefront's operator accept it; nothing was sent",
        json!({ "missing": missing }),
    ))
}

/// The calls: per storefront and advertiser (its account), batches of at
/// most 100 creatives, each with an idempotency key derived from its
/// content.
async fn calls(
    db: &impl ConnectionTrait,
    advertisers: &HashMap<String, advertiser::Model>,
    items: Vec<Item>,
    dry_run: bool,
) -> Result<Vec<Call>, ApiError> {
    let mut groups: BTreeMap<(i64, String), Vec<Item>> = BTreeMap::new();
    for i in items {
        groups
            .entry((i.storefront_id, i.advertiser_id.clone()))
            .or_default()
            .push(i);
    }
    let mut out = Vec::new();
    for ((sf, adv_id), mut group) in groups {
        let Some(adv) = advertisers.get(&adv_id) else {
            continue;
        };
        let account = crate::media_buys::dispatch::account_ref(db, adv, sf, adv.sandbox).await?;
        while !group.is_empty() {
            let rest = group.split_off(group.len().min(SYNC_BATCH));
            let batch = std::mem::replace(&mut group, rest);
            let creatives: Vec<Value> = batch.iter().map(|i| i.creative.clone()).collect();
            let assignments: Vec<Value> = batch
                .iter()
                .flat_map(|i| i.assignments.iter().cloned())
                .collect();
            let mut args = Map::new();
            args.insert("account".into(), account.clone());
            args.insert("creatives".into(), Value::Array(creatives));
            args.insert("assignments".into(), Value::Array(assignments));
            if dry_run {
                args.insert("dry_run".into(), json!(true));
            }
            let digest = Sha256::digest(Value::Object(args.clone()).to_string().as_bytes());
            args.insert(
                "idempotency_key".into(),
                json!(format!("crsync_{}", &hex::encode(digest)[..48])),
            );
            args.insert("context".into(), json!({"advertiser_id": adv_id}));
            out.push(Call {
                storefront_id: sf,
                items: batch,
                arguments: args,
            });
        }
    }
    Ok(out)
}

/// Each item's outcome from the seller's answer (or the failure to get
/// one), with the revision sent.
fn read(items: Vec<Item>, answer: Result<Value, Value>) -> Vec<(SyncResult, i64)> {
    let result = |i: &Item, status: &str, action: Option<String>, review, errors: Value| {
        (
            SyncResult {
                creative_id: i.creative_id.clone(),
                media_buy_id: i.media_buy_id.clone(),
                storefront_id: i.storefront_id,
                adcp_creative_id: i.adcp_creative_id.clone(),
                click_url: i.click_url.clone(),
                sync_status: status.to_string(),
                action,
                review_status: review,
                errors,
            },
            i.revision,
        )
    };
    let payload = match answer {
        Err(e) => {
            return items
                .iter()
                .map(|i| result(i, FAILED, None, None, json!([e])))
                .collect();
        }
        Ok(p) => p,
    };
    if let Some(list) = payload.get("creatives").and_then(Value::as_array) {
        let by_id: HashMap<&str, &Value> = list
            .iter()
            .filter_map(|c| Some((c.get("creative_id")?.as_str()?, c)))
            .collect();
        return items
            .iter()
            .map(|i| match by_id.get(i.adcp_creative_id.as_str()) {
                None => result(
                    i,
                    FAILED,
                    None,
                    None,
                    json!([{"code": "SELLER_PROTOCOL_ERROR", "message": "the seller's answer does not list this creative"}]),
                ),
                Some(c) => {
                    let text = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
                    let action = text("action");
                    let mut errors: Vec<Value> = c
                        .get("errors")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    if let Some(Value::Object(by_package)) = c.get("assignment_errors") {
                        for (package, message) in by_package {
                            errors.push(json!({"code": "ASSIGNMENT_FAILED", "message": message, "package_id": package}));
                        }
                    }
                    let status = if action.as_deref() == Some("failed") || !errors.is_empty() {
                        FAILED
                    } else {
                        SYNCED
                    };
                    result(i, status, action, text("status"), Value::Array(errors))
                }
            })
            .collect();
    }
    if payload.get("status").and_then(Value::as_str) == Some("submitted")
        && payload.get("task_id").is_some()
    {
        return items
            .iter()
            .map(|i| result(i, SUBMITTED, None, None, json!([])))
            .collect();
    }
    let errors = match payload.get("errors") {
        Some(Value::Array(e)) if !e.is_empty() => Value::Array(e.clone()),
        _ => {
            json!([{"code": "SELLER_PROTOCOL_ERROR", "message": "the answer has no creatives, task_id or errors"}])
        }
    };
    items
        .iter()
        .map(|i| result(i, FAILED, None, None, errors.clone()))
        .collect()
}

/// Records every outcome in one transaction.
async fn record(ctx: &Ctx, results: &[(SyncResult, i64)]) -> Result<(), ApiError> {
    let now = Utc::now();
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    for (r, revision) in results {
        let mut q = assignment::Entity::update_many()
            .col_expr(
                assignment::Column::SyncStatus,
                Expr::value(r.sync_status.clone()),
            )
            .col_expr(assignment::Column::Action, Expr::value(r.action.clone()))
            .col_expr(
                assignment::Column::Errors,
                Expr::value(r.errors.to_string()),
            )
            .col_expr(
                assignment::Column::ClickUrl,
                Expr::value(r.click_url.clone()),
            )
            .col_expr(assignment::Column::SyncedAt, Expr::value(now))
            .col_expr(assignment::Column::UpdatedAt, Expr::value(now));
        if r.sync_status != FAILED {
            q = q
                .col_expr(assignment::Column::SyncedRevision, Expr::value(*revision))
                .col_expr(
                    assignment::Column::ReviewStatus,
                    Expr::value(r.review_status.clone()),
                );
        }
        q.filter(assignment::Column::CreativeId.eq(r.creative_id.clone()))
            .filter(assignment::Column::MediaBuyId.eq(r.media_buy_id.clone()))
            .exec(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(())
}
