//! Brand identity: a registry interface, the local registry (a table managed
//! by `admin register-brand`, seeded with a few well-known brands), and the
//! enrichment fallback that derives a minimal identity from the domain.
//! Nothing here calls out to the internet.

use chrono::Utc;
use futures_util::future::BoxFuture;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter, Set};
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use utoipa::ToSchema;

use entity::brand;

/// A brand identity as the registry holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Brand {
    pub id: String,
    pub name: String,
    pub domain: String,
    pub manifest: Value,
}

/// Where brand identities come from: the local table; an external
/// registry can implement the same trait.
pub trait BrandRegistry: Send + Sync {
    fn resolve<'a>(&'a self, domain: &'a str) -> BoxFuture<'a, Result<Option<Brand>, DbErr>>;
    /// Saves (or refreshes) an identity; `official` marks operator entries.
    fn save<'a>(&'a self, brand: &'a Brand, official: bool) -> BoxFuture<'a, Result<(), DbErr>>;
}

pub struct LocalRegistry {
    db: DatabaseConnection,
}

impl LocalRegistry {
    pub fn new(db: DatabaseConnection) -> Self {
        LocalRegistry { db }
    }
}

impl BrandRegistry for LocalRegistry {
    fn resolve<'a>(&'a self, domain: &'a str) -> BoxFuture<'a, Result<Option<Brand>, DbErr>> {
        Box::pin(async move {
            Ok(brand::Entity::find()
                .filter(brand::Column::Domain.eq(domain))
                .one(&self.db)
                .await?
                .map(|row| Brand {
                    manifest: serde_json::from_str(&row.manifest).unwrap_or_else(|_| json!({})),
                    id: row.id,
                    name: row.name,
                    domain: row.domain,
                }))
        })
    }

    fn save<'a>(&'a self, b: &'a Brand, official: bool) -> BoxFuture<'a, Result<(), DbErr>> {
        Box::pin(async move {
            let now = Utc::now();
            let row = brand::ActiveModel {
                id: Set(b.id.clone()),
                domain: Set(b.domain.clone()),
                name: Set(b.name.clone()),
                manifest: Set(b.manifest.to_string()),
                official: Set(official),
                created_at: Set(now),
                updated_at: Set(now),
            };
            let mut update = vec![
                brand::Column::Name,
                brand::Column::Manifest,
                brand::Column::UpdatedAt,
            ];
            if official {
                update.push(brand::Column::Official);
            }
            brand::Entity::insert(row)
                .on_conflict(
                    OnConflict::column(brand::Column::Domain)
                        .update_columns(update)
                        .to_owned(),
                )
                .exec_without_returning(&self.db)
                .await?;
            Ok(())
        })
    }
}

/// Stable id for a domain's identity.
pub fn brand_id(domain: &str) -> String {
    let digest = Sha256::digest(domain.as_bytes());
    format!("brand_{}", &hex::encode(digest)[..16])
}

/// An empty manifest with every documented key.
pub fn empty_manifest() -> Value {
    json!({
        "logos": [], "colors": {}, "fonts": [], "industry": null, "tagline": null,
        "tone": null, "assets": [], "productCatalog": null, "disclaimers": [],
    })
}

/// The enrichment fallback: a name from the domain's first label
/// (`acme-widgets.co.uk` -> `Acme Widgets`) and an empty manifest.
pub fn enrich(domain: &str) -> Brand {
    let label = domain.split('.').next().unwrap_or(domain);
    let name = label
        .split('-')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_uppercase().chain(c).collect::<String>())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ");
    Brand {
        id: brand_id(domain),
        name,
        domain: domain.to_string(),
        manifest: empty_manifest(),
    }
}

pub fn enrichment_warning(domain: &str) -> String {
    format!(
        "No registry entry for {domain}: the brand identity was derived from the domain by enrichment. \
         Confirm it with saveBrand: true, or ask an operator to register the brand."
    )
}

/// Registry first, else enrichment with a warning.
pub async fn resolve(
    registry: &dyn BrandRegistry,
    domain: &str,
) -> Result<(Brand, Option<String>), DbErr> {
    Ok(match registry.resolve(domain).await? {
        Some(b) => (b, None),
        None => (enrich(domain), Some(enrichment_warning(domain))),
    })
}

/// `linkedBrand` on the wire: the identity plus convenience fields.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LinkedBrand {
    /// Prefix `brand_`.
    pub id: String,
    pub name: String,
    pub domain: String,
    /// logos (url, tags), colors, fonts, industry, tagline, tone, assets,
    /// productCatalog, disclaimers.
    #[schema(value_type = Object)]
    pub manifest: Value,
    pub logo_url: Option<String>,
    pub industry: Option<String>,
    #[schema(value_type = Object)]
    pub colors: Value,
    pub tagline: Option<String>,
    pub tone: Option<String>,
}

impl From<Brand> for LinkedBrand {
    fn from(b: Brand) -> Self {
        let text = |k: &str| b.manifest.get(k).and_then(Value::as_str).map(String::from);
        LinkedBrand {
            logo_url: b
                .manifest
                .get("logos")
                .and_then(|l| l.get(0))
                .and_then(|l| l.get("url"))
                .and_then(Value::as_str)
                .map(String::from),
            industry: text("industry"),
            colors: b
                .manifest
                .get("colors")
                .cloned()
                .unwrap_or_else(|| json!({})),
            tagline: text("tagline"),
            tone: text("tone"),
            id: b.id,
            name: b.name,
            domain: b.domain,
            manifest: b.manifest,
        }
    }
}

/// A brand domain: lowercase labels of letters, digits and hyphens, at least
/// two labels, an alphabetic (or IDNA `xn--`) top-level label.
pub fn parse_domain(raw: &str) -> Result<String, String> {
    let d = raw.trim().to_ascii_lowercase();
    let bad = || format!("must be a domain such as example.com, not {raw:?}");
    if d.is_empty() || d.len() > 253 {
        return Err(bad());
    }
    let labels: Vec<&str> = d.split('.').collect();
    if labels.len() < 2 {
        return Err(bad());
    }
    for l in &labels {
        let ok = !l.is_empty()
            && l.len() <= 63
            && !l.starts_with('-')
            && !l.ends_with('-')
            && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
        if !ok {
            return Err(bad());
        }
    }
    let tld = labels.last().copied().unwrap_or_default();
    if !(tld.starts_with("xn--")
        || (tld.len() >= 2 && tld.chars().all(|c| c.is_ascii_alphabetic())))
    {
        return Err(bad());
    }
    Ok(d)
}

/// `admin register-brand`: validates, then saves an official entry.
pub async fn register(
    db: &DatabaseConnection,
    domain: &str,
    name: &str,
    manifest: Option<&str>,
) -> Result<String, crate::auth::tenancy::TenancyError> {
    use crate::auth::tenancy::TenancyError::Invalid;
    let domain = parse_domain(domain).map_err(|m| Invalid(format!("--domain {m}")))?;
    let name = name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return Err(Invalid("--name must be 1 to 255 characters".into()));
    }
    let manifest = match manifest {
        None => empty_manifest(),
        Some(raw) => match serde_json::from_str::<Value>(raw) {
            Ok(Value::Object(mut given)) => {
                let mut full = empty_manifest();
                if let Some(base) = full.as_object_mut() {
                    base.append(&mut given);
                }
                full
            }
            _ => return Err(Invalid("--manifest must be a JSON object".into())),
        },
    };
    let registry = LocalRegistry::new(db.clone());
    let existing = registry.resolve(&domain).await?;
    let brand = Brand {
        id: existing.map(|b| b.id).unwrap_or_else(|| brand_id(&domain)),
        name: name.to_string(),
        domain,
        manifest,
    };
    registry.save(&brand, true).await?;
    Ok(brand.id)
}
