//! The storefront operator's review of account-mapping intakes:
//! `pending_review` → `accepted` or `rejected`; a rejected intake can be
//! re-admitted to `pending_review`. Each change is one conditional update,
//! so two operators (or instances) deciding at once cannot both win.
//! Accepting makes the advertiser's binding active, which locks its brand
//! and currency and is the account its media buys at that storefront use.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use entity::{account_intake as intake, advertiser_linked_account as linked, storefront_operator};

use super::model::{ACCEPTED, ACTIVE, PENDING_REVIEW, REJECTED};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Filtered, Input, MaybeJson, Operation, Paged, Pagination, Params, Verb,
};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntakeOut {
    pub intake_id: String,
    pub storefront_id: i64,
    /// The buyer's advertiser.
    pub advertiser_id: String,
    /// The brand's domain.
    pub brand: String,
    pub operator: String,
    pub billing: String,
    /// The buyer's billing entity (bank details are never kept).
    #[schema(value_type = Option<Object>)]
    pub billing_entity: Option<Value>,
    pub sandbox: bool,
    /// The seller's `account_id` and status.
    pub account_id: Option<String>,
    pub seller_status: String,
    /// `pending_review`, `accepted` or `rejected`.
    pub status: String,
    pub review_note: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<intake::Model> for IntakeOut {
    fn from(r: intake::Model) -> Self {
        IntakeOut {
            intake_id: r.id,
            storefront_id: r.storefront_id,
            advertiser_id: r.advertiser_id,
            brand: r.brand,
            operator: r.operator,
            billing: r.billing,
            billing_entity: r.billing_entity.and_then(|s| serde_json::from_str(&s).ok()),
            sandbox: r.sandbox,
            account_id: r.account_ref,
            seller_status: r.seller_status,
            status: r.status,
            review_note: r.review_note,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewsQuery {
    /// Only intakes in this state.
    pub status: Option<String>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IntakePath {
    pub intake_id: String,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ReviewNote {
    /// Why (shown to the buyer's admins); up to 1,000 characters.
    pub note: Option<String>,
}

/// Intakes of storefronts the caller's account operates.
fn visible(caller: &CallerInfo) -> sea_orm::Select<intake::Entity> {
    intake::Entity::find().filter(
        intake::Column::StorefrontId.in_subquery(
            sea_orm::sea_query::Query::select()
                .column(storefront_operator::Column::StorefrontId)
                .from(storefront_operator::Entity)
                .and_where(storefront_operator::Column::AccountId.eq(caller.account_id()))
                .to_owned(),
        ),
    )
}

async fn find(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<intake::Model, ApiError> {
    visible(caller)
        .filter(intake::Column::Id.eq(id))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("intake"))
}

pub struct ListAccountMappingReviews;

impl Operation for ListAccountMappingReviews {
    const NAME: &'static str = "list_account_mapping_reviews";
    const DESCRIPTION: &'static str = "Account-mapping intakes from buyers at the storefronts this account operates, newest first; status filters (pending_review, accepted, rejected).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/storefront/account-mappings/reviews";
    type Path = crate::ops::Nothing;
    type Query = Filtered<ReviewsQuery, 20, 100>;
    type Body = crate::ops::Nothing;
    type Output = Paged<IntakeOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter: q } = input.query;
        let mut select = visible(caller);
        if let Some(s) = q.status {
            if ![PENDING_REVIEW, ACCEPTED, REJECTED].contains(&s.as_str()) {
                return Err(ApiError::invalid(
                    "status",
                    "must be pending_review, accepted or rejected",
                ));
            }
            select = select.filter(intake::Column::Status.eq(s));
        }
        let select = select
            .order_by_desc(intake::Column::CreatedAt)
            .order_by_desc(intake::Column::Id);
        Ok(page.fetch(&ctx.db, select, IntakeOut::from).await?)
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

/// Moves an intake from `from` to `to` (and its binding to `binding`), or
/// says why it cannot.
async fn decide(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    from: &str,
    to: &str,
    binding: &str,
    note: Option<String>,
) -> Result<IntakeOut, ApiError> {
    let note = note.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > 1000) {
        return Err(ApiError::invalid("note", "at most 1,000 characters"));
    }
    let txn = crate::db::begin_write(&ctx.db).await?;
    let current = find(&txn, caller, id).await?;
    let moved = intake::Entity::update_many()
        .col_expr(intake::Column::Status, Expr::value(to))
        .col_expr(intake::Column::ReviewNote, Expr::value(note))
        .col_expr(intake::Column::ReviewedBy, Expr::value(caller.user.id))
        .col_expr(intake::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(intake::Column::Id.eq(id))
        .filter(intake::Column::Status.eq(from))
        .exec(&txn)
        .await?
        .rows_affected;
    if moved == 0 {
        return Err(ApiError::Conflict {
            message: format!("the intake is {}, not {from}", current.status),
            details: Some(json!({ "status": current.status })),
        });
    }
    linked::Entity::update_many()
        .col_expr(linked::Column::Status, Expr::value(binding))
        .filter(linked::Column::IntakeId.eq(id))
        .exec(&txn)
        .await?;
    let after = find(&txn, caller, id).await?;
    txn.commit().await?;
    Ok(after.into())
}

macro_rules! review_operation {
    ($ty:ident, $name:literal, $path:literal, $desc:literal, $from:expr, $to:expr, $binding:expr) => {
        pub struct $ty;

        impl Operation for $ty {
            const NAME: &'static str = $name;
            const DESCRIPTION: &'static str = $desc;
            const ACCESS: Access = Access::Write;
            const VERB: Verb = Verb::Post;
            const PATH: &'static str = $path;
            const ERRORS: &'static [(u16, &'static str)] = &[
                (403, "not an admin or super-admin"),
                (404, "unknown, or not at a storefront this account operates"),
                (409, "the intake is not in the state this moves it from"),
            ];
            type Path = Params<IntakePath>;
            type Query = crate::ops::Nothing;
            type Body = MaybeJson<ReviewNote>;
            type Output = IntakeOut;

            fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
                super::admins_only(caller)
            }

            async fn run(
                ctx: &Ctx,
                caller: &CallerInfo,
                input: Input<Self>,
            ) -> Result<IntakeOut, ApiError> {
                let note = input.body.0.note;
                decide(
                    ctx,
                    caller,
                    &input.path.0.intake_id,
                    $from,
                    $to,
                    $binding,
                    note,
                )
                .await
            }
        }
    };
}

review_operation!(
    AcceptAccountMapping,
    "accept_account_mapping",
    "/storefront/account-mappings/reviews/{intakeId}/accept",
    "Accept a pending account-mapping intake: the buyer's advertiser is bound to the account (admins only).",
    PENDING_REVIEW,
    ACCEPTED,
    ACTIVE
);
review_operation!(
    RejectAccountMapping,
    "reject_account_mapping",
    "/storefront/account-mappings/reviews/{intakeId}/reject",
    "Reject a pending account-mapping intake, with a note for the buyer (admins only).",
    PENDING_REVIEW,
    REJECTED,
    REJECTED
);
review_operation!(
    ReadmitAccountMapping,
    "readmit_account_mapping",
    "/storefront/account-mappings/reviews/{intakeId}/readmit",
    "Move a rejected account-mapping intake back to pending_review (admins only).",
    REJECTED,
    PENDING_REVIEW,
    PENDING_REVIEW
);
