//! RFPs: a buyer's request for proposals about one advertiser (`draft`,
//! `open`, `closed`; forward only), with an ordered exchange of turns
//! (`buyer` or `seller`, numbered from 1, appended with `appendTurn`, read
//! one at a time), and proposal passes over an RFP (at most one open per
//! RFP: opening again answers the open one).

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use serde_json::json;
use utoipa::ToSchema;

use entity::{proposal_pass, rfp as row, rfp_turn};

use super::model::{self, Budget};
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};
use crate::ops::{
    Access, Ctx, Filtered, Input, Json, MaybeJson, Nothing, Operation, Paged, Params, Verb,
};

pub const DRAFT: &str = "draft";
const STATUSES: [&str; 3] = [DRAFT, model::OPEN, model::CLOSED];

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RfpOut {
    pub id: String,
    pub title: String,
    pub brief: String,
    pub advertiser_id: String,
    pub budget: Option<Budget>,
    /// `YYYY-MM-DD`.
    pub due_date: Option<String>,
    /// `draft`, `open` or `closed`.
    pub status: String,
    /// How many turns the exchange has (read each with get_rfp_turn).
    pub turn_count: u64,
    pub created_by: i64,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RfpTurnOut {
    pub rfp_id: String,
    /// 1 for the first.
    pub turn: i32,
    /// `buyer` or `seller`.
    pub role: String,
    pub text: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProposalPassOut {
    pub id: String,
    pub rfp_id: String,
    /// `open`.
    pub status: String,
    /// The discovery session the pass draws on, if one was named.
    pub discovery_id: Option<String>,
    pub created_by: i64,
    pub created_at: DateTime<Utc>,
}

impl From<proposal_pass::Model> for ProposalPassOut {
    fn from(p: proposal_pass::Model) -> Self {
        ProposalPassOut {
            id: p.id,
            rfp_id: p.rfp_id,
            status: p.status,
            discovery_id: p.discovery_id,
            created_by: p.created_by,
            created_at: p.created_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RfpPath {
    pub rfp_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnPath {
    pub rfp_id: String,
    /// The turn's number, from 1.
    pub turn: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RfpFilter {
    /// `draft`, `open` or `closed`.
    pub status: Option<String>,
    pub advertiser_id: Option<String>,
}

/// A turn to append.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TurnIn {
    /// `buyer` or `seller`.
    pub role: String,
    /// 1 to 20,000 characters.
    pub text: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RfpCreate {
    pub title: String,
    /// What the buyer asks sellers for, 1 to 20,000 characters.
    pub brief: String,
    pub advertiser_id: String,
    pub budget: Option<Budget>,
    pub due_date: Option<String>,
    /// `draft` (default) or `open`.
    pub status: Option<String>,
    /// A first turn.
    pub append_turn: Option<TurnIn>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RfpUpdate {
    pub title: Option<String>,
    pub brief: Option<String>,
    pub budget: Option<Budget>,
    pub due_date: Option<String>,
    /// Forward only: draft → open → closed (or draft → closed).
    pub status: Option<String>,
    /// Appends the next turn (not to a closed RFP).
    pub append_turn: Option<TurnIn>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PassOpen {
    /// A discovery session of the account to draw proposals from.
    pub discovery_id: Option<String>,
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
        .ok_or_else(|| ApiError::not_found("rfp"))
}

async fn out(db: &impl ConnectionTrait, r: row::Model) -> Result<RfpOut, ApiError> {
    let turn_count = rfp_turn::Entity::find()
        .filter(rfp_turn::Column::RfpId.eq(&r.id))
        .count(db)
        .await?;
    Ok(RfpOut {
        budget: r
            .budget
            .as_deref()
            .and_then(|b| serde_json::from_str(b).ok()),
        id: r.id,
        title: r.title,
        brief: r.brief,
        advertiser_id: r.advertiser_id,
        due_date: r.due_date,
        status: r.status,
        turn_count,
        created_by: r.created_by,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

fn check_turn(t: &TurnIn, issues: &mut Issues) -> TurnIn {
    if t.role != "buyer" && t.role != "seller" {
        issues.add("appendTurn.role", "must be buyer or seller");
    }
    TurnIn {
        role: t.role.clone(),
        text: model::text(&t.text, "appendTurn.text", model::MAX_TEXT, true, issues),
    }
}

fn forward(from: &str, to: &str) -> bool {
    matches!(
        (from, to),
        (DRAFT, model::OPEN) | (DRAFT, model::CLOSED) | (model::OPEN, model::CLOSED)
    )
}

/// Appends `turn` to `rfp_id` in `txn`: the next number after the last.
async fn append(
    txn: &impl ConnectionTrait,
    caller: &CallerInfo,
    rfp_id: &str,
    turn: &TurnIn,
) -> Result<(), sea_orm::DbErr> {
    let last = rfp_turn::Entity::find()
        .filter(rfp_turn::Column::RfpId.eq(rfp_id))
        .order_by_desc(rfp_turn::Column::Turn)
        .one(txn)
        .await?
        .map_or(0, |t| t.turn);
    rfp_turn::ActiveModel {
        rfp_id: Set(rfp_id.to_string()),
        turn: Set(last + 1),
        role: Set(turn.role.clone()),
        text: Set(turn.text.clone()),
        created_by: Set(caller.user.id),
        created_at: Set(model::now()),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    Ok(())
}

fn is_unique(e: &sea_orm::DbErr) -> bool {
    matches!(
        e.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

pub struct ListRfps;

impl Operation for ListRfps {
    const NAME: &'static str = "list_rfps";
    const DESCRIPTION: &'static str = "The account's RFPs (requests for proposals), newest first; filter by status or advertiserId.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/rfps";
    type Path = Nothing;
    type Query = Filtered<RfpFilter>;
    type Body = Nothing;
    type Output = Paged<RfpOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Paged<RfpOut>, ApiError> {
        let f = &input.query.filter;
        model::status_filter(f.status.as_deref(), &STATUSES)?;
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
        let page = input.query.page.fetch(&ctx.db, select, |r| r).await?;
        let mut items = Vec::with_capacity(page.items.len());
        for r in page.items {
            items.push(out(&ctx.db, r).await?);
        }
        Ok(Paged {
            items,
            pagination: page.pagination,
        })
    }

    fn pagination(out: &Self::Output) -> Option<crate::ops::Pagination> {
        Some(out.pagination)
    }
}

pub struct GetRfp;

impl Operation for GetRfp {
    const NAME: &'static str = "get_rfp";
    const DESCRIPTION: &'static str = "One RFP of the account, with how many turns its exchange has (read each with get_rfp_turn).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/rfps/{rfpId}";
    type Path = Params<RfpPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = RfpOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<RfpOut, ApiError> {
        let r = owned(&ctx.db, caller, &input.path.0.rfp_id).await?;
        out(&ctx.db, r).await
    }
}

pub struct GetRfpTurn;

impl Operation for GetRfpTurn {
    const NAME: &'static str = "get_rfp_turn";
    const DESCRIPTION: &'static str = "One turn of an RFP's exchange, by its number (from 1).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/rfps/{rfpId}/turns/{turn}";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown RFP, or no such turn (yet)")];
    type Path = Params<TurnPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = RfpTurnOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<RfpTurnOut, ApiError> {
        let p = input.path.0;
        let turn: i32 = match p.turn.parse() {
            Ok(n) if n >= 1 => n,
            _ => return Err(ApiError::invalid("turn", "must be an integer from 1")),
        };
        let r = owned(&ctx.db, caller, &p.rfp_id).await?;
        let t = rfp_turn::Entity::find()
            .filter(rfp_turn::Column::RfpId.eq(&r.id))
            .filter(rfp_turn::Column::Turn.eq(turn))
            .one(&ctx.db)
            .await?
            .ok_or_else(|| ApiError::not_found("turn"))?;
        Ok(RfpTurnOut {
            rfp_id: t.rfp_id,
            turn: t.turn,
            role: t.role,
            text: t.text,
            created_at: t.created_at,
        })
    }
}

pub struct CreateRfp;

impl Operation for CreateRfp {
    const NAME: &'static str = "create_rfp";
    const DESCRIPTION: &'static str = "Write an RFP (request for proposals) about one advertiser: title, brief, optional budget {amount, currency} and dueDate; draft unless status open; appendTurn adds its first turn.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/rfps";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] =
        &[(404, "advertiserId names no advertiser of the account")];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<RfpCreate>;
    type Output = RfpOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<RfpOut, ApiError> {
        let b = input.body.0;
        let mut issues = Issues::default();
        let title = model::title(&b.title, "title", &mut issues);
        let brief = model::text(&b.brief, "brief", model::MAX_TEXT, true, &mut issues);
        if let Some(budget) = &b.budget {
            model::check_budget(budget, &mut issues);
        }
        if let Some(d) = &b.due_date {
            model::check_date(d, "dueDate", &mut issues);
        }
        let status = b.status.clone().unwrap_or_else(|| DRAFT.into());
        if status != DRAFT && status != model::OPEN {
            issues.add("status", "a new RFP is draft or open");
        }
        let turn = b.append_turn.as_ref().map(|t| check_turn(t, &mut issues));
        issues.into_result()?;
        model::own_advertiser(&ctx.db, caller, &b.advertiser_id).await?;
        let now = model::now();
        let id = model::new_id();
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await?;
        row::ActiveModel {
            id: Set(id.clone()),
            account_id: Set(caller.account_id().to_string()),
            advertiser_id: Set(b.advertiser_id),
            title: Set(title),
            brief: Set(brief),
            budget: Set(b.budget.as_ref().map(crate::buyer::to_json)),
            due_date: Set(b.due_date),
            status: Set(status),
            created_by: Set(caller.user.id),
            created_at: Set(now),
            updated_at: Set(now),
        }
        .insert(&txn)
        .await?;
        if let Some(t) = &turn {
            append(&txn, caller, &id, t).await?;
        }
        txn.commit().await?;
        drop(_turn);
        let r = owned(&ctx.db, caller, &id).await?;
        out(&ctx.db, r).await
    }
}

pub struct UpdateRfp;

impl Operation for UpdateRfp {
    const NAME: &'static str = "update_rfp";
    const DESCRIPTION: &'static str = "Change an RFP's fields, move its status forward (draft → open → closed) and append a turn to its exchange (appendTurn {role: buyer|seller, text}), all together or none. A closed RFP takes no change.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/buyer/rfps/{rfpId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(
        409,
        "the RFP is closed, the status would go backwards, or it changed meanwhile",
    )];
    type Path = Params<RfpPath>;
    type Query = Nothing;
    type Body = Json<RfpUpdate>;
    type Output = RfpOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<RfpOut, ApiError> {
        let id = input.path.0.rfp_id;
        let u = input.body.0;
        let mut issues = Issues::default();
        let title = u
            .title
            .as_deref()
            .map(|t| model::title(t, "title", &mut issues));
        let brief = u
            .brief
            .as_deref()
            .map(|t| model::text(t, "brief", model::MAX_TEXT, true, &mut issues));
        if let Some(budget) = &u.budget {
            model::check_budget(budget, &mut issues);
        }
        if let Some(d) = &u.due_date {
            model::check_date(d, "dueDate", &mut issues);
        }
        if let Some(s) = &u.status
            && !STATUSES.contains(&s.as_str())
        {
            issues.add("status", "must be draft, open or closed");
        }
        let turn = u.append_turn.as_ref().map(|t| check_turn(t, &mut issues));
        issues.into_result()?;
        // A turn number two appenders both took: the loser tries again.
        for attempt in 0..3 {
            let current = owned(&ctx.db, caller, &id).await?;
            if current.status == model::CLOSED {
                return Err(ApiError::Conflict {
                    message: "the RFP is closed".into(),
                    details: Some(json!({"status": current.status})),
                });
            }
            let target = u.status.clone().filter(|s| *s != current.status);
            if let Some(to) = &target
                && !forward(&current.status, to)
            {
                return Err(ApiError::Conflict {
                    message: format!("an RFP goes forward only: not {} → {to}", current.status),
                    details: Some(json!({"from": current.status, "to": to})),
                });
            }
            let _gate = ctx.writes.enter().await;
            let txn = crate::db::begin_write(&ctx.db).await?;
            let mut q = row::Entity::update_many()
                .col_expr(row::Column::UpdatedAt, Expr::value(model::now()))
                .filter(row::Column::Id.eq(&id))
                .filter(row::Column::AccountId.eq(caller.account_id()))
                .filter(row::Column::Status.eq(&current.status));
            if let Some(t) = &title {
                q = q.col_expr(row::Column::Title, Expr::value(t.clone()));
            }
            if let Some(b) = &brief {
                q = q.col_expr(row::Column::Brief, Expr::value(b.clone()));
            }
            if let Some(b) = &u.budget {
                q = q.col_expr(row::Column::Budget, Expr::value(crate::buyer::to_json(b)));
            }
            if let Some(d) = &u.due_date {
                q = q.col_expr(row::Column::DueDate, Expr::value(d.clone()));
            }
            if let Some(s) = &target {
                q = q.col_expr(row::Column::Status, Expr::value(s.clone()));
            }
            if q.exec(&txn).await?.rows_affected == 0 {
                return Err(ApiError::conflict(
                    "the RFP changed meanwhile; read it and try again",
                ));
            }
            if let Some(t) = &turn {
                match append(&txn, caller, &id, t).await {
                    Ok(()) => {}
                    Err(e) if is_unique(&e) && attempt < 2 => {
                        txn.rollback().await?;
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                }
            }
            txn.commit().await?;
            let r = owned(&ctx.db, caller, &id).await?;
            return out(&ctx.db, r).await;
        }
        Err(ApiError::conflict("the RFP changed meanwhile; try again"))
    }
}

/// Opens a pass over `rfp_id`, or answers the open one.
pub async fn open_pass(
    ctx: &Ctx,
    caller: &CallerInfo,
    rfp_id: &str,
    discovery_id: Option<String>,
) -> Result<ProposalPassOut, ApiError> {
    let rfp = owned(&ctx.db, caller, rfp_id).await?;
    if rfp.status == model::CLOSED {
        return Err(ApiError::Conflict {
            message: "the RFP is closed: no new proposal pass".into(),
            details: Some(json!({"status": rfp.status})),
        });
    }
    if let Some(d) = &discovery_id {
        entity::discovery_session::Entity::find_by_id(d)
            .filter(entity::discovery_session::Column::AccountId.eq(caller.account_id()))
            .one(&ctx.db)
            .await?
            .ok_or_else(|| ApiError::not_found("discovery session"))?;
    }
    let open = || {
        proposal_pass::Entity::find()
            .filter(proposal_pass::Column::RfpId.eq(rfp_id))
            .filter(proposal_pass::Column::Status.eq(model::OPEN))
            .one(&ctx.db)
    };
    if let Some(p) = open().await? {
        return Ok(p.into());
    }
    let made = proposal_pass::ActiveModel {
        id: Set(model::new_id()),
        account_id: Set(caller.account_id().to_string()),
        rfp_id: Set(rfp_id.to_string()),
        discovery_id: Set(discovery_id),
        status: Set(model::OPEN.into()),
        created_by: Set(caller.user.id),
        created_at: Set(model::now()),
    }
    .insert(&ctx.db)
    .await;
    match made {
        Ok(p) => Ok(p.into()),
        // Another caller opened one meanwhile: theirs is the open one.
        Err(e) if is_unique(&e) => open()
            .await?
            .map(Into::into)
            .ok_or_else(|| ApiError::conflict("the proposal pass changed meanwhile; try again")),
        Err(e) => Err(e.into()),
    }
}

pub struct OpenProposalPass;

impl Operation for OpenProposalPass {
    const NAME: &'static str = "open_proposal_pass";
    const DESCRIPTION: &'static str = "Open a proposal pass over an RFP (optionally drawing on a discovery session of the account); while one is open, opening again answers that one.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/rfps/{rfpId}/proposal-passes";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            404,
            "unknown RFP, or discoveryId names no discovery session of the account",
        ),
        (409, "the RFP is closed"),
    ];
    type Path = Params<RfpPath>;
    type Query = Nothing;
    type Body = MaybeJson<PassOpen>;
    type Output = ProposalPassOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<ProposalPassOut, ApiError> {
        open_pass(ctx, caller, &input.path.0.rfp_id, input.body.0.discovery_id).await
    }
}
