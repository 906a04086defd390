//! The campaign operations, each declared once: REST, the dispatcher and
//! agent tools are derived from these declarations.

use serde::Deserialize;
use utoipa::{IntoParams, ToSchema};

use super::model::{CampaignEnvelope, CampaignIn, CampaignOut, STATUSES, Transition};
use super::service;
use crate::buyer::targeting::operations::Fields;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Filtered, Input, Json, Nothing, Operation, OperationDef, Paged, Pagination,
    Params, Query, Verb, def,
};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<CreateCampaign>(),
    &def::<GetCampaign>(),
    &def::<ListCampaigns>(),
    &def::<UpdateCampaign>(),
    &def::<TransitionOp<Archive>>(),
    &def::<TransitionOp<Restore>>(),
];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignPath {
    /// The campaign's id (`cmp_…`).
    pub campaign_id: String,
}

#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct CampaignFilter {
    /// Only this advertiser's campaigns.
    pub advertiser_id: Option<String>,
    /// Only campaigns in this status.
    pub status: Option<String>,
    /// `geo_metro_names` adds metro names to each campaign.
    pub fields: Option<String>,
}

pub struct CreateCampaign;

impl Operation for CreateCampaign {
    const NAME: &'static str = "create_campaign";
    const DESCRIPTION: &'static str = "Create a DRAFT campaign for one of the account's advertisers (flight dates, budget in the advertiser's currency, brief, goals, targeting). Locks the advertiser's currency and brand.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/campaigns";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (400, "VALIDATION_ERROR or CURRENCY_MISMATCH"),
        (404, "advertiser not found"),
        (409, "the advertiser is archived (restore it first)"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<CampaignIn>;
    type Output = CampaignEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        service::create_campaign(ctx, caller, input.body.0).await
    }
}

pub struct GetCampaign;

impl Operation for GetCampaign {
    const NAME: &'static str = "get_campaign";
    const DESCRIPTION: &'static str =
        "One campaign of the caller's account; params.fields = geo_metro_names adds metro names.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/campaigns/{campaignId}";
    type Path = Params<CampaignPath>;
    type Query = Query<Fields>;
    type Body = Nothing;
    type Output = CampaignEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let names = input.query.0.parse()?;
        service::get_campaign(ctx, caller, &input.path.0.campaign_id, names).await
    }
}

pub struct ListCampaigns;

impl Operation for ListCampaigns {
    const NAME: &'static str = "list_campaigns";
    const DESCRIPTION: &'static str =
        "The account's campaigns, newest first; filter by advertiserId and status.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/campaigns";
    type Path = Nothing;
    type Query = Filtered<CampaignFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<CampaignOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let names = Fields {
            fields: filter.fields,
        }
        .parse()?;
        let advertiser = filter
            .advertiser_id
            .map(|a| crate::buyer::advertisers::model::advertiser_id(&a))
            .transpose()?;
        let status = filter.status.map(|s| s.trim().to_ascii_uppercase());
        if let Some(s) = &status
            && !STATUSES.contains(&s.as_str())
        {
            return Err(ApiError::invalid(
                "status",
                format!("must be one of {STATUSES:?}"),
            ));
        }
        service::list_campaigns(ctx, caller, page, advertiser, status, names).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct UpdateCampaign;

impl Operation for UpdateCampaign {
    const NAME: &'static str = "update_campaign";
    const DESCRIPTION: &'static str = "Change a campaign's fields (those sent); performanceConfig null clears; archived and completed campaigns are frozen.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Put;
    const PATH: &'static str = "/buyer/campaigns/{campaignId}";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (400, "VALIDATION_ERROR or CURRENCY_MISMATCH"),
        (409, "archived or completed"),
    ];
    type Path = Params<CampaignPath>;
    type Query = Nothing;
    type Body = Json<CampaignIn>;
    type Output = CampaignEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        service::update_campaign(ctx, caller, &input.path.0.campaign_id, input.body.0).await
    }
}

/// A status change of a campaign: a POST on the campaign's path, no body.
/// Each kind names its operation and says what follows once the change is
/// committed (media buys pause and resume at their sellers).
pub trait TransitionKind: Send + Sync + 'static {
    const NAME: &'static str;
    const PATH: &'static str;
    const DESCRIPTION: &'static str;
    const TRANSITION: Transition;

    /// Runs after the change committed.
    fn after(
        _ctx: &Ctx,
        _caller: &CallerInfo,
        _campaign_id: &str,
    ) -> impl std::future::Future<Output = Result<(), ApiError>> + Send {
        async { Ok(()) }
    }
}

/// The operation of a [`TransitionKind`].
pub struct TransitionOp<K>(std::marker::PhantomData<K>);

impl<K: TransitionKind> Operation for TransitionOp<K> {
    const NAME: &'static str = K::NAME;
    const DESCRIPTION: &'static str = K::DESCRIPTION;
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = K::PATH;
    const ERRORS: &'static [(u16, &'static str)] = &[(409, "illegal transition")];
    type Path = Params<CampaignPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = CampaignEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let env =
            service::transition(ctx, caller, &input.path.0.campaign_id, K::TRANSITION).await?;
        K::after(ctx, caller, &env.campaign.campaign_id).await?;
        Ok(env)
    }
}

pub struct Archive;

impl TransitionKind for Archive {
    const NAME: &'static str = "archive_campaign";
    const PATH: &'static str = "/buyer/campaigns/{campaignId}/archive";
    const DESCRIPTION: &'static str = "Archive a campaign; its fields freeze until it is restored.";
    const TRANSITION: Transition = Transition::Archive;
}

pub struct Restore;

impl TransitionKind for Restore {
    const NAME: &'static str = "restore_campaign";
    const PATH: &'static str = "/buyer/campaigns/{campaignId}/restore";
    const DESCRIPTION: &'static str =
        "Restore an archived campaign to where it was (a running one comes back PAUSED).";
    const TRANSITION: Transition = Transition::Restore;
}
