//! Selections checked against the discovery session: each product or
//! proposal a selection names, with its pricing option, price and
//! placements, resolved into what one media buy will be (every problem at
//! once, each at its path).

use std::collections::HashSet;

use serde_json::{Value, json};

use super::model::{PRICING_MODELS, SelectionIn};
use crate::discovery::model::ProductOut;
use crate::discovery::seller::{PlacementMode, Price, Product};
use crate::error::{ApiError, Issues, Kind};

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

/// Every selection resolved, or every problem at once (the spec's codes
/// first: a currency mismatch or a missing capability is reported alone).
pub fn resolve_all(
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
