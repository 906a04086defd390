//! The advertiser operations, defined once: `create_advertiser`,
//! `get_advertiser`, `update_advertiser`, `list_advertisers`. REST routes and
//! the operation dispatcher (`crate::ops`) both call these.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, EntityTrait,
    IntoActiveModel, PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{advertiser, advertiser_linked_account as linked, storefront};

use super::model::{
    self, AdvertiserCreate, AdvertiserOut, AdvertiserUpdate, FrequencyCap, Issues, LinkedAccount,
    UtmParam,
};
use crate::buyer::audit;
use crate::buyer::brands::{self, Brand, BrandRegistry, LinkedBrand};
use crate::buyer::{from_json, to_json};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Ctx, Page, Paged};

/// An advertiser's `status` while active, and once archived.
const ACTIVE: &str = "ACTIVE";
const ARCHIVED: &str = "ARCHIVED";

fn out(row: advertiser::Model, links: Vec<linked::Model>) -> AdvertiserOut {
    let brand: Value = serde_json::from_str(&row.linked_brand).unwrap_or_else(|_| json!({}));
    let linked_brand = LinkedBrand::from(Brand {
        id: brand["id"].as_str().unwrap_or_default().to_string(),
        name: brand["name"].as_str().unwrap_or_default().to_string(),
        domain: brand["domain"].as_str().unwrap_or(&row.brand).to_string(),
        manifest: brand
            .get("manifest")
            .cloned()
            .unwrap_or_else(brands::empty_manifest),
    });
    AdvertiserOut {
        linked_accounts: links
            .into_iter()
            .map(|l| LinkedAccount {
                storefront_id: l.storefront_id,
                source_id: l.source_id,
                account_id: l.account_ref,
                billing_type: l.billing_type,
                status: Some(l.status),
            })
            .collect(),
        brand_countries: from_json(&row.brand_countries),
        channels: from_json(&row.channels),
        utm_config: from_json(&row.utm_config),
        frequency_caps: from_json(&row.frequency_caps),
        linked_brand,
        id: row.id,
        name: row.name,
        description: row.description,
        status: if row.archived_at.is_some() {
            ARCHIVED.into()
        } else {
            row.status
        },
        archived_at: row.archived_at,
        brand: row.brand,
        brand_warning: row.brand_warning,
        primary_currency: row.primary_currency,
        preferred_timezone: row.preferred_timezone,
        sandbox: row.sandbox,
        optimization_apply_mode: row.optimization_apply_mode,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn brand_json(b: &Brand) -> String {
    json!({ "id": b.id, "name": b.name, "domain": b.domain, "manifest": b.manifest }).to_string()
}

/// Flags each `linkedAccounts` entry that names no account the caller's
/// account can bind: an unknown storefront, or an account that is neither
/// among those its credentials saw at the source (`list_available_accounts`)
/// nor this advertiser's accepted synced account (account sync).
async fn check_accounts(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser_id: Option<&str>,
    accounts: &[LinkedAccount],
    issues: &mut Issues,
) -> Result<(), ApiError> {
    let ids: BTreeSet<i64> = accounts.iter().map(|a| a.storefront_id).collect();
    if ids.is_empty() {
        return Ok(());
    }
    let known: BTreeSet<i64> = storefront::Entity::find()
        .filter(storefront::Column::Id.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|s| s.id)
        .collect();
    for (i, a) in accounts.iter().enumerate() {
        if a.storefront_id <= 0 {
            continue;
        }
        if !known.contains(&a.storefront_id) {
            issues.add(
                format!("linkedAccounts[{i}].storefrontId"),
                "no storefront with this id",
            );
            continue;
        }
        if !bindable(db, caller, advertiser_id, a).await? {
            issues.add(
                format!("linkedAccounts[{i}].accountId"),
                "not an account this advertiser can bind at this source: list it with list_available_accounts (sources with credentials) or sync it (managed storefronts) first",
            );
        }
    }
    Ok(())
}

async fn bindable(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    advertiser_id: Option<&str>,
    a: &LinkedAccount,
) -> Result<bool, ApiError> {
    use entity::{account_intake as intake, available_account as seen, source_credential as cred};
    let credentials = sea_orm::sea_query::Query::select()
        .column(cred::Column::Id)
        .from(cred::Entity)
        .and_where(cred::Column::AccountId.eq(caller.account_id()))
        .and_where(cred::Column::StorefrontId.eq(a.storefront_id))
        .and_where(cred::Column::SourceId.eq(a.source_id.as_str()))
        .to_owned();
    let listed = seen::Entity::find()
        .filter(seen::Column::AccountRef.eq(a.account_id.as_str()))
        .filter(seen::Column::CredentialId.in_subquery(credentials))
        .count(db)
        .await?;
    if listed > 0 {
        return Ok(true);
    }
    let Some(advertiser_id) = advertiser_id else {
        return Ok(false);
    };
    let bound = linked::Entity::find()
        .filter(linked::Column::AdvertiserId.eq(advertiser_id))
        .filter(linked::Column::StorefrontId.eq(a.storefront_id))
        .filter(linked::Column::SourceId.eq(a.source_id.as_str()))
        .filter(linked::Column::AccountRef.eq(a.account_id.as_str()))
        .count(db)
        .await?;
    if bound > 0 {
        return Ok(true);
    }
    let synced = intake::Entity::find()
        .filter(intake::Column::AdvertiserId.eq(advertiser_id))
        .filter(intake::Column::StorefrontId.eq(a.storefront_id))
        .filter(intake::Column::AccountRef.eq(a.account_id.as_str()))
        .filter(intake::Column::Status.eq("accepted"))
        .count(db)
        .await?;
    Ok(synced > 0 && a.source_id == "agent")
}

async fn insert_links(
    db: &impl ConnectionTrait,
    advertiser_id: &str,
    accounts: &[LinkedAccount],
) -> Result<(), ApiError> {
    for a in accounts {
        linked::ActiveModel {
            advertiser_id: Set(advertiser_id.to_string()),
            storefront_id: Set(a.storefront_id),
            source_id: Set(a.source_id.clone()),
            account_ref: Set(a.account_id.clone()),
            billing_type: Set(a.billing_type.clone()),
            status: Set("active".into()),
            intake_id: Set(None),
            created_at: Set(Utc::now()),
            ..Default::default()
        }
        .insert(db)
        .await?;
    }
    Ok(())
}

async fn links_of(
    db: &impl ConnectionTrait,
    advertiser_ids: &[&str],
) -> Result<HashMap<String, Vec<linked::Model>>, ApiError> {
    let mut map: HashMap<String, Vec<linked::Model>> = HashMap::new();
    if advertiser_ids.is_empty() {
        return Ok(map);
    }
    for l in linked::Entity::find()
        .filter(linked::Column::AdvertiserId.is_in(advertiser_ids.iter().copied()))
        .order_by_asc(linked::Column::Id)
        .all(db)
        .await?
    {
        map.entry(l.advertiser_id.clone()).or_default().push(l);
    }
    Ok(map)
}

/// Why the brand and currency can no longer change, if they cannot: the
/// first campaign or seller-account binding.
pub async fn lock_reason(
    db: &impl ConnectionTrait,
    advertiser_id: &str,
) -> Result<Option<&'static str>, ApiError> {
    if crate::buyer::campaigns::service::count_for_advertiser(db, advertiser_id).await? > 0 {
        return Ok(Some("campaign_created"));
    }
    let bindings = linked::Entity::find()
        .filter(linked::Column::AdvertiserId.eq(advertiser_id))
        .filter(linked::Column::Status.eq("active"))
        .count(db)
        .await?;
    Ok((bindings > 0).then_some("seller_account_bound"))
}

/// Resolves `domain` and, with `save`, stores the identity in the registry
/// (after which it resolves from the registry, without a warning).
async fn resolve_brand(
    ctx: &Ctx,
    domain: &str,
    save: bool,
) -> Result<(Brand, Option<String>), ApiError> {
    let registry = ctx.get::<Arc<dyn BrandRegistry>>()?;
    let (brand, warning) = brands::resolve(registry.as_ref(), domain).await?;
    if save {
        registry.save(&brand, false).await?;
        return Ok((brand, None));
    }
    Ok((brand, warning))
}

/// The caller's account's advertiser `id` (404 for anyone else's).
pub async fn load(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<advertiser::Model, ApiError> {
    advertiser::Entity::find_by_id(id)
        .filter(advertiser::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))
}

pub async fn create_advertiser(
    ctx: &Ctx,
    caller: &CallerInfo,
    body: AdvertiserCreate,
) -> Result<AdvertiserOut, ApiError> {
    let mut issues = Issues::default();
    let required = |v: Option<String>, field: &str, issues: &mut Issues| {
        if v.is_none() {
            issues.add(field, "is required");
        }
        v.unwrap_or_default()
    };
    let name_raw = required(body.name, "name", &mut issues);
    let brand_raw = required(body.brand, "brand", &mut issues);
    let currency_raw = required(body.primary_currency, "primaryCurrency", &mut issues);
    let name = if name_raw.is_empty() && issues.0.iter().any(|i| i.path == "name") {
        String::new()
    } else {
        model::name(&name_raw, &mut issues)
    };
    let brand = if brand_raw.is_empty() && issues.0.iter().any(|i| i.path == "brand") {
        String::new()
    } else {
        model::brand(&brand_raw, &mut issues)
    };
    let currency =
        if currency_raw.is_empty() && issues.0.iter().any(|i| i.path == "primaryCurrency") {
            String::new()
        } else {
            model::currency(&currency_raw, &mut issues)
        };
    let description = model::description(body.description, &mut issues);
    let countries = model::countries(body.brand_countries.unwrap_or_default(), &mut issues);
    let timezone = body
        .preferred_timezone
        .map(|t| model::timezone(&t, &mut issues));
    let channels = model::channels(body.channels.unwrap_or_default(), &mut issues);
    let mode = model::apply_mode(
        body.optimization_apply_mode.as_deref().unwrap_or("MANUAL"),
        &mut issues,
    );
    let accounts = model::linked_accounts(body.linked_accounts.unwrap_or_default(), &mut issues);
    let utm = match body.utm_config {
        Some(u) => model::utm_config(u, &mut issues),
        None => model::default_utm_config(),
    };
    let caps = model::frequency_caps(body.frequency_caps.unwrap_or_default(), &mut issues);
    check_accounts(&ctx.db, caller, None, &accounts, &mut issues).await?;
    issues.into_result()?;

    let (linked_brand, warning) =
        resolve_brand(ctx, &brand, body.save_brand.unwrap_or(false)).await?;
    let now = Utc::now();
    let id = uuid::Uuid::new_v4().hyphenated().to_string();
    let txn = crate::db::begin_write(&ctx.db).await?;
    let row = advertiser::ActiveModel {
        id: Set(id.clone()),
        account_id: Set(caller.account_id().to_string()),
        name: Set(name),
        description: Set(description),
        status: Set(ACTIVE.into()),
        brand: Set(brand),
        brand_countries: Set(to_json(&countries)),
        primary_currency: Set(currency),
        preferred_timezone: Set(timezone),
        sandbox: Set(body.sandbox.unwrap_or(false)),
        channels: Set(to_json(&channels)),
        optimization_apply_mode: Set(mode),
        utm_config: Set(to_json(&utm)),
        frequency_caps: Set(to_json(&caps)),
        brand_warning: Set(warning),
        linked_brand: Set(brand_json(&linked_brand)),
        created_at: Set(now),
        updated_at: Set(now),
        archived_at: Set(None),
    }
    .insert(&txn)
    .await?;
    insert_links(&txn, &id, &accounts).await?;
    let links = links_of(&txn, &[&id])
        .await?
        .remove(&id)
        .unwrap_or_default();
    let created = out(row, links);
    let after = serde_json::to_value(&created).map_err(ApiError::internal)?;
    audit::record(
        &txn,
        caller,
        "advertiser.created",
        "advertiser",
        &id,
        audit::diff(&Value::Null, &after),
    )
    .await?;
    txn.commit().await?;
    Ok(created)
}

pub async fn get_advertiser(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser_id: &str,
) -> Result<AdvertiserOut, ApiError> {
    let id = model::advertiser_id(advertiser_id)?;
    let row = load(&ctx.db, caller, &id).await?;
    let links = links_of(&ctx.db, &[&id])
        .await?
        .remove(&id)
        .unwrap_or_default();
    Ok(out(row, links))
}

pub async fn update_advertiser(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser_id: &str,
    body: AdvertiserUpdate,
) -> Result<AdvertiserOut, ApiError> {
    save_advertiser(
        ctx,
        caller,
        advertiser_id,
        Save {
            fields: Some(body),
            archived: None,
        },
    )
    .await
}

/// What [`save_advertiser`] changes, in one transaction: a restore first,
/// then the fields, an archive last.
#[derive(Debug, Default)]
pub struct Save {
    /// `update_advertiser`'s fields; `None` changes none.
    pub fields: Option<AdvertiserUpdate>,
    /// `Some(true)` archives, `Some(false)` restores (a repeat changes nothing).
    pub archived: Option<bool>,
}

/// Applies a [`Save`] to the caller's advertiser: every step with its audit
/// entry, or none (a failing step leaves the advertiser as it was).
pub async fn save_advertiser(
    ctx: &Ctx,
    caller: &CallerInfo,
    advertiser_id: &str,
    save: Save,
) -> Result<AdvertiserOut, ApiError> {
    let id = model::advertiser_id(advertiser_id)?;
    // Brand resolution may write to the registry, so the fields are checked
    // (and the brand resolved) before the transaction: on SQLite a second
    // writer would wait on ours.
    let checked = match save.fields {
        Some(body) => Some(check_update(ctx, caller, &id, body).await?),
        None => None,
    };
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    // The row's lock first: concurrent saves (and the lock check against a
    // concurrent first campaign or binding) are serialised.
    advertiser::Entity::find_by_id(id.as_str())
        .filter(advertiser::Column::AccountId.eq(caller.account_id()))
        .lock_exclusive()
        .one(&txn)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))?;
    if save.archived == Some(false) {
        set_archived(&txn, caller, &id, false).await?;
    }
    if let Some(checked) = checked {
        apply_update(&txn, caller, &id, checked).await?;
    }
    if save.archived == Some(true) {
        set_archived(&txn, caller, &id, true).await?;
    }
    let row = load(&txn, caller, &id).await?;
    let links = links_of(&txn, &[&id])
        .await?
        .remove(&id)
        .unwrap_or_default();
    txn.commit().await?;
    ctx.bus
        .publish(super::events::changed(caller.account_id(), &id))
        .await;
    Ok(out(row, links))
}

/// An update's fields, validated, and the brand resolution they need.
struct CheckedUpdate {
    name: Option<String>,
    description: Option<Option<String>>,
    brand: Option<String>,
    currency: Option<String>,
    countries: Option<Vec<String>>,
    timezone: Option<Option<String>>,
    channels: Option<Vec<String>>,
    mode: Option<String>,
    accounts: Vec<LinkedAccount>,
    utm: Option<Vec<UtmParam>>,
    caps: Option<Vec<FrequencyCap>>,
    sandbox: Option<bool>,
    /// The domain resolved and its identity (with any warning).
    resolved: Option<(String, (Brand, Option<String>))>,
}

/// Validates an update of advertiser `id` (every problem at once) and
/// resolves a new brand.
async fn check_update(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    body: AdvertiserUpdate,
) -> Result<CheckedUpdate, ApiError> {
    let mut issues = Issues::default();
    let name = body.name.as_deref().map(|n| model::name(n, &mut issues));
    let description = body.description.map(|d| model::description(d, &mut issues));
    let brand = body.brand.as_deref().map(|b| model::brand(b, &mut issues));
    let currency = body
        .primary_currency
        .as_deref()
        .map(|c| model::currency(c, &mut issues));
    let countries = body
        .brand_countries
        .map(|c| model::countries(c, &mut issues));
    let timezone = body
        .preferred_timezone
        .map(|t| t.map(|t| model::timezone(&t, &mut issues)));
    let channels = body.channels.map(|c| model::channels(c, &mut issues));
    let mode = body
        .optimization_apply_mode
        .as_deref()
        .map(|m| model::apply_mode(m, &mut issues));
    let accounts = body
        .linked_accounts
        .map(|a| model::linked_accounts(a, &mut issues))
        .unwrap_or_default();
    let utm = body.utm_config.map(|u| model::utm_config(u, &mut issues));
    let caps = body
        .frequency_caps
        .map(|c| model::frequency_caps(c, &mut issues));
    check_accounts(&ctx.db, caller, Some(id), &accounts, &mut issues).await?;
    issues.into_result()?;

    let seen = load(&ctx.db, caller, id).await?;
    let save_brand = body.save_brand.unwrap_or(false);
    let resolved = if brand.as_ref().is_some_and(|b| *b != seen.brand) || save_brand {
        let domain = brand.clone().unwrap_or_else(|| seen.brand.clone());
        Some((
            domain.clone(),
            resolve_brand(ctx, &domain, save_brand).await?,
        ))
    } else {
        None
    };

    Ok(CheckedUpdate {
        name,
        description,
        brand,
        currency,
        countries,
        timezone,
        channels,
        mode,
        accounts,
        utm,
        caps,
        sandbox: body.sandbox,
        resolved,
    })
}

/// Writes a checked update of advertiser `id` in `txn`, with its audit entry.
async fn apply_update(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    id: &str,
    checked: CheckedUpdate,
) -> Result<(), ApiError> {
    let CheckedUpdate {
        name,
        description,
        brand,
        currency,
        countries,
        timezone,
        channels,
        mode,
        accounts,
        utm,
        caps,
        sandbox,
        resolved,
    } = checked;
    let current = load(txn, caller, id).await?;
    if let Some(sandbox) = sandbox
        && sandbox != current.sandbox
    {
        return Err(ApiError::invalid(
            "sandbox",
            "is immutable: an advertiser is sandbox or not for its whole life",
        ));
    }
    let brand_changes = brand.as_ref().is_some_and(|b| *b != current.brand);
    let currency_changes = currency
        .as_ref()
        .is_some_and(|c| *c != current.primary_currency);
    if (brand_changes || currency_changes)
        && let Some(reason) = lock_reason(txn, id).await?
    {
        let field = if brand_changes {
            "brand"
        } else {
            "primaryCurrency"
        };
        let why = match reason {
            "campaign_created" => "a campaign",
            _ => "a seller-account binding",
        };
        return Err(ApiError::Conflict {
            message: format!("{field} is locked: the advertiser already has {why}"),
            details: Some(json!({ "reason": reason, "field": field })),
        });
    }
    // Resolved for the brand the row will hold (a concurrent rename of the
    // brand makes an unrelated resolution moot).
    let final_brand = brand.clone().unwrap_or_else(|| current.brand.clone());
    let resolved = resolved
        .filter(|(domain, _)| *domain == final_brand)
        .map(|(_, r)| r);

    let before_links = links_of(txn, &[id]).await?.remove(id).unwrap_or_default();
    let before = serde_json::to_value(out(current.clone(), before_links.clone()))
        .map_err(ApiError::internal)?;
    let existing: Vec<LinkedAccount> = before_links
        .iter()
        .map(|l| LinkedAccount {
            storefront_id: l.storefront_id,
            source_id: l.source_id.clone(),
            account_id: l.account_ref.clone(),
            billing_type: l.billing_type.clone(),
            status: None,
        })
        .collect();
    let new_links: Vec<LinkedAccount> = accounts
        .into_iter()
        .filter(|a| !existing.iter().any(|e| model::same_binding(e, a)))
        .collect();

    let mut row = current.into_active_model();
    if let Some(v) = name {
        row.name = Set(v);
    }
    if let Some(v) = description {
        row.description = Set(v);
    }
    if let Some(v) = brand {
        row.brand = Set(v);
    }
    if let Some((b, warning)) = resolved {
        row.linked_brand = Set(brand_json(&b));
        row.brand_warning = Set(warning);
    }
    if let Some(v) = currency {
        row.primary_currency = Set(v);
    }
    if let Some(v) = countries {
        row.brand_countries = Set(to_json(&v));
    }
    if let Some(v) = timezone {
        row.preferred_timezone = Set(v);
    }
    if let Some(v) = channels {
        row.channels = Set(to_json(&v));
    }
    if let Some(v) = mode {
        row.optimization_apply_mode = Set(v);
    }
    if let Some(v) = utm {
        row.utm_config = Set(to_json(&v));
    }
    if let Some(v) = caps {
        row.frequency_caps = Set(to_json(&v));
    }
    row.updated_at = Set(Utc::now());
    let row = row.update(txn).await?;
    insert_links(txn, id, &new_links).await?;
    let links = links_of(txn, &[id]).await?.remove(id).unwrap_or_default();
    let updated = out(row, links);
    let after = serde_json::to_value(&updated).map_err(ApiError::internal)?;
    audit::record(
        txn,
        caller,
        "advertiser.updated",
        "advertiser",
        id,
        audit::diff(&before, &after),
    )
    .await
}

/// Archives (`archived_at` set, status `ARCHIVED`) or restores advertiser
/// `id` in `txn`, with an `advertiser.archived` or `advertiser.restored`
/// audit entry; a repeat changes nothing and records nothing.
async fn set_archived(
    txn: &DatabaseTransaction,
    caller: &CallerInfo,
    id: &str,
    archived: bool,
) -> Result<(), ApiError> {
    let current = load(txn, caller, id).await?;
    if current.archived_at.is_some() == archived {
        return Ok(());
    }
    let links = links_of(txn, &[id]).await?.remove(id).unwrap_or_default();
    let before =
        serde_json::to_value(out(current.clone(), links.clone())).map_err(ApiError::internal)?;
    let now = Utc::now();
    let mut row = current.into_active_model();
    row.archived_at = Set(archived.then_some(now));
    row.status = Set(if archived { ARCHIVED } else { ACTIVE }.into());
    row.updated_at = Set(now);
    let row = row.update(txn).await?;
    let after = serde_json::to_value(out(row, links)).map_err(ApiError::internal)?;
    let action = if archived {
        "advertiser.archived"
    } else {
        "advertiser.restored"
    };
    audit::record(
        txn,
        caller,
        action,
        "advertiser",
        id,
        audit::diff(&before, &after),
    )
    .await
}

/// 409 CONFLICT when the advertiser is archived: an archived advertiser
/// takes no new campaigns, discoveries or media buys (`what`) until it is
/// restored.
pub fn refuse_archived(row: &advertiser::Model, what: &str) -> Result<(), ApiError> {
    let Some(archived_at) = row.archived_at else {
        return Ok(());
    };
    Err(ApiError::Conflict {
        message: format!(
            "the advertiser {} is archived and takes no new {what}: restore it first \
             (/mcp/v3 save_advertiser with advertiserId {} and isArchived false)",
            row.id, row.id
        ),
        details: Some(json!({
            "reason": "advertiser_archived",
            "advertiserId": row.id,
            "archivedAt": archived_at,
        })),
    })
}

/// The account's advertisers, newest first; archived ones only with
/// `include_archived`.
pub async fn list_advertisers(
    ctx: &Ctx,
    caller: &CallerInfo,
    page: Page<20, 100>,
    include_archived: bool,
) -> Result<Paged<AdvertiserOut>, ApiError> {
    let mut query =
        advertiser::Entity::find().filter(advertiser::Column::AccountId.eq(caller.account_id()));
    if !include_archived {
        query = query.filter(advertiser::Column::ArchivedAt.is_null());
    }
    let total = query.clone().count(&ctx.db).await?;
    let rows = query
        .order_by_desc(advertiser::Column::CreatedAt)
        .order_by_desc(advertiser::Column::Id)
        .offset(page.skip)
        .limit(page.take)
        .all(&ctx.db)
        .await?;
    let ids: Vec<&str> = rows.iter().map(|r| r.id.as_str()).collect();
    let mut links = links_of(&ctx.db, &ids).await?;
    let data = rows
        .into_iter()
        .map(|r| {
            let l = links.remove(&r.id).unwrap_or_default();
            out(r, l)
        })
        .collect();
    Ok(Paged {
        items: data,
        pagination: page.of(total),
    })
}
