//! `get_reporting_metrics`: delivery from our rows (never from a seller),
//! filtered and grouped.
//!
//! Days are the advertiser's: a seller day `D` (a UTC day, as the seller
//! gives it) counts on the local date, in the advertiser's
//! `preferredTimezone` (UTC when unset), that holds most of it: east of
//! UTC+12 (e.g. Pacific/Kiritimati, Pacific/Auckland in summer) that is
//! `D + 1`; elsewhere, and at exactly UTC±12 (half on each side), `D`. `startDate`/`endDate`
//! (inclusive) and `groupBy=day` use these dates.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use chrono::{NaiveDate, NaiveTime};
use chrono_tz::Tz;
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Func, Query, SelectStatement};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{advertiser, campaign, media_buy};

use super::cache::ReportCache;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Filtered, Input, Nothing, Operation, Paged, Pagination, Verb};

pub const GROUPS: [&str; 5] = ["day", "campaign", "media_buy", "package", "placement"];

#[derive(Debug, Default, Clone, Hash, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MetricsFilter {
    /// Only this advertiser's delivery (its `preferredTimezone` dates the days).
    pub advertiser_id: Option<String>,
    /// Only this campaign's.
    pub campaign_id: Option<String>,
    /// Only this media buy's.
    pub media_buy_id: Option<String>,
    /// First day, `YYYY-MM-DD`, in the advertiser's time zone (inclusive).
    pub start_date: Option<String>,
    /// Last day, `YYYY-MM-DD`, in the advertiser's time zone (inclusive).
    pub end_date: Option<String>,
    /// `day` (default), `campaign`, `media_buy`, `package` or `placement`.
    pub group_by: Option<String>,
}

/// What the pricing model counts, summed.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Units {
    /// `cpm`, `vcpm`, `cpc`, `cpcv`, `cpv`, ...
    pub pricing_model: String,
    /// CPM and vCPM: impressions / 1000; CPC: clicks; CPCV and CPV:
    /// completed views.
    pub value: f64,
}

#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PlacementMetrics {
    pub placement_id: String,
    pub impressions: u64,
    pub spend: f64,
    pub clicks: Option<u64>,
    pub video_completions: Option<u64>,
}

/// One group's figures. The fields naming the group are those of
/// `groupBy` (and the ones above it: a package names its buy and campaign).
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct MetricsRow {
    /// The advertiser's date (`groupBy=day`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub campaign_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub media_buy_id: Option<String>,
    /// The seller's package id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub placement_id: Option<String>,
    /// One row per currency: figures in different currencies are never summed.
    pub currency: String,
    pub impressions: u64,
    pub spend: f64,
    /// `null` when no seller reported clicks.
    pub clicks: Option<u64>,
    pub video_completions: Option<u64>,
    /// Per pricing model of the buys in the group.
    pub units: Vec<Units>,
    /// `groupBy=package`: the package's placements, where the seller
    /// reports them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by_placement: Option<Vec<PlacementMetrics>>,
}

pub struct GetReportingMetrics;

impl Operation for GetReportingMetrics {
    const NAME: &'static str = "get_reporting_metrics";
    const DESCRIPTION: &'static str = "Delivery (impressions, spend, clicks, video completions and the pricing model's units, per currency) from the sellers' reports stored here, filtered by advertiserId, campaignId, mediaBuyId and startDate/endDate (the advertiser's time zone), grouped by day, campaign, media_buy, package (with byPlacement) or placement.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/reporting/metrics";
    type Path = Nothing;
    type Query = Filtered<MetricsFilter, 50, 200>;
    type Body = Nothing;
    type Output = Paged<MetricsRow>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let cache = ctx.get::<Arc<ReportCache>>()?;
        let rows = cache.report(&ctx.db, caller.account_id(), filter).await?;
        let pagination = page.of(rows.len() as u64);
        let items = rows
            .iter()
            .skip(usize::try_from(page.skip).unwrap_or(usize::MAX))
            .take(usize::try_from(page.take).unwrap_or(usize::MAX))
            .cloned()
            .collect();
        Ok(Paged { items, pagination })
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

fn date(field: &str, v: &Option<String>) -> Result<Option<NaiveDate>, ApiError> {
    v.as_deref()
        .map(|s| {
            NaiveDate::parse_from_str(s, "%Y-%m-%d")
                .map_err(|_| ApiError::invalid(field, "must be a date, YYYY-MM-DD"))
        })
        .transpose()
}

fn zone(tz: Option<&str>) -> Tz {
    tz.and_then(|t| t.parse::<Tz>().ok()).unwrap_or(Tz::UTC)
}

/// The advertiser's date of seller day `d`: the local date holding most
/// of it, `d` itself on a tie (an offset of exactly 12 hours).
pub fn local_date(d: NaiveDate, tz: Tz) -> NaiveDate {
    let noon = d.and_time(NaiveTime::from_hms_opt(12, 0, 0).unwrap_or_default());
    let local = noon.and_utc().with_timezone(&tz).naive_local();
    let offset = local - noon;
    if offset > chrono::Duration::hours(12) {
        d + chrono::Duration::days(1)
    } else if offset < chrono::Duration::hours(-12) {
        d - chrono::Duration::days(1)
    } else {
        d
    }
}

/// The seller days whose local dates fall in `[start, end]` in `tz`: a
/// contiguous range, as the mapping only moves forward.
fn seller_range(
    start: Option<NaiveDate>,
    end: Option<NaiveDate>,
    tz: Tz,
) -> (Option<NaiveDate>, Option<NaiveDate>) {
    let lo = start.map(|s| {
        let mut d = s - chrono::Duration::days(2);
        while local_date(d, tz) < s {
            d += chrono::Duration::days(1);
        }
        d
    });
    let hi = end.map(|e| {
        let mut d = e + chrono::Duration::days(2);
        while local_date(d, tz) > e {
            d -= chrono::Duration::days(1);
        }
        d
    });
    (lo, hi)
}

#[derive(Default)]
struct Acc {
    impressions: u64,
    spend: f64,
    clicks: Option<u64>,
    completions: Option<u64>,
    units: BTreeMap<String, f64>,
}

impl Acc {
    fn add(&mut self, r: &Summed) {
        self.impressions += u64::try_from(r.impressions).unwrap_or(0);
        self.spend += r.spend;
        if let Some(c) = r.clicks {
            self.clicks = Some(self.clicks.unwrap_or(0) + u64::try_from(c).unwrap_or(0));
        }
        if let Some(c) = r.completions {
            self.completions = Some(self.completions.unwrap_or(0) + u64::try_from(c).unwrap_or(0));
        }
        if let (Some(u), false) = (r.units, r.pricing_model.is_empty()) {
            *self.units.entry(r.pricing_model.clone()).or_default() += u;
        }
    }
}

fn money(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}

/// One row of the grouped SQL answer.
struct Summed {
    advertiser_id: String,
    date: Option<String>,
    keys: Vec<String>,
    currency: String,
    pricing_model: String,
    impressions: i64,
    spend: f64,
    clicks: Option<i64>,
    completions: Option<i64>,
    units: Option<f64>,
}

async fn summed(
    db: &impl ConnectionTrait,
    q: &SelectStatement,
    with_date: bool,
    keys: &[&str],
) -> Result<Vec<Summed>, ApiError> {
    let stmt = db.get_database_backend().build(q);
    let rows = db.query_all_raw(stmt).await?;
    rows.into_iter()
        .map(|r| {
            Ok(Summed {
                advertiser_id: r.try_get("", "advertiser_id")?,
                date: if with_date {
                    Some(r.try_get("", "date")?)
                } else {
                    None
                },
                keys: keys
                    .iter()
                    .map(|k| r.try_get::<String>("", k))
                    .collect::<Result<_, _>>()?,
                currency: r.try_get("", "currency")?,
                pricing_model: r.try_get("", "pricing_model")?,
                impressions: r.try_get::<Option<i64>>("", "impressions")?.unwrap_or(0),
                spend: r.try_get::<Option<f64>>("", "spend")?.unwrap_or(0.0),
                clicks: r.try_get("", "clicks")?,
                completions: r.try_get("", "video_completions")?,
                units: r.try_get("", "units")?,
            })
        })
        .collect::<Result<_, sea_orm::DbErr>>()
        .map_err(ApiError::from)
}

/// The sums of `table` (`delivery_daily` or `delivery_campaign_daily`,
/// whose columns share names) grouped by the advertiser, `date` when
/// asked, `keys`, currency and pricing model.
fn grouped(table: &str, with_date: bool, keys: &[&str]) -> SelectStatement {
    let t = Alias::new(table);
    let big = |c: &str| {
        Expr::expr(Func::sum(Expr::col((t.clone(), Alias::new(c))))).cast_as(Alias::new("BIGINT"))
    };
    let mut group: Vec<&str> = vec!["advertiser_id"];
    if with_date {
        group.push("date");
    }
    group.extend(keys);
    group.extend(["currency", "pricing_model"]);
    let mut q = Query::select();
    q.from(t.clone());
    for g in &group {
        q.column((t.clone(), Alias::new(*g)));
    }
    q.expr_as(big("impressions"), Alias::new("impressions"))
        .expr_as(
            Func::sum(Expr::col((t.clone(), Alias::new("spend")))),
            Alias::new("spend"),
        )
        .expr_as(big("clicks"), Alias::new("clicks"))
        .expr_as(big("video_completions"), Alias::new("video_completions"))
        .expr_as(
            Func::sum(Expr::col((t.clone(), Alias::new("units")))),
            Alias::new("units"),
        );
    for g in &group {
        q.add_group_by([Expr::col((t.clone(), Alias::new(*g)))]);
    }
    q.to_owned()
}

/// The report for `account` and `f`, every group (the caller pages it).
pub async fn metrics(
    db: &impl ConnectionTrait,
    account: &str,
    f: &MetricsFilter,
) -> Result<Vec<MetricsRow>, ApiError> {
    let group_by = f.group_by.as_deref().unwrap_or("day");
    if !GROUPS.contains(&group_by) {
        return Err(ApiError::invalid(
            "groupBy",
            "must be one of day, campaign, media_buy, package, placement",
        ));
    }
    let start = date("startDate", &f.start_date)?;
    let end = date("endDate", &f.end_date)?;
    if let (Some(s), Some(e)) = (start, end)
        && s > e
    {
        return Err(ApiError::invalid("endDate", "must not be before startDate"));
    }
    // The scope: each named thing must be the caller's; its advertiser
    // gives the time zone.
    let mut scope_advertiser = f.advertiser_id.clone();
    if let Some(id) = &f.campaign_id {
        let c = campaign::Entity::find_by_id(id.clone())
            .filter(campaign::Column::AccountId.eq(account))
            .one(db)
            .await?
            .ok_or_else(|| ApiError::not_found("campaign"))?;
        scope_advertiser.get_or_insert(c.advertiser_id);
    }
    if let Some(id) = &f.media_buy_id {
        let b = media_buy::Entity::find_by_id(id.clone())
            .filter(media_buy::Column::AccountId.eq(account))
            .one(db)
            .await?
            .ok_or_else(|| ApiError::not_found("media buy"))?;
        scope_advertiser.get_or_insert(b.advertiser_id);
    }
    let mut zones: HashMap<String, Tz> = HashMap::new();
    let mut q = advertiser::Entity::find()
        .select_only()
        .column(advertiser::Column::Id)
        .column(advertiser::Column::PreferredTimezone)
        .filter(advertiser::Column::AccountId.eq(account));
    if let Some(a) = &scope_advertiser {
        q = q.filter(advertiser::Column::Id.eq(a.clone()));
    }
    for (id, tz) in q.into_tuple::<(String, Option<String>)>().all(db).await? {
        zones.insert(id, zone(tz.as_deref()));
    }
    if let Some(a) = &f.advertiser_id
        && !zones.contains_key(a)
    {
        return Err(ApiError::not_found("advertiser"));
    }
    // One time zone: the seller days are known and the SQL sums whole
    // groups; several: it sums per day, and each day is placed here.
    let mut distinct: Vec<Tz> = zones.values().copied().collect();
    distinct.sort_by_key(|z| z.name());
    distinct.dedup();
    let single = match distinct.as_slice() {
        [] => return Ok(Vec::new()),
        [z] => Some(*z),
        _ => None,
    };
    let (lo, hi) = match single {
        Some(z) => seller_range(start, end, z),
        None => (
            start.map(|s| s - chrono::Duration::days(2)),
            end.map(|e| e + chrono::Duration::days(2)),
        ),
    };
    let with_date = group_by == "day" || single.is_none();
    let keys: &[&str] = match group_by {
        "day" => &[],
        "campaign" => &["campaign_id"],
        "media_buy" => &["campaign_id", "media_buy_id"],
        "package" => &["campaign_id", "media_buy_id", "package_id"],
        _ => &["campaign_id", "media_buy_id", "package_id", "placement_id"],
    };
    let rollup = matches!(group_by, "day" | "campaign") && f.media_buy_id.is_none();
    let table = if rollup {
        "delivery_campaign_daily"
    } else {
        "delivery_daily"
    };
    let t = Alias::new(table);
    let col = |c: &str| Expr::col((t.clone(), Alias::new(c)));
    let scoped = |mut q: SelectStatement, placements: bool| {
        q.and_where(col("account_id").eq(account));
        if let Some(a) = &scope_advertiser {
            q.and_where(col("advertiser_id").eq(a.as_str()));
        }
        if let Some(c) = &f.campaign_id {
            q.and_where(col("campaign_id").eq(c.as_str()));
        }
        if let Some(b) = &f.media_buy_id {
            q.and_where(col("media_buy_id").eq(b.as_str()));
        }
        if let Some(lo) = lo {
            q.and_where(col("date").gte(lo.to_string()));
        }
        if let Some(hi) = hi {
            q.and_where(col("date").lte(hi.to_string()));
        }
        if !rollup {
            if placements {
                q.and_where(col("placement_id").ne(""));
            } else {
                q.and_where(col("placement_id").eq(""));
            }
        }
        q
    };
    let placements = group_by == "placement";
    let q = scoped(grouped(table, with_date, keys), placements);
    let sums = summed(db, &q, with_date, keys).await?;

    // The local date of a row, when it counts (in range).
    let place = |adv: &str, d: &Option<String>| -> Option<Option<String>> {
        let Some(d) = d else { return Some(None) };
        let tz = zones.get(adv).copied().unwrap_or(Tz::UTC);
        let day = NaiveDate::parse_from_str(d, "%Y-%m-%d").ok()?;
        let local = local_date(day, tz);
        if start.is_some_and(|s| local < s) || end.is_some_and(|e| local > e) {
            return None;
        }
        Some((group_by == "day").then(|| local.to_string()))
    };
    let mut groups: BTreeMap<(Option<String>, Vec<String>, String), Acc> = BTreeMap::new();
    for r in &sums {
        if !zones.contains_key(&r.advertiser_id) {
            continue;
        }
        let Some(day) = place(&r.advertiser_id, &r.date) else {
            continue;
        };
        groups
            .entry((day, r.keys.clone(), r.currency.clone()))
            .or_default()
            .add(r);
    }
    // A package's placements.
    let mut by_placement: HashMap<(String, String), BTreeMap<String, Acc>> = HashMap::new();
    if group_by == "package" {
        let pkeys = ["media_buy_id", "package_id", "placement_id"];
        let q = scoped(grouped(table, with_date, &pkeys), true);
        for r in summed(db, &q, with_date, &pkeys).await? {
            if place(&r.advertiser_id, &r.date).is_none() || !zones.contains_key(&r.advertiser_id) {
                continue;
            }
            by_placement
                .entry((r.keys[0].clone(), r.keys[1].clone()))
                .or_default()
                .entry(r.keys[2].clone())
                .or_default()
                .add(&r);
        }
    }
    Ok(groups
        .into_iter()
        .map(|((day, keys, currency), a)| {
            let key = |i: usize| keys.get(i).cloned();
            let placements = (group_by == "package").then(|| {
                by_placement
                    .get(&(key(1).unwrap_or_default(), key(2).unwrap_or_default()))
                    .map(|ps| {
                        ps.iter()
                            .map(|(id, p)| PlacementMetrics {
                                placement_id: id.clone(),
                                impressions: p.impressions,
                                spend: money(p.spend),
                                clicks: p.clicks,
                                video_completions: p.completions,
                            })
                            .collect()
                    })
                    .unwrap_or_default()
            });
            MetricsRow {
                date: day,
                campaign_id: key(0),
                media_buy_id: key(1),
                package_id: key(2),
                placement_id: key(3),
                currency,
                impressions: a.impressions,
                spend: money(a.spend),
                clicks: a.clicks,
                video_completions: a.completions,
                units: a
                    .units
                    .into_iter()
                    .map(|(pricing_model, value)| Units {
                        pricing_model,
                        value: money(value),
                    })
                    .collect(),
                by_placement: placements,
            }
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> NaiveDate {
        NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap_or_default()
    }

    #[test]
    fn a_seller_day_counts_on_the_local_date_holding_most_of_it() {
        let tz = |s: &str| s.parse::<Tz>().unwrap_or(Tz::UTC);
        assert_eq!(local_date(d("2026-12-01"), Tz::UTC), d("2026-12-01"));
        assert_eq!(
            local_date(d("2026-12-01"), tz("America/New_York")),
            d("2026-12-01")
        );
        assert_eq!(
            local_date(d("2026-12-01"), tz("Pacific/Kiritimati")),
            d("2026-12-02")
        );
        assert_eq!(
            local_date(d("2026-12-01"), tz("Pacific/Auckland")),
            d("2026-12-02")
        );
        assert_eq!(
            local_date(d("2026-07-01"), tz("Pacific/Auckland")),
            d("2026-07-01")
        );
        assert_eq!(
            seller_range(
                Some(d("2026-12-02")),
                Some(d("2026-12-03")),
                tz("Pacific/Kiritimati")
            ),
            (Some(d("2026-12-01")), Some(d("2026-12-02")))
        );
        assert_eq!(
            seller_range(Some(d("2026-12-02")), Some(d("2026-12-03")), Tz::UTC),
            (Some(d("2026-12-02")), Some(d("2026-12-03")))
        );
    }
}
