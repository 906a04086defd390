//! `list_available_accounts`: the accounts one of the buyer's credentials
//! can see at a source (AdCP `list_accounts`), refreshed from the source by
//! default and kept as a projection that `refresh=false` answers from.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use entity::{advertiser_linked_account as linked, available_account as cached};

use super::{credentials, sources};
use crate::caller::CallerInfo;
use crate::discovery::seller::SellerError;
use crate::discovery::sellers::Sellers;
use crate::error::{ApiError, Kind};
use crate::ops::{Access, Ctx, Input, Operation, Params, Query, Verb};

/// Most accounts kept from one answer.
const MAX_ACCOUNTS: usize = 1000;

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvertiserPath {
    pub advertiser_id: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableQuery {
    /// Required.
    pub storefront_id: Option<i64>,
    /// Required: a source whose capabilities say requiresCredentials.
    pub source_id: Option<String>,
    /// Required when the account has several credentials for the source.
    pub credential_id: Option<String>,
    /// `false` answers from the last refresh without calling the source.
    pub refresh: Option<bool>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableAccount {
    /// The seller's `account_id`: what `linkedAccounts[].accountId` takes.
    pub account_id: String,
    pub name: String,
    /// The seller's status (`active`, `pending_approval`, ...).
    pub status: String,
    pub billing: Option<String>,
    /// Already bound to this advertiser.
    pub linked: bool,
    /// The account as the source sent it.
    #[schema(value_type = Object)]
    pub details: Value,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AvailableOut {
    pub storefront_id: i64,
    pub source_id: String,
    pub credential_id: String,
    pub accounts: Vec<AvailableAccount>,
    /// When the source last answered; `null` if it never has.
    pub refreshed_at: Option<DateTime<Utc>>,
    /// Seconds since `refreshedAt`.
    pub age_seconds: Option<i64>,
    /// True when answered from the projection (`refresh=false`).
    pub from_cache: bool,
}

pub struct ListAvailableAccounts;

impl Operation for ListAvailableAccounts {
    const NAME: &'static str = "list_available_accounts";
    const DESCRIPTION: &'static str = "The seller accounts one of the buyer's credentials can see at an account source (AdCP list_accounts), to bind with the advertiser's linkedAccounts. storefrontId and sourceId are required; credentialId when the account has several credentials for the source; refresh=false answers from the last refresh.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/advertisers/{advertiserId}/accounts/available";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "missing storefrontId or sourceId, a source that takes no credentials, no credential, or several without credentialId (the ids are listed)",
        ),
        (
            404,
            "unknown advertiser, source or credential, or another account's",
        ),
        (
            503,
            "the source did not answer (refresh=false answers from the last refresh)",
        ),
    ];
    type Path = Params<AdvertiserPath>;
    type Query = Query<AvailableQuery>;
    type Body = crate::ops::Nothing;
    type Output = AvailableOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<AvailableOut, ApiError> {
        let q = input.query.0;
        let advertiser_id = input.path.0.advertiser_id;
        crate::buyer::advertisers::service::load(&ctx.db, caller, &advertiser_id).await?;
        let mut issues = crate::error::Issues::default();
        if q.storefront_id.is_none() {
            issues.add("storefrontId", "is required");
        }
        if q.source_id.as_deref().is_none_or(|s| s.trim().is_empty()) {
            issues.add("sourceId", "is required");
        }
        issues.into_result()?;
        let (storefront_id, source_id) = (
            q.storefront_id.unwrap_or_default(),
            q.source_id.unwrap_or_default(),
        );
        let source = sources::find(&ctx.db, storefront_id, &source_id)
            .await?
            .ok_or_else(|| ApiError::not_found("account source"))?;
        if !source.requires_credentials {
            return Err(ApiError::invalid(
                "sourceId",
                "this source takes no credentials: its accounts are declared with account sync (POST /api/v2/buyer/storefront-accounts/sync)",
            ));
        }
        let mut mine =
            credentials::for_source(&ctx.db, caller.account_id(), storefront_id, &source_id)
                .await?;
        let credential = match q.credential_id {
            Some(id) => mine
                .into_iter()
                .find(|c| c.id == id)
                .ok_or_else(|| ApiError::not_found("credential"))?,
            None if mine.len() == 1 => mine.remove(0),
            None if mine.is_empty() => {
                return Err(ApiError::invalid(
                    "credentialId",
                    "no credential is registered for this source: create one first (POST /api/v2/buyer/source-credentials)",
                ));
            }
            None => {
                let ids: Vec<&str> = mine.iter().map(|c| c.id.as_str()).collect();
                return Err(ApiError::invalid(
                    "credentialId",
                    format!(
                        "several credentials exist for this source; choose one of: {}",
                        ids.join(", ")
                    ),
                ));
            }
        };
        let from_cache = q.refresh == Some(false);
        if !from_cache {
            refresh(ctx, &source, &credential).await?;
        }
        let rows = cached::Entity::find()
            .filter(cached::Column::CredentialId.eq(credential.id.as_str()))
            .order_by_asc(cached::Column::Id)
            .all(&ctx.db)
            .await?;
        let bound: Vec<String> = linked::Entity::find()
            .filter(linked::Column::AdvertiserId.eq(advertiser_id.as_str()))
            .filter(linked::Column::StorefrontId.eq(storefront_id))
            .filter(linked::Column::SourceId.eq(source_id.as_str()))
            .all(&ctx.db)
            .await?
            .into_iter()
            .map(|l| l.account_ref)
            .collect();
        let refreshed_at = rows.iter().map(|r| r.refreshed_at).max();
        Ok(AvailableOut {
            storefront_id,
            source_id,
            credential_id: credential.id,
            accounts: rows
                .into_iter()
                .map(|r| AvailableAccount {
                    linked: bound.contains(&r.account_ref),
                    account_id: r.account_ref,
                    name: r.name,
                    status: r.status,
                    billing: r.billing,
                    details: serde_json::from_str(&r.data).unwrap_or(Value::Null),
                })
                .collect(),
            age_seconds: refreshed_at.map(|t| (Utc::now() - t).num_seconds().max(0)),
            refreshed_at,
            from_cache,
        })
    }
}

/// Asks the source and replaces the credential's projection with its answer.
async fn refresh(
    ctx: &Ctx,
    source: &sources::Source,
    credential: &entity::source_credential::Model,
) -> Result<(), ApiError> {
    let token = credentials::open(&ctx.config, credential)?;
    let target = sources::target(&ctx.db, source, Some(token), ctx.config.url_policy()).await?;
    let seller: Arc<dyn crate::discovery::seller::Seller> =
        ctx.get::<Sellers>()?.for_storefront(&target);
    let answer = seller
        .call_task(&target, "list_accounts", serde_json::Map::new())
        .await
        .map_err(|e| unavailable(source, &e))?;
    let accounts = answer["accounts"].as_array().cloned().unwrap_or_default();
    let now = Utc::now();
    let txn = crate::db::begin_write(&ctx.db).await?;
    cached::Entity::delete_many()
        .filter(cached::Column::CredentialId.eq(credential.id.as_str()))
        .exec(&txn)
        .await?;
    let mut seen = std::collections::HashSet::new();
    for a in accounts.iter().take(MAX_ACCOUNTS) {
        let Some(id) = a["account_id"]
            .as_str()
            .filter(|s| !s.is_empty() && s.len() <= 255)
        else {
            continue;
        };
        if !seen.insert(id.to_string()) {
            continue;
        }
        // Upserted: two refreshes of one credential at once (two instances)
        // each leave one row per account.
        let row = cached::ActiveModel {
            credential_id: Set(credential.id.clone()),
            account_ref: Set(id.to_string()),
            name: Set(a["name"].as_str().unwrap_or(id).chars().take(255).collect()),
            status: Set(a["status"]
                .as_str()
                .unwrap_or("active")
                .chars()
                .take(64)
                .collect()),
            billing: Set(a["billing"].as_str().map(|b| b.chars().take(32).collect())),
            data: Set(a.to_string()),
            refreshed_at: Set(now),
            ..Default::default()
        };
        cached::Entity::insert(row)
            .on_conflict(
                OnConflict::columns([cached::Column::CredentialId, cached::Column::AccountRef])
                    .update_columns([
                        cached::Column::Name,
                        cached::Column::Status,
                        cached::Column::Billing,
                        cached::Column::Data,
                        cached::Column::RefreshedAt,
                    ])
                    .to_owned(),
            )
            .exec_without_returning(&txn)
            .await?;
    }
    txn.commit().await?;
    Ok(())
}

fn unavailable(source: &sources::Source, e: &SellerError) -> ApiError {
    ApiError::coded(
        Kind::Unavailable,
        "SERVICE_UNAVAILABLE",
        format!(
            "the account source did not answer list_accounts ({e}); refresh=false answers from its last answer"
        ),
        json!({
            "storefrontId": source.storefront_id,
            "sourceId": source.source_id,
            "reason": e.code(),
        }),
    )
}
