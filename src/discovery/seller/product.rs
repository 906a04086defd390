//! AdCP 3.1 products parsed into validated domain types. Each product keeps
//! the seller's original JSON, which is what it serializes as: validation
//! decides what is accepted, never what is shown.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// AdCP `delivery_type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryType {
    Guaranteed,
    NonGuaranteed,
}

/// AdCP 3.1 `pricing_model` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PricingModel {
    Cpm,
    Vcpm,
    Cpc,
    Cpcv,
    Cpv,
    Cpp,
    Cpa,
    FlatRate,
    Time,
}

impl PricingModel {
    pub const ALL: [PricingModel; 9] = [
        PricingModel::Cpm,
        PricingModel::Vcpm,
        PricingModel::Cpc,
        PricingModel::Cpcv,
        PricingModel::Cpv,
        PricingModel::Cpp,
        PricingModel::Cpa,
        PricingModel::FlatRate,
        PricingModel::Time,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            PricingModel::Cpm => "cpm",
            PricingModel::Vcpm => "vcpm",
            PricingModel::Cpc => "cpc",
            PricingModel::Cpcv => "cpcv",
            PricingModel::Cpv => "cpv",
            PricingModel::Cpp => "cpp",
            PricingModel::Cpa => "cpa",
            PricingModel::FlatRate => "flat_rate",
            PricingModel::Time => "time",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.as_str() == s)
    }
}

/// Fixed pricing, or an auction with an optional floor (AdCP: `fixed_price`
/// and `floor_price` are mutually exclusive; no `fixed_price` means auction).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Price {
    Fixed(f64),
    Auction { floor: Option<f64> },
}

#[derive(Debug, Clone, PartialEq)]
pub struct PricingOption {
    pub pricing_option_id: String,
    pub pricing_model: PricingModel,
    /// ISO 4217, upper case.
    pub currency: String,
    pub price: Price,
}

/// A creative format reference (`{agent_url, id}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormatId {
    pub agent_url: String,
    pub id: String,
}

/// `included` placements are descriptive; `targetable` ones can be selected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlacementMode {
    Included,
    Targetable,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Placement {
    pub placement_id: String,
    pub mode: PlacementMode,
    pub name: Option<String>,
}

/// A validated product; serializes as the seller's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub product_id: String,
    pub name: String,
    pub description: String,
    pub delivery_type: DeliveryType,
    pub format_ids: Vec<FormatId>,
    pub pricing_options: Vec<PricingOption>,
    pub brief_relevance: Option<String>,
    pub placements: Vec<Placement>,
    /// The seller's product object, unchanged.
    pub raw: Value,
}

impl Serialize for Product {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.raw.serialize(s)
    }
}

/// A product left out of a seller's answer, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DroppedProduct {
    /// Position in the seller's `products` array.
    pub index: usize,
    /// Its `product_id`, when it had a readable one.
    pub product_id: Option<String>,
    /// The first problem found, with its path inside the product.
    pub reason: String,
}

impl Product {
    /// Validates one product object. The error names the offending field.
    pub fn parse(raw: &Value) -> Result<Product, String> {
        let obj = raw.as_object().ok_or("not an object")?;
        let product_id = required_str(raw, "product_id")?;
        let name = required_str(raw, "name")?;
        let description = match obj.get("description") {
            Some(Value::String(s)) => s.clone(),
            Some(_) => return Err("description: must be a string".into()),
            None => return Err("description: missing".into()),
        };
        let delivery_type = match obj.get("delivery_type") {
            None => return Err("delivery_type: missing".into()),
            Some(v) => DeliveryType::deserialize(v)
                .map_err(|_| "delivery_type: must be guaranteed or non_guaranteed".to_string())?,
        };
        let format_ids = match obj.get("format_ids") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, f)| format_id(f).map_err(|e| format!("format_ids[{i}]{e}")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("format_ids: must be an array".into()),
        };
        let pricing_options: Vec<PricingOption> = match obj.get("pricing_options") {
            Some(Value::Array(items)) if !items.is_empty() => items
                .iter()
                .enumerate()
                .map(|(i, p)| pricing_option(p).map_err(|e| format!("pricing_options[{i}]{e}")))
                .collect::<Result<_, _>>()?,
            Some(Value::Array(_)) => return Err("pricing_options: must not be empty".into()),
            Some(_) => return Err("pricing_options: must be an array".into()),
            None => return Err("pricing_options: missing".into()),
        };
        let brief_relevance = match obj.get("brief_relevance") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err("brief_relevance: must be a string".into()),
        };
        let placements = match obj.get("placements") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, p)| placement(p).map_err(|e| format!("placements[{i}]{e}")))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("placements: must be an array".into()),
        };
        Ok(Product {
            product_id,
            name,
            description,
            delivery_type,
            format_ids,
            pricing_options,
            brief_relevance,
            placements,
            raw: raw.clone(),
        })
    }

    pub fn offers(&self, models: &[PricingModel]) -> bool {
        models.is_empty()
            || self
                .pricing_options
                .iter()
                .any(|o| models.contains(&o.pricing_model))
    }
}

/// Parses a seller's `products` array: valid products in order, and the
/// others with the reason (one bad product never spoils the rest). A
/// repeated `product_id` is dropped too, so ids identify products.
pub fn parse_products(items: &[Value]) -> (Vec<Product>, Vec<DroppedProduct>) {
    let mut products: Vec<Product> = Vec::with_capacity(items.len());
    let mut dropped = Vec::new();
    for (index, raw) in items.iter().enumerate() {
        let readable_id = raw
            .get("product_id")
            .and_then(Value::as_str)
            .map(str::to_string);
        let outcome = Product::parse(raw).and_then(|p| {
            if products.iter().any(|q| q.product_id == p.product_id) {
                Err(format!(
                    "product_id: '{}' repeats an earlier product",
                    p.product_id
                ))
            } else {
                Ok(p)
            }
        });
        match outcome {
            Ok(p) => products.push(p),
            Err(reason) => dropped.push(DroppedProduct {
                index,
                product_id: readable_id,
                reason,
            }),
        }
    }
    (products, dropped)
}

fn required_str(v: &Value, field: &str) -> Result<String, String> {
    match v.get(field) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(format!("{field}: must not be empty")),
        Some(_) => Err(format!("{field}: must be a string")),
        None => Err(format!("{field}: missing")),
    }
}

fn format_id(v: &Value) -> Result<FormatId, String> {
    if !v.is_object() {
        return Err(": must be an object {agent_url, id}".into());
    }
    let agent_url = required_str(v, "agent_url").map_err(|e| format!(".{e}"))?;
    let id = required_str(v, "id").map_err(|e| format!(".{e}"))?;
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        return Err(".id: only letters, digits, '_' and '-' are allowed".into());
    }
    Ok(FormatId { agent_url, id })
}

fn price(v: &Value, field: &str) -> Result<Option<f64>, String> {
    match v.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match n.as_f64() {
            Some(x) if x.is_finite() && x >= 0.0 => Ok(Some(x)),
            _ => Err(format!(".{field}: must be a number >= 0")),
        },
        Some(_) => Err(format!(".{field}: must be a number")),
    }
}

fn pricing_option(v: &Value) -> Result<PricingOption, String> {
    if !v.is_object() {
        return Err(": must be an object".into());
    }
    let pricing_option_id = required_str(v, "pricing_option_id").map_err(|e| format!(".{e}"))?;
    let model = required_str(v, "pricing_model").map_err(|e| format!(".{e}"))?;
    let pricing_model = PricingModel::parse(&model)
        .ok_or_else(|| format!(".pricing_model: unknown model '{model}'"))?;
    let currency = required_str(v, "currency").map_err(|e| format!(".{e}"))?;
    if currency.len() != 3
        || !currency.bytes().all(|b| b.is_ascii_uppercase())
        || iso_currency::Currency::from_code(&currency).is_none()
    {
        return Err(format!(".currency: '{currency}' is not an ISO 4217 code"));
    }
    let fixed = price(v, "fixed_price")?;
    let floor = price(v, "floor_price")?;
    let price = match (fixed, floor) {
        (Some(_), Some(_)) => {
            return Err(": fixed_price and floor_price are mutually exclusive".into());
        }
        (Some(f), None) => Price::Fixed(f),
        (None, floor) => Price::Auction { floor },
    };
    if pricing_model == PricingModel::Cpa && fixed.is_none() {
        return Err(".fixed_price: required for cpa".into());
    }
    Ok(PricingOption {
        pricing_option_id,
        pricing_model,
        currency,
        price,
    })
}

fn placement(v: &Value) -> Result<Placement, String> {
    if !v.is_object() {
        return Err(": must be an object".into());
    }
    let placement_id = required_str(v, "placement_id").map_err(|e| format!(".{e}"))?;
    let mode = match v.get("mode") {
        Some(m) => PlacementMode::deserialize(m)
            .map_err(|_| ".mode: must be included or targetable".to_string())?,
        None => return Err(".mode: missing".into()),
    };
    let name = v.get("name").and_then(Value::as_str).map(str::to_string);
    Ok(Placement {
        placement_id,
        mode,
        name,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn good(id: &str) -> Value {
        json!({
            "product_id": id, "name": "Premium CTV", "description": "Living-room video",
            "delivery_type": "guaranteed",
            "format_ids": [{"agent_url": "https://creative.adcontextprotocol.org", "id": "video_30s"}],
            "pricing_options": [
                {"pricing_option_id": "po1", "pricing_model": "cpm", "currency": "EUR", "fixed_price": 32.5},
                {"pricing_option_id": "po2", "pricing_model": "cpcv", "currency": "EUR", "floor_price": 0.02}
            ],
            "brief_relevance": "French CTV reach",
            "placements": [{"kind": "seller_inline", "placement_id": "home", "mode": "targetable", "name": "Home row"}],
            "publisher_properties": [], "reporting_capabilities": {}
        })
    }

    #[test]
    fn a_valid_product_keeps_its_json() {
        let raw = good("p1");
        let p = Product::parse(&raw).unwrap();
        assert_eq!(p.product_id, "p1");
        assert_eq!(p.delivery_type, DeliveryType::Guaranteed);
        assert_eq!(p.pricing_options[0].price, Price::Fixed(32.5));
        assert_eq!(
            p.pricing_options[1].price,
            Price::Auction { floor: Some(0.02) }
        );
        assert_eq!(p.placements[0].mode, PlacementMode::Targetable);
        assert_eq!(p.format_ids[0].id, "video_30s");
        assert_eq!(serde_json::to_value(&p).unwrap(), raw);
        assert!(p.offers(&[PricingModel::Cpcv]));
        assert!(!p.offers(&[PricingModel::FlatRate]));
    }

    #[test]
    fn malformed_products_are_dropped_with_their_reason() {
        let mut no_price = good("p2");
        no_price["pricing_options"] = json!([]);
        let mut bad_currency = good("p3");
        bad_currency["pricing_options"][1]["currency"] = json!("euro");
        let mut both = good("p4");
        both["pricing_options"][0]["floor_price"] = json!(1);
        let mut string_format = good("p5");
        string_format["format_ids"] = json!(["display_300x250"]);
        let items = vec![
            good("p1"),
            no_price,
            json!("nope"),
            bad_currency,
            both,
            string_format,
            good("p1"),
            good("p6"),
        ];
        let (products, dropped) = parse_products(&items);
        let ids: Vec<&str> = products.iter().map(|p| p.product_id.as_str()).collect();
        assert_eq!(ids, ["p1", "p6"]);
        let reasons: Vec<(usize, Option<&str>, &str)> = dropped
            .iter()
            .map(|d| (d.index, d.product_id.as_deref(), d.reason.as_str()))
            .collect();
        assert_eq!(
            reasons[0],
            (1, Some("p2"), "pricing_options: must not be empty")
        );
        assert_eq!(reasons[1], (2, None, "not an object"));
        assert_eq!(
            reasons[2],
            (
                3,
                Some("p3"),
                "pricing_options[1].currency: 'euro' is not an ISO 4217 code"
            )
        );
        assert_eq!(
            reasons[3].2,
            "pricing_options[0]: fixed_price and floor_price are mutually exclusive"
        );
        assert_eq!(
            reasons[4].2,
            "format_ids[0]: must be an object {agent_url, id}"
        );
        assert_eq!(
            reasons[5],
            (6, Some("p1"), "product_id: 'p1' repeats an earlier product")
        );
    }
}
