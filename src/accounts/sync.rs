//! Account sync: buyer-declared accounts for managed storefronts, sent
//! with AdCP `sync_accounts` and kept as intakes for the storefront
//! operator's review. Everything is checked before any seller is called;
//! a dry run calls the sellers with `dry_run: true` and stores nothing.

use std::collections::BTreeMap;

use chrono::Utc;
use futures_util::future::join_all;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use entity::{account_intake as intake, advertiser_linked_account as linked, operator_identity};

use super::model::{self, PENDING_REVIEW};
use super::sources::{self, AGENT};
use crate::caller::CallerInfo;
use crate::discovery::sellers::Sellers;
use crate::error::{ApiError, Issues, Kind};
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Verb};

const MAX_ENTRIES: usize = 100;

/// AdCP `core/business-entity.json`. `bank` is write-only: sent to the
/// seller, never stored or returned.
#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BillingEntity {
    pub legal_name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vat_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tax_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration_number: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contacts: Vec<Contact>,
    /// Bank details for the seller (write-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub bank: Option<Map<String, Value>>,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Address {
    pub street: String,
    pub city: String,
    pub postal_code: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub region: Option<String>,
    /// ISO 3166-1 alpha-2.
    pub country: String,
}

#[derive(Debug, Clone, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Contact {
    /// `billing`, `legal`, `creative` or `general`.
    pub role: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone: Option<String>,
}

impl BillingEntity {
    /// What is kept and shown: everything but the bank details.
    pub fn without_bank(&self) -> Self {
        BillingEntity {
            bank: None,
            ..self.clone()
        }
    }

    fn check(&self, at: &str, issues: &mut Issues) {
        let long = |s: &str, n: usize| s.trim().is_empty() || s.chars().count() > n;
        if long(&self.legal_name, 200) {
            issues.add(format!("{at}.legal_name"), "must be 1 to 200 characters");
        }
        if let Some(v) = &self.vat_id {
            let ok = v.len() >= 4
                && v.len() <= 15
                && v.bytes().take(2).all(|b| b.is_ascii_uppercase())
                && v.bytes()
                    .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
            if !ok {
                issues.add(
                    format!("{at}.vat_id"),
                    "must be a normalised VAT id (country prefix, no spaces)",
                );
            }
        }
        if self.tax_id.as_deref().is_some_and(|t| long(t, 30)) {
            issues.add(format!("{at}.tax_id"), "must be 1 to 30 characters");
        }
        if let Some(a) = &self.address {
            for (name, v, n) in [
                ("street", &a.street, 200),
                ("city", &a.city, 100),
                ("postal_code", &a.postal_code, 20),
            ] {
                if long(v, n) {
                    issues.add(
                        format!("{at}.address.{name}"),
                        format!("must be 1 to {n} characters"),
                    );
                }
            }
            if a.country.len() != 2 || !a.country.bytes().all(|b| b.is_ascii_uppercase()) {
                issues.add(
                    format!("{at}.address.country"),
                    "must be an ISO 3166-1 alpha-2 code",
                );
            }
        }
        if self.contacts.len() > 10 {
            issues.add(format!("{at}.contacts"), "at most 10");
        }
        for (i, c) in self.contacts.iter().enumerate() {
            if !["billing", "legal", "creative", "general"].contains(&c.role.as_str()) {
                issues.add(
                    format!("{at}.contacts[{i}].role"),
                    "must be billing, legal, creative or general",
                );
            }
        }
    }
}

/// One account to declare.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncEntry {
    #[serde(rename = "advertiserId")]
    pub advertiser_id: String,
    #[serde(rename = "storefrontId")]
    pub storefront_id: i64,
    /// The domain operating on the brand's behalf; for production entries,
    /// the buyer's confirmed operator domain.
    pub operator: String,
    /// `operator`, `agent` or `advertiser`.
    pub billing: String,
    /// Required for `operator` and `advertiser` billing.
    pub billing_entity: Option<BillingEntity>,
    /// A sandbox account: no operator identity needed.
    #[serde(default)]
    pub sandbox: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SyncRequest {
    /// Check everything and ask the sellers with `dry_run`, store nothing.
    #[serde(default)]
    pub dry_run: bool,
    pub accounts: Vec<SyncEntry>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SyncResult {
    pub advertiser_id: String,
    pub storefront_id: i64,
    pub operator: String,
    pub billing: String,
    pub sandbox: bool,
    /// The seller's: `created`, `updated`, `unchanged` or `failed`.
    pub action: String,
    /// The seller's `account_id`.
    pub account_id: Option<String>,
    /// The seller's account status.
    pub seller_status: Option<String>,
    /// The intake awaiting the storefront operator (not on a dry run).
    pub intake_id: Option<String>,
    /// The intake's review state: `pending_review`, `accepted`, `rejected`.
    pub review_status: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct SyncOut {
    pub dry_run: bool,
    pub accounts: Vec<SyncResult>,
}

pub struct SyncStorefrontAccounts;

impl Operation for SyncStorefrontAccounts {
    const NAME: &'static str = "sync_storefront_accounts";
    const DESCRIPTION: &'static str = "Declare accounts at managed storefronts (AdCP sync_accounts): each entry names an advertiser, a storefront, the operator domain, billing (operator, agent or advertiser; the last two with billing_entity) and optionally sandbox. Production entries need the account's confirmed operator identity. Each synced account becomes an intake the storefront's operator reviews. dry_run checks without storing. Admins only.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/storefront-accounts/sync";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "VALIDATION_ERROR (every problem in details.issues), or BILLING_NOT_SUPPORTED naming the storefront's supported modes in details.supportedBilling",
        ),
        (
            403,
            "FORBIDDEN (not an admin or super-admin), or ACCESS_DENIED with details.reason operator_identity_mismatch",
        ),
        (
            404,
            "unknown advertiser or storefront, or another account's advertiser",
        ),
        (
            409,
            "BUYER_SETUP_REQUIRED: no operator identity is confirmed for this account",
        ),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<SyncRequest>;
    type Output = SyncOut;

    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        super::admins_only(caller)
    }

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<SyncOut, ApiError> {
        sync(ctx, caller, input.body.0).await
    }
}

/// An entry that passed every check, with what it needs.
struct Checked {
    entry: SyncEntry,
    brand: String,
}

async fn check(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    req: SyncRequest,
) -> Result<Vec<Checked>, ApiError> {
    let mut issues = Issues::default();
    if req.accounts.is_empty() || req.accounts.len() > MAX_ENTRIES {
        issues.add("accounts", format!("must hold 1 to {MAX_ENTRIES} entries"));
    }
    for (i, e) in req.accounts.iter().enumerate() {
        let at = format!("accounts[{i}]");
        if let Some(problem) = model::billing_problem(&e.billing) {
            issues.add(format!("{at}.billing"), problem);
        }
        if !model::is_domain(&e.operator) {
            issues.add(format!("{at}.operator"), "must be a lower-case domain name");
        }
        match &e.billing_entity {
            Some(b) => b.check(&format!("{at}.billing_entity"), &mut issues),
            None if e.billing == "operator" || e.billing == "advertiser" => {
                issues.add(
                    format!("{at}.billing_entity"),
                    format!("is required for {} billing", e.billing),
                );
            }
            None => {}
        }
    }
    issues.into_result()?;
    let mut issues = Issues::default();
    let mut checked = Vec::with_capacity(req.accounts.len());
    let mut supported: Vec<(usize, i64, Vec<String>)> = Vec::new();
    for (i, e) in req.accounts.into_iter().enumerate() {
        let a = crate::buyer::advertisers::service::load(db, caller, &e.advertiser_id).await?;
        let source = sources::find(db, e.storefront_id, AGENT)
            .await?
            .ok_or_else(|| ApiError::not_found("storefront"))?;
        if sources::operator_of(db, e.storefront_id).await?.is_none() {
            issues.add(
                format!("accounts[{i}].storefrontId"),
                "not a managed storefront: account sync is for storefronts operated on this server",
            );
        } else if source.requires_credentials {
            issues.add(
                format!("accounts[{i}].storefrontId"),
                "this storefront's accounts come from its source with credentials (list_available_accounts), not from sync",
            );
        } else if !source.supported_billing.contains(&e.billing) {
            supported.push((i, e.storefront_id, source.supported_billing.clone()));
        }
        checked.push(Checked {
            brand: a.brand,
            entry: e,
        });
    }
    issues.into_result()?;
    if let Some((i, storefront_id, modes)) = supported.into_iter().next() {
        return Err(ApiError::Coded {
            kind: Kind::Invalid,
            code: "BILLING_NOT_SUPPORTED",
            message: format!(
                "storefront {storefront_id} does not support this billing; it supports: {}",
                modes.join(", ")
            ),
            field: Some(format!("accounts[{i}].billing")),
            details: Some(json!({ "storefrontId": storefront_id, "supportedBilling": modes })),
        });
    }
    if checked.iter().any(|c| !c.entry.sandbox) {
        let identity = operator_identity::Entity::find_by_id(caller.account_id())
            .one(db)
            .await?;
        let Some(identity) = identity else {
            return Err(ApiError::coded(
                Kind::Conflict,
                "BUYER_SETUP_REQUIRED",
                "production accounts need the account's operator identity, and none is confirmed; ask the server's operator to confirm your operator domain (agentic-api admin confirm-operator-identity), or sync sandbox accounts",
                json!({ "reason": "operator_identity_unconfirmed" }),
            ));
        };
        if let Some((i, c)) = checked
            .iter()
            .enumerate()
            .find(|(_, c)| !c.entry.sandbox && c.entry.operator != identity.domain)
        {
            return Err(ApiError::Coded {
                kind: Kind::Denied,
                code: "ACCESS_DENIED",
                message: format!(
                    "operator {} is not this account's confirmed operator domain",
                    c.entry.operator
                ),
                field: Some(format!("accounts[{i}].operator")),
                details: Some(json!({
                    "reason": "operator_identity_mismatch",
                    "confirmedOperator": identity.domain,
                })),
            });
        }
    }
    Ok(checked)
}

async fn sync(ctx: &Ctx, caller: &CallerInfo, req: SyncRequest) -> Result<SyncOut, ApiError> {
    let dry_run = req.dry_run;
    let checked = check(&ctx.db, caller, req).await?;
    // One sync_accounts per storefront, all at once.
    let mut by_storefront: BTreeMap<i64, Vec<usize>> = BTreeMap::new();
    for (i, c) in checked.iter().enumerate() {
        by_storefront
            .entry(c.entry.storefront_id)
            .or_default()
            .push(i);
    }
    let sellers = ctx.get::<Sellers>()?.clone();
    let calls = by_storefront.iter().map(|(storefront_id, idx)| {
        let sellers = sellers.clone();
        let entries: Vec<Value> = idx.iter().map(|&i| wire_entry(&checked[i])).collect();
        async move {
            let answer = call(ctx, &sellers, *storefront_id, entries, dry_run).await;
            (idx.clone(), answer)
        }
    });
    let mut answers: Vec<Option<Result<Value, String>>> =
        (0..checked.len()).map(|_| None).collect();
    for (idx, answer) in join_all(calls).await {
        match answer {
            Ok(v) => {
                let accounts = v["accounts"].as_array().cloned().unwrap_or_default();
                for (k, &i) in idx.iter().enumerate() {
                    answers[i] = Some(matching(&accounts, k, &checked[i]).ok_or_else(|| {
                        "the seller's answer has no entry for this account".to_string()
                    }));
                }
            }
            Err(e) => idx.iter().for_each(|&i| answers[i] = Some(Err(e.clone()))),
        }
    }
    let mut results: Vec<SyncResult> = checked
        .iter()
        .zip(answers)
        .map(|(c, a)| result(c, a.unwrap_or_else(|| Err("not sent".into()))))
        .collect();
    if !dry_run {
        record(ctx, caller, &checked, &mut results).await?;
    }
    Ok(SyncOut {
        dry_run,
        accounts: results,
    })
}

/// The seller's entry for the k-th account sent: by brand and operator,
/// else by position.
fn matching(accounts: &[Value], k: usize, c: &Checked) -> Option<Value> {
    accounts
        .iter()
        .find(|a| {
            a["brand"]["domain"].as_str() == Some(c.brand.as_str())
                && a["operator"].as_str() == Some(c.entry.operator.as_str())
        })
        .or_else(|| accounts.get(k))
        .cloned()
}

fn wire_entry(c: &Checked) -> Value {
    let mut e = json!({
        "brand": { "domain": c.brand },
        "operator": c.entry.operator,
        "billing": c.entry.billing,
    });
    if let Some(b) = &c.entry.billing_entity {
        e["billing_entity"] = json!(b);
    }
    if c.entry.sandbox {
        e["sandbox"] = json!(true);
    }
    e
}

async fn call(
    ctx: &Ctx,
    sellers: &Sellers,
    storefront_id: i64,
    entries: Vec<Value>,
    dry_run: bool,
) -> Result<Value, String> {
    let source = sources::find(&ctx.db, storefront_id, AGENT)
        .await
        .map_err(|e| e.to_string())?
        .ok_or("unknown storefront")?;
    let target = sources::target(&ctx.db, &source, None, ctx.config.url_policy())
        .await
        .map_err(|e| e.to_string())?;
    let mut args = Map::new();
    args.insert(
        "idempotency_key".into(),
        json!(format!("sync_{}", uuid::Uuid::new_v4().simple())),
    );
    args.insert("dry_run".into(), json!(dry_run));
    args.insert("accounts".into(), Value::Array(entries));
    sellers
        .for_storefront(&target)
        .call_task(&target, "sync_accounts", args)
        .await
        .map_err(|e| e.to_string())
}

fn result(c: &Checked, answer: Result<Value, String>) -> SyncResult {
    let e = &c.entry;
    let mut r = SyncResult {
        advertiser_id: e.advertiser_id.clone(),
        storefront_id: e.storefront_id,
        operator: e.operator.clone(),
        billing: e.billing.clone(),
        sandbox: e.sandbox,
        action: "failed".into(),
        account_id: None,
        seller_status: None,
        intake_id: None,
        review_status: None,
        errors: Vec::new(),
    };
    match answer {
        Err(message) => r.errors.push(message),
        Ok(a) => {
            r.action = a["action"]
                .as_str()
                .unwrap_or("failed")
                .chars()
                .take(32)
                .collect();
            r.account_id = a["account_id"]
                .as_str()
                .map(|s| s.chars().take(255).collect());
            r.seller_status = a["status"].as_str().map(|s| s.chars().take(64).collect());
            for err in a["errors"].as_array().into_iter().flatten() {
                let code = err["code"].as_str().unwrap_or("ERROR");
                let message = err["message"].as_str().unwrap_or("");
                r.errors
                    .push(format!("{code}: {message}").chars().take(500).collect());
            }
            if r.action != "failed" && r.seller_status.is_none() {
                r.seller_status = Some("active".into());
            }
        }
    }
    r
}

/// Keeps each account the seller took as an intake (new ones pending
/// review, with a pending binding), in one transaction.
async fn record(
    ctx: &Ctx,
    caller: &CallerInfo,
    checked: &[Checked],
    results: &mut [SyncResult],
) -> Result<(), ApiError> {
    let now = Utc::now();
    let txn = crate::db::begin_write(&ctx.db).await?;
    for (c, r) in checked.iter().zip(results.iter_mut()) {
        if r.action == "failed" {
            continue;
        }
        let e = &c.entry;
        let entity = e
            .billing_entity
            .as_ref()
            .map(|b| json!(b.without_bank()).to_string());
        let seller_status = r.seller_status.clone().unwrap_or_else(|| "active".into());
        let fresh_id = format!("int_{}", uuid::Uuid::new_v4().simple());
        // One upsert on the natural key: a repeat sync (here or on another
        // instance at the same moment) updates the seller's data and keeps
        // the review decision.
        intake::Entity::insert(intake::ActiveModel {
            id: Set(fresh_id.clone()),
            account_id: Set(caller.account_id().to_string()),
            advertiser_id: Set(e.advertiser_id.clone()),
            storefront_id: Set(e.storefront_id),
            account_ref: Set(r.account_id.clone()),
            brand: Set(c.brand.clone()),
            operator: Set(e.operator.clone()),
            billing: Set(e.billing.clone()),
            billing_entity: Set(entity),
            sandbox: Set(e.sandbox),
            seller_status: Set(seller_status),
            status: Set(PENDING_REVIEW.into()),
            review_note: Set(None),
            reviewed_by: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        })
        .on_conflict(
            OnConflict::columns([
                intake::Column::AdvertiserId,
                intake::Column::StorefrontId,
                intake::Column::Operator,
                intake::Column::Sandbox,
            ])
            .update_columns([
                intake::Column::AccountRef,
                intake::Column::Billing,
                intake::Column::BillingEntity,
                intake::Column::SellerStatus,
                intake::Column::UpdatedAt,
            ])
            .to_owned(),
        )
        .exec_without_returning(&txn)
        .await?;
        let saved = intake::Entity::find()
            .filter(intake::Column::AdvertiserId.eq(e.advertiser_id.as_str()))
            .filter(intake::Column::StorefrontId.eq(e.storefront_id))
            .filter(intake::Column::Operator.eq(e.operator.as_str()))
            .filter(intake::Column::Sandbox.eq(e.sandbox))
            .one(&txn)
            .await?
            .ok_or_else(|| ApiError::internal("the synced intake vanished"))?;
        if saved.id == fresh_id {
            bind(&txn, &saved).await?;
        }
        // The binding follows the seller's account id.
        linked::Entity::update_many()
            .col_expr(
                linked::Column::AccountRef,
                sea_orm::sea_query::Expr::value(saved.account_ref.clone().unwrap_or_default()),
            )
            .filter(linked::Column::IntakeId.eq(saved.id.as_str()))
            .exec(&txn)
            .await?;
        r.intake_id = Some(saved.id);
        r.review_status = Some(saved.status);
    }
    txn.commit().await?;
    Ok(())
}

/// The intake's binding, pending until the storefront operator accepts it.
async fn bind(db: &impl ConnectionTrait, row: &intake::Model) -> Result<(), ApiError> {
    linked::ActiveModel {
        advertiser_id: Set(row.advertiser_id.clone()),
        storefront_id: Set(row.storefront_id),
        source_id: Set(AGENT.into()),
        account_ref: Set(row.account_ref.clone().unwrap_or_default()),
        billing_type: Set(Some(row.billing.clone())),
        status: Set(PENDING_REVIEW.into()),
        intake_id: Set(Some(row.id.clone())),
        created_at: Set(row.created_at),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(())
}
