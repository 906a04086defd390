//! Materials: a file (reserved, then uploaded through `uploads`) or a
//! note, owned by the user who made it, and its lifecycle:
//!
//! | from | to | who |
//! |---|---|---|
//! | uploaded | draft | the owner (finalises an upload) |
//! | draft | candidate | the owner (proposes it to its destination) |
//! | candidate | accepted | the owner (acceptance stays with the candidate's owner) |
//! | candidate | rejected | anyone of the account but the owner, with `rejectionReason` |
//! | rejected | draft | the owner (revises it) |
//! | draft, accepted, rejected | archived | the owner |
//!
//! Each move is one conditional `UPDATE … WHERE status = <from>`: of two
//! callers moving the same material, one wins and the other gets 409.
//! No answer ever carries a URL to the bytes.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use entity::material as row;

use super::model::{self, Destination};
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};
use crate::ops::{Access, Ctx, Filtered, Input, Json, Nothing, Operation, Paged, Params, Verb};

/// A material as answered: never a URL to its bytes.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaterialOut {
    pub id: String,
    pub title: String,
    pub description: Option<String>,
    /// `file` or `note`.
    pub kind: String,
    pub content_type: Option<String>,
    pub file_name: Option<String>,
    pub size_bytes: Option<i64>,
    /// Hex SHA-256 of the bytes, once uploaded.
    pub sha256: Option<String>,
    /// reserved, uploading, failed, uploaded, draft, candidate, accepted,
    /// rejected or archived.
    pub status: String,
    pub rejection_reason: Option<String>,
    pub owner_user_id: i64,
    pub destination: Destination,
    pub advertiser_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<row::Model> for MaterialOut {
    fn from(r: row::Model) -> Self {
        MaterialOut {
            id: r.id,
            title: r.title,
            description: r.description,
            kind: r.kind,
            content_type: r.content_type,
            file_name: r.file_name,
            size_bytes: r.size_bytes,
            sha256: r.sha256,
            status: r.status,
            rejection_reason: r.rejection_reason,
            owner_user_id: r.owner_user_id,
            destination: Destination {
                kind: r.destination_type,
                id: r.destination_id,
            },
            advertiser_id: r.advertiser_id,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaterialPath {
    pub material_id: String,
}

/// `list_materials` filters.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MaterialFilter {
    /// Only materials in this status.
    pub status: Option<String>,
    /// Only materials of this advertiser.
    pub advertiser_id: Option<String>,
    /// `file` or `note`.
    pub kind: Option<String>,
}

/// A note: a material without bytes, `draft` at once.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct NoteCreate {
    /// 1 to 255 characters.
    pub title: String,
    /// The note's text, up to 20,000 characters.
    pub description: Option<String>,
    pub advertiser_id: Option<String>,
    /// Default `{type: "library"}`.
    pub destination: Option<Destination>,
}

/// Fields to change and, with `status`, a lifecycle move; all in one
/// conditional update.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MaterialUpdate {
    pub title: Option<String>,
    pub description: Option<String>,
    pub advertiser_id: Option<String>,
    pub destination: Option<Destination>,
    /// The status to move to (see the lifecycle table).
    pub status: Option<String>,
    /// Required with `status: rejected`, and only then.
    pub rejection_reason: Option<String>,
}

impl MaterialUpdate {
    fn has_fields(&self) -> bool {
        self.title.is_some()
            || self.description.is_some()
            || self.advertiser_id.is_some()
            || self.destination.is_some()
    }
}

/// The caller's account's material `id`, or 404.
pub async fn owned(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<row::Model, ApiError> {
    row::Entity::find_by_id(id)
        .filter(row::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("material"))
}

/// Who may make a move, if it is one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Who {
    Owner,
    NotOwner,
}

fn rule(from: &str, to: &str) -> Option<Who> {
    use model::*;
    match (from, to) {
        (UPLOADED, DRAFT) | (DRAFT, CANDIDATE) | (CANDIDATE, ACCEPTED) | (REJECTED, DRAFT) => {
            Some(Who::Owner)
        }
        (DRAFT | ACCEPTED | REJECTED, ARCHIVED) => Some(Who::Owner),
        (CANDIDATE, REJECTED) => Some(Who::NotOwner),
        _ => None,
    }
}

/// Statuses whose fields the owner may still edit.
const EDITABLE: [&str; 3] = [model::UPLOADED, model::DRAFT, model::REJECTED];

/// Is `m` a candidate proposed by someone other than `caller` (one the
/// caller's side decides on)?
pub fn destination_owned_candidate(m: &row::Model, caller: &CallerInfo) -> bool {
    m.status == model::CANDIDATE && m.owner_user_id != caller.user.id
}

/// Applies `update` to material `id`: the fields, then the move, in one
/// conditional update on the status read.
pub async fn save(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    update: MaterialUpdate,
) -> Result<MaterialOut, ApiError> {
    let current = owned(&ctx.db, caller, id).await?;
    let is_owner = current.owner_user_id == caller.user.id;
    let mut issues = Issues::default();
    let title = update
        .title
        .as_deref()
        .map(|t| model::title(t, "title", &mut issues));
    let description = update
        .description
        .as_deref()
        .map(|d| model::text(d, "description", model::MAX_TEXT, false, &mut issues));
    let reason = update
        .rejection_reason
        .as_deref()
        .map(|r| model::text(r, "rejectionReason", model::MAX_REASON, true, &mut issues));
    if let Some(s) = &update.status
        && !model::MATERIAL_STATUSES.contains(&s.as_str())
    {
        issues.add("status", "unknown status");
    }
    let target = update.status.clone().filter(|s| *s != current.status);
    match (&target, &reason) {
        (Some(t), None) if t == model::REJECTED => {
            issues.add("rejectionReason", "is required to reject a candidate")
        }
        (t, Some(_)) if t.as_deref() != Some(model::REJECTED) => {
            issues.add("rejectionReason", "goes only with status rejected")
        }
        _ => {}
    }
    issues.into_result()?;
    if update.has_fields() {
        if !is_owner {
            return Err(ApiError::Forbidden(
                "only the material's owner edits its fields".into(),
            ));
        }
        if !EDITABLE.contains(&current.status.as_str()) {
            return Err(ApiError::Conflict {
                message: format!(
                    "a {} material's fields cannot change (editable: uploaded, draft, rejected)",
                    current.status
                ),
                details: Some(json!({"status": current.status})),
            });
        }
    }
    if let Some(to) = &target {
        match rule(&current.status, to) {
            None => {
                return Err(ApiError::Conflict {
                    message: format!("a {} material cannot become {to}", current.status),
                    details: Some(json!({"from": current.status, "to": to})),
                });
            }
            Some(Who::Owner) if !is_owner => {
                let message = if to == model::ACCEPTED {
                    "acceptance stays with the candidate's owner"
                } else {
                    "only the material's owner makes this move"
                };
                return Err(ApiError::Forbidden(message.into()));
            }
            Some(Who::NotOwner) if is_owner => {
                return Err(ApiError::Forbidden(
                    "a candidate is rejected by its destination side, not by its owner".into(),
                ));
            }
            Some(_) => {}
        }
    }
    if target.is_none() && !update.has_fields() {
        return Ok(current.into());
    }
    let advertiser = match &update.advertiser_id {
        Some(a) => {
            model::own_advertiser(&ctx.db, caller, a).await?;
            Some(a.clone())
        }
        None => None,
    };
    let destination = match &update.destination {
        Some(d) => Some(model::destination(&ctx.db, caller, d).await?),
        None => None,
    };
    let mut q = row::Entity::update_many()
        .col_expr(row::Column::UpdatedAt, Expr::value(model::now()))
        .filter(row::Column::Id.eq(&current.id))
        .filter(row::Column::AccountId.eq(caller.account_id()))
        .filter(row::Column::Status.eq(&current.status));
    if let Some(t) = title {
        q = q.col_expr(row::Column::Title, Expr::value(t));
    }
    if let Some(d) = description {
        q = q.col_expr(row::Column::Description, Expr::value(d));
    }
    if let Some(a) = advertiser {
        q = q.col_expr(row::Column::AdvertiserId, Expr::value(a));
    }
    if let Some((kind, id)) = destination {
        q = q
            .col_expr(row::Column::DestinationType, Expr::value(kind))
            .col_expr(row::Column::DestinationId, Expr::value(id));
    }
    if let Some(to) = &target {
        q = q
            .col_expr(row::Column::Status, Expr::value(to.clone()))
            .col_expr(row::Column::RejectionReason, Expr::value(reason));
    }
    let done = q.exec(&ctx.db).await?;
    if done.rows_affected == 0 {
        let now = owned(&ctx.db, caller, id).await?;
        return Err(ApiError::Conflict {
            message: format!(
                "the material changed meanwhile (it is now {}); read it and try again",
                now.status
            ),
            details: Some(json!({"status": now.status})),
        });
    }
    Ok(owned(&ctx.db, caller, id).await?.into())
}

/// A page of the account's materials, newest first.
pub async fn list(
    ctx: &Ctx,
    caller: &CallerInfo,
    page: crate::ops::Page,
    filter: &MaterialFilter,
) -> Result<Paged<MaterialOut>, ApiError> {
    model::status_filter(filter.status.as_deref(), &model::MATERIAL_STATUSES)?;
    if let Some(k) = &filter.kind
        && k != model::FILE
        && k != model::NOTE
    {
        return Err(ApiError::invalid("kind", "must be file or note"));
    }
    let mut select = row::Entity::find().filter(row::Column::AccountId.eq(caller.account_id()));
    if let Some(s) = &filter.status {
        select = select.filter(row::Column::Status.eq(s));
    }
    if let Some(a) = &filter.advertiser_id {
        select = select.filter(row::Column::AdvertiserId.eq(a));
    }
    if let Some(k) = &filter.kind {
        select = select.filter(row::Column::Kind.eq(k));
    }
    let select = select
        .order_by_desc(row::Column::CreatedAt)
        .order_by_desc(row::Column::Id);
    Ok(page.fetch(&ctx.db, select, MaterialOut::from).await?)
}

pub struct ListMaterials;

impl Operation for ListMaterials {
    const NAME: &'static str = "list_materials";
    const DESCRIPTION: &'static str = "The account's materials (files and notes), newest first; filter by status, advertiserId or kind. Never a URL to a file's bytes.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/materials";
    type Path = Nothing;
    type Query = Filtered<MaterialFilter>;
    type Body = Nothing;
    type Output = Paged<MaterialOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Paged<MaterialOut>, ApiError> {
        list(ctx, caller, input.query.page, &input.query.filter).await
    }

    fn pagination(out: &Self::Output) -> Option<crate::ops::Pagination> {
        Some(out.pagination)
    }
}

pub struct GetMaterial;

impl Operation for GetMaterial {
    const NAME: &'static str = "get_material";
    const DESCRIPTION: &'static str = "One material of the account: its metadata and lifecycle status, never its bytes or a URL to them.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/materials/{materialId}";
    type Path = Params<MaterialPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = MaterialOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<MaterialOut, ApiError> {
        Ok(owned(&ctx.db, caller, &input.path.0.material_id)
            .await?
            .into())
    }
}

pub struct CreateMaterial;

impl Operation for CreateMaterial {
    const NAME: &'static str = "create_material";
    const DESCRIPTION: &'static str = "Write a note (a material without a file), draft at once and owned by the caller. Files are reserved with create_material_upload.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/materials";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[(
        404,
        "advertiserId or destination names no advertiser of the account",
    )];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<NoteCreate>;
    type Output = MaterialOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<MaterialOut, ApiError> {
        let body = input.body.0;
        let mut issues = Issues::default();
        let title = model::title(&body.title, "title", &mut issues);
        let description = body
            .description
            .as_deref()
            .map(|d| model::text(d, "description", model::MAX_TEXT, false, &mut issues));
        issues.into_result()?;
        if let Some(a) = &body.advertiser_id {
            model::own_advertiser(&ctx.db, caller, a).await?;
        }
        let (dest, dest_id) = model::destination(
            &ctx.db,
            caller,
            &body.destination.unwrap_or_else(Destination::library),
        )
        .await?;
        let now = model::now();
        let made = row::ActiveModel {
            id: Set(model::new_id()),
            account_id: Set(caller.account_id().to_string()),
            owner_user_id: Set(caller.user.id),
            title: Set(title),
            description: Set(description),
            kind: Set(model::NOTE.into()),
            content_type: Set(None),
            file_name: Set(None),
            size_bytes: Set(None),
            sha256: Set(None),
            status: Set(model::DRAFT.into()),
            rejection_reason: Set(None),
            destination_type: Set(dest),
            destination_id: Set(dest_id),
            advertiser_id: Set(body.advertiser_id),
            storage_path: Set(None),
            upload_prefix: Set(None),
            upload_token_hash: Set(None),
            upload_expires_at: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&ctx.db)
        .await?;
        Ok(made.into())
    }
}

pub struct UpdateMaterial;

impl Operation for UpdateMaterial {
    const NAME: &'static str = "update_material";
    const DESCRIPTION: &'static str = "Change a material's fields (its owner, while uploaded, draft or rejected) and move it through its lifecycle with status: the owner finalises an upload (draft), proposes it (candidate), accepts a candidate, archives; anyone else of the account rejects a candidate with rejectionReason. Moves are conditional: a material changed meanwhile answers 409.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/buyer/materials/{materialId}";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            403,
            "not the owner (fields, most moves), or the owner rejecting their own candidate",
        ),
        (
            409,
            "a move the lifecycle does not have from the current status, or the material changed meanwhile",
        ),
    ];
    type Path = Params<MaterialPath>;
    type Query = Nothing;
    type Body = Json<MaterialUpdate>;
    type Output = MaterialOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<MaterialOut, ApiError> {
        save(ctx, caller, &input.path.0.material_id, input.body.0).await
    }
}
