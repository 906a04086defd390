//! Accepting a text message: every check, the idempotency rule and the
//! enqueue, in one write transaction. The 202 goes out only after the
//! commit; nothing is written on any error.

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait,
    QueryFilter, QuerySelect, Set,
};
use serde_json::json;

use entity::{account, phone_line, phone_message, phone_opt_out};

use super::limits::{self, Breach};
use super::model::{Channel, QueuedMessage, TextMessage};
use super::sender::{MessageJob, QUEUE};
use crate::auth::CallerInfo;
use crate::error::ApiError;
use crate::ops::Ctx;
use crate::outbox::{self, Kicks, NewJob};

pub const STATUS_PENDING: &str = "pending";

fn bad(code: &'static str, field: Option<&str>, message: String) -> ApiError {
    ApiError::Coded {
        status: actix_web::http::StatusCode::BAD_REQUEST,
        code,
        message,
        field: field.map(String::from),
        details: None,
    }
}

/// The database could not take the message: 503, safe to retry with the
/// same requestId (nothing was committed).
fn unavailable(err: DbErr) -> ApiError {
    if let Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) = err.sql_err() {
        return ApiError::from(err);
    }
    tracing::warn!(error = %err, "phone: cannot queue a message");
    ApiError::ServiceUnavailable(
        "the message could not be safely queued; retry with the same requestId".into(),
    )
}

/// What the caller gets: the queued message, new or the earlier one.
pub async fn accept(
    ctx: &Ctx,
    caller: &CallerInfo,
    msg: TextMessage,
) -> Result<QueuedMessage, ApiError> {
    let account_id = caller.account_id();
    let outcome = {
        let _turn = ctx.writes.enter().await;
        let txn = crate::db::begin_write(&ctx.db).await.map_err(unavailable)?;
        match queue_in(&txn, account_id, &msg).await {
            Ok(Queued::New(id, kicks)) => {
                txn.commit().await.map_err(unavailable)?;
                Ok((id, false, kicks))
            }
            Ok(Queued::Duplicate(id)) => Ok((id, true, Kicks::default())),
            Err(Failure::Api(e)) => Err(e),
            Err(Failure::Db(e)) => {
                drop(txn);
                if let Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) = e.sql_err() {
                    // A concurrent retry committed first: answer as a retry.
                    match earlier(&ctx.db, account_id, &msg).await {
                        Ok(Some(id)) => Ok((id, true, Kicks::default())),
                        Ok(None) => Err(unavailable(e)),
                        Err(Failure::Api(api)) => Err(api),
                        Err(Failure::Db(db)) => Err(unavailable(db)),
                    }
                } else {
                    Err(unavailable(e))
                }
            }
        }
    };
    let (id, duplicate, kicks) = outcome?;
    outbox::announce(&ctx.bus, &kicks);
    Ok(QueuedMessage {
        outbox_id: id.to_string(),
        channel: (msg.channel == Channel::Rcs).then(|| "rcs".to_string()),
        status: STATUS_PENDING.into(),
        duplicate,
    })
}

enum Queued {
    New(i64, Kicks),
    Duplicate(i64),
}

enum Failure {
    Api(ApiError),
    Db(DbErr),
}

impl From<DbErr> for Failure {
    fn from(e: DbErr) -> Self {
        Failure::Db(e)
    }
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

/// The earlier message of the same requestId when it is the same request;
/// 409 when the requestId was used for anything else.
async fn earlier(
    conn: &impl ConnectionTrait,
    account_id: &str,
    msg: &TextMessage,
) -> Result<Option<i64>, Failure> {
    let Some(prior) = phone_message::Entity::find()
        .filter(phone_message::Column::AccountId.eq(account_id))
        .filter(phone_message::Column::RequestId.eq(msg.request_id.to_string()))
        .one(conn)
        .await?
    else {
        return Ok(None);
    };
    let same = prior.line_id == msg.line_id
        && prior.to_number == msg.to.as_str()
        && prior.text == msg.text
        && prior.channel == msg.channel.as_str();
    if !same {
        let reason = if prior.channel != msg.channel.as_str() {
            "the requestId was already used on the other channel"
        } else {
            "the requestId was already used with a different line, destination or text"
        };
        return Err(Failure::Api(ApiError::Conflict {
            message: format!("{reason}; use a new requestId for a new message"),
            details: Some(json!({ "requestId": msg.request_id.to_string() })),
        }));
    }
    Ok(Some(prior.id))
}

async fn queue_in(
    txn: &DatabaseTransaction,
    account_id: &str,
    msg: &TextMessage,
) -> Result<Queued, Failure> {
    let enrolled = account::Entity::find_by_id(account_id.to_string())
        .one(txn)
        .await?
        .is_some_and(|a| a.phone_lines_enabled);
    if !enrolled {
        return Err(
            ApiError::NotFound("the account is not enrolled in agent phone lines".into()).into(),
        );
    }
    if let Some(id) = earlier(txn, account_id, msg).await? {
        return Ok(Queued::Duplicate(id));
    }
    // The line's row lock (PostgreSQL) orders concurrent sends on it, so
    // the limits count every message committed before; SQLite's write
    // transaction is exclusive already.
    let line = phone_line::Entity::find_by_id(msg.line_id)
        .filter(phone_line::Column::AccountId.eq(account_id))
        .lock_exclusive()
        .one(txn)
        .await?
        .ok_or_else(|| ApiError::Coded {
            status: actix_web::http::StatusCode::NOT_FOUND,
            code: "NOT_FOUND",
            message: "phone line not found".into(),
            field: Some("endpointId".into()),
            details: None,
        })?;
    if line.kind != "sms" {
        return Err(bad(
            "LINE_NOT_MESSAGING",
            Some("endpointId"),
            format!(
                "line {} is a {} line; text messages need an sms line",
                line.id, line.kind
            ),
        )
        .into());
    }
    if !line.active {
        return Err(bad(
            "LINE_INACTIVE",
            Some("endpointId"),
            format!("line {} is inactive", line.id),
        )
        .into());
    }
    if msg.channel == Channel::Rcs && !line.rcs_agent_verified {
        return Err(bad(
            "RCS_AGENT_NOT_VERIFIED",
            Some("endpointId"),
            format!(
                "line {} has no verified RCS agent; SMS from it is unaffected",
                line.id
            ),
        )
        .into());
    }
    let opted_out = phone_opt_out::Entity::find_by_id((line.id, msg.to.as_str().to_string()))
        .one(txn)
        .await?
        .is_some();
    if opted_out {
        return Err(bad(
            "RECIPIENT_OPTED_OUT",
            Some("to"),
            format!(
                "{} opted out of messages from this line (texted STOP)",
                msg.to
            ),
        )
        .into());
    }
    let limits = limits::for_line(txn, account_id, line.id).await?;
    let cost = i64::from(msg.count.segments) * limits.segment_price_micros;
    let now = Utc::now();
    if let Some(breach) = limits::check(
        txn,
        &limits,
        account_id,
        line.id,
        msg.country.as_deref(),
        cost,
        now,
    )
    .await?
    {
        let (code, field, message, details) = match breach {
            Breach::Country(c) => (
                "DESTINATION_NOT_ALLOWED",
                Some("to"),
                format!(
                    "destination country {} is outside the line's sending limits",
                    c.as_deref().unwrap_or("unknown")
                ),
                json!({ "limit": "countries", "country": c }),
            ),
            Breach::PerMinute(n) => (
                "SENDING_LIMIT_EXCEEDED",
                None,
                format!("the line's limit of {n} messages per minute is reached"),
                json!({ "limit": "messagesPerMinute", "value": n }),
            ),
            Breach::DailySpend { cap_micros, scope } => (
                "SENDING_LIMIT_EXCEEDED",
                None,
                format!("the {scope}'s daily spend cap would be exceeded"),
                json!({ "limit": "dailySpendCap", "scope": scope, "capMicros": cap_micros }),
            ),
        };
        return Err(ApiError::Coded {
            status: actix_web::http::StatusCode::BAD_REQUEST,
            code,
            message,
            field: field.map(String::from),
            details: Some(details),
        }
        .into());
    }
    let row = phone_message::ActiveModel {
        account_id: Set(account_id.to_string()),
        line_id: Set(line.id),
        channel: Set(msg.channel.as_str().into()),
        to_number: Set(msg.to.as_str().into()),
        text: Set(msg.text.clone()),
        request_id: Set(msg.request_id.to_string()),
        segments: Set(msg.count.segments as i32),
        encoding: Set(msg.count.encoding.as_str().into()),
        cost_micros: Set(cost),
        status: Set(STATUS_PENDING.into()),
        carrier_message_id: Set(None),
        error: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
        ..Default::default()
    }
    .insert(txn)
    .await?;
    let lane = line.id.to_string();
    let payload = serde_json::to_string(&MessageJob { message_id: row.id })
        .map_err(|e| DbErr::Custom(e.to_string()))?;
    outbox::store::enqueue(
        txn,
        &[NewJob {
            queue: QUEUE,
            lane: lane.clone(),
            payload,
        }],
    )
    .await?;
    let mut kicks = Kicks::default();
    kicks.add(QUEUE, &lane);
    Ok(Queued::New(row.id, kicks))
}
