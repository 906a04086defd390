//! The supervised refresh of non-terminal buys: every tick, the instance
//! takes a lease on the buys that are due (`next_poll_at` passed, nobody
//! else's live lease), asks their sellers, records what they said, and lets
//! the leases go. One statement takes the leases, with the lease condition
//! at its top level, so on PostgreSQL a second instance racing for the same
//! rows re-checks them after the first commits and skips them: each buy is
//! polled by one instance at a time.
//!
//! - A buy the seller has (`adcp_media_buy_id`): AdCP `get_media_buys`,
//!   up to 100 ids per call, one call per seller at a time.
//! - A buy still `dispatching` (no answer was recorded: a timeout, a crash)
//!   or `submitted` (a task): `create_media_buy` again with its idempotency
//!   key, which answers with the buy (or the task) the seller already has
//!   and can never make a second one.
//!
//! - A buy due for its delivery report: AdCP `get_media_buy_delivery`, on
//!   its own cadence ([`super::delivery`]).
//!
//! The next refresh is 30 s later plus up to 10 % jitter; after failures,
//! doubled per failure up to 15 min, never sooner than a seller's
//! `retry_after`, plus up to 25 % jitter ([`super::outcome::next_poll`]); `active`, `completed`, `failed`,
//! `rejected` and `canceled` end polling.

use std::collections::BTreeMap;
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use futures_util::future::join_all;
use sea_orm::sea_query::{Expr, Query};
use sea_orm::{ColumnTrait, Condition, EntityTrait, QueryFilter};
use serde_json::{Map, Value, json};

use entity::media_buy;

use super::model::{DISPATCHING, LIVE, SUBMITTED};
use super::outcome::Outcome;
use crate::discovery::sellers::Sellers;
use crate::ops::Ctx;

pub const GET_MEDIA_BUYS: &str = "get_media_buys";
/// Buys taken per tick.
const BATCH: u64 = 1_000;
/// Ids per `get_media_buys` call.
const IDS_PER_CALL: usize = 100;

/// Starts this instance's poller (restarted by its supervisor if it fails).
pub fn start(ctx: &Ctx, tick: Duration) -> Addr<Poller> {
    let ctx = ctx.clone();
    Supervisor::start(move |_| Poller {
        ctx,
        tick,
        busy: false,
    })
}

pub struct Poller {
    ctx: Ctx,
    tick: Duration,
    busy: bool,
}

impl Actor for Poller {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.tick, |act, ctx| {
            if act.ctx.shutdown.is_cancelled() {
                ctx.stop();
                return;
            }
            if act.busy {
                return;
            }
            act.busy = true;
            let c = act.ctx.clone();
            let round = async move { crate::rt::detached(poll_once(c)).await };
            ctx.spawn(round.into_actor(act).map(|res, act, _| {
                act.busy = false;
                match res {
                    Some(Err(e)) => tracing::warn!(error = %e, "media-buy poller round failed"),
                    None => tracing::warn!("media-buy poller round was cancelled"),
                    Some(Ok(_)) => {}
                }
            }));
        });
    }
}

impl Supervised for Poller {
    fn restarting(&mut self, _: &mut Context<Self>) {
        self.busy = false;
    }
}

/// One round; how many buys it refreshed.
pub async fn poll_once(ctx: Ctx) -> Result<usize, crate::error::ApiError> {
    let me = ctx.bus.instance_id().to_string();
    let now = Utc::now();
    let until = now + chrono::Duration::seconds(120);
    // Take the due buys nobody holds: the lease condition is repeated at
    // the top level so a racing instance re-checks it on each row.
    let free = || {
        Condition::any()
            .add(media_buy::Column::PollLeaseUntil.is_null())
            .add(media_buy::Column::PollLeaseUntil.lt(now))
    };
    // The buys due for a status refresh, then those due for a delivery
    // pull, each most overdue first (a buy may be both).
    for due_at in [
        media_buy::Column::NextPollAt,
        media_buy::Column::DeliveryNextAt,
    ] {
        let due = Query::select()
            .column(media_buy::Column::Id)
            .from(media_buy::Entity)
            .cond_where(Condition::all().add(due_at.lte(now)).add(free()))
            .order_by(due_at, sea_orm::Order::Asc)
            .limit(BATCH)
            .to_owned();
        let _turn = ctx.writes.enter().await;
        media_buy::Entity::update_many()
            .col_expr(media_buy::Column::PollLeaseOwner, Expr::value(me.clone()))
            .col_expr(media_buy::Column::PollLeaseUntil, Expr::value(until))
            .filter(media_buy::Column::Id.in_subquery(due))
            .filter(free())
            .exec(&ctx.db)
            .await?;
    }
    let taken = media_buy::Entity::find()
        .filter(media_buy::Column::PollLeaseOwner.eq(me.clone()))
        .filter(media_buy::Column::PollLeaseUntil.eq(until))
        .all(&ctx.db)
        .await?;
    if taken.is_empty() {
        return Ok(0);
    }
    let n = taken.len();
    let ids: Vec<String> = taken.iter().map(|b| b.id.clone()).collect();
    let result = refresh(&ctx, taken, now).await;
    {
        let _turn = ctx.writes.enter().await;
        media_buy::Entity::update_many()
            .col_expr(
                media_buy::Column::PollLeaseOwner,
                Expr::value(Option::<String>::None),
            )
            .col_expr(
                media_buy::Column::PollLeaseUntil,
                Expr::value(Option::<chrono::DateTime<Utc>>::None),
            )
            .col_expr(media_buy::Column::LastPolledAt, Expr::value(Utc::now()))
            .filter(media_buy::Column::Id.is_in(ids))
            .filter(media_buy::Column::PollLeaseOwner.eq(me))
            .exec(&ctx.db)
            .await?;
    }
    result.map(|_| n)
}

/// Asks the sellers about `buys` (the status of those due for it, the
/// delivery of those due for that) and records what they said.
async fn refresh(
    ctx: &Ctx,
    buys: Vec<media_buy::Model>,
    now: chrono::DateTime<Utc>,
) -> Result<(), crate::error::ApiError> {
    let due = |at: Option<chrono::DateTime<Utc>>| at.is_some_and(|t| t <= now);
    let delivery: Vec<media_buy::Model> = buys
        .iter()
        .filter(|b| due(b.delivery_next_at) && b.adcp_media_buy_id.is_some())
        .cloned()
        .collect();
    let status: Vec<media_buy::Model> = buys.into_iter().filter(|b| due(b.next_poll_at)).collect();
    let (status, delivery) = futures_util::future::join(
        refresh_status(ctx, status),
        super::delivery::pull(ctx, delivery),
    )
    .await;
    status.and(delivery)
}

/// Refreshes the status of `buys`: re-sends those whose create has no
/// answer yet, asks `get_media_buys` about the others.
async fn refresh_status(
    ctx: &Ctx,
    buys: Vec<media_buy::Model>,
) -> Result<(), crate::error::ApiError> {
    let (resend, known): (Vec<_>, Vec<_>) = buys
        .into_iter()
        .partition(|b| b.status == DISPATCHING || b.status == SUBMITTED);
    if !resend.is_empty() {
        super::dispatch::send(ctx, resend).await?;
    }
    let known: Vec<media_buy::Model> = known
        .into_iter()
        .filter(|b| LIVE.contains(&b.status.as_str()) && b.adcp_media_buy_id.is_some())
        .collect();
    if known.is_empty() {
        return Ok(());
    }
    let answers: Vec<(media_buy::Model, Outcome)> = ask_sellers(ctx, known, GET_MEDIA_BUYS)
        .await?
        .into_iter()
        .flat_map(|(chunk, answer)| read_statuses(chunk, answer))
        .collect();
    super::dispatch::record(ctx, answers).await
}

/// Asks each buy's seller `task` about its buys (`media_buy_ids`, up to 100
/// per call), every call at once; each chunk of buys with its answer, or
/// with why there is none.
pub(super) async fn ask_sellers(
    ctx: &Ctx,
    buys: Vec<media_buy::Model>,
    task: &'static str,
) -> Result<Vec<(Vec<media_buy::Model>, Result<Value, Outcome>)>, crate::error::ApiError> {
    let sellers = ctx.get::<Sellers>()?.clone();
    let mut by_storefront: BTreeMap<i64, Vec<media_buy::Model>> = BTreeMap::new();
    for b in buys {
        by_storefront.entry(b.storefront_id).or_default().push(b);
    }
    let mut calls = Vec::new();
    for (storefront_id, buys) in by_storefront {
        let target =
            crate::discovery::storefronts::target(&ctx.db, storefront_id, ctx.config.url_policy())
                .await?;
        for chunk in buys.chunks(IDS_PER_CALL) {
            let chunk = chunk.to_vec();
            let sellers = sellers.clone();
            let target = target.clone();
            calls.push(async move {
                let ids: Vec<&str> = chunk
                    .iter()
                    .filter_map(|b| b.adcp_media_buy_id.as_deref())
                    .collect();
                let mut args = Map::new();
                args.insert("media_buy_ids".into(), json!(ids));
                let answer = match &target {
                    Some(Ok(t)) => sellers
                        .for_storefront(t)
                        .call_task(t, task, args)
                        .await
                        .map_err(|e| super::outcome::from_error(&e)),
                    _ => Err(Outcome::Unknown {
                        error: json!({"code": "SELLER_ADDRESS_REFUSED", "message": "the storefront cannot be reached"}),
                        retry_after: None,
                    }),
                };
                (chunk, answer)
            });
        }
    }
    Ok(join_all(calls).await)
}

/// The entries of an answer's array `key`, by their `media_buy_id`.
pub(super) fn by_media_buy_id<'a>(payload: &'a Value, key: &str) -> BTreeMap<&'a str, &'a Value> {
    payload
        .get(key)
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|m| {
                    m.get("media_buy_id")
                        .and_then(Value::as_str)
                        .map(|id| (id, m))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Each buy's outcome from one `get_media_buys` answer (or its failure).
fn read_statuses(
    chunk: Vec<media_buy::Model>,
    answer: Result<Value, Outcome>,
) -> Vec<(media_buy::Model, Outcome)> {
    let payload = match answer {
        Ok(p) => p,
        Err(o) => {
            // A refusal of the read is not the buy's failure: keep polling.
            let o = match o {
                Outcome::Refused { errors, .. } => Outcome::Unknown {
                    error: errors.into_iter().next().unwrap_or(Value::Null),
                    retry_after: None,
                },
                o => o,
            };
            return chunk.into_iter().map(|b| (b, o.clone())).collect();
        }
    };
    let listed = by_media_buy_id(&payload, "media_buys");
    chunk
        .into_iter()
        .map(|b| {
            let seen = b.adcp_media_buy_id.as_deref().and_then(|id| listed.get(id));
            let o = match seen.and_then(|m| super::outcome::lifecycle(m).map(|s| (m, s))) {
                Some((m, s)) => Outcome::Status {
                    status: s.to_string(),
                    revision: m.get("revision").and_then(Value::as_i64),
                },
                None => Outcome::Unknown {
                    error: json!({"code": "MEDIA_BUY_NOT_LISTED", "message": "the seller's get_media_buys did not list this buy with a status"}),
                    retry_after: None,
                },
            };
            (b, o)
        })
        .collect()
}
