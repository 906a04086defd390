//! Delivery: each live buy's report from its seller (AdCP 3.1
//! `get_media_buy_delivery`), pulled by the poller under the same lease as
//! the status refresh, in batches (up to 100 buys per call, one call per
//! seller and batch, all at once), stored with the buy and answered from
//! the database (`media-buy-status`, `/mcp/v3 get_delivery`): a read never
//! waits on a seller.
//!
//! - The first pull is due one status cadence after the buy goes live at
//!   its seller; then every `AGENTIC_MEDIA_BUY_DELIVERY_SECONDS` (default
//!   15 min) plus up to 10 % jitter, while the buy is live (`pending_*`,
//!   `active`, `paused`), and once more after it ends (`completed`,
//!   `canceled`), so its final figures are kept.
//! - The report carries each buy's status: a buy that is `active` (which
//!   ends status polling) is seen to pause, complete or be canceled here.
//! - A failed pull keeps the last report and tries again one cadence later.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use entity::media_buy;

use super::model::{ADCP_STATUSES, LIVE};
use super::outcome::{self, Outcome};
use crate::error::ApiError;
use crate::ops::Ctx;

pub const GET_MEDIA_BUY_DELIVERY: &str = "get_media_buy_delivery";

/// A buy's delivery as its seller last reported it (stored as JSON with the
/// buy; the figures are the seller's, over `reporting_period`). Snake case,
/// as AdCP names these fields and as `media-buy-status` is given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Delivery {
    /// The report's currency (the seller's `currency`).
    pub currency: Option<String>,
    /// `{start, end}` as the seller gave it.
    #[schema(value_type = Option<Object>)]
    pub reporting_period: Option<Value>,
    pub impressions: u64,
    pub spend: f64,
    pub clicks: Option<u64>,
    pub video_completions: Option<u64>,
    pub by_package: Vec<PackageDelivery>,
    /// Per day, where the seller gives `daily_breakdown`.
    pub daily: Vec<DailyDelivery>,
    /// When it was pulled from the seller.
    #[serde(default)]
    pub pulled_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct PackageDelivery {
    pub package_id: String,
    pub impressions: u64,
    pub spend: f64,
    pub clicks: Option<u64>,
    pub video_completions: Option<u64>,
    /// The seller's pacing (1.0 is on schedule).
    pub pacing_index: Option<f64>,
    /// Per placement, where the product reports `supports_placement_breakdown`
    /// (the seller's `by_placement[]`, as given).
    #[schema(value_type = Option<Vec<Object>>)]
    pub by_placement: Option<Value>,
    /// Per day, where the seller gives the package's own `daily_breakdown`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub daily: Vec<DailyDelivery>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DailyDelivery {
    pub date: String,
    pub impressions: u64,
    pub spend: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub clicks: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub video_completions: Option<u64>,
}

/// The stored report of a buy, when it has one.
pub fn stored(b: &media_buy::Model) -> Option<Delivery> {
    b.delivery
        .as_deref()
        .and_then(|d| serde_json::from_str(d).ok())
}

pub(crate) fn count(v: &Value, key: &str) -> Option<u64> {
    v.get(key)
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n >= 0.0)
        .map(|n| n.round() as u64)
}

/// AdCP 3.1 `completed_views` (earlier sellers: `video_completions`).
pub(crate) fn completions(v: &Value) -> Option<u64> {
    count(v, "completed_views").or_else(|| count(v, "video_completions"))
}

pub(crate) fn amount(v: &Value, key: &str) -> f64 {
    v.get(key)
        .and_then(Value::as_f64)
        .filter(|n| n.is_finite() && *n >= 0.0)
        .unwrap_or(0.0)
}

/// The `daily_breakdown[]` of a buy, package or placement: entries without
/// a date are left out.
pub(crate) fn days(v: &Value) -> Vec<DailyDelivery> {
    v.get("daily_breakdown")
        .and_then(Value::as_array)
        .map(|ds| {
            ds.iter()
                .filter_map(|d| {
                    Some(DailyDelivery {
                        date: d.get("date")?.as_str()?.to_string(),
                        impressions: count(d, "impressions").unwrap_or(0),
                        spend: amount(d, "spend"),
                        clicks: count(d, "clicks"),
                        video_completions: completions(d),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// One `media_buy_deliveries[]` entry of an answer whose top level is `top`.
fn read(top: &Value, item: &Value) -> Delivery {
    let totals = item.get("totals").unwrap_or(&Value::Null);
    let by_package = item
        .get("by_package")
        .and_then(Value::as_array)
        .map(|ps| {
            ps.iter()
                .map(|p| PackageDelivery {
                    package_id: p
                        .get("package_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    impressions: count(p, "impressions").unwrap_or(0),
                    spend: amount(p, "spend"),
                    clicks: count(p, "clicks"),
                    video_completions: completions(p),
                    pacing_index: p
                        .get("pacing_index")
                        .and_then(Value::as_f64)
                        .filter(|n| n.is_finite()),
                    by_placement: p.get("by_placement").filter(|v| v.is_array()).cloned(),
                    daily: days(p),
                })
                .collect()
        })
        .unwrap_or_default();
    let daily = days(item);
    Delivery {
        currency: item
            .get("currency")
            .or_else(|| top.get("currency"))
            .and_then(Value::as_str)
            .map(String::from),
        reporting_period: top
            .get("reporting_period")
            .filter(|v| v.is_object())
            .cloned(),
        impressions: count(totals, "impressions").unwrap_or(0),
        spend: amount(totals, "spend"),
        clicks: count(totals, "clicks"),
        video_completions: completions(totals),
        by_package,
        daily,
        pulled_at: None,
    }
}

/// What one pull learned about one buy.
struct Pulled {
    buy: media_buy::Model,
    report: Option<Delivery>,
    /// The status the report gives, when it is an AdCP one.
    status: Option<String>,
}

/// Each buy's report (or none) from one answer.
fn read_answer(chunk: Vec<media_buy::Model>, answer: Result<Value, Outcome>) -> Vec<Pulled> {
    let payload = match answer {
        Ok(p) => p,
        Err(o) => {
            tracing::warn!(outcome = ?o, buys = chunk.len(), "delivery pull failed; the last reports are kept");
            return chunk
                .into_iter()
                .map(|buy| Pulled {
                    buy,
                    report: None,
                    status: None,
                })
                .collect();
        }
    };
    let items = super::poller::by_media_buy_id(&payload, "media_buy_deliveries");
    if items.len() < chunk.len() {
        let errors = payload.get("errors").cloned().unwrap_or(Value::Null);
        tracing::warn!(asked = chunk.len(), reported = items.len(), %errors, "a seller's delivery answer left out buys; their last reports are kept");
    }
    chunk
        .into_iter()
        .map(|buy| {
            let item = buy
                .adcp_media_buy_id
                .as_deref()
                .and_then(|id| items.get(id))
                .copied();
            Pulled {
                report: item.map(|i| read(&payload, i)),
                status: item
                    .and_then(|i| i.get("status"))
                    .and_then(Value::as_str)
                    .filter(|s| ADCP_STATUSES.contains(s))
                    .map(String::from),
                buy,
            }
        })
        .collect()
}

/// Pulls the reports of `buys` (due for one), records the statuses they
/// give, stores them, and sets each buy's next pull.
pub async fn pull(ctx: &Ctx, buys: Vec<media_buy::Model>) -> Result<(), ApiError> {
    if buys.is_empty() {
        return Ok(());
    }
    let pulled: Vec<Pulled> = super::poller::ask_sellers(ctx, buys, GET_MEDIA_BUY_DELIVERY)
        .await?
        .into_iter()
        .flat_map(|(chunk, answer)| read_answer(chunk, answer))
        .collect();
    // Statuses first: a buy that ended is then stored with its final
    // report and no next pull.
    let moved: Vec<(media_buy::Model, Outcome)> = pulled
        .iter()
        .filter_map(|p| {
            let s = p.status.as_ref().filter(|s| **s != p.buy.status)?;
            Some((
                p.buy.clone(),
                Outcome::Status {
                    status: s.clone(),
                    revision: None,
                },
            ))
        })
        .collect();
    if !moved.is_empty() {
        super::dispatch::record(ctx, moved).await?;
    }
    let now = Utc::now();
    let every = super::delivery_every(ctx);
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    // The accounts whose reports change, told once the rows are committed.
    let reported: std::collections::BTreeSet<String> = pulled
        .iter()
        .filter(|p| p.report.is_some())
        .map(|p| p.buy.account_id.clone())
        .collect();
    for p in pulled {
        let status = p.status.as_deref().unwrap_or(&p.buy.status);
        // A failed final pull is tried again for a day.
        let retry_final =
            p.report.is_none() && now - p.buy.status_changed_at < chrono::Duration::days(1);
        let next: Option<DateTime<Utc>> = (LIVE.contains(&status) || retry_final)
            .then(|| outcome::next_poll(now, every, 0, None));
        let mut update = media_buy::Entity::update_many()
            .col_expr(media_buy::Column::DeliveryNextAt, Expr::value(next))
            .filter(media_buy::Column::Id.eq(p.buy.id.clone()));
        if let Some(mut report) = p.report {
            report.pulled_at = Some(now);
            super::delivery_rows::write(&txn, &p.buy, &report, now).await?;
            let json = serde_json::to_string(&report).map_err(ApiError::internal)?;
            update = update
                .col_expr(media_buy::Column::Delivery, Expr::value(json))
                .col_expr(media_buy::Column::DeliveryAt, Expr::value(now));
        }
        update.exec(&txn).await?;
    }
    txn.commit().await?;
    for account in reported {
        ctx.bus
            .publish(crate::reporting::cache::delivery_recorded(&account))
            .await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_adcp_report_and_drops_what_is_not_a_figure() {
        let top = json!({"currency": "EUR", "reporting_period": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-02T00:00:00Z"}});
        let item = json!({
            "media_buy_id": "sb_1", "status": "active",
            "totals": {"impressions": 1200.4, "spend": 14.5, "clicks": 7, "completed_views": -3},
            "by_package": [{"package_id": "p1", "impressions": 1200, "spend": 14.5, "pacing_index": 0.9,
                            "by_placement": [{"placement_id": "top", "impressions": 800}]}],
            "daily_breakdown": [{"date": "2026-12-01", "impressions": 1200, "spend": 14.5}, {"impressions": 1}]
        });
        let d = read(&top, &item);
        assert_eq!(d.currency.as_deref(), Some("EUR"));
        assert_eq!(d.impressions, 1200);
        assert_eq!(d.spend, 14.5);
        assert_eq!(d.clicks, Some(7));
        assert_eq!(d.video_completions, None);
        assert_eq!(d.by_package[0].pacing_index, Some(0.9));
        assert_eq!(
            d.by_package[0].by_placement.as_ref().unwrap()[0]["impressions"],
            800
        );
        assert_eq!(d.daily.len(), 1);
        assert_eq!(
            read(&top, &json!({})),
            Delivery {
                currency: Some("EUR".into()),
                reporting_period: top.get("reporting_period").cloned(),
                ..Delivery::default()
            }
        );
    }
}
