//! Staging: selections checked against the discovery session's products,
//! turned into DRAFT media buys of the campaign (the cart) in one
//! transaction with the budget check.

use std::collections::{HashMap, HashSet};

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, DatabaseTransaction, EntityTrait, IntoActiveModel, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde_json::json;

use entity::{advertiser, campaign, media_buy};

use super::model::{self, CampaignRef, CreateMediaBuysIn, DRAFT, FAILED, Mode};
use super::package::package;
use super::resolve::{Resolved, resolve_all};
use crate::buyer::campaigns::model::Budget;
use crate::buyer::campaigns::service as campaigns;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Kind};
use crate::ops::Ctx;

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
    crate::buyer::advertisers::service::refuse_archived(&advertiser, "media buys")?;

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
    let (claimed, notices) = if body.mode == Mode::Execute {
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
        Default::default()
    };
    txn.commit().await?;
    notices.publish(&ctx.bus).await;
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
                    adcp_package_ids: Set(None),
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
                    delivery: Set(None),
                    delivery_at: Set(None),
                    delivery_next_at: Set(None),
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
