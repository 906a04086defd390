//! The media-buy operations, each declared once (REST, the dispatcher and
//! the MCP tools come from these): the cart (`create_media_buys`), launch
//! (`execute_campaign`), pause and resume reaching the sellers, and the
//! status read.

use futures_util::future::join_all;
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use sea_orm::EntityTrait;

use entity::media_buy;

use super::model::{CreateMediaBuysIn, CreateMediaBuysOut, MediaBuyOut, MediaBuyStatusOut};
use super::outcome::{self, Outcome};
use super::{cart, dispatch, status};
use crate::buyer::campaigns::model::{CampaignOut, Transition};
use crate::buyer::campaigns::operations::{CampaignPath, TransitionKind, TransitionOp};
use crate::buyer::campaigns::service as campaigns;
use crate::caller::CallerInfo;
use crate::discovery::sellers::Sellers;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, OperationDef, Params, Verb, def};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<CreateMediaBuys>(),
    &def::<ExecuteCampaign>(),
    &def::<GetMediaBuyStatus>(),
    &def::<AutoSelectProducts>(),
    &def::<TransitionOp<Pause>>(),
    &def::<TransitionOp<Resume>>(),
    &def::<super::storefront::ListStorefrontMediaBuys>(),
];

pub struct CreateMediaBuys;

impl Operation for CreateMediaBuys {
    const NAME: &'static str = "create_media_buys";
    const DESCRIPTION: &'static str = "Put products of a discovery session into a campaign's cart as media buys (one per selection), creating the DRAFT campaign with campaign.create. mode stage writes DRAFT buys and contacts no seller; mode execute (the buyer confirmed the purchase) then sends each buy to its seller (AdCP create_media_buy, concurrently, each with its own idempotency key). Not atomic: buys the sellers made stay; repeating the request sends only what is left.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/media-buys";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (400, "VALIDATION_ERROR or CURRENCY_MISMATCH"),
        (402, "CREDIT_LIMIT_EXCEEDED"),
        (404, "discovery session or campaign not found"),
        (
            409,
            "INSUFFICIENT_MEDIA_BUDGET, PRICING_NOT_CONFIGURED or CONFLICT (e.g. the advertiser is archived)",
        ),
        (422, "CAPABILITY_NOT_SUPPORTED"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<CreateMediaBuysIn>;
    type Output = CreateMediaBuysOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let mode = input.body.0.mode;
        let staged = cart::stage(ctx, caller, input.body.0).await?;
        dispatch::send(ctx, staged.claimed).await?;
        let buys = status::buys_of(&ctx.db, caller.account_id(), &staged.campaign_id).await?;
        Ok(CreateMediaBuysOut {
            campaign_id: staged.campaign_id,
            campaign_created: staged.campaign_created,
            mode,
            media_buys: buys.into_iter().map(status::out).collect(),
        })
    }
}

/// A campaign and its buys.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LaunchOut {
    pub campaign: CampaignOut,
    pub media_buys: Vec<MediaBuyOut>,
}

pub struct ExecuteCampaign;

impl Operation for ExecuteCampaign {
    const NAME: &'static str = "execute_campaign";
    const DESCRIPTION: &'static str = "Launch a campaign: send its DRAFT media buys to their sellers (and re-send any whose answer was lost, with the same idempotency key). The campaign becomes ACTIVE once none of its buys is on its way and at least one is live at its seller.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/campaigns/{campaignId}/execute";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (402, "CREDIT_LIMIT_EXCEEDED"),
        (
            409,
            "PRICING_NOT_CONFIGURED, or the campaign cannot launch (empty cart, archived or completed)",
        ),
    ];
    type Path = Params<CampaignPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = LaunchOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        launch(ctx, caller, &input.path.0.campaign_id).await
    }
}

/// `execute_campaign` (and `/mcp/v3 save_campaign desiredPhase: active`).
pub async fn launch(
    ctx: &Ctx,
    caller: &CallerInfo,
    campaign_id: &str,
) -> Result<LaunchOut, ApiError> {
    let row = campaigns::load(&ctx.db, caller, campaign_id).await?;
    if matches!(row.status.as_str(), "ARCHIVED" | "COMPLETED") {
        return Err(ApiError::Conflict {
            message: format!("a {} campaign cannot launch", row.status),
            details: Some(
                json!({"reason": "illegal_transition", "status": row.status, "transition": "launch"}),
            ),
        });
    }
    let mut buys = status::buys_of(&ctx.db, caller.account_id(), &row.id).await?;
    let autonomy: crate::buyer::campaigns::model::Autonomy = crate::buyer::from_json(&row.autonomy);
    if buys.is_empty()
        && autonomy.inventory_selection == "automatic"
        && let Some(session) = row.discovery_id.as_deref()
    {
        stage_automatic(ctx, caller, &row.id, session).await?;
        buys = status::buys_of(&ctx.db, caller.account_id(), &row.id).await?;
    }
    if buys.is_empty() {
        return Err(ApiError::Conflict {
            message: "the campaign's cart is empty: add media buys with create_media_buys first"
                .into(),
            details: Some(json!({"reason": "empty_cart"})),
        });
    }
    dispatch::execute(ctx, caller.account_id(), &row.id, None).await?;
    let campaign = campaigns::get_campaign(ctx, caller, &row.id, false)
        .await?
        .campaign;
    let buys = status::buys_of(&ctx.db, caller.account_id(), &row.id).await?;
    Ok(LaunchOut {
        campaign,
        media_buys: buys.into_iter().map(status::out).collect(),
    })
}

pub struct GetMediaBuyStatus;

impl Operation for GetMediaBuyStatus {
    const NAME: &'static str = "get_media_buy_status";
    const DESCRIPTION: &'static str = "The status of a campaign's media buys at their sellers (internal_status, adcp_status, the previous values and when they changed), refreshed by the server no faster than every 30 s per buy; poll it no faster than that.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/campaigns/{campaignId}/media-buy-status";
    type Path = Params<CampaignPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = MediaBuyStatusOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let row = campaigns::load(&ctx.db, caller, &input.path.0.campaign_id).await?;
        status::status(&ctx.db, caller.account_id(), &row.id).await
    }
}

/// Pause: the campaign's status, then its live buys at their sellers (AdCP
/// `update_media_buy` with `paused`).
pub struct Pause;

impl TransitionKind for Pause {
    const NAME: &'static str = "pause_campaign";
    const PATH: &'static str = "/buyer/campaigns/{campaignId}/pause";
    const DESCRIPTION: &'static str = "Pause an ACTIVE campaign (a PAUSED one stays paused); its live media buys are paused at their sellers.";
    const TRANSITION: Transition = Transition::Pause;

    async fn after(ctx: &Ctx, caller: &CallerInfo, campaign_id: &str) -> Result<(), ApiError> {
        set_paused(ctx, caller.account_id(), campaign_id, true).await
    }
}

/// Resume: the campaign's status, then its paused buys at their sellers.
pub struct Resume;

impl TransitionKind for Resume {
    const NAME: &'static str = "resume_campaign";
    const PATH: &'static str = "/buyer/campaigns/{campaignId}/resume";
    const DESCRIPTION: &'static str = "Resume a PAUSED campaign (an ACTIVE one stays active); its paused media buys resume at their sellers.";
    const TRANSITION: Transition = Transition::Resume;

    async fn after(ctx: &Ctx, caller: &CallerInfo, campaign_id: &str) -> Result<(), ApiError> {
        set_paused(ctx, caller.account_id(), campaign_id, false).await
    }
}

pub const UPDATE_MEDIA_BUY: &str = "update_media_buy";

/// Pauses or resumes the campaign's buys at their sellers. A seller that
/// fails is recorded on its buy (the poller keeps refreshing it); the
/// campaign's own status is already committed.
pub async fn set_paused(
    ctx: &Ctx,
    account_id: &str,
    campaign_id: &str,
    paused: bool,
) -> Result<(), ApiError> {
    let buys: Vec<media_buy::Model> = status::buys_of(&ctx.db, account_id, campaign_id)
        .await?
        .into_iter()
        .filter(|b| b.adcp_media_buy_id.is_some())
        .filter(|b| {
            if paused {
                ["pending_creatives", "pending_start", "active"].contains(&b.status.as_str())
            } else {
                b.status == "paused"
            }
        })
        .collect();
    if buys.is_empty() {
        return Ok(());
    }
    let sellers = ctx.get::<Sellers>()?.clone();
    let mut calls = Vec::with_capacity(buys.len());
    for b in buys {
        let target = crate::discovery::storefronts::target(
            &ctx.db,
            b.storefront_id,
            ctx.config.url_policy(),
        )
        .await?;
        let a = entity::advertiser::Entity::find_by_id(b.advertiser_id.clone())
            .one(&ctx.db)
            .await?
            .ok_or_else(|| ApiError::not_found("advertiser"))?;
        let mut account = json!({"brand": {"domain": a.brand}, "operator": a.brand});
        if b.sandbox {
            account["sandbox"] = json!(true);
        }
        let mut args = Map::new();
        args.insert(
            "idempotency_key".into(),
            json!(format!(
                "{}:{}:{}",
                b.idempotency_key,
                if paused { "pause" } else { "resume" },
                b.adcp_revision.unwrap_or(0)
            )),
        );
        args.insert("account".into(), account);
        args.insert("media_buy_id".into(), json!(b.adcp_media_buy_id));
        args.insert("paused".into(), json!(paused));
        if let Some(r) = b.adcp_revision {
            args.insert("revision".into(), json!(r));
        }
        let sellers = sellers.clone();
        calls.push(async move {
            let o = match target {
                Some(Ok(t)) => match sellers.for_storefront(&t).call_task(&t, UPDATE_MEDIA_BUY, args).await {
                    Ok(p) => read_update(&p, paused),
                    Err(e) => outcome::from_error(&e),
                },
                _ => Outcome::Unknown {
                    error: json!({"code": "SELLER_ADDRESS_REFUSED", "message": "the storefront cannot be reached"}),
                    retry_after: None,
                },
            };
            // A refused update leaves the buy as it is (it is not a
            // failed buy); the error is shown on it.
            let o = match o {
                Outcome::Refused { errors, .. } => Outcome::Unknown {
                    error: errors.into_iter().next().unwrap_or(Value::Null),
                    retry_after: None,
                },
                o => o,
            };
            (b, o)
        });
    }
    let answers = join_all(calls).await;
    dispatch::record(ctx, answers).await
}

/// An `update_media_buy` answer: the buy's new status.
fn read_update(payload: &Value, paused: bool) -> Outcome {
    if let Some(errors) = payload.get("errors").and_then(Value::as_array)
        && !errors.is_empty()
        && payload.get("media_buy_id").is_none()
    {
        return Outcome::Refused {
            errors: errors.clone(),
            status: super::model::FAILED.into(),
        };
    }
    let status = outcome::lifecycle(payload)
        .map(str::to_string)
        .unwrap_or_else(|| {
            if paused {
                "paused".into()
            } else {
                "active".into()
            }
        });
    Outcome::Status {
        status,
        revision: payload.get("revision").and_then(Value::as_i64),
    }
}

/// An automatic campaign launched with an empty cart: its session's
/// auto-selection, staged at the allocated budgets (auction options at
/// their floor).
async fn stage_automatic(
    ctx: &Ctx,
    caller: &CallerInfo,
    campaign_id: &str,
    session: &str,
) -> Result<(), ApiError> {
    let picked = super::auto_select::select(
        ctx,
        caller,
        session,
        super::auto_select::AutoSelectQuery {
            campaign_id: Some(campaign_id.to_string()),
            method: None,
        },
    )
    .await?;
    let selections: Vec<super::model::SelectionIn> = picked
        .selected_products
        .into_iter()
        .filter_map(|p| {
            Some(super::model::SelectionIn::Product {
                product_id: p.product_id,
                budget: p.budget.filter(|b| *b > 0.0)?,
                bid_price: p.bid_price,
                storefront_id: Some(p.storefront_id),
                pricing_option_id: Some(p.pricing_option_id),
                placement_ids: None,
            })
        })
        .collect();
    if selections.is_empty() {
        return Ok(());
    }
    cart::stage(
        ctx,
        caller,
        CreateMediaBuysIn {
            product_query_id: session.to_string(),
            campaign: super::model::CampaignRef {
                campaign_id: Some(campaign_id.to_string()),
                create: None,
            },
            mode: super::model::Mode::Stage,
            replace: false,
            selections,
        },
    )
    .await?;
    Ok(())
}

pub struct AutoSelectProducts;

impl Operation for AutoSelectProducts {
    const NAME: &'static str = "auto_select_products";
    const DESCRIPTION: &'static str = "Choose the products of a discovery session a campaign should test, with a budget allocation each (selectionMethod scoring, measurability or cpm_heuristic, each documented), replacing the session's chosen products. The budget is that of campaignId, else of the newest campaign attached to the session.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/discovery/{discoveryId}/auto-select";
    type Path = Params<crate::discovery::operations::DiscoveryPath>;
    type Query = crate::ops::Query<super::auto_select::AutoSelectQuery>;
    type Body = Nothing;
    type Output = super::auto_select::AutoSelection;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        super::auto_select::select(ctx, caller, &input.path.0.discovery_id, input.query.0).await
    }
}
