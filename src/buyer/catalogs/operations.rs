//! The catalog operations, each declared once: REST, the dispatcher and
//! agent tools are derived from these declarations.

use serde::Deserialize;
use utoipa::ToSchema;

use super::model::{
    CatalogOut, ExecuteIn, ExecutionOut, PlanOut, PreviewIn, RefreshIn, RefreshOut, SyncCatalogsIn,
    SyncCatalogsOut,
};
use super::service;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Input, Json, MaybeJson, Nothing, Operation, OperationDef, Page, Paged, Pagination,
    Params, Verb, def,
};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<SyncCatalogs>(),
    &def::<ListCatalogs>(),
    &def::<RefreshCatalog>(),
    &def::<PreviewActivationPlan>(),
    &def::<ExecuteActivationPlan>(),
];

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvertiserPath {
    /// The advertiser's id (a UUID).
    pub advertiser_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogPath {
    /// The advertiser's id (a UUID).
    pub advertiser_id: String,
    /// The catalog's id (`cat_…`).
    pub catalog_id: String,
}

pub struct SyncCatalogs;

impl Operation for SyncCatalogs {
    const NAME: &'static str = "sync_catalogs";
    const DESCRIPTION: &'static str = "Create or update an advertiser's catalogs from inline items or a JSON/CSV feed URL; \
         bad items are reported by index and the good ones become a new version.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/advertisers/{advertiserId}/catalogs/sync";
    const ERRORS: &'static [(u16, &'static str)] =
        &[(409, "a concurrent sync created a catalog of the same name")];
    type Path = Params<AdvertiserPath>;
    type Query = Nothing;
    type Body = Json<SyncCatalogsIn>;
    type Output = SyncCatalogsOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<SyncCatalogsOut, ApiError> {
        service::sync_catalogs(ctx, caller, &input.path.0.advertiser_id, input.body.0).await
    }
}

pub struct ListCatalogs;

impl Operation for ListCatalogs {
    const NAME: &'static str = "list_catalogs";
    const DESCRIPTION: &'static str = "An advertiser's catalogs with health, sync status, item count and latest version, newest first.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/advertisers/{advertiserId}/catalogs";
    type Path = Params<AdvertiserPath>;
    type Query = Page<20, 100>;
    type Body = Nothing;
    type Output = Paged<CatalogOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        service::list_catalogs(ctx, caller, &input.path.0.advertiser_id, input.query).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

pub struct RefreshCatalog;

impl Operation for RefreshCatalog {
    const NAME: &'static str = "refresh_catalog";
    const DESCRIPTION: &'static str = "Fetch a URL catalog's feed again into a new version; with executeActivation, \
         also execute its activation plan. Inline catalogs answer 409.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/advertisers/{advertiserId}/catalogs/{catalogId}/refresh";
    const ERRORS: &'static [(u16, &'static str)] = &[(409, "an inline catalog (nothing to fetch)")];
    type Path = Params<CatalogPath>;
    type Query = Nothing;
    type Body = MaybeJson<RefreshIn>;
    type Output = RefreshOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<RefreshOut, ApiError> {
        let p = input.path.0;
        service::refresh_catalog(ctx, caller, &p.advertiser_id, &p.catalog_id, input.body.0).await
    }
}

pub struct PreviewActivationPlan;

impl Operation for PreviewActivationPlan {
    const NAME: &'static str = "preview_catalog_activation_plan";
    const DESCRIPTION: &'static str = "The items the next execution would activate, update and deactivate downstream; \
         writes nothing unless save is true (then returns a planId).";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str =
        "/buyer/advertisers/{advertiserId}/catalogs/{catalogId}/activation-plan/preview";
    const ERRORS: &'static [(u16, &'static str)] = &[(409, "no synced version yet")];
    type Path = Params<CatalogPath>;
    type Query = Nothing;
    type Body = MaybeJson<PreviewIn>;
    type Output = PlanOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<PlanOut, ApiError> {
        let p = input.path.0;
        service::preview(ctx, caller, &p.advertiser_id, &p.catalog_id, input.body.0).await
    }
}

pub struct ExecuteActivationPlan;

impl Operation for ExecuteActivationPlan {
    const NAME: &'static str = "execute_catalog_activation_plan";
    const DESCRIPTION: &'static str = "Record the latest version's activation plan as a pending downstream job \
         (nothing goes live yet); once per version. dryRun writes nothing.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str =
        "/buyer/advertisers/{advertiserId}/catalogs/{catalogId}/activation-plan/execute";
    const ERRORS: &'static [(u16, &'static str)] = &[(409, "no synced version yet")];
    type Path = Params<CatalogPath>;
    type Query = Nothing;
    type Body = MaybeJson<ExecuteIn>;
    type Output = ExecutionOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ExecutionOut, ApiError> {
        let p = input.path.0;
        service::execute_plan(ctx, caller, &p.advertiser_id, &p.catalog_id, input.body.0).await
    }
}
