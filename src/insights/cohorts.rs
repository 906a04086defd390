//! `list_test_cohorts`: the test budgets of a campaign's auto-selected
//! products (stored by `auto_select_products` with the choice) and how
//! each performed: delivery from the sellers' daily rows of the campaign's
//! media buys of that product (package rows, in the cohort's currency),
//! conversions from the measurement engine's events attributed to those
//! buys. Answered from the database only.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Alias, Expr, ExprTrait, Func, Query};
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, QuerySelect};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{media_buy, test_cohort};

use super::money;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Filtered, Input, Nothing, Operation, Paged, Pagination, Verb};

pub const NOT_BOUGHT: &str = "not_bought";
pub const TESTING: &str = "testing";
pub const TEST_COMPLETE: &str = "test_complete";

#[derive(Debug, Default, Clone, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CohortFilter {
    /// Only this advertiser's cohorts (404 when not the account's).
    pub advertiser_id: Option<String>,
    /// Only this campaign's cohorts (404 when not the account's).
    pub campaign_id: Option<String>,
}

/// How a cohort performed so far.
#[derive(Debug, Clone, Default, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct CohortPerformance {
    pub impressions: u64,
    /// In the cohort's currency.
    pub spend: f64,
    /// `null` when no seller reported clicks.
    pub clicks: Option<u64>,
    /// clicks / impressions; `null` without clicks or impressions.
    pub ctr: Option<f64>,
    /// spend / impressions × 1000; `null` without impressions.
    pub cpm: Option<f64>,
    /// Conversion events attributed to the cohort's media buys.
    pub conversions: u64,
    /// Their summed value (the advertiser's currency).
    pub conversion_value: f64,
    /// spend / conversions; `null` without conversions.
    pub cost_per_conversion: Option<f64>,
    /// spend / testBudget; `null` without a test budget.
    pub test_budget_used: Option<f64>,
    /// The last seller day with delivery, `YYYY-MM-DD`.
    pub last_delivery_date: Option<String>,
}

/// One auto-selected product of a campaign: its test budget and results.
#[derive(Debug, Clone, Serialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct TestCohortOut {
    pub cohort_id: String,
    pub advertiser_id: String,
    pub campaign_id: String,
    pub discovery_id: String,
    pub product_id: String,
    pub storefront_id: i64,
    pub pricing_option_id: String,
    pub pricing_model: String,
    /// `scoring`, `measurability` or `cpm_heuristic`.
    pub selection_method: String,
    /// 1 for the selection's best-ranked product.
    pub rank: i32,
    pub score: f64,
    /// Share of the campaign budget (0 to 1).
    pub share: f64,
    /// The product's allocation of the campaign budget.
    pub budget: Option<f64>,
    /// The first-phase test budget (10 % of the campaign budget, split evenly).
    pub test_budget: Option<f64>,
    pub currency: String,
    pub selected_at: DateTime<Utc>,
    /// `not_bought` (no media buy of the product in the campaign yet),
    /// `testing` (spend below the test budget) or `test_complete`.
    pub status: String,
    /// The campaign's media buys of this product.
    pub media_buy_ids: Vec<String>,
    pub performance: CohortPerformance,
}

pub struct ListTestCohorts;

impl Operation for ListTestCohorts {
    const NAME: &'static str = "list_test_cohorts";
    const DESCRIPTION: &'static str = "The test cohorts of auto-selected products (auto_select_products with a campaign): each product's test budget and allocation and how it performed (impressions, spend, clicks, CTR, CPM, conversions, cost per conversion, test budget used, status not_bought/testing/test_complete), from the stored delivery and conversions; newest selection first, filtered by advertiserId and campaignId.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/test-cohorts";
    const ERRORS: &'static [(u16, &'static str)] = &[(
        404,
        "advertiserId or campaignId names no advertiser or campaign of the account",
    )];
    type Path = Nothing;
    type Query = Filtered<CohortFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<TestCohortOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let account = caller.account_id();
        if !super::scope(
            &ctx.db,
            account,
            filter.advertiser_id.as_deref(),
            filter.campaign_id.as_deref(),
        )
        .await?
        {
            return Ok(Paged {
                items: Vec::new(),
                pagination: page.of(0),
            });
        }
        let mut select =
            test_cohort::Entity::find().filter(test_cohort::Column::AccountId.eq(account));
        if let Some(a) = &filter.advertiser_id {
            select = select.filter(test_cohort::Column::AdvertiserId.eq(a.as_str()));
        }
        if let Some(c) = &filter.campaign_id {
            select = select.filter(test_cohort::Column::CampaignId.eq(c.as_str()));
        }
        let select = select
            .order_by_desc(test_cohort::Column::CreatedAt)
            .order_by_asc(test_cohort::Column::CampaignId)
            .order_by_asc(test_cohort::Column::Rank);
        let rows = page.fetch(&ctx.db, select, |r| r).await?;
        let items = performance(&ctx.db, account, rows.items).await?;
        Ok(Paged {
            items,
            pagination: rows.pagination,
        })
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

#[derive(Default)]
struct Delivered {
    impressions: i64,
    spend: f64,
    clicks: Option<i64>,
    last: Option<String>,
}

/// The cohorts with their buys and results.
async fn performance(
    db: &impl ConnectionTrait,
    account: &str,
    cohorts: Vec<test_cohort::Model>,
) -> Result<Vec<TestCohortOut>, ApiError> {
    if cohorts.is_empty() {
        return Ok(Vec::new());
    }
    let mut campaigns: Vec<String> = cohorts.iter().map(|c| c.campaign_id.clone()).collect();
    campaigns.sort();
    campaigns.dedup();
    let buys: Vec<(String, String, Option<String>, i64)> = media_buy::Entity::find()
        .select_only()
        .column(media_buy::Column::Id)
        .column(media_buy::Column::CampaignId)
        .column(media_buy::Column::ProductId)
        .column(media_buy::Column::StorefrontId)
        .filter(media_buy::Column::AccountId.eq(account))
        .filter(media_buy::Column::CampaignId.is_in(campaigns))
        .order_by_asc(media_buy::Column::CreatedAt)
        .order_by_asc(media_buy::Column::Id)
        .into_tuple()
        .all(db)
        .await?;
    let ids: Vec<String> = buys.iter().map(|b| b.0.clone()).collect();
    let delivered = delivered(db, account, &ids).await?;
    let converted = converted(db, account, &ids).await?;
    Ok(cohorts
        .into_iter()
        .map(|c| {
            let mine: Vec<String> = buys
                .iter()
                .filter(|(_, campaign, product, storefront)| {
                    *campaign == c.campaign_id
                        && product.as_deref() == Some(c.product_id.as_str())
                        && *storefront == c.storefront_id
                })
                .map(|b| b.0.clone())
                .collect();
            let mut d = Delivered::default();
            let (mut conversions, mut value) = (0i64, 0.0);
            for id in &mine {
                if let Some(x) = delivered.get(&(id.clone(), c.currency.clone())) {
                    d.impressions += x.impressions;
                    d.spend += x.spend;
                    if let Some(k) = x.clicks {
                        d.clicks = Some(d.clicks.unwrap_or(0) + k);
                    }
                    if x.last > d.last {
                        d.last.clone_from(&x.last);
                    }
                }
                if let Some((n, v)) = converted.get(id) {
                    conversions += n;
                    value += v;
                }
            }
            let impressions = u64::try_from(d.impressions).unwrap_or(0);
            let clicks = d.clicks.map(|k| u64::try_from(k).unwrap_or(0));
            let conversions = u64::try_from(conversions).unwrap_or(0);
            let spend = money(d.spend);
            let status = if mine.is_empty() {
                NOT_BOUGHT
            } else if c.test_budget.is_some_and(|t| t > 0.0 && spend >= t) {
                TEST_COMPLETE
            } else {
                TESTING
            };
            let performance = CohortPerformance {
                impressions,
                spend,
                clicks,
                ctr: clicks
                    .filter(|_| impressions > 0)
                    .map(|k| round(k as f64 / impressions as f64)),
                cpm: (impressions > 0).then(|| money(d.spend / impressions as f64 * 1000.0)),
                conversions,
                conversion_value: money(value),
                cost_per_conversion: (conversions > 0).then(|| money(d.spend / conversions as f64)),
                test_budget_used: c
                    .test_budget
                    .filter(|t| *t > 0.0)
                    .map(|t| round(d.spend / t)),
                last_delivery_date: d.last,
            };
            TestCohortOut {
                cohort_id: c.id,
                advertiser_id: c.advertiser_id,
                campaign_id: c.campaign_id,
                discovery_id: c.discovery_id,
                product_id: c.product_id,
                storefront_id: c.storefront_id,
                pricing_option_id: c.pricing_option_id,
                pricing_model: c.pricing_model,
                selection_method: c.selection_method,
                rank: c.rank,
                score: c.score,
                share: c.share,
                budget: c.budget,
                test_budget: c.test_budget,
                currency: c.currency,
                selected_at: c.created_at,
                status: status.to_string(),
                media_buy_ids: mine,
                performance,
            }
        })
        .collect())
}

/// A rate to four decimals.
fn round(v: f64) -> f64 {
    (v * 10_000.0).round() / 10_000.0
}

/// Delivery of `buys` (their package rows) by buy and currency.
async fn delivered(
    db: &impl ConnectionTrait,
    account: &str,
    buys: &[String],
) -> Result<HashMap<(String, String), Delivered>, ApiError> {
    let mut out = HashMap::new();
    if buys.is_empty() {
        return Ok(out);
    }
    let t = Alias::new("delivery_daily");
    let col = |c: &str| Expr::col((t.clone(), Alias::new(c)));
    let big = |c: &str| Expr::expr(Func::sum(col(c))).cast_as(Alias::new("BIGINT"));
    let q = Query::select()
        .from(t.clone())
        .column((t.clone(), Alias::new("media_buy_id")))
        .column((t.clone(), Alias::new("currency")))
        .expr_as(big("impressions"), Alias::new("impressions"))
        .expr_as(Func::sum(col("spend")), Alias::new("spend"))
        .expr_as(big("clicks"), Alias::new("clicks"))
        .expr_as(Func::max(col("date")), Alias::new("last_date"))
        .and_where(col("account_id").eq(account))
        .and_where(col("media_buy_id").is_in(buys.iter().map(String::as_str)))
        .and_where(col("placement_id").eq(""))
        .add_group_by([col("media_buy_id"), col("currency")])
        .to_owned();
    let stmt = db.get_database_backend().build(&q);
    for r in db.query_all_raw(stmt).await? {
        let id: String = r.try_get("", "media_buy_id")?;
        let currency: String = r.try_get("", "currency")?;
        out.insert(
            (id, currency),
            Delivered {
                impressions: r.try_get::<Option<i64>>("", "impressions")?.unwrap_or(0),
                spend: r.try_get::<Option<f64>>("", "spend")?.unwrap_or(0.0),
                clicks: r.try_get("", "clicks")?,
                last: r.try_get("", "last_date")?,
            },
        );
    }
    Ok(out)
}

/// Conversions (count, value) attributed to each of `buys`.
async fn converted(
    db: &impl ConnectionTrait,
    account: &str,
    buys: &[String],
) -> Result<HashMap<String, (i64, f64)>, ApiError> {
    let mut out = HashMap::new();
    if buys.is_empty() {
        return Ok(out);
    }
    let t = Alias::new("conversion_events");
    let col = |c: &str| Expr::col((t.clone(), Alias::new(c)));
    let q = Query::select()
        .from(t.clone())
        .column((t.clone(), Alias::new("media_buy_id")))
        .expr_as(
            Expr::expr(Func::count(col("id"))).cast_as(Alias::new("BIGINT")),
            Alias::new("conversions"),
        )
        .expr_as(Func::sum(col("value")), Alias::new("value"))
        .and_where(col("account_id").eq(account))
        .and_where(col("media_buy_id").is_in(buys.iter().map(String::as_str)))
        .add_group_by([col("media_buy_id")])
        .to_owned();
    let stmt = db.get_database_backend().build(&q);
    for r in db.query_all_raw(stmt).await? {
        let id: String = r.try_get("", "media_buy_id")?;
        out.insert(
            id,
            (
                r.try_get::<Option<i64>>("", "conversions")?.unwrap_or(0),
                r.try_get::<Option<f64>>("", "value")?.unwrap_or(0.0),
            ),
        );
    }
    Ok(out)
}
