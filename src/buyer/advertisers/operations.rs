//! The advertiser operations, each declared once: REST, the dispatcher and
//! agent tools are derived from these declarations.

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{AdvertiserCreate, AdvertiserOut, AdvertiserUpdate};
use super::service;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Filtered, Input, Json, Nothing, Operation, OperationDef, Paged, Pagination,
    Params, Verb, def,
};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<CreateAdvertiser>(),
    &def::<GetAdvertiser>(),
    &def::<UpdateAdvertiser>(),
    &def::<ListAdvertisers>(),
];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvertiserPath {
    /// The advertiser's id (a UUID).
    pub advertiser_id: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvertiserFilter {
    /// `true` lists archived advertisers too (default `false`: active only).
    pub include_archived: Option<bool>,
}

pub struct CreateAdvertiser;

impl Operation for CreateAdvertiser {
    const NAME: &'static str = "create_advertiser";
    const DESCRIPTION: &'static str =
        "Create an advertiser (brand identity, currency, channels, UTM and frequency caps).";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/advertisers";
    const STATUS: u16 = 201;
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<AdvertiserCreate>;
    type Output = AdvertiserOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<AdvertiserOut, ApiError> {
        service::create_advertiser(ctx, caller, input.body.0).await
    }
}

pub struct GetAdvertiser;

impl Operation for GetAdvertiser {
    const NAME: &'static str = "get_advertiser";
    const DESCRIPTION: &'static str = "One advertiser of the caller's account, archived or not.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/advertisers/{advertiserId}";
    type Path = Params<AdvertiserPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = AdvertiserOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<AdvertiserOut, ApiError> {
        service::get_advertiser(ctx, caller, &input.path.0.advertiser_id).await
    }
}

pub struct UpdateAdvertiser;

impl Operation for UpdateAdvertiser {
    const NAME: &'static str = "update_advertiser";
    const DESCRIPTION: &'static str =
        "Change an advertiser; brand and currency lock once a seller account is bound.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Put;
    const PATH: &'static str = "/buyer/advertisers/{advertiserId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(409, "brand or currency locked")];
    type Path = Params<AdvertiserPath>;
    type Query = Nothing;
    type Body = Json<AdvertiserUpdate>;
    type Output = AdvertiserOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<AdvertiserOut, ApiError> {
        service::update_advertiser(ctx, caller, &input.path.0.advertiser_id, input.body.0).await
    }
}

pub struct ListAdvertisers;

impl Operation for ListAdvertisers {
    const NAME: &'static str = "list_advertisers";
    const DESCRIPTION: &'static str =
        "The account's advertisers, newest first; archived ones only with includeArchived=true.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/advertisers";
    type Path = Nothing;
    type Query = Filtered<AdvertiserFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<AdvertiserOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let archived = filter.include_archived.unwrap_or(false);
        service::list_advertisers(ctx, caller, page, archived).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}
