//! The runs' records. A conversation's runs go one at a time in turn
//! order: only the oldest unfinished run may start, and starting is a
//! conditional update (`queued` to `running`), so of several instances
//! exactly one drives it, under a lease it renews. Every change commits
//! before it is announced.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};

use entity::{assistant_run, conversation_message};

use super::model::{self, AWAITING, CANCELED, QUEUED, RUNNING, RunOut, UNFINISHED, kind};
use crate::bus::EventBus;
use crate::caller::CallerInfo;
use crate::conversations::events;
use crate::conversations::model::{
    Audience, Content, ConversationUid, MessageOut, NewMessage, Participant,
};
use crate::conversations::service::{insert_message, publish_message};
use crate::error::ApiError;

/// Persists the user's turn and its queued run, then announces both.
pub async fn direct_turn(
    db: &DatabaseConnection,
    writes: &crate::db::WriteGate,
    bus: &EventBus,
    caller: &CallerInfo,
    uid: &ConversationUid,
    content: Content,
) -> Result<(MessageOut, RunOut), ApiError> {
    let run_id = uuid::Uuid::new_v4().hyphenated().to_string();
    let author = Participant {
        user_id: caller.user.id,
        name: caller.user.name.clone(),
        email: Some(caller.user.email.clone()),
    };
    let new = NewMessage {
        run_id: Some(run_id.clone()),
        kind: Some(kind::TURN),
        ..NewMessage::by(author.clone(), Audience::Assistant, content)
    };
    let turn = writes.enter_urgent().await;
    let txn = crate::db::begin_write(db).await?;
    let message =
        insert_message(&txn, caller.account_id(), uid.as_str(), Some(caller), new).await?;
    let run = assistant_run::ActiveModel {
        id: Set(run_id),
        conversation_uid: Set(uid.as_str().to_string()),
        account_id: Set(caller.account_id().to_string()),
        turn_sequence: Set(message.sequence),
        status: Set(QUEUED.to_string()),
        requested_by_user_id: Set(author.user_id),
        requested_by_name: Set(author.name),
        requested_by_email: Set(author.email),
        api_key_id: Set(caller.api_key_id),
        pending_action: Set(None),
        tool_calls: Set(0),
        prompt_tokens: Set(0),
        completion_tokens: Set(0),
        error_code: Set(None),
        error_message: Set(None),
        cancel_requested: Set(false),
        lease_owner: Set(None),
        lease_until: Set(None),
        created_at: Set(message.created_at),
        started_at: Set(None),
        finished_at: Set(None),
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    drop(turn);
    publish_message(bus, caller.account_id(), uid.as_str(), &message).await;
    let run = RunOut::from(run);
    announce(bus, &run, caller.account_id()).await;
    Ok((message, run))
}

/// `run.updated` to the conversation's rooms.
pub async fn announce(bus: &EventBus, run: &RunOut, account_id: &str) {
    let value = serde_json::to_value(run).unwrap_or_default();
    bus.publish(events::run(account_id, &run.conversation_uid, value))
        .await;
}

/// Appends one of a run's messages (the assistant's: no author) and
/// announces it.
pub async fn say(
    db: &DatabaseConnection,
    writes: &crate::db::WriteGate,
    bus: &EventBus,
    run: &assistant_run::Model,
    kind: &'static str,
    content: &str,
    data: Option<serde_json::Value>,
) -> Result<MessageOut, ApiError> {
    // Content rules (not empty, length) hold for what the assistant says too.
    let content = Content::parse(clip(content, crate::conversations::model::CONTENT_MAX))?;
    let new = NewMessage {
        audience: Audience::Assistant,
        content,
        author: None,
        run_id: Some(run.id.clone()),
        kind: Some(kind),
        data,
    };
    let turn = writes.enter_urgent().await;
    let txn = crate::db::begin_write(db).await?;
    let message = insert_message(&txn, &run.account_id, &run.conversation_uid, None, new).await?;
    txn.commit().await?;
    drop(turn);
    publish_message(bus, &run.account_id, &run.conversation_uid, &message).await;
    Ok(message)
}

/// At most `max` characters of `text` (never empty).
pub fn clip(text: &str, max: usize) -> String {
    let t = text.trim();
    let t = if t.is_empty() { "(empty)" } else { t };
    if t.chars().count() <= max {
        return t.to_string();
    }
    let mut s: String = t.chars().take(max.saturating_sub(1)).collect();
    s.push('…');
    s
}

/// A run of a conversation the caller can read (404 otherwise).
pub async fn find(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    uid: &ConversationUid,
    run_id: &str,
) -> Result<assistant_run::Model, ApiError> {
    crate::conversations::service::visible(db, caller, uid).await?;
    assistant_run::Entity::find_by_id(run_id)
        .filter(assistant_run::Column::ConversationUid.eq(uid.as_str()))
        .filter(assistant_run::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("run"))
}

/// A conversation's runs, newest first, and how many there are.
pub async fn list(
    db: &DatabaseConnection,
    caller: &CallerInfo,
    uid: &ConversationUid,
    take: u64,
    skip: u64,
) -> Result<(Vec<RunOut>, u64), ApiError> {
    crate::conversations::service::visible(db, caller, uid).await?;
    let q = assistant_run::Entity::find()
        .filter(assistant_run::Column::ConversationUid.eq(uid.as_str()))
        .filter(assistant_run::Column::AccountId.eq(caller.account_id()));
    let total = q.clone().count(db).await?;
    let rows = q
        .order_by_desc(assistant_run::Column::TurnSequence)
        .offset(skip)
        .limit(take)
        .all(db)
        .await?;
    Ok((rows.into_iter().map(Into::into).collect(), total))
}

/// A run's tool calls, results and proposed actions, in order.
pub async fn activity(
    db: &impl ConnectionTrait,
    run_id: &str,
) -> Result<Vec<MessageOut>, ApiError> {
    Ok(conversation_message::Entity::find()
        .filter(conversation_message::Column::RunId.eq(run_id))
        .filter(conversation_message::Column::Kind.is_in([
            kind::TOOL_CALL,
            kind::TOOL_RESULT,
            kind::ACTION_PROPOSED,
            kind::ACTION_DECLINED,
        ]))
        .order_by_asc(conversation_message::Column::Sequence)
        .all(db)
        .await?
        .into_iter()
        .map(Into::into)
        .collect())
}

/// Starts the conversation's next run under this instance's lease, when
/// the oldest unfinished run is queued and no other instance started it
/// first. Returns it, started.
pub async fn claim_next(
    db: &DatabaseConnection,
    conversation_uid: &str,
    owner: &str,
    until: DateTime<Utc>,
) -> Result<Option<assistant_run::Model>, sea_orm::DbErr> {
    let Some(oldest) = assistant_run::Entity::find()
        .filter(assistant_run::Column::ConversationUid.eq(conversation_uid))
        .filter(assistant_run::Column::Status.is_in(UNFINISHED))
        .order_by_asc(assistant_run::Column::TurnSequence)
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    if oldest.status != QUEUED {
        return Ok(None);
    }
    take_lease(db, &oldest.id, QUEUED, owner, until).await
}

/// Moves a run from `from` to `running` under this instance's lease; `None`
/// when another change came first.
pub async fn take_lease(
    db: &DatabaseConnection,
    run_id: &str,
    from: &str,
    owner: &str,
    until: DateTime<Utc>,
) -> Result<Option<assistant_run::Model>, sea_orm::DbErr> {
    let now = Utc::now();
    let res = assistant_run::Entity::update_many()
        .col_expr(assistant_run::Column::Status, Expr::value(RUNNING))
        .col_expr(assistant_run::Column::LeaseOwner, Expr::value(owner))
        .col_expr(assistant_run::Column::LeaseUntil, Expr::value(Some(until)))
        .col_expr(
            assistant_run::Column::PendingAction,
            Expr::value(None::<String>),
        )
        .col_expr(
            assistant_run::Column::StartedAt,
            Expr::col(assistant_run::Column::StartedAt).if_null(now),
        )
        .filter(assistant_run::Column::Id.eq(run_id))
        .filter(assistant_run::Column::Status.eq(from))
        .filter(assistant_run::Column::CancelRequested.eq(false))
        .exec(db)
        .await?;
    if res.rows_affected != 1 {
        return Ok(None);
    }
    assistant_run::Entity::find_by_id(run_id).one(db).await
}

/// Renews this instance's leases; returns the ids a participant asked to
/// cancel (their cancel notice may have been lost on the way).
pub async fn renew(
    db: &DatabaseConnection,
    ids: &[String],
    owner: &str,
    until: DateTime<Utc>,
) -> Result<Vec<String>, sea_orm::DbErr> {
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    assistant_run::Entity::update_many()
        .col_expr(assistant_run::Column::LeaseUntil, Expr::value(Some(until)))
        .filter(assistant_run::Column::Id.is_in(ids.iter().cloned()))
        .filter(assistant_run::Column::LeaseOwner.eq(owner))
        .filter(assistant_run::Column::Status.eq(RUNNING))
        .exec(db)
        .await?;
    assistant_run::Entity::find()
        .select_only()
        .column(assistant_run::Column::Id)
        .filter(assistant_run::Column::Id.is_in(ids.iter().cloned()))
        .filter(assistant_run::Column::CancelRequested.eq(true))
        .into_tuple::<String>()
        .all(db)
        .await
}

/// How a running run ends (or pauses).
pub struct Ending {
    pub status: &'static str,
    pub error: Option<(String, String)>,
    /// Set when pausing for a confirmation.
    pub pending: Option<model::ProposedAction>,
}

/// Why a run ended early, told in the room (`kind: notice`).
pub struct Notice {
    pub text: String,
    pub data: serde_json::Value,
}

/// Where runs' writes go: the database, its write gate, the bus.
#[derive(Clone, Copy)]
pub struct Sink<'a> {
    pub db: &'a DatabaseConnection,
    pub writes: &'a crate::db::WriteGate,
    pub bus: &'a EventBus,
}

impl<'a> From<&'a crate::ops::Ctx> for Sink<'a> {
    fn from(ctx: &'a crate::ops::Ctx) -> Self {
        Sink {
            db: &ctx.db,
            writes: &ctx.writes,
            bus: &ctx.bus,
        }
    }
}

/// Applies `change` (a conditional update of run `run_id`) and, when it
/// applied, appends the run's notice, in one transaction; then announces
/// the notice and the run. `None` when the condition no longer held.
async fn transition(
    sink: Sink<'_>,
    run_id: &str,
    change: sea_orm::UpdateMany<assistant_run::Entity>,
    notice: Option<Notice>,
) -> Result<Option<assistant_run::Model>, ApiError> {
    let turn = sink.writes.enter_urgent().await;
    let txn = crate::db::begin_write(sink.db).await?;
    if change.exec(&txn).await?.rows_affected != 1 {
        return Ok(None);
    }
    let run = reload(&txn, run_id).await?;
    let message = match notice {
        Some(n) => {
            let new = NewMessage {
                audience: Audience::Assistant,
                content: Content::parse(clip(&n.text, crate::conversations::model::CONTENT_MAX))?,
                author: None,
                run_id: Some(run.id.clone()),
                kind: Some(kind::NOTICE),
                data: Some(n.data),
            };
            Some(insert_message(&txn, &run.account_id, &run.conversation_uid, None, new).await?)
        }
        None => None,
    };
    txn.commit().await?;
    drop(turn);
    if let Some(m) = &message {
        publish_message(sink.bus, &run.account_id, &run.conversation_uid, m).await;
    }
    announce(sink.bus, &run.clone().into(), &run.account_id).await;
    Ok(Some(run))
}

/// Records the end (or pause) of a run this instance drives, with its
/// notice; `None` when it no longer holds the run's lease (another instance
/// took it over).
pub async fn end(
    sink: Sink<'_>,
    run_id: &str,
    owner: &str,
    ending: Ending,
    notice: Option<Notice>,
) -> Result<Option<assistant_run::Model>, ApiError> {
    let (code, message) = ending.error.unzip();
    let pending = ending
        .pending
        .as_ref()
        .and_then(|p| serde_json::to_string(p).ok());
    let finished = (ending.status != AWAITING).then(Utc::now);
    let change = assistant_run::Entity::update_many()
        .col_expr(assistant_run::Column::Status, Expr::value(ending.status))
        .col_expr(assistant_run::Column::ErrorCode, Expr::value(code))
        .col_expr(assistant_run::Column::ErrorMessage, Expr::value(message))
        .col_expr(assistant_run::Column::PendingAction, Expr::value(pending))
        .col_expr(assistant_run::Column::FinishedAt, Expr::value(finished))
        .col_expr(
            assistant_run::Column::LeaseOwner,
            Expr::value(None::<String>),
        )
        .col_expr(
            assistant_run::Column::LeaseUntil,
            Expr::value(None::<DateTime<Utc>>),
        )
        .filter(assistant_run::Column::Id.eq(run_id))
        .filter(assistant_run::Column::LeaseOwner.eq(owner))
        .filter(assistant_run::Column::Status.eq(RUNNING));
    transition(sink, run_id, change, notice).await
}

/// Adds a model turn's tokens and tool calls to the run's counters.
pub async fn count(
    db: &DatabaseConnection,
    run_id: &str,
    prompt: i64,
    completion: i64,
    tool_calls: i32,
) -> Result<(), sea_orm::DbErr> {
    assistant_run::Entity::update_many()
        .col_expr(
            assistant_run::Column::PromptTokens,
            Expr::col(assistant_run::Column::PromptTokens).add(prompt),
        )
        .col_expr(
            assistant_run::Column::CompletionTokens,
            Expr::col(assistant_run::Column::CompletionTokens).add(completion),
        )
        .col_expr(
            assistant_run::Column::ToolCalls,
            Expr::col(assistant_run::Column::ToolCalls).add(tool_calls),
        )
        .filter(assistant_run::Column::Id.eq(run_id))
        .exec(db)
        .await?;
    Ok(())
}

/// What a cancel request did.
pub enum Canceled {
    /// The run had not started or was waiting for a confirmation: it is
    /// canceled now (returned).
    Now(assistant_run::Model),
    /// It is running: the instance driving it stops it.
    Requested(assistant_run::Model),
    /// It was already over.
    Over(assistant_run::Model),
}

pub async fn cancel(
    sink: Sink<'_>,
    run: assistant_run::Model,
    by: &str,
) -> Result<Canceled, ApiError> {
    for from in [QUEUED, AWAITING] {
        let change = assistant_run::Entity::update_many()
            .col_expr(assistant_run::Column::Status, Expr::value(CANCELED))
            .col_expr(assistant_run::Column::ErrorCode, Expr::value("canceled"))
            .col_expr(
                assistant_run::Column::ErrorMessage,
                Expr::value(format!("canceled by {by}")),
            )
            .col_expr(
                assistant_run::Column::PendingAction,
                Expr::value(None::<String>),
            )
            .col_expr(
                assistant_run::Column::FinishedAt,
                Expr::value(Some(Utc::now())),
            )
            .filter(assistant_run::Column::Id.eq(run.id.clone()))
            .filter(assistant_run::Column::Status.eq(from));
        let notice = Notice {
            text: format!("The run was canceled by {by}."),
            data: serde_json::json!({ "status": CANCELED, "code": "canceled" }),
        };
        if let Some(now) = transition(sink, &run.id, change, Some(notice)).await? {
            return Ok(Canceled::Now(now));
        }
    }
    let res = assistant_run::Entity::update_many()
        .col_expr(assistant_run::Column::CancelRequested, Expr::value(true))
        .filter(assistant_run::Column::Id.eq(run.id.clone()))
        .filter(assistant_run::Column::Status.eq(RUNNING))
        .exec(sink.db)
        .await?;
    let now = reload(sink.db, &run.id).await?;
    Ok(if res.rows_affected == 1 {
        Canceled::Requested(now)
    } else {
        Canceled::Over(now)
    })
}

pub async fn reload(
    db: &impl ConnectionTrait,
    run_id: &str,
) -> Result<assistant_run::Model, ApiError> {
    assistant_run::Entity::find_by_id(run_id)
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("run"))
}

/// Running runs whose instance stopped renewing their lease, marked
/// interrupted (with their notice) by this instance; each by exactly one.
pub async fn interrupt_abandoned(sink: Sink<'_>) -> Result<Vec<assistant_run::Model>, ApiError> {
    let now = Utc::now();
    let candidates = assistant_run::Entity::find()
        .filter(assistant_run::Column::Status.eq(RUNNING))
        .filter(assistant_run::Column::LeaseUntil.lt(now))
        .limit(50)
        .all(sink.db)
        .await?;
    let mut taken = Vec::new();
    for c in candidates {
        let change = assistant_run::Entity::update_many()
            .col_expr(
                assistant_run::Column::Status,
                Expr::value(model::INTERRUPTED),
            )
            .col_expr(assistant_run::Column::ErrorCode, Expr::value("interrupted"))
            .col_expr(
                assistant_run::Column::ErrorMessage,
                Expr::value("the server running this turn stopped before it ended"),
            )
            .col_expr(assistant_run::Column::FinishedAt, Expr::value(Some(now)))
            .col_expr(
                assistant_run::Column::LeaseOwner,
                Expr::value(None::<String>),
            )
            .filter(assistant_run::Column::Id.eq(c.id.clone()))
            .filter(assistant_run::Column::Status.eq(RUNNING))
            .filter(assistant_run::Column::LeaseUntil.lt(now));
        if let Some(run) = transition(sink, &c.id, change, Some(interrupted_notice())).await? {
            taken.push(run);
        }
    }
    Ok(taken)
}

/// The notice of a run whose server stopped.
pub fn interrupted_notice() -> Notice {
    Notice {
        text: "The run was interrupted: the server running it stopped. Ask again to retry."
            .to_string(),
        data: serde_json::json!({ "status": model::INTERRUPTED, "code": "interrupted" }),
    }
}

/// Conversations with a queued run (candidates for [`claim_next`]).
pub async fn with_queued(db: &DatabaseConnection) -> Result<Vec<String>, sea_orm::DbErr> {
    assistant_run::Entity::find()
        .select_only()
        .column(assistant_run::Column::ConversationUid)
        .distinct()
        .filter(assistant_run::Column::Status.eq(QUEUED))
        .limit(100)
        .into_tuple::<String>()
        .all(db)
        .await
}
