//! Discovery's domain types: the parsed request, and what a session shows
//! (groups of products, agents pending or incomplete, summary).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::seller::{PricingModel, Product};
use crate::error::ApiError;

/// `disc_` and 24 random letters and digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DiscoveryId(String);

impl DiscoveryId {
    pub fn new() -> Self {
        use rand::Rng;
        use rand::distr::Alphanumeric;
        let tail: String = rand::rng()
            .sample_iter(&Alphanumeric)
            .take(24)
            .map(char::from)
            .collect();
        DiscoveryId(format!("disc_{tail}"))
    }

    pub fn parse(raw: &str, field: &str) -> Result<Self, ApiError> {
        let ok = raw.strip_prefix("disc_").is_some_and(|t| {
            !t.is_empty() && t.len() <= 64 && t.chars().all(|c| c.is_ascii_alphanumeric())
        });
        if ok {
            Ok(DiscoveryId(raw.to_string()))
        } else {
            Err(ApiError::invalid(
                field,
                "must be a discovery id (disc_...)",
            ))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for DiscoveryId {
    fn default() -> Self {
        Self::new()
    }
}

/// The group a storefront's products land in (replaced by id on refine).
pub fn group_id(storefront_id: i64) -> String {
    format!("sf_{storefront_id}")
}

/// An agent (storefront) still answering.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AgentRef {
    pub agent_id: i64,
    pub agent_name: String,
}

/// An agent whose results are missing or partial.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct IncompleteAgent {
    pub agent_id: i64,
    pub agent_name: String,
    /// `pending` (still answering), `timed_out`, `failed`, `interrupted`
    /// (the server restarted while it was asked) or `partial` (answered,
    /// with AdCP `incomplete` scopes).
    pub reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Waiting longer (`waitMode: long`) can still bring its results.
    pub retry_with_longer_wait_available: bool,
    /// AdCP scopes that are missing: `products`, `pricing`, `forecast`,
    /// `proposals`, `wholesale_feed`.
    pub incomplete_scopes: Vec<String>,
}

/// One storefront's outcome in a session.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontResult {
    pub agent_id: i64,
    pub agent_name: String,
    /// `pending`, `answered`, `failed`, `timed_out` or `interrupted`.
    pub status: String,
    /// The seller's explanation (always set when it answered with nothing).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A product as discovery shows it: the AdCP fields a buyer compares, in
/// camelCase, and the seller's own JSON under `adcp`.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProductOut {
    pub product_id: String,
    pub name: String,
    pub description: String,
    pub storefront_id: i64,
    pub storefront_name: String,
    /// `guaranteed` or `non_guaranteed`.
    pub delivery_type: String,
    /// Why it fits the brief (brief mode).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub brief_relevance: Option<String>,
    pub pricing_models: Vec<String>,
    /// The seller's product, as sent (AdCP 3.1).
    #[schema(value_type = Object)]
    pub adcp: Value,
}

impl ProductOut {
    pub fn from_seller(p: &Product, storefront_id: i64, storefront_name: &str) -> Self {
        let adcp = p.raw.clone();
        let mut models: Vec<String> = Vec::new();
        for o in &p.pricing_options {
            let m = o.pricing_model.as_str().to_string();
            if !models.contains(&m) {
                models.push(m);
            }
        }
        ProductOut {
            product_id: p.product_id.clone(),
            name: p.name.clone(),
            description: p.description.clone(),
            storefront_id,
            storefront_name: storefront_name.to_string(),
            delivery_type: adcp
                .get("delivery_type")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            brief_relevance: p.brief_relevance.clone(),
            pricing_models: models,
            adcp,
        }
    }
}

/// A group of products (one per storefront).
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProductGroup {
    pub group_id: String,
    pub group_name: String,
    /// The revision that landed this version of the group.
    pub revision: i64,
    pub total_products: i64,
    pub products: Vec<ProductOut>,
    /// The seller's proposals (AdCP `proposals[]`, as sent), when it made
    /// any: `create_media_buys` buys one with `{kind: proposal}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(value_type = Vec<Object>)]
    pub proposals: Vec<Value>,
}

/// What a session holds so far.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub total_products: i64,
    pub total_groups: i64,
    pub storefronts_queried: i64,
    pub storefronts_answered: i64,
    pub storefronts_pending: i64,
}

/// The pricing models the spec names.
pub fn pricing_model(raw: &str) -> Result<PricingModel, ApiError> {
    match raw {
        "cpm" | "vcpm" | "cpc" | "cpcv" | "cpv" | "cpp" | "flat_rate" => PricingModel::parse(raw)
            .ok_or_else(|| ApiError::invalid("pricingModel", "is not a supported pricing model")),
        _ => Err(ApiError::invalid(
            "pricingModel",
            "must be one of cpm, vcpm, cpc, cpcv, cpv, cpp, flat_rate",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_and_bad_ones_are_refused() {
        let id = DiscoveryId::new();
        assert!(DiscoveryId::parse(id.as_str(), "discoveryId").is_ok());
        for bad in ["", "disc_", "wh_abc", "disc_a-b", "disc_../x"] {
            assert!(DiscoveryId::parse(bad, "discoveryId").is_err(), "{bad}");
        }
    }
}
