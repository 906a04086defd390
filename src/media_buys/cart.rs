//! Staging: selections checked against the discovery session's products,
//! turned into DRAFT media buys of the campaign (the cart) in one
//! transaction with the budget check.

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseTransaction, EntityTrait, IntoActiveModel, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde_json::{Map, Value, json};

use entity::{advertiser, campaign, media_buy};

use super::model::{
    self, CampaignRef, CreateMediaBuysIn, DRAFT, FAILED, Mode, PRICING_MODELS, SelectionIn,
};
use crate::buyer::advertisers::model::{FrequencyCap, UtmParam, default_utm_config};
use crate::buyer::campaigns::model::Budget;
use crate::buyer::campaigns::service as campaigns;
use crate::caller::CallerInfo;
use crate::discovery::model::ProductOut;
use crate::discovery::seller::{PlacementMode, Price, Product};
use crate::error::{ApiError, Issues, Kind};
use crate::ops::Ctx;

/// A selection resolved against the session: what one buy will be.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub storefront_id: i64,
    pub kind: &'static str,
    pub product_id: Option<String>,
    pub proposal_id: Option<String>,
    pub pricing_option_id: Option<String>,
    pub pricing_model: Option<String>,
    pub currency: String,
    pub budget: f64,
    pub bid_price: Option<f64>,
    /// An auction option without a bid: staged, but not executable.
    pub unpriced: bool,
    pub placement_ids: Vec<String>,
}

impl Resolved {
    pub fn key(&self) -> String {
        match (&self.product_id, &self.proposal_id) {
            (Some(p), _) => format!("product:{}:{p}", self.storefront_id),
            (None, Some(p)) => format!("proposal:{}:{p}", self.storefront_id),
            (None, None) => format!("unknown:{}", self.storefront_id),
        }
    }
}

/// The cart after staging.
pub struct Staged {
    pub campaign_id: String,
    pub campaign_created: bool,
    /// The buys this batch names, by id.
    pub batch: Vec<String>,
    /// Executing: the buys claimed to be sent.
    pub claimed: Vec<media_buy::Model>,
}

/// Stages the selections into the campaign's cart (every check first, one
/// transaction, nothing written when anything fails).
pub async fn stage(
    ctx: &Ctx,
    caller: &CallerInfo,
    body: CreateMediaBuysIn,
) -> Result<Staged, ApiError> {
    if body.selections.is_empty() && !body.replace {
        return Err(ApiError::invalid(
            "selections",
            "must hold at least one selection (an empty batch only with replace: true, which empties the cart)",
        ));
    }
    if body.selections.len() > 200 {
        return Err(ApiError::invalid(
            "selections",
            "must hold at most 200 selections",
        ));
    }
    let session =
        crate::discovery::operations::visible_session(ctx, caller, &body.product_query_id)
            .await
            .map_err(|e| not_found_at(e, "productQueryId"))?;
    let products = crate::discovery::selection::products_of(ctx, &session.id).await?;
    let proposals = crate::discovery::selection::proposals_of(ctx, &session.id).await?;
    let advertiser = advertiser::Entity::find_by_id(session.advertiser_id.clone())
        .filter(advertiser::Column::AccountId.eq(caller.account_id()))
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))?;

    let CampaignRef {
        campaign_id,
        create,
    } = body.campaign;
    let create = match (campaign_id.as_deref(), create) {
        (Some(_), Some(_)) | (None, None) => {
            return Err(ApiError::invalid(
                "campaign",
                "give exactly one of campaignId and create",
            ));
        }
        (Some(_), None) => None,
        (None, Some(c)) => Some(c),
    };
    let currency = match (&campaign_id, &create) {
        (Some(id), _) => {
            let row = campaigns::load(&ctx.db, caller, id)
                .await
                .map_err(|e| not_found_at(e, "campaign.campaignId"))?;
            check_campaign(&row, &session.advertiser_id)?;
            budget_of(&row).currency
        }
        _ => advertiser.primary_currency.clone(),
    };

    let resolved = resolve_all(&body.selections, &products, &proposals, &currency)?;

    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let (campaign, created) = match (campaign_id, create) {
        (Some(id), _) => {
            let row = lock_campaign(&txn, caller, &id).await?;
            check_campaign(&row, &session.advertiser_id)?;
            (row, false)
        }
        (None, Some(mut body)) => {
            match body.advertiser_id.as_deref() {
                None => body.advertiser_id = Some(session.advertiser_id.clone()),
                Some(a) if a == session.advertiser_id => {}
                Some(_) => {
                    return Err(ApiError::invalid(
                        "campaign.create.advertiserId",
                        "must be the discovery session's advertiser",
                    ));
                }
            }
            let env = campaigns::create_in(&txn, caller, body)
                .await
                .map_err(|e| prefix_fields(e, "campaign.create"))?;
            let row = lock_campaign(&txn, caller, &env.campaign.campaign_id).await?;
            (row, true)
        }
        (None, None) => return Err(ApiError::invalid("campaign", "is required")),
    };
    let (batch, fresh) = write_cart(
        &txn,
        &campaign,
        &advertiser,
        &session.id,
        resolved,
        body.replace,
    )
    .await?;
    // Executing claims the batch in the same transaction: a refusal
    // (pricing, credit) leaves nothing staged.
    let claimed = if body.mode == Mode::Execute {
        super::dispatch::claim(
            ctx,
            &txn,
            caller.account_id(),
            &campaign.id,
            Some(&batch),
            &fresh,
        )
        .await?
    } else {
        Vec::new()
    };
    txn.commit().await?;
    Ok(Staged {
        campaign_id: campaign.id,
        campaign_created: created,
        batch,
        claimed,
    })
}

/// A 404 that names the field whose id was not found.
fn not_found_at(e: ApiError, field: &str) -> ApiError {
    match e {
        ApiError::NotFound(message) => ApiError::Coded {
            kind: Kind::NotFound,
            code: "NOT_FOUND",
            message,
            field: Some(field.into()),
            details: None,
        },
        other => other,
    }
}

fn prefix_fields(e: ApiError, prefix: &str) -> ApiError {
    match e {
        ApiError::Validation {
            message,
            field,
            issues,
        } => ApiError::Validation {
            message: format!("{prefix}.{message}"),
            field: field.map(|f| format!("{prefix}.{f}")),
            issues: issues
                .into_iter()
                .map(|mut i| {
                    i.path = format!("{prefix}.{}", i.path);
                    i
                })
                .collect(),
        },
        ApiError::Coded {
            kind,
            code,
            message,
            field,
            details,
        } => ApiError::Coded {
            kind,
            code,
            message,
            field: field.map(|f| format!("{prefix}.{f}")),
            details,
        },
        other => other,
    }
}

async fn lock_campaign(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    id: &str,
) -> Result<campaign::Model, ApiError> {
    let id = crate::buyer::campaigns::model::campaign_id(id)?;
    campaign::Entity::find_by_id(id)
        .filter(campaign::Column::AccountId.eq(caller.account_id()))
        .lock_exclusive()
        .one(txn)
        .await?
        .ok_or_else(|| ApiError::not_found("campaign"))
}

/// A cart belongs to a campaign of the session's advertiser that can still
/// buy.
fn check_campaign(row: &campaign::Model, advertiser_id: &str) -> Result<(), ApiError> {
    if row.advertiser_id != advertiser_id {
        return Err(ApiError::invalid(
            "campaign.campaignId",
            "must be a campaign of the discovery session's advertiser",
        ));
    }
    if matches!(row.status.as_str(), "ARCHIVED" | "COMPLETED") {
        return Err(ApiError::Conflict {
            message: format!("a {} campaign takes no media buys", row.status),
            details: Some(json!({"reason": "illegal_transition", "status": row.status})),
        });
    }
    Ok(())
}

pub fn budget_of(row: &campaign::Model) -> Budget {
    serde_json::from_str(&row.budget).unwrap_or(Budget {
        total: 0.0,
        currency: String::new(),
        daily_cap: None,
        pacing: "even".into(),
    })
}

/// Every selection resolved, or every problem at once (the spec's codes
/// first: a currency mismatch or a missing capability is reported alone).
fn resolve_all(
    selections: &[SelectionIn],
    products: &[(String, ProductOut)],
    proposals: &[(i64, Value)],
    currency: &str,
) -> Result<Vec<Resolved>, ApiError> {
    let mut issues = Issues::default();
    let mut out = Vec::with_capacity(selections.len());
    let mut keys = HashSet::new();
    for (i, s) in selections.iter().enumerate() {
        let path = format!("selections[{i}]");
        match resolve(s, &path, products, proposals, currency, &mut issues)? {
            Some(r) => {
                if !keys.insert(r.key()) {
                    issues.add(
                        path,
                        "names the same product or proposal as an earlier selection",
                    );
                }
                out.push(r);
            }
            None => continue,
        }
    }
    issues.into_result()?;
    Ok(out)
}

fn resolve(
    s: &SelectionIn,
    path: &str,
    products: &[(String, ProductOut)],
    proposals: &[(i64, Value)],
    currency: &str,
    issues: &mut Issues,
) -> Result<Option<Resolved>, ApiError> {
    match s {
        SelectionIn::Proposal {
            proposal_id,
            total_budget,
            storefront_id,
        } => {
            if !total_budget.is_finite() || *total_budget <= 0.0 || *total_budget > 1e12 {
                issues.add(
                    format!("{path}.totalBudget"),
                    "must be above 0 and at most 1e12",
                );
            }
            let matches: Vec<i64> = proposals
                .iter()
                .filter(|(_, p)| p.get("proposal_id").and_then(Value::as_str) == Some(proposal_id))
                .map(|(sf, _)| *sf)
                .filter(|sf| storefront_id.is_none_or(|id| *sf == id))
                .collect();
            let storefront = match matches.as_slice() {
                [] => {
                    issues.add(
                        format!("{path}.proposalId"),
                        "is not a proposal the session's sellers made",
                    );
                    return Ok(None);
                }
                [one] => *one,
                many => {
                    issues.add(
                        format!("{path}.storefrontId"),
                        format!("is required: storefronts {many:?} made a proposal with this id"),
                    );
                    return Ok(None);
                }
            };
            Ok(Some(Resolved {
                storefront_id: storefront,
                kind: "proposal",
                product_id: None,
                proposal_id: Some(proposal_id.clone()),
                pricing_option_id: None,
                pricing_model: None,
                currency: currency.to_string(),
                budget: *total_budget,
                bid_price: None,
                unpriced: false,
                placement_ids: Vec::new(),
            }))
        }
        SelectionIn::Product {
            product_id,
            budget,
            bid_price,
            storefront_id,
            pricing_option_id,
            placement_ids,
        } => {
            if !budget.is_finite() || *budget <= 0.0 || *budget > 1e12 {
                issues.add(format!("{path}.budget"), "must be above 0 and at most 1e12");
            }
            if let Some(b) = bid_price
                && (!b.is_finite() || *b <= 0.0)
            {
                issues.add(format!("{path}.bidPrice"), "must be above 0");
            }
            let matches: Vec<&ProductOut> = products
                .iter()
                .map(|(_, p)| p)
                .filter(|p| &p.product_id == product_id)
                .filter(|p| storefront_id.is_none_or(|id| p.storefront_id == id))
                .collect();
            let found = match matches.as_slice() {
                [] => {
                    issues.add(
                        format!("{path}.productId"),
                        "is not a product of this discovery session",
                    );
                    return Ok(None);
                }
                [one] => *one,
                many => {
                    let ids: Vec<i64> = many.iter().map(|p| p.storefront_id).collect();
                    issues.add(
                        format!("{path}.storefrontId"),
                        format!("is required: storefronts {ids:?} offer this product id"),
                    );
                    return Ok(None);
                }
            };
            let product = match Product::parse(&found.adcp) {
                Ok(p) => p,
                Err(e) => {
                    issues.add(
                        format!("{path}.productId"),
                        format!("the product cannot be bought: {e}"),
                    );
                    return Ok(None);
                }
            };
            // The pricing option: the one named, or the first in the
            // campaign's currency with a model this server buys.
            let option = match pricing_option_id {
                Some(id) => match product
                    .pricing_options
                    .iter()
                    .find(|o| &o.pricing_option_id == id)
                {
                    Some(o) => o,
                    None => {
                        issues.add(
                            format!("{path}.pricingOptionId"),
                            "is not a pricing option of this product",
                        );
                        return Ok(None);
                    }
                },
                None => {
                    let buyable = |o: &&crate::discovery::seller::PricingOption| {
                        PRICING_MODELS.contains(&o.pricing_model.as_str())
                    };
                    match product
                        .pricing_options
                        .iter()
                        .filter(buyable)
                        .find(|o| o.currency == currency)
                        .or_else(|| product.pricing_options.iter().find(buyable))
                    {
                        Some(o) => o,
                        None => {
                            issues.add(
                                format!("{path}.productId"),
                                format!(
                                    "offers no pricing model this server buys ({})",
                                    PRICING_MODELS.join(", ")
                                ),
                            );
                            return Ok(None);
                        }
                    }
                }
            };
            let model = option.pricing_model.as_str();
            if !PRICING_MODELS.contains(&model) {
                issues.add(
                    format!("{path}.pricingOptionId"),
                    format!(
                        "uses pricing model {model}; one of {} is required",
                        PRICING_MODELS.join(", ")
                    ),
                );
                return Ok(None);
            }
            if option.currency != currency {
                return Err(ApiError::Coded {
                    kind: Kind::Invalid,
                    code: "CURRENCY_MISMATCH",
                    message: format!(
                        "{path}: the product is priced in {} and the campaign's currency is {currency}",
                        option.currency
                    ),
                    field: Some(format!("{path}.pricingOptionId")),
                    details: Some(json!({
                        "productCurrency": option.currency,
                        "campaignCurrency": currency,
                    })),
                });
            }
            let unpriced = match (option.price, bid_price) {
                (Price::Fixed(_), Some(_)) => {
                    issues.add(
                        format!("{path}.bidPrice"),
                        "is only for auction pricing; this option has a fixed price",
                    );
                    false
                }
                (Price::Fixed(_), None) => false,
                (Price::Auction { floor: Some(f) }, Some(b)) if *b < f => {
                    issues.add(
                        format!("{path}.bidPrice"),
                        format!("must be at least the floor price {f}"),
                    );
                    false
                }
                (Price::Auction { .. }, Some(_)) => false,
                (Price::Auction { .. }, None) => true,
            };
            let wanted = placement_ids.clone().unwrap_or_default();
            if !wanted.is_empty() && product.placements.is_empty() {
                return Err(ApiError::coded(
                    Kind::Unprocessable,
                    "CAPABILITY_NOT_SUPPORTED",
                    format!("{path}: the product has no placements to target"),
                    json!({"field": format!("{path}.placementIds"), "capability": "placements"}),
                ));
            }
            for (j, id) in wanted.iter().enumerate() {
                match product.placements.iter().find(|p| &p.placement_id == id) {
                    None => issues.add(
                        format!("{path}.placementIds[{j}]"),
                        "is not a placement of this product",
                    ),
                    Some(p) if p.mode != PlacementMode::Targetable => issues.add(
                        format!("{path}.placementIds[{j}]"),
                        "is an included placement (descriptive only); only targetable placements can be selected",
                    ),
                    Some(_) => {}
                }
            }
            Ok(Some(Resolved {
                storefront_id: found.storefront_id,
                kind: "product",
                product_id: Some(product.product_id.clone()),
                proposal_id: None,
                pricing_option_id: Some(option.pricing_option_id.clone()),
                pricing_model: Some(model.to_string()),
                currency: option.currency.clone(),
                budget: *budget,
                bid_price: *bid_price,
                unpriced,
                placement_ids: wanted,
            }))
        }
    }
}

/// Writes the batch into the campaign's cart and checks the budget.
async fn write_cart(
    txn: &DatabaseTransaction,
    campaign: &campaign::Model,
    advertiser: &advertiser::Model,
    session_id: &str,
    resolved: Vec<Resolved>,
    replace: bool,
) -> Result<(Vec<String>, HashMap<String, usize>), ApiError> {
    let existing = media_buy::Entity::find()
        .filter(media_buy::Column::CampaignId.eq(campaign.id.clone()))
        .order_by_asc(media_buy::Column::CreatedAt)
        .all(txn)
        .await?;
    let first = existing.is_empty();
    let mut by_key: HashMap<String, media_buy::Model> = existing
        .into_iter()
        .map(|b| (b.selection_key.clone(), b))
        .collect();
    let now = Utc::now();
    let budget = budget_of(campaign);
    let mut batch = Vec::with_capacity(resolved.len());
    let mut fresh = HashMap::new();
    let mut keys = HashSet::new();
    for (index, r) in resolved.into_iter().enumerate() {
        let key = r.key();
        keys.insert(key.clone());
        match by_key.remove(&key) {
            // Already bought (or being bought): a repeat changes nothing.
            Some(b) if b.status != DRAFT && b.status != FAILED => batch.push(b.id),
            Some(b) => {
                let package = package(&b.id, campaign, advertiser, &r, &budget);
                let id = b.id.clone();
                let mut row = b.into_active_model();
                row.budget = Set(r.budget);
                row.bid_price = Set(r.bid_price);
                row.priced = Set(!r.unpriced);
                row.pricing_option_id = Set(r.pricing_option_id.clone());
                row.pricing_model = Set(r.pricing_model.clone());
                row.currency = Set(r.currency.clone());
                row.discovery_id = Set(session_id.to_string());
                row.package = Set(package.to_string());
                row.updated_at = Set(now);
                row.update(txn).await?;
                batch.push(id);
            }
            None => {
                let id = model::new_id();
                let package = package(&id, campaign, advertiser, &r, &budget);
                media_buy::ActiveModel {
                    id: Set(id.clone()),
                    account_id: Set(campaign.account_id.clone()),
                    advertiser_id: Set(campaign.advertiser_id.clone()),
                    campaign_id: Set(campaign.id.clone()),
                    discovery_id: Set(session_id.to_string()),
                    storefront_id: Set(r.storefront_id),
                    selection_key: Set(key),
                    kind: Set(r.kind.to_string()),
                    product_id: Set(r.product_id.clone()),
                    proposal_id: Set(r.proposal_id.clone()),
                    pricing_option_id: Set(r.pricing_option_id.clone()),
                    pricing_model: Set(r.pricing_model.clone()),
                    currency: Set(r.currency.clone()),
                    budget: Set(r.budget),
                    bid_price: Set(r.bid_price),
                    priced: Set(!r.unpriced),
                    package: Set(package.to_string()),
                    status: Set(DRAFT.into()),
                    adcp_status: Set(None),
                    previous_status: Set(None),
                    previous_adcp_status: Set(None),
                    status_changed_at: Set(now),
                    adcp_media_buy_id: Set(None),
                    adcp_task_id: Set(None),
                    adcp_revision: Set(None),
                    idempotency_key: Set(model::idempotency_key(&id)),
                    adcp_request: Set(None),
                    sandbox: Set(advertiser.sandbox),
                    errors: Set("[]".into()),
                    dispatched_at: Set(None),
                    next_poll_at: Set(None),
                    last_polled_at: Set(None),
                    poll_failures: Set(0),
                    poll_lease_owner: Set(None),
                    poll_lease_until: Set(None),
                    created_at: Set(now),
                    updated_at: Set(now),
                }
                .insert(txn)
                .await?;
                fresh.insert(id.clone(), index);
                batch.push(id);
            }
        }
    }
    // The campaign's first buys begin its webhook audience.
    if first && !fresh.is_empty() {
        crate::webhooks::events::capture_audience(
            txn,
            &campaign.account_id,
            super::events::WEBHOOK_EVENT,
            &super::events::webhook_scope(&campaign.id),
        )
        .await?;
    }
    if replace {
        let stale: Vec<String> = by_key
            .values()
            .filter(|b| b.status == DRAFT && !keys.contains(&b.selection_key))
            .map(|b| b.id.clone())
            .collect();
        if !stale.is_empty() {
            media_buy::Entity::delete_many()
                .filter(media_buy::Column::Id.is_in(stale))
                .exec(txn)
                .await?;
        }
    }
    check_budget(txn, campaign, &budget).await?;
    Ok((batch, fresh))
}

/// The campaign's buys that spend (every one but failed, rejected and
/// canceled) must fit its budget.
async fn check_budget(
    txn: &DatabaseTransaction,
    campaign: &campaign::Model,
    budget: &Budget,
) -> Result<(), ApiError> {
    let rows: Vec<(String, f64)> = media_buy::Entity::find()
        .select_only()
        .column(media_buy::Column::Id)
        .column(media_buy::Column::Budget)
        .filter(media_buy::Column::CampaignId.eq(campaign.id.clone()))
        .filter(media_buy::Column::Status.is_not_in([FAILED, "rejected", "canceled"]))
        .into_tuple()
        .all(txn)
        .await?;
    let total: f64 = rows.iter().map(|(_, b)| b).sum();
    if total > budget.total + 1e-9 {
        return Err(ApiError::coded(
            Kind::Conflict,
            "INSUFFICIENT_MEDIA_BUDGET",
            format!(
                "the media buys total {total} {} and the campaign's budget is {} {}",
                budget.currency, budget.total, budget.currency
            ),
            json!({
                "campaignBudget": budget.total,
                "mediaBuysTotal": total,
                "currency": budget.currency,
                "shortfall": total - budget.total,
            }),
        ));
    }
    Ok(())
}

/// The AdCP package a buy sends: its product, price and budget, the
/// campaign's effective targeting and the advertiser's first frequency cap
/// as the overlay, and the advertiser's utm parameters with this buy's
/// macros resolved (`{CREATIVE_ID}` stays for the creative).
pub fn package(
    media_buy_id: &str,
    campaign: &campaign::Model,
    advertiser: &advertiser::Model,
    r: &Resolved,
    budget: &Budget,
) -> Value {
    let package_id = package_id(media_buy_id);
    let mut p = Map::new();
    if let Some(id) = &r.product_id {
        p.insert("product_id".into(), json!(id));
    }
    if let Some(id) = &r.pricing_option_id {
        p.insert("pricing_option_id".into(), json!(id));
    }
    p.insert("budget".into(), json!(r.budget));
    if let Some(b) = r.bid_price {
        p.insert("bid_price".into(), json!(b));
    }
    p.insert("pacing".into(), json!(budget.pacing));
    let mut overlay = targeting_overlay(campaign);
    let caps: Vec<FrequencyCap> = crate::buyer::from_json(&advertiser.frequency_caps);
    if let Some(cap) = caps.first().and_then(frequency_cap) {
        overlay.insert("frequency_cap".into(), cap);
    }
    if !overlay.is_empty() {
        p.insert("targeting_overlay".into(), Value::Object(overlay));
    }
    p.insert(
        "context".into(),
        json!({"package_id": package_id, "media_buy_id": media_buy_id}),
    );
    let mut utm: Vec<UtmParam> = crate::buyer::from_json(&advertiser.utm_config);
    if utm.is_empty() {
        utm = default_utm_config();
    }
    let utm: Map<String, Value> = utm
        .into_iter()
        .map(|u| {
            let v = u
                .param_value
                .replace("{MEDIA_BUY_ID}", media_buy_id)
                .replace("{PACKAGE_ID}", &package_id)
                .replace("{CAMPAIGN_ID}", &campaign.id);
            (u.param_key, Value::String(v))
        })
        .collect();
    let mut platform = Map::new();
    platform.insert("utm_parameters".into(), Value::Object(utm));
    if !r.placement_ids.is_empty() {
        platform.insert("placement_ids".into(), json!(r.placement_ids));
    }
    if caps.len() > 1 {
        platform.insert(
            "frequency_caps".into(),
            serde_json::to_value(&caps).unwrap_or(Value::Null),
        );
    }
    p.insert("ext".into(), json!({ "platform": platform }));
    Value::Object(p)
}

/// Our package id of a buy (one package per buy), for `{PACKAGE_ID}`.
pub fn package_id(media_buy_id: &str) -> String {
    format!("pkg_{}", media_buy_id.trim_start_matches("mb_"))
}

/// The AdCP targeting overlay's keys, from the campaign's effective
/// targeting (the same names).
const OVERLAY_KEYS: &[&str] = &[
    "geo_countries",
    "geo_countries_exclude",
    "geo_regions",
    "geo_regions_exclude",
    "geo_metros",
    "geo_metros_exclude",
    "geo_postal_areas",
    "geo_postal_areas_exclude",
    "language",
    "device_type",
    "device_type_exclude",
    "device_platform",
];

fn targeting_overlay(campaign: &campaign::Model) -> Map<String, Value> {
    let effective = campaigns::out(campaign.clone(), false).effective_targeting;
    let mut out = Map::new();
    if let Value::Object(m) = effective {
        for (k, v) in m {
            if OVERLAY_KEYS.contains(&k.as_str()) && !v.is_null() {
                out.insert(k, v);
            }
        }
    }
    out
}

/// An advertiser cap in AdCP's form (weeks and months in days).
fn frequency_cap(cap: &FrequencyCap) -> Option<Value> {
    let (interval, unit) = match cap.window.unit.as_str() {
        "minutes" | "hours" | "days" => (cap.window.interval, cap.window.unit.as_str()),
        "weeks" => (cap.window.interval * 7, "days"),
        "months" => (cap.window.interval * 30, "days"),
        _ => return None,
    };
    Some(json!({
        "max_impressions": cap.max_exposure,
        "per": "individuals",
        "window": {"interval": interval, "unit": unit},
    }))
}
