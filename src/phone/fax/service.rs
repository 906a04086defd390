//! Sending a fax, in the request: the checks (enrolment, the line, the
//! customer the caller acts for, its rollout), the request id's binding,
//! then one submission to the carrier whose outcome is recorded as it is
//! known. An unknown outcome is never retried under the hood: the fax is
//! `unresolved` and its request id answers 409 until an operator resolves
//! it (spec rule 10).

use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter,
    QueryOrder, Set,
};

use entity::{account, customer_access, fax, phone_line, phone_line_customer, seller_customer};

use super::carrier::{Faxing, OutgoingFax};
use super::model::{Fax, FaxResult, FaxStatus, rank};
use crate::caller::CallerInfo;
use crate::error::{ApiError, Kind};
use crate::ops::Ctx;
use crate::phone::carrier::Submission;

pub const SUBMITTING: &str = "submitting";
pub const UNRESOLVED: &str = "unresolved";
pub const QUEUED: &str = "queued";
pub const FAILED: &str = "failed";

fn line_not_found() -> ApiError {
    ApiError::Coded {
        kind: Kind::NotFound,
        code: "NOT_FOUND",
        message: "fax line not found".into(),
        field: Some("endpointId".into()),
        details: None,
    }
}

/// The customer a fax from `line` is sent for: one the line serves and the
/// caller may act for (else 403), with the fax rollout and the line active
/// for it (else 404).
async fn customer_for(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    line: &phone_line::Model,
) -> Result<seller_customer::Model, ApiError> {
    let served = phone_line_customer::Entity::find()
        .filter(phone_line_customer::Column::LineId.eq(line.id))
        .all(db)
        .await?;
    if served.is_empty() {
        return Err(ApiError::NotFound(format!(
            "line {} is not active for any customer",
            line.id
        )));
    }
    let ids: Vec<i64> = served.iter().map(|s| s.customer_id).collect();
    let allowed: Vec<i64> = customer_access::Entity::find()
        .filter(customer_access::Column::UserId.eq(caller.user.id))
        .filter(customer_access::Column::CustomerId.is_in(ids))
        .all(db)
        .await?
        .into_iter()
        .map(|a| a.customer_id)
        .collect();
    if allowed.is_empty() {
        return Err(ApiError::Forbidden(format!(
            "this credential has no access to the customer of line {}",
            line.id
        )));
    }
    let active: Vec<i64> = served
        .iter()
        .filter(|s| s.active && allowed.contains(&s.customer_id))
        .map(|s| s.customer_id)
        .collect();
    seller_customer::Entity::find()
        .filter(seller_customer::Column::Id.is_in(active))
        .filter(seller_customer::Column::AccountId.eq(caller.account_id()))
        .filter(seller_customer::Column::FaxEnabled.eq(true))
        .order_by_asc(seller_customer::Column::Id)
        .one(db)
        .await?
        .ok_or_else(|| {
            ApiError::NotFound(format!(
                "faxes are not enabled for the customer of line {}, or the line is not active for it",
                line.id
            ))
        })
}

/// What the request id already says, if anything.
fn earlier(existing: &fax::Model, f: &Fax) -> Result<Option<FaxResult>, ApiError> {
    let same = existing.line_id == f.line_id
        && existing.to_number == f.to.as_str()
        && existing.media_sha256 == f.media_sha256;
    if !same {
        return Err(ApiError::conflict(
            "requestId was used for another fax (a different line, destination or PDF digest)",
        ));
    }
    match (&existing.provider_fax_id, existing.status.as_str()) {
        (Some(id), _) => Ok(Some(FaxResult {
            provider_fax_id: id.clone(),
            provider_status: QUEUED.into(),
            duplicate: true,
        })),
        (None, SUBMITTING | UNRESOLVED) => Err(ApiError::conflict(
            "an earlier submission with this requestId is unresolved: the carrier may have taken it; an operator resolves it",
        )),
        // Resolved as failed by an operator: this request sends it anew.
        (None, _) => Ok(None),
    }
}

pub async fn send(ctx: &Ctx, caller: &CallerInfo, f: Fax) -> Result<FaxResult, ApiError> {
    let db = &ctx.db;
    let enrolled = account::Entity::find_by_id(caller.account_id().to_string())
        .one(db)
        .await?
        .is_some_and(|a| a.phone_lines_enabled);
    if !enrolled {
        return Err(ApiError::NotFound(
            "the account is not enrolled in agent phone lines".into(),
        ));
    }
    let line = phone_line::Entity::find_by_id(f.line_id)
        .filter(phone_line::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(line_not_found)?;
    if line.kind != "fax" {
        return Err(ApiError::Coded {
            kind: Kind::Invalid,
            code: "LINE_NOT_FAX",
            message: format!(
                "line {} is a {} line; faxes need a fax line",
                line.id, line.kind
            ),
            field: Some("endpointId".into()),
            details: None,
        });
    }
    if !line.active {
        return Err(ApiError::NotFound(format!(
            "line {} is not active",
            line.id
        )));
    }
    let customer = customer_for(db, caller, &line).await?;
    let carrier = ctx.get::<Faxing>()?.clone();

    // The request id's record: new, or what it already says.
    let now = Utc::now();
    let request_id = f.request_id.hyphenated().to_string();
    let turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(db).await?;
    let existing = fax::Entity::find()
        .filter(fax::Column::AccountId.eq(caller.account_id()))
        .filter(fax::Column::RequestId.eq(request_id.as_str()))
        .one(&txn)
        .await?;
    let record = match existing {
        Some(e) => {
            if let Some(result) = earlier(&e, &f)? {
                return Ok(result);
            }
            let mut row: fax::ActiveModel = e.into();
            row.status = Set(SUBMITTING.into());
            row.failure_reason = Set(None);
            row.updated_at = Set(now);
            row.update(&txn).await?
        }
        None => {
            fax::ActiveModel {
                account_id: Set(caller.account_id().to_string()),
                customer_id: Set(customer.id),
                line_id: Set(line.id),
                request_id: Set(request_id),
                from_number: Set(line.number.clone()),
                to_number: Set(f.to.as_str().to_string()),
                media_sha256: Set(f.media_sha256.clone()),
                provider_fax_id: Set(None),
                status: Set(SUBMITTING.into()),
                failure_reason: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
                ..Default::default()
            }
            .insert(&txn)
            .await
            .map_err(|e| match ApiError::from(e) {
                // The same request id arriving twice at once.
                ApiError::Conflict { .. } => {
                    ApiError::conflict("an earlier submission with this requestId is under way")
                }
                other => other,
            })?
        }
    };
    txn.commit().await?;
    drop(turn);

    let outgoing = OutgoingFax {
        fax_id: record.id,
        from: line.number.clone(),
        to: record.to_number.clone(),
        media_url: f.media_url.as_str().to_string(),
        media_sha256: record.media_sha256.clone(),
        connection: line.messaging_profile.clone(),
    };
    match submit(ctx, &carrier, &outgoing).await? {
        Outcome::Queued(carrier_id) => Ok(FaxResult {
            provider_fax_id: carrier_id,
            provider_status: QUEUED.into(),
            duplicate: false,
        }),
        Outcome::NotSent(why) => {
            tracing::warn!(%why, "fax: the carrier could not be reached; nothing was sent");
            Err(ApiError::ServiceUnavailable(
                "the carrier could not be reached and nothing was sent; retry with the same requestId".into(),
            ))
        }
        Outcome::Rejected(why) => Err(ApiError::Coded {
            kind: Kind::Invalid,
            code: "CARRIER_REJECTED",
            message: format!("the carrier refused the fax: {why}"),
            field: None,
            details: None,
        }),
        Outcome::Unknown(_) => Err(ApiError::Coded {
            kind: Kind::Unavailable,
            code: "submission_unknown",
            message: "the carrier may have accepted this fax; do not resubmit under a new requestId (an operator resolves it)".into(),
            field: None,
            details: None,
        }),
    }
}

/// What one submission came to, recorded.
pub enum Outcome {
    /// The carrier's fax id.
    Queued(String),
    /// Nothing reached the carrier: the record is gone, the request id free.
    NotSent(String),
    /// Refused for good: the record is gone, the request id free.
    Rejected(String),
    /// May have been sent: `unresolved`, held for an operator.
    Unknown(String),
}

/// Submits the `submitting` fax `f` once and records what the carrier said.
async fn submit(ctx: &Ctx, carrier: &Faxing, f: &OutgoingFax) -> Result<Outcome, ApiError> {
    let submission = carrier.0.send_fax(f).await;
    let db = &ctx.db;
    let id = f.fax_id;
    let _turn = ctx.writes.enter().await;
    let update = |status: &str, provider: Option<String>, reason: Option<String>| {
        fax::Entity::update_many()
            .col_expr(fax::Column::Status, Expr::value(status))
            .col_expr(fax::Column::ProviderFaxId, Expr::value(provider))
            .col_expr(fax::Column::FailureReason, Expr::value(reason))
            .col_expr(fax::Column::UpdatedAt, Expr::value(Utc::now()))
            .filter(fax::Column::Id.eq(id))
            .filter(fax::Column::Status.eq(SUBMITTING))
    };
    let forget = || {
        fax::Entity::delete_many()
            .filter(fax::Column::Id.eq(id))
            .filter(fax::Column::Status.eq(SUBMITTING))
    };
    Ok(match submission {
        Submission::Accepted { carrier_id, .. } => {
            update(QUEUED, Some(carrier_id.clone()), None)
                .exec(db)
                .await?;
            crate::metrics::fax_submitted("queued");
            Outcome::Queued(carrier_id)
        }
        Submission::NotSent(why) => {
            forget().exec(db).await?;
            crate::metrics::fax_submitted("not_sent");
            Outcome::NotSent(why)
        }
        Submission::Rejected(why) => {
            forget().exec(db).await?;
            crate::metrics::fax_submitted("rejected");
            Outcome::Rejected(why)
        }
        Submission::Unknown(why) => {
            // The fenced update and the operators' notification commit
            // together: whoever moves the fax to `unresolved` notifies once.
            let txn = crate::db::begin_write(db).await?;
            let moved = update(UNRESOLVED, None, Some(why.clone()))
                .exec_with_returning(&txn)
                .await?;
            let mut notices = crate::notifications::Notices::default();
            for fax in &moved {
                notices.merge(
                    crate::notifications::notify(
                        &txn,
                        crate::notifications::New {
                            account_id: fax.account_id.clone(),
                            topic: crate::notifications::topics::FAX_UNRESOLVED,
                            title: format!("Fax {} is unresolved", fax.id),
                            body: format!(
                                "The carrier may have taken the fax to {} ({why}); resolve it (admin list-faxes --unresolved).",
                                fax.to_number
                            ),
                            data: serde_json::json!({
                                "faxId": fax.id,
                                "lineId": fax.line_id,
                                "customerId": fax.customer_id,
                            }),
                        },
                        Utc::now(),
                    )
                    .await?,
                );
            }
            txn.commit().await?;
            notices.publish(&ctx.bus).await;
            crate::metrics::fax_submitted("unknown");
            tracing::warn!(fax = id, %why, "fax: submission outcome unknown; held for an operator");
            Outcome::Unknown(why)
        }
    })
}

/// The request id of the reply to inbound fax `inbound_id`: the same on
/// every try, so a reply is submitted at most once however often the stage
/// is resumed.
pub fn reply_request_id(inbound_id: i64) -> uuid::Uuid {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("agentic-api/inbound-fax-reply/{inbound_id}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid()
}

/// Faxes the reply to a received fax back to its verified originating
/// number, with its own request id. An earlier try's record decides: sent
/// (its id), or unknown (never submitted again).
pub async fn send_reply(
    ctx: &Ctx,
    inbound: &entity::inbound_fax::Model,
    media_url: String,
    media_sha256: String,
) -> Result<Outcome, ApiError> {
    let carrier = ctx.get::<Faxing>()?.clone();
    let line = phone_line::Entity::find_by_id(inbound.line_id)
        .one(&ctx.db)
        .await?
        .ok_or_else(line_not_found)?;
    let request_id = reply_request_id(inbound.id).hyphenated().to_string();
    let now = Utc::now();
    let turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let existing = fax::Entity::find()
        .filter(fax::Column::AccountId.eq(inbound.account_id.as_str()))
        .filter(fax::Column::RequestId.eq(request_id.as_str()))
        .one(&txn)
        .await?;
    let record = match existing {
        Some(e) => match (&e.provider_fax_id, e.status.as_str()) {
            (Some(id), _) => return Ok(Outcome::Queued(id.clone())),
            (None, SUBMITTING | UNRESOLVED) => {
                return Ok(Outcome::Unknown(
                    "an earlier try's outcome is unknown".into(),
                ));
            }
            (None, _) => {
                let mut row: fax::ActiveModel = e.into();
                row.status = Set(SUBMITTING.into());
                row.media_sha256 = Set(media_sha256.clone());
                row.updated_at = Set(now);
                row.update(&txn).await?
            }
        },
        None => {
            fax::ActiveModel {
                account_id: Set(inbound.account_id.clone()),
                customer_id: Set(inbound.customer_id),
                line_id: Set(line.id),
                request_id: Set(request_id),
                from_number: Set(line.number.clone()),
                to_number: Set(inbound.from_number.clone()),
                media_sha256: Set(media_sha256.clone()),
                provider_fax_id: Set(None),
                status: Set(SUBMITTING.into()),
                failure_reason: Set(None),
                created_at: Set(now),
                updated_at: Set(now),
                ..Default::default()
            }
            .insert(&txn)
            .await?
        }
    };
    txn.commit().await?;
    drop(turn);
    let outgoing = OutgoingFax {
        fax_id: record.id,
        from: line.number.clone(),
        to: record.to_number.clone(),
        media_url,
        media_sha256,
        connection: line.messaging_profile.clone(),
    };
    submit(ctx, &carrier, &outgoing).await
}

/// Applies a carrier status to the fax with that carrier id: never
/// backwards, never after a final one. `false` when no fax has that id
/// (yet).
pub async fn report(
    db: &DatabaseConnection,
    writes: &crate::db::WriteGate,
    provider_fax_id: &str,
    status: &str,
    reason: Option<String>,
) -> Result<bool, sea_orm::DbErr> {
    let Some(new_rank) = rank(status) else {
        return Ok(true);
    };
    let _turn = writes.enter().await;
    let Some(current) = fax::Entity::find()
        .filter(fax::Column::ProviderFaxId.eq(provider_fax_id))
        .one(db)
        .await?
    else {
        return Ok(false);
    };
    let moves = rank(&current.status).is_some_and(|r| r < new_rank);
    if moves {
        fax::Entity::update_many()
            .col_expr(fax::Column::Status, Expr::value(status))
            .col_expr(fax::Column::FailureReason, Expr::value(reason))
            .col_expr(fax::Column::UpdatedAt, Expr::value(Utc::now()))
            .filter(fax::Column::Id.eq(current.id))
            .filter(fax::Column::Status.eq(current.status.as_str()))
            .exec(db)
            .await?;
        crate::metrics::fax_status(status);
    }
    Ok(true)
}

/// A sent fax of the caller's account, for a customer they may act for.
pub async fn status(
    db: &DatabaseConnection,
    caller: &CallerInfo,
    provider_fax_id: &str,
) -> Result<FaxStatus, ApiError> {
    let not_found = || ApiError::not_found("fax");
    let row = fax::Entity::find()
        .filter(fax::Column::ProviderFaxId.eq(provider_fax_id))
        .filter(fax::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    let allowed = customer_access::Entity::find_by_id((row.customer_id, caller.user.id))
        .one(db)
        .await?
        .is_some();
    if !allowed {
        return Err(not_found());
    }
    Ok(row.into())
}
