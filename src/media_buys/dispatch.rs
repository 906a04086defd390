//! Executing: DRAFT buys claimed (`dispatching`) in one transaction with the
//! pricing and credit checks, sent to their sellers concurrently (AdCP
//! `create_media_buy`, each with its buy's idempotency key), and every
//! answer recorded in one transaction before anything is announced.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, SecondsFormat, Utc};
use futures_util::future::join_all;
use sea_orm::{
    ColumnTrait, Condition, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter,
    QueryOrder, QuerySelect,
};
use serde_json::{Map, Value, json};

use entity::{account_credit_limit, advertiser, advertiser_linked_account, campaign, media_buy};

use super::model::{DISPATCHING, DRAFT, LIVE, SUBMITTED};
use super::outcome::{self, Outcome};
use crate::discovery::seller::{SellerClient, StorefrontTarget};

type JsonObject = Map<String, Value>;
use crate::discovery::sellers::Sellers;
use crate::error::{ApiError, Kind};
use crate::notifications::Notices;
use crate::ops::Ctx;

pub const CREATE_MEDIA_BUY: &str = "create_media_buy";

/// Sends the campaign's DRAFT buys (those in `only`, when given) and the
/// ones a crashed or timed-out attempt left `dispatching`; returns once
/// every answer is recorded. Nothing is sent when a buy has no price (409
/// `PRICING_NOT_CONFIGURED`) or the account's credit would be exceeded
/// (402 `CREDIT_LIMIT_EXCEEDED`).
pub async fn execute(
    ctx: &Ctx,
    account_id: &str,
    campaign_id: &str,
    only: Option<&[String]>,
) -> Result<(), ApiError> {
    let (claimed, notices) = {
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        let claimed = claim(ctx, &txn, account_id, campaign_id, only, &HashMap::new()).await?;
        txn.commit().await?;
        claimed
    };
    notices.publish(&ctx.bus).await;
    send(ctx, claimed).await
}

pub fn call_timeout(ctx: &Ctx) -> std::time::Duration {
    ctx.get::<SellerClient>()
        .map(|c| c.options().call_timeout)
        .unwrap_or(std::time::Duration::from_secs(30))
}

/// Claims the buys to send, in the caller's transaction: DRAFT ones, and
/// `dispatching` ones whose attempt is older than a call could take (the
/// process died, or the answer never came). `fresh` maps buys written by
/// this same transaction to their selection's index, so a refusal names
/// the selection (those buys are rolled back with it). Also answers the
/// `credit_limit.near` notifications written, to publish after the commit.
pub async fn claim(
    ctx: &Ctx,
    txn: &DatabaseTransaction,
    account_id: &str,
    campaign_id: &str,
    only: Option<&[String]>,
    fresh: &HashMap<String, usize>,
) -> Result<(Vec<media_buy::Model>, Notices), ApiError> {
    let timeout = call_timeout(ctx);
    let now = Utc::now();
    let stale = now
        - chrono::Duration::from_std(timeout).unwrap_or_default()
        - chrono::Duration::seconds(5);
    let mut q = media_buy::Entity::find()
        .filter(media_buy::Column::AccountId.eq(account_id))
        .filter(media_buy::Column::CampaignId.eq(campaign_id))
        .filter(
            Condition::any()
                .add(media_buy::Column::Status.eq(DRAFT))
                .add(
                    Condition::all()
                        .add(media_buy::Column::Status.eq(DISPATCHING))
                        .add(media_buy::Column::DispatchedAt.lt(stale)),
                ),
        );
    if let Some(ids) = only {
        q = q.filter(media_buy::Column::Id.is_in(ids.iter().cloned()));
    }
    let candidates = q
        .order_by_asc(media_buy::Column::CreatedAt)
        .lock_exclusive()
        .all(txn)
        .await?;
    if candidates.is_empty() {
        return Ok((candidates, Notices::default()));
    }
    let unpriced: Vec<&media_buy::Model> = candidates.iter().filter(|b| !b.priced).collect();
    if !unpriced.is_empty() {
        let ids: Vec<&str> = unpriced
            .iter()
            .filter(|b| !fresh.contains_key(&b.id))
            .map(|b| b.id.as_str())
            .collect();
        let mut selections: Vec<usize> = unpriced
            .iter()
            .filter_map(|b| fresh.get(&b.id).copied())
            .collect();
        selections.sort_unstable();
        return Err(ApiError::coded(
            Kind::Conflict,
            "PRICING_NOT_CONFIGURED",
            "media buys on auction pricing need a bidPrice before they can be executed",
            json!({ "unpricedBuyIds": ids, "unpricedSelections": selections }),
        ));
    }
    let near = check_credit(txn, account_id, &candidates).await?;
    // Claimed with our timestamp; the poller re-sends them after a call's
    // time if this process never records an answer.
    let retry_at =
        now + chrono::Duration::from_std(timeout + super::poll_every(ctx)).unwrap_or_default();
    let ids: Vec<String> = candidates.iter().map(|b| b.id.clone()).collect();
    media_buy::Entity::update_many()
        .col_expr(
            media_buy::Column::Status,
            sea_orm::sea_query::Expr::value(DISPATCHING),
        )
        .col_expr(
            media_buy::Column::DispatchedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .col_expr(
            media_buy::Column::NextPollAt,
            sea_orm::sea_query::Expr::value(retry_at),
        )
        .col_expr(
            media_buy::Column::UpdatedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(media_buy::Column::Id.is_in(ids))
        .exec(txn)
        .await?;
    // Last in the transaction: the notifications' sequence lock.
    let mut notices = Notices::default();
    for n in near {
        notices.merge(
            crate::notifications::notify(txn, n.notification(account_id, campaign_id), now).await?,
        );
    }
    Ok((candidates, notices))
}

/// Committed spend in a currency crossing the near share of its credit
/// limit with this claim.
struct NearLimit {
    currency: String,
    limit: f64,
    committed: f64,
}

impl NearLimit {
    fn notification(&self, account_id: &str, campaign_id: &str) -> crate::notifications::New {
        let share = (self.committed / self.limit * 100.0).floor();
        crate::notifications::New {
            account_id: account_id.to_string(),
            topic: crate::notifications::topics::CREDIT_LIMIT_NEAR,
            title: format!("{share}% of the {} credit limit committed", self.currency),
            body: format!(
                "Committed spend is {} {cur} of the account's {} {cur} credit limit.",
                self.committed,
                self.limit,
                cur = self.currency
            ),
            data: json!({
                "currency": self.currency,
                "creditLimit": self.limit,
                "committed": self.committed,
                "campaignId": campaign_id,
            }),
        }
    }
}

/// Spend the account has committed in `currency`, real buys only: sandbox
/// buys never spend.
async fn committed(
    conn: &impl ConnectionTrait,
    account_id: &str,
    currency: &str,
    excluding: &[String],
) -> Result<f64, ApiError> {
    let mut statuses: Vec<&str> = LIVE.to_vec();
    statuses.extend([DISPATCHING, SUBMITTED, "completed"]);
    let rows: Vec<f64> = media_buy::Entity::find()
        .select_only()
        .column(media_buy::Column::Budget)
        .filter(media_buy::Column::AccountId.eq(account_id))
        .filter(media_buy::Column::Currency.eq(currency))
        .filter(media_buy::Column::Sandbox.eq(false))
        .filter(media_buy::Column::Status.is_in(statuses))
        .filter(media_buy::Column::Id.is_not_in(excluding.iter().cloned()))
        .into_tuple()
        .all(conn)
        .await?;
    Ok(rows.into_iter().sum())
}

/// 402 when the real buys to send would take the account's committed spend
/// in a currency above the operator's limit for it (none: unlimited). The
/// limit's row is locked, so two executions cannot both pass on it, and
/// exactly one of them crosses the near share ([`NearLimit`]).
async fn check_credit(
    txn: &DatabaseTransaction,
    account_id: &str,
    buys: &[media_buy::Model],
) -> Result<Vec<NearLimit>, ApiError> {
    let mut near = Vec::new();
    let mut by_currency: BTreeMap<&str, f64> = BTreeMap::new();
    for b in buys.iter().filter(|b| !b.sandbox) {
        *by_currency.entry(b.currency.as_str()).or_default() += b.budget;
    }
    let ids: Vec<String> = buys.iter().map(|b| b.id.clone()).collect();
    for (currency, requested) in by_currency {
        let Some(limit) = account_credit_limit::Entity::find_by_id((
            account_id.to_string(),
            currency.to_string(),
        ))
        .lock_exclusive()
        .one(txn)
        .await?
        else {
            continue;
        };
        let committed = committed(txn, account_id, currency, &ids).await?;
        if committed + requested > limit.credit_limit + 1e-9 {
            return Err(ApiError::coded(
                Kind::PaymentRequired,
                "CREDIT_LIMIT_EXCEEDED",
                format!(
                    "committed spend would be {} {currency}, above the account's credit limit of {} {currency}",
                    committed + requested,
                    limit.credit_limit
                ),
                json!({
                    "currency": currency,
                    "creditLimit": limit.credit_limit,
                    "committed": committed,
                    "requested": requested,
                }),
            ));
        }
        let threshold = limit.credit_limit * crate::notifications::topics::CREDIT_NEAR_SHARE;
        if limit.credit_limit > 0.0 && committed < threshold && committed + requested >= threshold {
            near.push(NearLimit {
                currency: currency.to_string(),
                limit: limit.credit_limit,
                committed: committed + requested,
            });
        }
    }
    Ok(near)
}

/// What one buy needs to be sent.
struct Outgoing {
    buy: media_buy::Model,
    target: Result<StorefrontTarget, String>,
    arguments: JsonObject,
}

/// Sends the claimed buys concurrently and records every answer.
pub async fn send(ctx: &Ctx, claimed: Vec<media_buy::Model>) -> Result<(), ApiError> {
    if claimed.is_empty() {
        return Ok(());
    }
    let sellers = ctx.get::<Sellers>()?.clone();
    let mut prepared = Vec::with_capacity(claimed.len());
    let mut to_store = Vec::new();
    // Read once per storefront and campaign, not per buy.
    let mut targets: HashMap<i64, Result<StorefrontTarget, String>> = HashMap::new();
    let mut secrets: HashMap<i64, String> = HashMap::new();
    let mut context: HashMap<String, (campaign::Model, advertiser::Model)> = HashMap::new();
    for buy in claimed {
        let target = match targets.entry(buy.storefront_id) {
            Entry::Occupied(t) => t.get().clone(),
            Entry::Vacant(slot) => {
                let t = crate::discovery::storefronts::target(
                    &ctx.db,
                    buy.storefront_id,
                    ctx.config.url_policy(),
                )
                .await?
                .unwrap_or_else(|| Err("the storefront is no longer registered".into()));
                slot.insert(t).clone()
            }
        };
        let (c, a) = match context.entry(buy.campaign_id.clone()) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(slot) => {
                let c = campaign::Entity::find_by_id(buy.campaign_id.clone())
                    .one(&ctx.db)
                    .await?
                    .ok_or_else(|| ApiError::not_found("campaign"))?;
                let a = advertiser::Entity::find_by_id(buy.advertiser_id.clone())
                    .one(&ctx.db)
                    .await?
                    .ok_or_else(|| ApiError::not_found("advertiser"))?;
                slot.insert((c, a))
            }
        };
        let (c, a) = (&*c, &*a);
        let secret = match secrets.entry(buy.storefront_id) {
            Entry::Occupied(e) => e.get().clone(),
            Entry::Vacant(slot) => slot
                .insert(
                    super::secrets::for_storefront(&ctx.db, &ctx.config, buy.storefront_id).await?,
                )
                .clone(),
        };
        // A retry sends the first attempt's payload: sellers match a
        // repeated idempotency key against the same request.
        let first = buy
            .adcp_request
            .as_deref()
            .and_then(|r| serde_json::from_str::<JsonObject>(r).ok());
        let arguments = match first {
            Some(a) => a,
            None => {
                let account = account_ref(&ctx.db, a, buy.storefront_id, buy.sandbox).await?;
                let args = create_arguments(&buy, c, a, account, &ctx.public_url);
                to_store.push((buy.id.clone(), Value::Object(args.clone()).to_string()));
                args
            }
        };
        prepared.push(Outgoing {
            buy,
            target,
            arguments: with_secret(arguments, &secret),
        });
    }
    if !to_store.is_empty() {
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        for (id, request) in to_store {
            media_buy::Entity::update_many()
                .col_expr(
                    media_buy::Column::AdcpRequest,
                    sea_orm::sea_query::Expr::value(request),
                )
                .filter(media_buy::Column::Id.eq(id))
                .filter(media_buy::Column::AdcpRequest.is_null())
                .exec(&txn)
                .await?;
        }
        txn.commit().await?;
    }
    let calls = prepared.into_iter().map(|s| {
        let sellers = sellers.clone();
        async move {
            let outcome = match &s.target {
                Err(reason) => Outcome::Refused {
                    errors: vec![json!({"code": "SELLER_ADDRESS_REFUSED", "message": reason})],
                    status: super::model::FAILED.into(),
                },
                Ok(target) => {
                    let seller = sellers.for_storefront(target);
                    match seller
                        .call_task(target, CREATE_MEDIA_BUY, s.arguments)
                        .await
                    {
                        Ok(payload) => outcome::read_create(&payload),
                        Err(e) => outcome::from_error(&e),
                    }
                }
            };
            (s.buy, outcome)
        }
    });
    let answers = join_all(calls).await;
    record(ctx, answers).await
}

/// Records answers in one transaction, then announces what changed.
pub async fn record(ctx: &Ctx, answers: Vec<(media_buy::Model, Outcome)>) -> Result<(), ApiError> {
    let now = Utc::now();
    let (changed, launched, kicks, notices) = {
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        let mut changed = Vec::new();
        for (buy, o) in &answers {
            if let Outcome::Unknown { error, .. } = o {
                tracing::warn!(media_buy = %buy.id, storefront = buy.storefront_id, %error, "media buy outcome unknown; it is asked again with the same idempotency key");
            }
            if let Some(row) = outcome::apply(&txn, &buy.id, o, now, super::poll_every(ctx)).await?
            {
                changed.push(row);
            }
        }
        let kicks = outcome::queue_webhooks(&txn, &changed, now).await?;
        let mut campaigns: Vec<String> =
            answers.iter().map(|(b, _)| b.campaign_id.clone()).collect();
        campaigns.sort();
        campaigns.dedup();
        let launched = outcome::launch_settled(&txn, &campaigns, now).await?;
        let notices = outcome::notify_changed(&txn, &changed, now).await?;
        txn.commit().await?;
        (changed, launched, kicks, notices)
    };
    notices.publish(&ctx.bus).await;
    for id in &launched {
        tracing::info!(campaign = %id, "campaign launched: its media buys are live");
    }
    for row in &changed {
        ctx.bus.publish(super::events::status(row)).await;
    }
    crate::outbox::announce(&ctx.bus, &kicks);
    Ok(())
}

/// The AdCP account: the advertiser's active linked account at this storefront,
/// else the natural key (brand, operator = the brand, sandbox for a
/// sandbox advertiser).
pub async fn account_ref(
    db: &impl ConnectionTrait,
    a: &advertiser::Model,
    storefront_id: i64,
    sandbox: bool,
) -> Result<Value, ApiError> {
    let linked = advertiser_linked_account::Entity::find()
        .filter(advertiser_linked_account::Column::AdvertiserId.eq(a.id.clone()))
        .filter(advertiser_linked_account::Column::StorefrontId.eq(storefront_id))
        .filter(advertiser_linked_account::Column::Status.eq("active"))
        .one(db)
        .await?;
    Ok(match linked {
        Some(l) if !sandbox => json!({ "account_id": l.account_ref }),
        _ => {
            let mut acc = json!({"brand": {"domain": a.brand}, "operator": a.brand});
            if sandbox {
                acc["sandbox"] = json!(true);
            }
            acc
        }
    })
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `create_media_buy`'s arguments for one buy (one package).
fn create_arguments(
    b: &media_buy::Model,
    c: &campaign::Model,
    a: &advertiser::Model,
    account: Value,
    public_url: &str,
) -> JsonObject {
    let package: Value = serde_json::from_str(&b.package).unwrap_or_else(|_| json!({}));
    let start = if c.start_date <= Utc::now() {
        json!("asap")
    } else {
        json!(rfc3339(c.start_date))
    };
    let mut m = Map::new();
    m.insert("idempotency_key".into(), json!(b.idempotency_key));
    m.insert("account".into(), account);
    m.insert("brand".into(), json!({"domain": a.brand}));
    m.insert("start_time".into(), start);
    m.insert("end_time".into(), json!(rfc3339(c.end_date)));
    if b.kind == "proposal" {
        // The seller derives the packages from its proposal's allocations.
        m.insert("proposal_id".into(), json!(b.proposal_id));
        m.insert(
            "total_budget".into(),
            json!({"amount": b.budget, "currency": b.currency}),
        );
    } else {
        m.insert("packages".into(), json!([package]));
    }
    m.insert(
        "push_notification_config".into(),
        json!({
            "url": format!("{public_url}{}/{}", super::callbacks::PATH_PREFIX, b.storefront_id),
            "operation_id": b.id,
        }),
    );
    m.insert(
        "context".into(),
        json!({"media_buy_id": b.id, "campaign_id": b.campaign_id}),
    );
    m
}

/// The callback secret goes in at send time only (it is never stored with
/// the request): AdCP's HMAC-SHA256 scheme.
fn with_secret(mut args: JsonObject, secret: &str) -> JsonObject {
    if let Some(Value::Object(push)) = args.get_mut("push_notification_config") {
        push.insert(
            "authentication".into(),
            json!({"schemes": ["HMAC-SHA256"], "credentials": secret}),
        );
    }
    args
}
