//! What the buyer asks a seller: an AdCP 3.1 `get_products` request.

use std::time::Duration;

use serde::Serialize;
use serde_json::{Map, Value, json};

use super::product::{DeliveryType, PricingModel};
use crate::buyer::advertisers::model::CHANNELS;

/// The AdCP release this client speaks.
pub const ADCP_VERSION: &str = "3.1";

/// One `get_products` question.
#[derive(Debug, Clone, PartialEq)]
pub struct ProductQuery {
    pub mode: BuyingMode,
    /// The advertiser's brand domain (`brand.domain`), lowercase.
    pub brand: Option<String>,
    pub filters: ProductFilters,
}

/// AdCP `buying_mode` with what each mode requires.
#[derive(Debug, Clone, PartialEq)]
pub enum BuyingMode {
    /// Curated discovery from a brief (sent in full).
    Brief(String),
    /// The raw product feed; no brief.
    Wholesale,
    /// Change requests on products and proposals of an earlier answer; at
    /// least one.
    Refine(Vec<Refinement>),
}

/// One AdCP `refine[]` entry.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(tag = "scope", rename_all = "snake_case")]
pub enum Refinement {
    Request {
        ask: String,
    },
    Product {
        product_id: String,
        action: ProductAction,
        #[serde(skip_serializing_if = "Option::is_none")]
        ask: Option<String>,
    },
    Proposal {
        proposal_id: String,
        action: ProposalAction,
        #[serde(skip_serializing_if = "Option::is_none")]
        ask: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProductAction {
    Include,
    Omit,
    MoreLikeThis,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProposalAction {
    Include,
    Omit,
    Finalize,
}

/// Filters. Empty lists mean "no filter".
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProductFilters {
    /// AdCP media channels (`display`, `ctv`, ...).
    pub channels: Vec<String>,
    /// ISO 3166-1 alpha-2, upper case.
    pub countries: Vec<String>,
    pub delivery_type: Option<DeliveryType>,
    /// ISO 4217, upper case: products priced in one of these.
    pub pricing_currencies: Vec<String>,
    /// AdCP 3.1 has no pricing-model filter, so this one is applied to the
    /// answer: a product stays if one of its options uses one of these.
    pub pricing_models: Vec<PricingModel>,
}

impl ProductQuery {
    pub fn brief(brief: impl Into<String>) -> Self {
        ProductQuery {
            mode: BuyingMode::Brief(brief.into()),
            brand: None,
            filters: ProductFilters::default(),
        }
    }

    /// Checks what AdCP requires of the request; the message names the field.
    pub fn validate(&self) -> Result<(), String> {
        match &self.mode {
            BuyingMode::Brief(b) if b.trim().is_empty() => {
                return Err("brief: must not be empty in brief mode".into());
            }
            BuyingMode::Refine(r) if r.is_empty() => {
                return Err("refine: at least one change request is needed".into());
            }
            BuyingMode::Refine(r) => validate_refine(r)?,
            _ => {}
        }
        if let Some(b) = &self.brand
            && !is_domain(b)
        {
            return Err(format!("brand: '{b}' is not a lowercase domain"));
        }
        let f = &self.filters;
        for (i, c) in f.channels.iter().enumerate() {
            if !CHANNELS.contains(&c.as_str()) {
                return Err(format!("filters.channels[{i}]: unknown channel '{c}'"));
            }
        }
        for (i, c) in f.countries.iter().enumerate() {
            if c.len() != 2 || !c.bytes().all(|b| b.is_ascii_uppercase()) {
                return Err(format!(
                    "filters.countries[{i}]: '{c}' is not an ISO 3166-1 alpha-2 code"
                ));
            }
        }
        for (i, c) in f.pricing_currencies.iter().enumerate() {
            if iso_currency::Currency::from_code(c).is_none() {
                return Err(format!(
                    "filters.pricing_currencies[{i}]: '{c}' is not an ISO 4217 code"
                ));
            }
        }
        Ok(())
    }

    /// The `get_products` tool arguments. `budget` becomes AdCP
    /// `time_budget`, so the seller does not start work it cannot finish.
    pub fn arguments(&self, budget: Duration) -> Map<String, Value> {
        let mut args = Map::new();
        args.insert("adcp_version".into(), json!(ADCP_VERSION));
        args.insert("adcp_major_version".into(), json!(3));
        let mode = match &self.mode {
            BuyingMode::Brief(brief) => {
                args.insert("brief".into(), json!(brief));
                "brief"
            }
            BuyingMode::Wholesale => "wholesale",
            BuyingMode::Refine(refine) => {
                args.insert("refine".into(), json!(refine));
                "refine"
            }
        };
        args.insert("buying_mode".into(), json!(mode));
        if let Some(domain) = &self.brand {
            args.insert("brand".into(), json!({ "domain": domain }));
        }
        let f = &self.filters;
        let mut filters = Map::new();
        if !f.channels.is_empty() {
            filters.insert("channels".into(), json!(f.channels));
        }
        if !f.countries.is_empty() {
            filters.insert("countries".into(), json!(f.countries));
        }
        if let Some(d) = f.delivery_type {
            filters.insert("delivery_type".into(), json!(d));
        }
        if !f.pricing_currencies.is_empty() {
            filters.insert("pricing_currencies".into(), json!(f.pricing_currencies));
        }
        if !filters.is_empty() {
            args.insert("filters".into(), Value::Object(filters));
        }
        let seconds = budget.as_secs().max(1);
        args.insert(
            "time_budget".into(),
            json!({ "interval": seconds, "unit": "seconds" }),
        );
        args
    }
}

fn validate_refine(refine: &[Refinement]) -> Result<(), String> {
    let finalizing = refine.iter().any(|r| {
        matches!(
            r,
            Refinement::Proposal {
                action: ProposalAction::Finalize,
                ..
            }
        )
    });
    for (i, r) in refine.iter().enumerate() {
        let (id, ask) = match r {
            Refinement::Request { ask } => (None, Some(ask)),
            Refinement::Product {
                product_id, ask, ..
            } => (Some(product_id), ask.as_ref()),
            Refinement::Proposal {
                proposal_id, ask, ..
            } => (Some(proposal_id), ask.as_ref()),
        };
        if id.is_some_and(|id| id.is_empty()) {
            return Err(format!("refine[{i}]: the id must not be empty"));
        }
        if ask.is_some_and(|a| a.trim().is_empty()) {
            return Err(format!("refine[{i}].ask: must not be empty"));
        }
        // AdCP: a finalize is a commit, never mixed with refinements.
        let is_finalize = matches!(
            r,
            Refinement::Proposal {
                action: ProposalAction::Finalize,
                ..
            }
        );
        if finalizing && !is_finalize {
            return Err(format!(
                "refine[{i}]: finalize entries cannot be mixed with other change requests"
            ));
        }
    }
    Ok(())
}

/// The AdCP `brand-ref.domain` pattern: lowercase labels of letters, digits
/// and inner hyphens.
fn is_domain(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|label| {
            !label.is_empty()
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_brief_query_becomes_adcp_arguments() {
        let mut q = ProductQuery::brief("CTV in France for Q3");
        q.brand = Some("nike.com".into());
        q.filters.channels = vec!["ctv".into()];
        q.filters.countries = vec!["FR".into()];
        q.filters.pricing_models = vec![PricingModel::Cpm];
        q.validate().unwrap();
        let args = Value::Object(q.arguments(Duration::from_secs(20)));
        assert_eq!(
            args,
            json!({
                "adcp_version": "3.1", "adcp_major_version": 3,
                "buying_mode": "brief", "brief": "CTV in France for Q3",
                "brand": {"domain": "nike.com"},
                "filters": {"channels": ["ctv"], "countries": ["FR"]},
                "time_budget": {"interval": 20, "unit": "seconds"},
            })
        );
    }

    #[test]
    fn refine_entries_carry_their_scope() {
        let q = ProductQuery {
            mode: BuyingMode::Refine(vec![
                Refinement::Request {
                    ask: "more video".into(),
                },
                Refinement::Product {
                    product_id: "p1".into(),
                    action: ProductAction::MoreLikeThis,
                    ask: None,
                },
            ]),
            brand: None,
            filters: ProductFilters::default(),
        };
        q.validate().unwrap();
        let args = q.arguments(Duration::from_secs(5));
        assert_eq!(args["buying_mode"], "refine");
        assert!(args.get("brief").is_none());
        assert_eq!(
            args["refine"],
            json!([
                {"scope": "request", "ask": "more video"},
                {"scope": "product", "product_id": "p1", "action": "more_like_this"},
            ])
        );
    }

    #[test]
    fn invalid_queries_name_the_field() {
        let cases = [
            (ProductQuery::brief("  "), "brief"),
            (
                ProductQuery {
                    mode: BuyingMode::Refine(vec![]),
                    brand: None,
                    filters: ProductFilters::default(),
                },
                "refine",
            ),
            (
                ProductQuery {
                    mode: BuyingMode::Refine(vec![
                        Refinement::Proposal {
                            proposal_id: "x".into(),
                            action: ProposalAction::Finalize,
                            ask: None,
                        },
                        Refinement::Request { ask: "more".into() },
                    ]),
                    brand: None,
                    filters: ProductFilters::default(),
                },
                "refine[1]",
            ),
            (
                ProductQuery {
                    brand: Some("Nike.com".into()),
                    ..ProductQuery::brief("b")
                },
                "brand",
            ),
            (
                ProductQuery {
                    filters: ProductFilters {
                        channels: vec!["tv".into()],
                        ..Default::default()
                    },
                    ..ProductQuery::brief("b")
                },
                "filters.channels[0]",
            ),
            (
                ProductQuery {
                    filters: ProductFilters {
                        countries: vec!["fr".into()],
                        ..Default::default()
                    },
                    ..ProductQuery::brief("b")
                },
                "filters.countries[0]",
            ),
        ];
        for (q, field) in cases {
            let err = q.validate().unwrap_err();
            assert!(err.starts_with(field), "{err} should name {field}");
        }
    }
}
