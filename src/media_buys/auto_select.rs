//! `auto_select_products`: the products of a discovery session a campaign's
//! budget should test, chosen by one of three documented methods over the
//! products' own AdCP fields, with a budget allocation each. It replaces
//! the session's chosen products; a campaign with
//! `autonomy.inventorySelection: automatic` launched with an empty cart
//! stages these.
//!
//! Candidates: products with a pricing option in the campaign's currency
//! whose model this server buys; at most [`MAX_PRODUCTS`] are chosen.
//! - `scoring` (default): 3 for a `brief_relevance` (the seller says why it
//!   fits the brief), 1 for `guaranteed` delivery, 1 for targetable
//!   placements, 1 for reporting metrics, up to 1 for format breadth
//!   (formats / 3); ties go to the lower price.
//! - `measurability`: one point per reporting metric the product offers,
//!   2 for a placement breakdown; ties go to the lower price.
//! - `cpm_heuristic`: only CPM-priced options (`cpm`, `vcpm`), cheapest
//!   first (the fixed price, else the floor); weight is 1 / price.
//!
//! Allocation: the campaign's budget split by weight (the score, or 1 /
//! price), each rounded down to a cent; `testBudgetPerProduct` is the
//! first-phase test budget, 10 % of the budget split evenly.
//!
//! With a campaign, the choice is also written as the campaign's test
//! cohorts (`test_cohorts`, replacing its earlier ones) in the same
//! transaction; `insights::cohorts` reads them.

use chrono::Utc;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use entity::{campaign, discovery_selection, test_cohort};

use super::cart::budget_of;
use super::model::PRICING_MODELS;
use crate::caller::CallerInfo;
use crate::discovery::model::ProductOut;
use crate::discovery::seller::{Price, PricingOption, Product};
use crate::error::ApiError;
use crate::ops::Ctx;

pub const MAX_PRODUCTS: usize = 5;
/// Share of the budget for the first test phase.
pub const TEST_SHARE: f64 = 0.10;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    #[default]
    Scoring,
    Measurability,
    CpmHeuristic,
}

#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct AutoSelectQuery {
    /// The campaign whose budget is allocated; by default the newest of the
    /// caller's campaigns attached to the session (`discoveryId`).
    pub campaign_id: Option<String>,
    /// `scoring` (default), `measurability` or `cpm_heuristic`.
    pub method: Option<Method>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SelectedProduct {
    pub product_id: String,
    pub storefront_id: i64,
    pub pricing_option_id: String,
    pub pricing_model: String,
    pub score: f64,
    /// Share of the budget (0 to 1).
    pub share: f64,
    /// The allocation, when the budget is known.
    pub budget: Option<f64>,
    /// For an auction option: its floor, the bid a launch stages.
    pub bid_price: Option<f64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BudgetContext {
    pub campaign_id: Option<String>,
    pub total: Option<f64>,
    pub currency: String,
    pub allocated: Option<f64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoSelection {
    pub discovery_id: String,
    pub selected_products: Vec<SelectedProduct>,
    pub budget_context: BudgetContext,
    pub selection_rationale: String,
    pub selection_method: Method,
    pub test_budget_per_product: Option<f64>,
    pub product_count: usize,
}

fn buyable<'a>(p: &'a Product, currency: &str, method: Method) -> Option<&'a PricingOption> {
    p.pricing_options.iter().find(|o| {
        o.currency == currency
            && PRICING_MODELS.contains(&o.pricing_model.as_str())
            && (method != Method::CpmHeuristic
                || matches!(o.pricing_model.as_str(), "cpm" | "vcpm"))
    })
}

fn price(o: &PricingOption) -> Option<f64> {
    match o.price {
        Price::Fixed(p) => Some(p),
        Price::Auction { floor } => floor,
    }
}

fn metrics(raw: &Value) -> usize {
    raw.pointer("/reporting_capabilities/available_metrics")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

fn score(p: &Product, method: Method, o: &PricingOption) -> f64 {
    match method {
        Method::Scoring => {
            let mut s = 0.0;
            if p.brief_relevance
                .as_deref()
                .is_some_and(|r| !r.trim().is_empty())
            {
                s += 3.0;
            }
            if p.delivery_type == crate::discovery::seller::DeliveryType::Guaranteed {
                s += 1.0;
            }
            if p.placements
                .iter()
                .any(|pl| pl.mode == crate::discovery::seller::PlacementMode::Targetable)
            {
                s += 1.0;
            }
            if metrics(&p.raw) > 0 {
                s += 1.0;
            }
            s + (p.format_ids.len().min(3) as f64) / 3.0
        }
        Method::Measurability => {
            let breakdown = p
                .raw
                .pointer("/reporting_capabilities/supports_placement_breakdown")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            metrics(&p.raw) as f64 + if breakdown { 2.0 } else { 0.0 }
        }
        Method::CpmHeuristic => match price(o) {
            Some(v) if v > 0.0 => 1.0 / v,
            _ => 0.0,
        },
    }
}

/// Chooses and allocates, and makes the choice the session's chosen
/// products.
pub async fn select(
    ctx: &Ctx,
    caller: &CallerInfo,
    discovery_id: &str,
    q: AutoSelectQuery,
) -> Result<AutoSelection, ApiError> {
    let session = crate::discovery::operations::visible_session(ctx, caller, discovery_id).await?;
    let campaign = match &q.campaign_id {
        Some(id) => {
            let c = crate::buyer::campaigns::service::load(&ctx.db, caller, id).await?;
            if c.advertiser_id != session.advertiser_id {
                return Err(ApiError::invalid(
                    "campaignId",
                    "must be a campaign of the discovery session's advertiser",
                ));
            }
            Some(c)
        }
        None => {
            campaign::Entity::find()
                .filter(campaign::Column::AccountId.eq(caller.account_id()))
                .filter(campaign::Column::DiscoveryId.eq(session.id.clone()))
                .order_by_desc(campaign::Column::CreatedAt)
                .one(&ctx.db)
                .await?
        }
    };
    let advertiser = entity::advertiser::Entity::find_by_id(session.advertiser_id.clone())
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))?;
    let currency = campaign
        .as_ref()
        .map(|c| budget_of(c).currency)
        .unwrap_or(advertiser.primary_currency);
    let method = q.method.unwrap_or_default();
    let products = crate::discovery::selection::products_of(ctx, &session.id).await?;
    let candidates = rank(&products, &currency, method);
    let chosen: Vec<_> = candidates.into_iter().take(MAX_PRODUCTS).collect();
    let total_weight: f64 = chosen.iter().map(|c| c.weight).sum();
    let total = campaign.as_ref().map(|c| budget_of(c).total);
    let n = chosen.len();
    let selected: Vec<SelectedProduct> = chosen
        .iter()
        .map(|c| {
            let share = if total_weight > 0.0 {
                c.weight / total_weight
            } else {
                1.0 / n as f64
            };
            SelectedProduct {
                product_id: c.out.product_id.clone(),
                storefront_id: c.out.storefront_id,
                pricing_option_id: c.option_id.clone(),
                pricing_model: c.model.clone(),
                score: (c.score * 1000.0).round() / 1000.0,
                share: (share * 10_000.0).round() / 10_000.0,
                budget: total.map(|t| (t * share * 100.0).floor() / 100.0),
                bid_price: c.floor,
            }
        })
        .collect();
    // The choice replaces the session's chosen products.
    {
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        discovery_selection::Entity::delete_many()
            .filter(discovery_selection::Column::SessionId.eq(session.id.clone()))
            .exec(&txn)
            .await?;
        let now = Utc::now();
        let rows: Vec<discovery_selection::ActiveModel> = chosen
            .iter()
            .map(|c| discovery_selection::ActiveModel {
                session_id: Set(session.id.clone()),
                product_id: Set(c.out.product_id.clone()),
                group_id: Set(c.group_id.clone()),
                added_by_user_id: Set(caller.user.id),
                created_at: Set(now),
            })
            .collect();
        if !rows.is_empty() {
            discovery_selection::Entity::insert_many(rows)
                .exec_without_returning(&txn)
                .await?;
        }
        // The campaign's test cohorts (read by `insights`): this choice
        // replaces the campaign's earlier one.
        if let Some(c) = &campaign {
            test_cohort::Entity::delete_many()
                .filter(test_cohort::Column::CampaignId.eq(c.id.clone()))
                .exec(&txn)
                .await?;
            let test_budget = test_budget(total, n);
            let cohorts: Vec<test_cohort::ActiveModel> = selected
                .iter()
                .enumerate()
                .map(|(i, p)| test_cohort::ActiveModel {
                    id: Set(uuid::Uuid::new_v4().to_string()),
                    account_id: Set(c.account_id.clone()),
                    advertiser_id: Set(c.advertiser_id.clone()),
                    campaign_id: Set(c.id.clone()),
                    discovery_id: Set(session.id.clone()),
                    product_id: Set(p.product_id.clone()),
                    storefront_id: Set(p.storefront_id),
                    pricing_option_id: Set(p.pricing_option_id.clone()),
                    pricing_model: Set(p.pricing_model.clone()),
                    selection_method: Set(method.as_str().to_string()),
                    rank: Set(i32::try_from(i + 1).unwrap_or(i32::MAX)),
                    score: Set(p.score),
                    share: Set(p.share),
                    budget: Set(p.budget),
                    test_budget: Set(test_budget),
                    currency: Set(currency.clone()),
                    created_at: Set(now),
                })
                .collect();
            if !cohorts.is_empty() {
                test_cohort::Entity::insert_many(cohorts)
                    .exec_without_returning(&txn)
                    .await?;
            }
        }
        txn.commit().await?;
    }
    let allocated = total.map(|_| selected.iter().filter_map(|s| s.budget).sum::<f64>());
    let rationale = match (n, method) {
        (0, _) => format!("No product of this session can be bought in {currency}."),
        (_, Method::Scoring) => format!(
            "The {n} best-scoring products: a seller's brief relevance counts 3, guaranteed delivery, targetable placements and reporting 1 each, format breadth up to 1; budget split by score."
        ),
        (_, Method::Measurability) => format!(
            "The {n} most measurable products: one point per reporting metric, 2 for a placement breakdown; budget split by score."
        ),
        (_, Method::CpmHeuristic) => format!(
            "The {n} cheapest CPM-priced products (fixed price, else floor); budget split by inverse price."
        ),
    };
    Ok(AutoSelection {
        discovery_id: session.id,
        product_count: n,
        test_budget_per_product: test_budget(total, n),
        budget_context: BudgetContext {
            campaign_id: campaign.map(|c| c.id),
            total,
            currency,
            allocated,
        },
        selected_products: selected,
        selection_rationale: rationale,
        selection_method: method,
    })
}

/// The first-phase test budget of each of `n` products out of `total`.
fn test_budget(total: Option<f64>, n: usize) -> Option<f64> {
    total
        .filter(|_| n > 0)
        .map(|t| (t * TEST_SHARE / n as f64 * 100.0).floor() / 100.0)
}

impl Method {
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Scoring => "scoring",
            Method::Measurability => "measurability",
            Method::CpmHeuristic => "cpm_heuristic",
        }
    }
}

struct Candidate<'a> {
    out: &'a ProductOut,
    group_id: String,
    option_id: String,
    model: String,
    score: f64,
    weight: f64,
    price: f64,
    floor: Option<f64>,
}

fn rank<'a>(
    products: &'a [(String, ProductOut)],
    currency: &str,
    method: Method,
) -> Vec<Candidate<'a>> {
    let mut out: Vec<Candidate<'a>> = products
        .iter()
        .filter_map(|(group, p)| {
            let parsed = Product::parse(&p.adcp).ok()?;
            let o = buyable(&parsed, currency, method)?;
            let s = score(&parsed, method, o);
            if method == Method::CpmHeuristic && s <= 0.0 {
                return None;
            }
            Some(Candidate {
                out: p,
                group_id: group.clone(),
                option_id: o.pricing_option_id.clone(),
                model: o.pricing_model.as_str().to_string(),
                score: s,
                weight: s.max(0.0),
                price: price(o).unwrap_or(f64::MAX),
                floor: match o.price {
                    Price::Auction { floor } => floor,
                    Price::Fixed(_) => None,
                },
            })
        })
        .collect();
    out.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then(a.price.total_cmp(&b.price))
            .then(a.out.product_id.cmp(&b.out.product_id))
    });
    out
}
