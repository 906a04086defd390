//! Library requests: a buyer's ask for materials (`open`, then `closed`;
//! reopening is allowed), optionally about one advertiser.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::library_request as row;

use super::model;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};
use crate::ops::{Access, Ctx, Filtered, Input, Json, Nothing, Operation, Paged, Params, Verb};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LibraryRequestOut {
    pub id: String,
    pub title: String,
    pub body: String,
    pub advertiser_id: Option<String>,
    /// `open` or `closed`.
    pub status: String,
    pub created_by: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<row::Model> for LibraryRequestOut {
    fn from(r: row::Model) -> Self {
        LibraryRequestOut {
            id: r.id,
            title: r.title,
            body: r.body,
            advertiser_id: r.advertiser_id,
            status: r.status,
            created_by: r.created_by,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestPath {
    pub request_id: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RequestFilter {
    /// `open` or `closed`.
    pub status: Option<String>,
    pub advertiser_id: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestCreate {
    /// 1 to 255 characters.
    pub title: String,
    /// What is asked for, 1 to 20,000 characters.
    pub body: String,
    pub advertiser_id: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RequestUpdate {
    pub title: Option<String>,
    pub body: Option<String>,
    /// `open` or `closed`.
    pub status: Option<String>,
}

pub async fn owned(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<row::Model, ApiError> {
    row::Entity::find_by_id(id)
        .filter(row::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("library request"))
}

pub struct ListLibraryRequests;

impl Operation for ListLibraryRequests {
    const NAME: &'static str = "list_library_requests";
    const DESCRIPTION: &'static str = "The account's library requests (asks for materials), newest first; filter by status or advertiserId.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/library-requests";
    type Path = Nothing;
    type Query = Filtered<RequestFilter>;
    type Body = Nothing;
    type Output = Paged<LibraryRequestOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Paged<LibraryRequestOut>, ApiError> {
        let f = &input.query.filter;
        model::status_filter(f.status.as_deref(), &[model::OPEN, model::CLOSED])?;
        let mut select = row::Entity::find().filter(row::Column::AccountId.eq(caller.account_id()));
        if let Some(s) = &f.status {
            select = select.filter(row::Column::Status.eq(s));
        }
        if let Some(a) = &f.advertiser_id {
            select = select.filter(row::Column::AdvertiserId.eq(a));
        }
        let select = select
            .order_by_desc(row::Column::CreatedAt)
            .order_by_desc(row::Column::Id);
        Ok(input
            .query
            .page
            .fetch(&ctx.db, select, LibraryRequestOut::from)
            .await?)
    }

    fn pagination(out: &Self::Output) -> Option<crate::ops::Pagination> {
        Some(out.pagination)
    }
}

pub struct GetLibraryRequest;

impl Operation for GetLibraryRequest {
    const NAME: &'static str = "get_library_request";
    const DESCRIPTION: &'static str = "One library request of the account.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/library-requests/{requestId}";
    type Path = Params<RequestPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = LibraryRequestOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<LibraryRequestOut, ApiError> {
        Ok(owned(&ctx.db, caller, &input.path.0.request_id)
            .await?
            .into())
    }
}

pub struct CreateLibraryRequest;

impl Operation for CreateLibraryRequest {
    const NAME: &'static str = "create_library_request";
    const DESCRIPTION: &'static str =
        "Ask for materials: a library request (title, body, optional advertiserId), open at once.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/library-requests";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] =
        &[(404, "advertiserId names no advertiser of the account")];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<RequestCreate>;
    type Output = LibraryRequestOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<LibraryRequestOut, ApiError> {
        let b = input.body.0;
        let mut issues = Issues::default();
        let title = model::title(&b.title, "title", &mut issues);
        let body = model::text(&b.body, "body", model::MAX_TEXT, true, &mut issues);
        issues.into_result()?;
        if let Some(a) = &b.advertiser_id {
            model::own_advertiser(&ctx.db, caller, a).await?;
        }
        let now = model::now();
        let made = row::ActiveModel {
            id: Set(model::new_id()),
            account_id: Set(caller.account_id().to_string()),
            advertiser_id: Set(b.advertiser_id),
            title: Set(title),
            body: Set(body),
            status: Set(model::OPEN.into()),
            created_by: Set(caller.user.id),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&ctx.db)
        .await?;
        Ok(made.into())
    }
}

pub struct UpdateLibraryRequest;

impl Operation for UpdateLibraryRequest {
    const NAME: &'static str = "update_library_request";
    const DESCRIPTION: &'static str =
        "Change a library request's title or body, or close (or reopen) it with status.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/buyer/library-requests/{requestId}";
    type Path = Params<RequestPath>;
    type Query = Nothing;
    type Body = Json<RequestUpdate>;
    type Output = LibraryRequestOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<LibraryRequestOut, ApiError> {
        let id = input.path.0.request_id;
        let u = input.body.0;
        let mut issues = Issues::default();
        let title = u
            .title
            .as_deref()
            .map(|t| model::title(t, "title", &mut issues));
        let body = u
            .body
            .as_deref()
            .map(|t| model::text(t, "body", model::MAX_TEXT, true, &mut issues));
        if let Some(s) = &u.status
            && s != model::OPEN
            && s != model::CLOSED
        {
            issues.add("status", "must be open or closed");
        }
        issues.into_result()?;
        owned(&ctx.db, caller, &id).await?;
        let mut q = row::Entity::update_many()
            .col_expr(row::Column::UpdatedAt, Expr::value(model::now()))
            .filter(row::Column::Id.eq(&id))
            .filter(row::Column::AccountId.eq(caller.account_id()));
        if let Some(t) = title {
            q = q.col_expr(row::Column::Title, Expr::value(t));
        }
        if let Some(b) = body {
            q = q.col_expr(row::Column::Body, Expr::value(b));
        }
        if let Some(s) = u.status {
            q = q.col_expr(row::Column::Status, Expr::value(s));
        }
        q.exec(&ctx.db).await?;
        Ok(owned(&ctx.db, caller, &id).await?.into())
    }
}
