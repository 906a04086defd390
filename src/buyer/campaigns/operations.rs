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
    &def::<ArchiveCampaign>(),
    &def::<RestoreCampaign>(),
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

/// Archive and restore share one shape: a POST on the campaign's path
/// (pause and resume reach the sellers: `media_buys::operations`).
macro_rules! transition_op {
    ($op:ident, $name:literal, $path:literal, $t:expr, $desc:literal) => {
        pub struct $op;

        impl Operation for $op {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $desc;
            const ACCESS: Access = Access::Write;
            const VERB: Verb = Verb::Post;
            const PATH: &'static str = $path;
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
                service::transition(ctx, caller, &input.path.0.campaign_id, $t).await
            }
        }
    };
}

transition_op!(
    ArchiveCampaign,
    "archive_campaign",
    "/buyer/campaigns/{campaignId}/archive",
    Transition::Archive,
    "Archive a campaign; its fields freeze until it is restored."
);
transition_op!(
    RestoreCampaign,
    "restore_campaign",
    "/buyer/campaigns/{campaignId}/restore",
    Transition::Restore,
    "Restore an archived campaign to where it was (a running one comes back PAUSED)."
);
