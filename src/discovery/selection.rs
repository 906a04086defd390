//! The products a user chose from a session, and saved snapshots
//! (proposal codes) that `discover_products` returns whole.

use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, QueryOrder, Set};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{discovery_proposal, discovery_selection};

use super::model::ProductOut;
use super::operations::{DiscoveryPath, Window, snapshot, visible_session};
use super::service;
use crate::buyer::advertisers::model::Issues;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Params, Verb};

/// Products per request to add or remove.
const MAX_PER_CALL: usize = 100;

/// A chosen product, as it was in the session when chosen.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChosenProduct {
    pub product_id: String,
    pub group_id: String,
    pub added_by_user_id: i64,
    pub added_at: DateTime<Utc>,
    /// The product as the session shows it now (absent if a refine removed it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<ProductOut>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChosenProducts {
    pub discovery_id: String,
    pub products: Vec<ChosenProduct>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProductIdsIn {
    /// 1 to 100 product ids of the session.
    pub product_ids: Vec<String>,
}

/// Every product of the session by id, with its group.
pub async fn products_of(
    ctx: &Ctx,
    session_id: &str,
) -> Result<Vec<(String, ProductOut)>, ApiError> {
    let mut out = Vec::new();
    for g in service::groups(&ctx.db, session_id, None).await? {
        let products: Vec<ProductOut> = serde_json::from_str(&g.products)
            .map_err(|e| ApiError::internal(format!("stored group: {e}")))?;
        out.extend(products.into_iter().map(|p| (g.group_id.clone(), p)));
    }
    Ok(out)
}

/// Every proposal of the session's sellers, with its storefront.
pub async fn proposals_of(
    ctx: &Ctx,
    session_id: &str,
) -> Result<Vec<(i64, serde_json::Value)>, ApiError> {
    let mut out = Vec::new();
    for g in service::groups(&ctx.db, session_id, None).await? {
        let Some(stored) = g.proposals.as_deref() else {
            continue;
        };
        let Some(storefront) = g.group_id.strip_prefix("sf_").and_then(|s| s.parse().ok()) else {
            continue;
        };
        let items: Vec<serde_json::Value> = serde_json::from_str(stored)
            .map_err(|e| ApiError::internal(format!("stored proposals: {e}")))?;
        out.extend(items.into_iter().map(|p| (storefront, p)));
    }
    Ok(out)
}

async fn chosen(ctx: &Ctx, session_id: &str) -> Result<ChosenProducts, ApiError> {
    let products = products_of(ctx, session_id).await?;
    let rows = discovery_selection::Entity::find()
        .filter(discovery_selection::Column::SessionId.eq(session_id))
        .order_by_asc(discovery_selection::Column::CreatedAt)
        .order_by_asc(discovery_selection::Column::ProductId)
        .all(&ctx.db)
        .await?;
    Ok(ChosenProducts {
        discovery_id: session_id.to_string(),
        products: rows
            .into_iter()
            .map(|r| ChosenProduct {
                product: products
                    .iter()
                    .find(|(_, p)| p.product_id == r.product_id)
                    .map(|(_, p)| p.clone()),
                product_id: r.product_id,
                group_id: r.group_id,
                added_by_user_id: r.added_by_user_id,
                added_at: r.created_at,
            })
            .collect(),
    })
}

fn check_ids(ids: &[String]) -> Result<(), ApiError> {
    let mut issues = Issues::default();
    if ids.is_empty() || ids.len() > MAX_PER_CALL {
        issues.add("productIds", format!("must hold 1 to {MAX_PER_CALL} ids"));
    }
    for (i, id) in ids.iter().enumerate() {
        if id.trim().is_empty() {
            issues.add(format!("productIds[{i}]"), "must not be empty");
        }
    }
    issues.into_result()
}

pub struct ListDiscoveryProducts;

impl Operation for ListDiscoveryProducts {
    const NAME: &'static str = "list_discovery_products";
    const DESCRIPTION: &'static str = "The products chosen from a discovery session.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/discovery/{discoveryId}/products";
    type Path = Params<DiscoveryPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = ChosenProducts;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ChosenProducts, ApiError> {
        let session = visible_session(ctx, caller, &input.path.0.discovery_id).await?;
        chosen(ctx, &session.id).await
    }
}

pub struct AddDiscoveryProducts;

impl Operation for AddDiscoveryProducts {
    const NAME: &'static str = "add_discovery_products";
    const DESCRIPTION: &'static str = "Choose products of a discovery session (ids the session holds; choosing one twice keeps the first choice).";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/discovery/{discoveryId}/products";
    type Path = Params<DiscoveryPath>;
    type Query = Nothing;
    type Body = Json<ProductIdsIn>;
    type Output = ChosenProducts;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ChosenProducts, ApiError> {
        let ids = input.body.0.product_ids;
        check_ids(&ids)?;
        let session = visible_session(ctx, caller, &input.path.0.discovery_id).await?;
        let products = products_of(ctx, &session.id).await?;
        let mut issues = Issues::default();
        let mut found = Vec::new();
        for (i, id) in ids.iter().enumerate() {
            match products.iter().find(|(_, p)| &p.product_id == id) {
                Some((group, _)) => found.push((id.clone(), group.clone())),
                None => issues.add(
                    format!("productIds[{i}]"),
                    "is not a product of this session",
                ),
            }
        }
        issues.into_result()?;
        let now = Utc::now();
        let txn = crate::db::begin_write(&ctx.db).await?;
        for (id, group) in found {
            let exists = discovery_selection::Entity::find_by_id((session.id.clone(), id.clone()))
                .one(&txn)
                .await?
                .is_some();
            if !exists {
                discovery_selection::ActiveModel {
                    session_id: Set(session.id.clone()),
                    product_id: Set(id),
                    group_id: Set(group),
                    added_by_user_id: Set(caller.user.id),
                    created_at: Set(now),
                }
                .insert(&txn)
                .await?;
            }
        }
        txn.commit().await?;
        chosen(ctx, &session.id).await
    }
}

pub struct RemoveDiscoveryProducts;

impl Operation for RemoveDiscoveryProducts {
    const NAME: &'static str = "remove_discovery_products";
    const DESCRIPTION: &'static str =
        "Un-choose products of a discovery session (ids not chosen are ignored).";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Delete;
    const PATH: &'static str = "/buyer/discovery/{discoveryId}/products";
    type Path = Params<DiscoveryPath>;
    type Query = Nothing;
    type Body = Json<ProductIdsIn>;
    type Output = ChosenProducts;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ChosenProducts, ApiError> {
        let ids = input.body.0.product_ids;
        check_ids(&ids)?;
        let session = visible_session(ctx, caller, &input.path.0.discovery_id).await?;
        discovery_selection::Entity::delete_many()
            .filter(discovery_selection::Column::SessionId.eq(session.id.clone()))
            .filter(discovery_selection::Column::ProductId.is_in(ids))
            .exec(&ctx.db)
            .await?;
        chosen(ctx, &session.id).await
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalOut {
    /// Give it to `discover_products` as `proposalCode`.
    pub proposal_code: String,
    pub discovery_id: String,
    pub revision: i64,
    pub created_at: DateTime<Utc>,
}

/// A short code people can read out: `PRP-` and 10 letters or digits
/// (no 0/O, 1/I).
fn new_code() -> String {
    use rand::Rng;
    const ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";
    let mut rng = rand::rng();
    let tail: String = (0..10)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect();
    format!("PRP-{tail}")
}

pub struct SaveDiscoveryProposal;

impl Operation for SaveDiscoveryProposal {
    const NAME: &'static str = "save_discovery_proposal";
    const DESCRIPTION: &'static str = "Save the session's current snapshot under a proposal code; discover_products with that proposalCode returns it unchanged.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/discovery/{discoveryId}/proposals";
    const STATUS: u16 = 201;
    type Path = Params<DiscoveryPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = ProposalOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ProposalOut, ApiError> {
        let session = visible_session(ctx, caller, &input.path.0.discovery_id).await?;
        let window = Window {
            group_limit: Some(100),
            products_per_group: Some(100),
            ..Window::default()
        };
        let snap = snapshot(ctx, &session, window).await?;
        let revision = snap.revision;
        let body = serde_json::to_string(&snap).map_err(ApiError::internal)?;
        let now = Utc::now();
        let code = new_code();
        discovery_proposal::ActiveModel {
            code: Set(code.clone()),
            account_id: Set(caller.account_id().to_string()),
            session_id: Set(session.id.clone()),
            revision: Set(revision),
            snapshot: Set(body),
            created_by_user_id: Set(caller.user.id),
            created_at: Set(now),
        }
        .insert(&ctx.db)
        .await?;
        Ok(ProposalOut {
            proposal_code: code,
            discovery_id: session.id,
            revision,
            created_at: now,
        })
    }
}

/// The snapshot saved under `code` for the caller's account.
pub async fn proposal_snapshot(
    ctx: &Ctx,
    caller: &CallerInfo,
    code: &str,
) -> Result<Box<serde_json::value::RawValue>, ApiError> {
    let row = discovery_proposal::Entity::find_by_id(code.trim().to_ascii_uppercase())
        .filter(discovery_proposal::Column::AccountId.eq(caller.account_id()))
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::not_found("proposal"))?;
    serde_json::value::RawValue::from_string(row.snapshot).map_err(ApiError::internal)
}
