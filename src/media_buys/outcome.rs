//! What a seller said about a buy, and recording it: one fenced update per
//! buy (an outcome never moves a buy backwards), then the announcement
//! (bus and webhook) of every status that changed, and the campaign's
//! launch once its cart is settled.

use std::time::Duration;

use chrono::{DateTime, Utc};
use rand::Rng;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, IntoActiveModel, QueryFilter,
    QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{campaign, media_buy};

use super::model::{ADCP_STATUSES, DISPATCHING, DRAFT, FAILED, LIVE, SUBMITTED, TERMINAL};
use crate::discovery::seller::SellerError;
use crate::outbox::Kicks;

/// The longest backoff after failed refreshes.
pub const POLL_MAX_BACKOFF: Duration = Duration::from_secs(15 * 60);

/// What one call to a seller told us about one buy.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// The seller made the buy (or already had it, for this idempotency key).
    Made {
        adcp_id: String,
        status: String,
        revision: Option<i64>,
        /// The seller's `packages[].package_id` (creative assignments name
        /// them); empty when the answer lists none.
        package_ids: Vec<String>,
    },
    /// The seller refused it in its answer (`errors[]`), or it could not
    /// be sent at all.
    Refused { errors: Vec<Value>, status: String },
    /// The seller took it as a task, completed later.
    Submitted { task_id: String },
    /// Not known whether the seller made it: asked again later with the
    /// same idempotency key.
    Unknown {
        error: Value,
        retry_after: Option<Duration>,
    },
    /// The seller's current status of a buy it has (a refresh or an update).
    Status {
        status: String,
        revision: Option<i64>,
    },
}

/// Reads a `create_media_buy` answer.
pub fn read_create(payload: &Value) -> Outcome {
    let text = |k: &str| payload.get(k).and_then(Value::as_str);
    if let Some(id) = text("media_buy_id") {
        return Outcome::Made {
            adcp_id: id.to_string(),
            status: lifecycle(payload).unwrap_or("pending_start").to_string(),
            revision: payload.get("revision").and_then(Value::as_i64),
            package_ids: payload
                .get("packages")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("package_id").and_then(Value::as_str))
                .map(str::to_string)
                .collect(),
        };
    }
    if matches!(
        text("status"),
        Some("submitted" | "working" | "input-required")
    ) && let Some(task) = text("task_id")
    {
        return Outcome::Submitted {
            task_id: task.to_string(),
        };
    }
    if let Some(errors) = payload.get("errors").and_then(Value::as_array)
        && !errors.is_empty()
    {
        let transient = errors
            .iter()
            .all(|e| e.get("recovery").and_then(Value::as_str) == Some("transient"));
        if transient {
            return Outcome::Unknown {
                error: errors[0].clone(),
                retry_after: retry_after(&errors[0]),
            };
        }
        return Outcome::Refused {
            errors: errors.clone(),
            status: FAILED.into(),
        };
    }
    Outcome::Unknown {
        error: json!({"code": "SELLER_PROTOCOL_ERROR", "message": "the answer has no media_buy_id, task_id or errors"}),
        retry_after: None,
    }
}

/// The AdCP lifecycle status of a buy in an answer, if it is one.
pub fn lifecycle(payload: &Value) -> Option<&str> {
    ["media_buy_status", "status"]
        .iter()
        .filter_map(|k| payload.get(*k).and_then(Value::as_str))
        .find(|s| ADCP_STATUSES.contains(s))
}

fn retry_after(error: &Value) -> Option<Duration> {
    error
        .get("retry_after")
        .and_then(Value::as_f64)
        .filter(|s| s.is_finite())
        .map(|s| Duration::from_secs_f64(s.clamp(1.0, 3600.0)))
}

/// A failed call: unknown when the seller may have acted (a timeout, a cut
/// connection, a server error), refused when it cannot have.
pub fn from_error(e: &SellerError) -> Outcome {
    let error = json!({"code": e.code(), "message": e.to_string()});
    match e {
        SellerError::Rejected(a) if a.recovery.as_deref() == Some("transient") => {
            Outcome::Unknown {
                error: serde_json::to_value(a.as_ref()).unwrap_or(error),
                retry_after: a.retry_after.map(Duration::from_secs_f64),
            }
        }
        SellerError::Rejected(a) => Outcome::Refused {
            errors: vec![serde_json::to_value(a.as_ref()).unwrap_or(error)],
            status: FAILED.into(),
        },
        SellerError::Refused(_) | SellerError::InvalidQuery(_) => Outcome::Refused {
            errors: vec![error],
            status: FAILED.into(),
        },
        SellerError::Http { status } if *status < 500 && *status != 429 && *status != 408 => {
            Outcome::Refused {
                errors: vec![error],
                status: FAILED.into(),
            }
        }
        _ => Outcome::Unknown {
            error,
            retry_after: None,
        },
    }
}

/// The next refresh after `failures` failed ones in a row. A healthy buy:
/// `every` (30 s, the spec's floor) plus up to 10 % jitter, so buys of one
/// seller spread out and each is still refreshed within about its cadence.
/// After failures: doubled per failure up to 15 min, never sooner than the
/// seller's `Retry-After`, plus up to 25 % jitter (the spec's backoff).
pub fn next_poll(
    now: DateTime<Utc>,
    every: Duration,
    failures: i32,
    retry_after: Option<Duration>,
) -> DateTime<Utc> {
    let base = every
        .saturating_mul(1u32 << failures.clamp(0, 8))
        .min(POLL_MAX_BACKOFF)
        .max(retry_after.unwrap_or_default());
    let spread = if failures > 0 { 0.25 } else { 0.10 };
    let jitter = rand::rng().random_range(0.0..spread);
    let wait = base.mul_f64(1.0 + jitter);
    now + chrono::Duration::from_std(wait).unwrap_or(chrono::Duration::seconds(30))
}

/// Applies `outcome` to the buy `id` inside the caller's transaction; the
/// changed row when its status changed. Fenced: each outcome moves a buy
/// only from the states it can follow, so a late or repeated answer (a
/// retry, a callback after a refresh) never moves a buy backwards.
pub async fn apply(
    conn: &impl ConnectionTrait,
    id: &str,
    outcome: &Outcome,
    now: DateTime<Utc>,
    every: Duration,
) -> Result<Option<media_buy::Model>, sea_orm::DbErr> {
    let Some(row) = media_buy::Entity::find_by_id(id)
        .lock_exclusive()
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let before = row.status.clone();
    let before_adcp = row.adcp_status.clone();
    let settled_by_seller = matches!(before.as_str(), "completed" | "canceled" | "rejected");
    let mut failures = row.poll_failures;
    let mut m = row.clone().into_active_model();
    let mut retry = None;
    match outcome {
        Outcome::Made {
            adcp_id,
            status,
            revision,
            package_ids,
        } => {
            if settled_by_seller || before == DRAFT {
                return Ok(None);
            }
            // A buy already live keeps its newer status; the id and the
            // revision are recorded wherever none is yet.
            if row.adcp_media_buy_id.is_none() {
                m.adcp_media_buy_id = Set(Some(adcp_id.clone()));
            }
            if row.adcp_package_ids.is_none() && !package_ids.is_empty() {
                m.adcp_package_ids = Set(Some(json!(package_ids).to_string()));
            }
            if [DISPATCHING, SUBMITTED, FAILED].contains(&before.as_str()) {
                m.status = Set(status.clone());
                m.adcp_status = Set(Some(status.clone()));
                m.errors = Set("[]".into());
            }
            if revision.is_some() {
                m.adcp_revision = Set(*revision);
            }
            failures = 0;
        }
        Outcome::Refused { errors, status } => {
            if ![DISPATCHING, SUBMITTED].contains(&before.as_str()) {
                return Ok(None);
            }
            m.status = Set(status.clone());
            m.errors = Set(Value::Array(errors.clone()).to_string());
        }
        Outcome::Submitted { task_id } => {
            if before != DISPATCHING && before != SUBMITTED {
                return Ok(None);
            }
            m.status = Set(SUBMITTED.into());
            m.adcp_task_id = Set(Some(task_id.clone()));
            m.errors = Set("[]".into());
            failures = 0;
        }
        Outcome::Unknown { error, retry_after } => {
            if before == DRAFT || TERMINAL.contains(&before.as_str()) {
                return Ok(None);
            }
            m.errors = Set(json!([error]).to_string());
            failures += 1;
            retry = *retry_after;
        }
        Outcome::Status { status, revision } => {
            if !LIVE.contains(&before.as_str()) && before != SUBMITTED {
                return Ok(None);
            }
            m.status = Set(status.clone());
            m.adcp_status = Set(Some(status.clone()));
            if revision.is_some() {
                m.adcp_revision = Set(*revision);
            }
            m.errors = Set("[]".into());
            failures = 0;
        }
    }
    let after = match &m.status {
        sea_orm::ActiveValue::Set(s) | sea_orm::ActiveValue::Unchanged(s) => s.clone(),
        sea_orm::ActiveValue::NotSet => before.clone(),
    };
    let after_adcp = match &m.adcp_status {
        sea_orm::ActiveValue::Set(s) | sea_orm::ActiveValue::Unchanged(s) => s.clone(),
        sea_orm::ActiveValue::NotSet => before_adcp.clone(),
    };
    let changed = after != before || after_adcp != before_adcp;
    if changed {
        m.previous_status = Set(Some(before.clone()));
        m.previous_adcp_status = Set(before_adcp);
        m.status_changed_at = Set(now);
    }
    // Delivery: the first pull one status cadence after the buy is live at
    // its seller, and a last one when it ends there ([`super::delivery`]).
    let known_at_seller =
        row.adcp_media_buy_id.is_some() || matches!(outcome, Outcome::Made { .. });
    if LIVE.contains(&after.as_str()) && row.delivery_next_at.is_none() && known_at_seller {
        m.delivery_next_at = Set(Some(
            now + chrono::Duration::from_std(every).unwrap_or_default(),
        ));
    } else if changed
        && LIVE.contains(&before.as_str())
        && matches!(after.as_str(), "completed" | "canceled")
    {
        m.delivery_next_at = Set(Some(now));
    }
    m.poll_failures = Set(failures);
    m.next_poll_at = Set(if TERMINAL.contains(&after.as_str()) {
        None
    } else {
        Some(next_poll(now, every, failures, retry))
    });
    m.updated_at = Set(now);
    let row = m.update(conn).await?;
    Ok(changed.then_some(row))
}

/// Announces changed buys: a webhook event each (queued in the caller's
/// transaction; the kicks to send after the commit).
pub async fn queue_webhooks(
    conn: &impl ConnectionTrait,
    changed: &[media_buy::Model],
    now: DateTime<Utc>,
) -> Result<Kicks, sea_orm::DbErr> {
    let mut kicks = Kicks::default();
    for b in changed {
        let k = crate::webhooks::events::emit(
            conn,
            &b.account_id,
            &super::events::webhook_scope(&b.campaign_id),
            super::events::WEBHOOK_EVENT,
            super::events::payload(b),
            now,
        )
        .await?;
        kicks.merge(k);
    }
    Ok(kicks)
}

/// Notifies the account's users of each changed buy
/// (`media_buy.status_changed`), in the caller's transaction, last: a
/// change is applied once (the fenced update), so it is notified once.
pub async fn notify_changed(
    conn: &sea_orm::DatabaseTransaction,
    changed: &[media_buy::Model],
    now: DateTime<Utc>,
) -> Result<crate::notifications::Notices, sea_orm::DbErr> {
    let mut notices = crate::notifications::Notices::default();
    // Accounts' sequence locks in one order, so two instances' rounds
    // cannot wait on each other.
    let mut changed: Vec<&media_buy::Model> = changed.iter().collect();
    changed.sort_by(|a, b| a.account_id.cmp(&b.account_id));
    for b in changed {
        let previous = b.previous_status.as_deref().unwrap_or("none");
        let n = crate::notifications::New {
            account_id: b.account_id.clone(),
            topic: crate::notifications::topics::MEDIA_BUY_STATUS_CHANGED,
            title: format!("Media buy {} is {}", b.id, b.status),
            body: format!(
                "The media buy of campaign {} moved from {previous} to {}.",
                b.campaign_id, b.status
            ),
            data: json!({
                "mediaBuyId": b.id,
                "campaignId": b.campaign_id,
                "advertiserId": b.advertiser_id,
                "storefrontId": b.storefront_id,
                "status": b.status,
                "previousStatus": b.previous_status,
            }),
        };
        notices.merge(crate::notifications::notify(conn, n, now).await?);
    }
    Ok(notices)
}

/// Launches the campaigns among `campaign_ids` whose carts are settled: a DRAFT
/// campaign becomes ACTIVE once none of its buys is still on its way
/// (draft, dispatching, submitted) and at least one is live at its seller.
pub async fn launch_settled(
    conn: &impl ConnectionTrait,
    campaign_ids: &[String],
    now: DateTime<Utc>,
) -> Result<Vec<String>, sea_orm::DbErr> {
    if campaign_ids.is_empty() {
        return Ok(Vec::new());
    }
    // One read finds the DRAFT ones: a refresh round names many campaigns,
    // nearly all of them launched long ago.
    let drafts: Vec<String> = campaign::Entity::find()
        .select_only()
        .column(campaign::Column::Id)
        .filter(campaign::Column::Id.is_in(campaign_ids.iter().cloned()))
        .filter(campaign::Column::Status.eq("DRAFT"))
        .into_tuple()
        .all(conn)
        .await?;
    let mut launched = Vec::new();
    for id in &drafts {
        let statuses: Vec<String> = media_buy::Entity::find()
            .select_only()
            .column(media_buy::Column::Status)
            .filter(media_buy::Column::CampaignId.eq(id.clone()))
            .into_tuple()
            .all(conn)
            .await?;
        let waiting = statuses
            .iter()
            .any(|s| [DRAFT, DISPATCHING, SUBMITTED].contains(&s.as_str()));
        let live = statuses
            .iter()
            .any(|s| LIVE.contains(&s.as_str()) || s == "completed");
        if waiting || !live {
            continue;
        }
        let res = campaign::Entity::update_many()
            .col_expr(
                campaign::Column::Status,
                sea_orm::sea_query::Expr::value("ACTIVE"),
            )
            .col_expr(
                campaign::Column::UpdatedAt,
                sea_orm::sea_query::Expr::value(now),
            )
            .filter(campaign::Column::Id.eq(id.clone()))
            .filter(campaign::Column::Status.eq("DRAFT"))
            .exec(conn)
            .await?;
        if res.rows_affected == 1 {
            launched.push(id.clone());
        }
    }
    Ok(launched)
}
