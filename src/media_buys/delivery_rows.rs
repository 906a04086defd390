//! Delivery reports as rows: what one pull of a buy's report writes, in the
//! transaction that stores the report.
//!
//! - A row is one seller day of one package of a buy (`placement_id` `''`),
//!   or of one placement of that package. Its natural key is (buy, date,
//!   package, placement).
//! - The days a report gives are taken from the package's own
//!   `daily_breakdown`; else, for a buy with one package, from the buy's;
//!   else, when the report's period is a single day, from the package's
//!   totals for that day. A placement's days come from its own
//!   `daily_breakdown`, else (when its package has one day in the report)
//!   from its figures for that day.
//! - Every day a report gives is replaced whole: the buy's rows for that
//!   day are deleted and the report's written, so a restatement replaces
//!   and never adds, and late data for an older day lands on that day.
//!   Days the report does not give are left as they were.
//! - The campaign's per-day sums (`delivery_campaign_daily`) of the days
//!   written are computed again from the rows, in the same transaction.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, NaiveDate, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Func, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait, QueryFilter, Set};
use serde_json::Value;

use entity::{delivery_campaign_daily as totals, delivery_daily as daily, media_buy};

use super::delivery::{
    self as d, DailyDelivery, Delivery, PackageDelivery, amount, completions, count,
};

/// What the pricing model counts, from a row's figures: CPM and vCPM a
/// thousand impressions, CPC a click, CPCV and CPV a completed view; none
/// for CPP and flat rate (or when the count is not reported).
pub fn units(
    pricing_model: &str,
    impressions: u64,
    clicks: Option<u64>,
    completions: Option<u64>,
) -> Option<f64> {
    match pricing_model {
        "cpm" | "vcpm" => Some(impressions as f64 / 1000.0),
        "cpc" => clicks.map(|c| c as f64),
        "cpcv" | "cpv" => completions.map(|c| c as f64),
        _ => None,
    }
}

/// The report's period, when it is one seller day.
fn single_day(report: &Delivery) -> Option<String> {
    let period = report.reporting_period.as_ref()?;
    let at = |k: &str| -> Option<DateTime<Utc>> {
        DateTime::parse_from_rfc3339(period.get(k)?.as_str()?)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    let (start, end) = (at("start")?, at("end")?);
    let last = end - chrono::Duration::seconds(1);
    (end > start
        && end - start <= chrono::Duration::days(1)
        && start.date_naive() == last.date_naive())
    .then(|| start.date_naive().to_string())
}

/// Only real calendar dates are kept, as `YYYY-MM-DD`.
fn date_of(s: &str) -> Option<String> {
    NaiveDate::parse_from_str(s.get(..10)?, "%Y-%m-%d")
        .ok()
        .map(|d| d.to_string())
}

#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub package_id: String,
    pub placement_id: String,
    pub date: String,
    pub impressions: u64,
    pub spend: f64,
    pub clicks: Option<u64>,
    pub video_completions: Option<u64>,
}

fn row(package: &str, placement: &str, day: &DailyDelivery) -> Option<Row> {
    Some(Row {
        package_id: package.to_string(),
        placement_id: placement.to_string(),
        date: date_of(&day.date)?,
        impressions: day.impressions,
        spend: day.spend,
        clicks: day.clicks,
        video_completions: day.video_completions,
    })
}

fn package_days(
    report: &Delivery,
    p: &PackageDelivery,
    one_day: &Option<String>,
) -> Vec<DailyDelivery> {
    if !p.daily.is_empty() {
        p.daily.clone()
    } else if report.by_package.len() == 1 && !report.daily.is_empty() {
        report.daily.clone()
    } else if let Some(date) = one_day {
        vec![DailyDelivery {
            date: date.clone(),
            impressions: p.impressions,
            spend: p.spend,
            clicks: p.clicks,
            video_completions: p.video_completions,
        }]
    } else {
        Vec::new()
    }
}

/// The rows a report gives, one per natural key (the last one given wins).
pub fn rows(report: &Delivery) -> Vec<Row> {
    let one_day = single_day(report);
    let mut out: BTreeMap<(String, String, String), Row> = BTreeMap::new();
    let mut put = |r: Row| {
        out.insert(
            (r.date.clone(), r.package_id.clone(), r.placement_id.clone()),
            r,
        );
    };
    if report.by_package.is_empty() {
        for day in &report.daily {
            if let Some(r) = row("", "", day) {
                put(r);
            }
        }
    }
    for p in &report.by_package {
        let days = package_days(report, p, &one_day);
        for day in &days {
            if let Some(r) = row(&p.package_id, "", day) {
                put(r);
            }
        }
        let placements = p.by_placement.as_ref().and_then(Value::as_array);
        for pl in placements.into_iter().flatten() {
            let Some(id) = pl
                .get("placement_id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
            else {
                continue;
            };
            let own = d::days(pl);
            let pdays = if !own.is_empty() {
                own
            } else if days.len() == 1 {
                vec![DailyDelivery {
                    date: days[0].date.clone(),
                    impressions: count(pl, "impressions").unwrap_or(0),
                    spend: amount(pl, "spend"),
                    clicks: count(pl, "clicks"),
                    video_completions: completions(pl),
                }]
            } else {
                Vec::new()
            };
            for day in &pdays {
                if let Some(r) = row(&p.package_id, id, day) {
                    put(r);
                }
            }
        }
    }
    out.into_values().collect()
}

fn int(n: Option<u64>) -> Option<i64> {
    n.map(|n| i64::try_from(n).unwrap_or(i64::MAX))
}

/// Writes the rows of `report` for `buy` and the campaign's sums of the
/// days they cover.
pub async fn write(
    txn: &DatabaseTransaction,
    buy: &media_buy::Model,
    report: &Delivery,
    pulled_at: DateTime<Utc>,
) -> Result<(), sea_orm::DbErr> {
    let rows = rows(report);
    if rows.is_empty() {
        return Ok(());
    }
    let dates: BTreeSet<String> = rows.iter().map(|r| r.date.clone()).collect();
    let pricing = buy.pricing_model.clone().unwrap_or_default();
    let currency = report
        .currency
        .clone()
        .unwrap_or_else(|| buy.currency.clone());
    daily::Entity::delete_many()
        .filter(daily::Column::MediaBuyId.eq(buy.id.clone()))
        .filter(daily::Column::Date.is_in(dates.iter().cloned()))
        .exec(txn)
        .await?;
    let models: Vec<daily::ActiveModel> = rows
        .into_iter()
        .map(|r| daily::ActiveModel {
            account_id: Set(buy.account_id.clone()),
            advertiser_id: Set(buy.advertiser_id.clone()),
            campaign_id: Set(buy.campaign_id.clone()),
            media_buy_id: Set(buy.id.clone()),
            units: Set(units(
                &pricing,
                r.impressions,
                r.clicks,
                r.video_completions,
            )),
            package_id: Set(r.package_id),
            placement_id: Set(r.placement_id),
            date: Set(r.date),
            impressions: Set(int(Some(r.impressions)).unwrap_or(0)),
            spend: Set(r.spend),
            clicks: Set(int(r.clicks)),
            video_completions: Set(int(r.video_completions)),
            pricing_model: Set(pricing.clone()),
            currency: Set(currency.clone()),
            pulled_at: Set(pulled_at),
            ..Default::default()
        })
        .collect();
    // A few hundred rows per statement keeps under every bind limit.
    for chunk in models.chunks(500) {
        daily::Entity::insert_many(chunk.to_vec()).exec(txn).await?;
    }
    rollup(txn, &buy.campaign_id, &dates).await
}

/// Recomputes the campaign's per-day sums of `dates` from its package rows.
pub async fn rollup(
    txn: &impl ConnectionTrait,
    campaign_id: &str,
    dates: &BTreeSet<String>,
) -> Result<(), sea_orm::DbErr> {
    totals::Entity::delete_many()
        .filter(totals::Column::CampaignId.eq(campaign_id))
        .filter(totals::Column::Date.is_in(dates.iter().cloned()))
        .exec(txn)
        .await?;
    let big = |c: daily::Column| Expr::expr(Func::sum(Expr::col(c))).cast_as(Alias::new("BIGINT"));
    let select = Query::select()
        .columns([
            daily::Column::AccountId,
            daily::Column::AdvertiserId,
            daily::Column::CampaignId,
            daily::Column::Date,
            daily::Column::Currency,
            daily::Column::PricingModel,
        ])
        .expr(big(daily::Column::Impressions))
        .expr(Func::sum(Expr::col(daily::Column::Spend)))
        .expr(big(daily::Column::Clicks))
        .expr(big(daily::Column::VideoCompletions))
        .expr(Func::sum(Expr::col(daily::Column::Units)))
        .from(daily::Entity)
        .and_where(daily::Column::CampaignId.eq(campaign_id))
        .and_where(daily::Column::Date.is_in(dates.iter().cloned()))
        .and_where(daily::Column::PlacementId.eq(""))
        .group_by_columns([
            daily::Column::AccountId,
            daily::Column::AdvertiserId,
            daily::Column::CampaignId,
            daily::Column::Date,
            daily::Column::Currency,
            daily::Column::PricingModel,
        ])
        .to_owned();
    let insert = Query::insert()
        .into_table(totals::Entity)
        .columns([
            totals::Column::AccountId,
            totals::Column::AdvertiserId,
            totals::Column::CampaignId,
            totals::Column::Date,
            totals::Column::Currency,
            totals::Column::PricingModel,
            totals::Column::Impressions,
            totals::Column::Spend,
            totals::Column::Clicks,
            totals::Column::VideoCompletions,
            totals::Column::Units,
        ])
        .select_from(select)
        .map_err(|e| sea_orm::DbErr::Custom(e.to_string()))?
        .to_owned();
    txn.execute(&insert).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn report(v: Value) -> Delivery {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn days_come_from_the_package_the_buy_or_a_single_day_period() {
        // One package, the buy's days.
        let r = report(json!({
            "impressions": 3, "spend": 1.0,
            "by_package": [{"package_id": "p", "impressions": 3, "spend": 1.0}],
            "daily": [{"date": "2026-12-01", "impressions": 1, "spend": 0.5},
                      {"date": "2026-12-02T00:00:00Z", "impressions": 2, "spend": 0.5},
                      {"date": "nope", "impressions": 9, "spend": 9.0}],
        }));
        let rs = rows(&r);
        assert_eq!(rs.len(), 2);
        assert_eq!(rs[1].date, "2026-12-02");
        // Two packages, a single-day period: each package's totals, and
        // its placements on that day.
        let r = report(json!({
            "impressions": 3, "spend": 1.0,
            "reporting_period": {"start": "2026-12-03T00:00:00Z", "end": "2026-12-04T00:00:00Z"},
            "by_package": [
                {"package_id": "a", "impressions": 1, "spend": 0.2,
                 "by_placement": [{"placement_id": "top", "impressions": 1, "spend": 0.2}]},
                {"package_id": "b", "impressions": 2, "spend": 0.8, "clicks": 4}],
            "daily": [],
        }));
        let rs = rows(&r);
        assert_eq!(rs.len(), 3, "{rs:?}");
        assert!(rs.iter().all(|r| r.date == "2026-12-03"));
        assert_eq!(rs.iter().filter(|r| r.placement_id == "top").count(), 1);
        // Two packages over several days, none per package: no rows.
        let r = report(json!({
            "impressions": 3, "spend": 1.0,
            "reporting_period": {"start": "2026-12-01T00:00:00Z", "end": "2026-12-04T00:00:00Z"},
            "by_package": [{"package_id": "a", "impressions": 1, "spend": 0.2},
                           {"package_id": "b", "impressions": 2, "spend": 0.8}],
            "daily": [{"date": "2026-12-01", "impressions": 3, "spend": 1.0}],
        }));
        assert!(rows(&r).is_empty());
    }

    #[test]
    fn units_follow_the_pricing_model() {
        assert_eq!(units("cpm", 2500, None, None), Some(2.5));
        assert_eq!(units("cpc", 2500, Some(7), None), Some(7.0));
        assert_eq!(units("cpcv", 2500, Some(7), Some(3)), Some(3.0));
        assert_eq!(units("cpc", 2500, None, None), None);
        assert_eq!(units("flat_rate", 2500, Some(1), Some(1)), None);
    }
}
