//! The creative operations, each declared once (REST, OpenAPI, the
//! `/mcp/buyer` tools and the dispatcher come from here).

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{
    AssignIn, CreativeEnvelope, CreativeIn, CreativeOut, CreativePatch, CreativesFilter, SyncIn,
    SyncOut,
};
use super::{service, sync};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Filtered, Input, Json, Nothing, Operation, Paged, Pagination, Params, Verb,
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreativePath {
    /// The creative's id (`cr_...`).
    pub creative_id: String,
}

pub struct ListCreatives;

impl Operation for ListCreatives {
    const NAME: &'static str = "list_creatives";
    const DESCRIPTION: &'static str = "The account's creatives with their assignments and each one's sync and review status at the seller, newest first; filter by advertiserId, campaignId, mediaBuyId (assigned to) or status (active, archived).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/creatives";
    type Path = Nothing;
    type Query = Filtered<CreativesFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<CreativeOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        service::list(ctx, caller, page, filter).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct GetCreative;

impl Operation for GetCreative {
    const NAME: &'static str = "get_creative";
    const DESCRIPTION: &'static str =
        "One creative with its assignments and their sync and review status.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/creatives/{creativeId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown, or another account's")];
    type Path = Params<CreativePath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = CreativeEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CreativeEnvelope, ApiError> {
        service::get(ctx, caller, &input.path.0.creative_id).await
    }
}

pub struct CreateCreative;

impl Operation for CreateCreative {
    const NAME: &'static str = "create_creative";
    const DESCRIPTION: &'static str = "Add a creative to an advertiser's library: name, formatId {agentUrl, id} (an AdCP format), assets by role (AdCP asset objects) and the landing page clickUrl, to which the utm parameters are added per media buy when it is synced.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/creatives";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (404, "the advertiser is unknown, or another account's"),
        (409, "the advertiser is archived"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<CreativeIn>;
    type Output = CreativeEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CreativeEnvelope, ApiError> {
        service::create(ctx, caller, input.body.0).await
    }
}

pub struct UpdateCreative;

impl Operation for UpdateCreative {
    const NAME: &'static str = "update_creative";
    const DESCRIPTION: &'static str = "Change a creative's name, formatId, assets (replaced whole), clickUrl (null removes) or status (active, archived). A content change adds one to its revision; synced assignments show outdated until the next sync.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/buyer/creatives/{creativeId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown, or another account's")];
    type Path = Params<CreativePath>;
    type Query = Nothing;
    type Body = Json<CreativePatch>;
    type Output = CreativeEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CreativeEnvelope, ApiError> {
        service::update(ctx, caller, &input.path.0.creative_id, input.body.0).await
    }
}

pub struct AssignCreative;

impl Operation for AssignCreative {
    const NAME: &'static str = "assign_creative";
    const DESCRIPTION: &'static str = "Set the media buys (packages) a creative runs on: {assignments: [{mediaBuyId, weight?}]} replaces them all ([] unassigns). Buys must be the creative's advertiser's and not ended. Nothing reaches a seller until sync_creatives.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Put;
    const PATH: &'static str = "/buyer/creatives/{creativeId}/assignments";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (404, "unknown, or another account's"),
        (409, "the creative is archived"),
    ];
    type Path = Params<CreativePath>;
    type Query = Nothing;
    type Body = Json<AssignIn>;
    type Output = CreativeEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CreativeEnvelope, ApiError> {
        service::assign(ctx, caller, &input.path.0.creative_id, input.body.0).await
    }
}

pub struct SyncCreatives;

impl Operation for SyncCreatives {
    const NAME: &'static str = "sync_creatives";
    const DESCRIPTION: &'static str = "Send assigned creatives to their sellers (AdCP sync_creatives), each media buy's with its own click URL (utm parameters resolved); narrow by advertiserId, campaignId or creativeIds. Answers each assignment's outcome and the seller's review status, and records them. A managed storefront without an accepted account linkage is 409 MANAGED_ACCOUNT_LINKAGE_REQUIRED and nothing is sent. dryRun asks the sellers to check only.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/creatives/sync";
    const ERRORS: &'static [(u16, &'static str)] = &[(
        409,
        "MANAGED_ACCOUNT_LINKAGE_REQUIRED: a managed storefront has no accepted account linkage for the advertiser (details.missing); nothing is sent",
    )];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<SyncIn>;
    type Output = SyncOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<SyncOut, ApiError> {
        sync::sync(ctx, caller, input.body.0).await
    }
}
