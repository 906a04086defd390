//! The supervised sender: the outbox queue `text`, one lane per phone line
//! (so a line's messages go out in order, on one instance at a time under
//! the outbox's lease).
//!
//! Never double-send: before a message is handed to the carrier, its row
//! moves `pending` → `submitting` in a committed compare-and-set. Only the
//! worker whose update matched may submit, so two instances (a lease taken
//! over from a slow holder) cannot both send it; and a message found in
//! `submitting` (the sender died between the claim and the record) has an
//! unknown outcome and is held, never re-sent (rule 10). The outbox alone
//! is at-least-once; this claim makes sending at-most-once.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QuerySelect,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use entity::{phone_line, phone_message, phone_opt_out};

use super::carrier::{Carrier, Outgoing, Submission};
use crate::db::WriteGate;
use crate::db::group::{Batch, GroupCommit};
use crate::outbox::{Handler, Job, LaneWorker, Next, Outcome};

/// The outbox queue of text messages; a lane is a line id.
pub const QUEUE: &str = "text";

/// What a job carries.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageJob {
    pub message_id: i64,
}

pub struct Sender {
    carrier: Arc<dyn Carrier>,
    claims: GroupCommit<Claims>,
}

impl Sender {
    pub fn new(carrier: Arc<dyn Carrier>, db: DatabaseConnection, writes: WriteGate) -> Self {
        Sender {
            carrier,
            claims: GroupCommit::start(db, writes, Claims),
        }
    }
}

/// The claims of every lane, group-committed: each is still a committed
/// compare-and-set before its message leaves, but the lanes that claim at
/// once share one commit.
pub struct Claims;

#[async_trait::async_trait]
impl Batch for Claims {
    /// A message id.
    type Item = i64;
    /// Whether this claim moved the message from `pending`.
    type Out = bool;
    const NAME: &'static str = "text claims";

    async fn run(&self, txn: &DatabaseTransaction, ids: &[i64]) -> Result<Vec<bool>, DbErr> {
        // Two statements for the whole batch: which are still pending
        // (rows locked on PostgreSQL; SQLite's write transaction is
        // exclusive), then move exactly those.
        let pending: std::collections::HashSet<i64> = phone_message::Entity::find()
            .select_only()
            .column(phone_message::Column::Id)
            .filter(phone_message::Column::Id.is_in(ids.iter().copied()))
            .filter(phone_message::Column::Status.eq("pending"))
            .lock_exclusive()
            .into_tuple::<i64>()
            .all(txn)
            .await?
            .into_iter()
            .collect();
        if !pending.is_empty() {
            phone_message::Entity::update_many()
                .col_expr(phone_message::Column::Status, Expr::value("submitting"))
                .col_expr(phone_message::Column::UpdatedAt, Expr::value(Utc::now()))
                .filter(phone_message::Column::Id.is_in(pending.iter().copied()))
                .exec(txn)
                .await?;
        }
        // A message claimed twice in one batch is claimed by the first.
        let mut claimed = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .map(|id| pending.contains(id) && claimed.insert(*id))
            .collect())
    }
}

/// Is a carrier report on a message of `channel` from `line` recorded?
/// Rule 7: RCS reports only when the line is the only line on its
/// messaging profile (a line without a profile is alone on its own).
pub async fn reports_recorded(
    conn: &impl ConnectionTrait,
    channel: &str,
    line_id: i64,
) -> Result<bool, DbErr> {
    if channel != "rcs" {
        return Ok(true);
    }
    let Some(line) = phone_line::Entity::find_by_id(line_id).one(conn).await? else {
        return Ok(false);
    };
    let Some(profile) = line.messaging_profile else {
        return Ok(true);
    };
    let sharing = phone_line::Entity::find()
        .filter(phone_line::Column::MessagingProfile.eq(profile))
        .count(conn)
        .await?;
    Ok(sharing == 1)
}

/// Records a carrier status report (`delivered`, `failed` or `read`; any
/// other is ignored) on a submitted message, when rule 7 allows; returns
/// whether it was recorded.
pub async fn record_report(
    conn: &impl ConnectionTrait,
    message: &phone_message::Model,
    status: &str,
) -> Result<bool, DbErr> {
    // Reports arrive out of order and more than once: a status only moves
    // forward (a late `delivered` never undoes `read`, nothing undoes
    // `failed`).
    let from: &[&str] = match status {
        "delivered" | "failed" => &["submitted"],
        "read" => &["submitted", "delivered"],
        _ => return Ok(false),
    };
    if !reports_recorded(conn, &message.channel, message.line_id).await? {
        return Ok(false);
    }
    let res = phone_message::Entity::update_many()
        .col_expr(phone_message::Column::Status, Expr::value(status))
        .col_expr(phone_message::Column::UpdatedAt, Expr::value(Utc::now()))
        .filter(phone_message::Column::Id.eq(message.id))
        .filter(phone_message::Column::Status.is_in(from.iter().copied()))
        .exec(conn)
        .await?;
    Ok(res.rows_affected == 1)
}

fn message_id(job: &Job) -> Option<i64> {
    serde_json::from_str::<MessageJob>(&job.payload)
        .ok()
        .map(|j| j.message_id)
}

#[async_trait::async_trait]
impl Handler for Sender {
    fn queue(&self) -> &'static str {
        QUEUE
    }

    async fn open(
        &self,
        db: &DatabaseConnection,
        lane: &str,
    ) -> anyhow::Result<Option<Box<dyn LaneWorker>>> {
        let Ok(id) = lane.parse::<i64>() else {
            return Ok(None);
        };
        let Some(line) = phone_line::Entity::find_by_id(id).one(db).await? else {
            return Ok(None);
        };
        Ok(Some(Box::new(Worker {
            db: db.clone(),
            claims: self.claims.clone(),
            carrier: self.carrier.clone(),
            line,
        })))
    }

    async fn record(
        &self,
        txn: &DatabaseTransaction,
        _lane: &str,
        job: &Job,
        outcome: &Outcome,
    ) -> Result<Next, DbErr> {
        let Some(id) = message_id(job) else {
            return Ok(Next::Continue);
        };
        let (status, result) = match outcome {
            Outcome::Done(r) => ("submitted", r),
            Outcome::Failed(r) => ("failed", r),
            Outcome::Held(r) => ("held", r),
            Outcome::Retry { result, .. } => ("pending", result),
            Outcome::Skipped(_) => return Ok(Next::Continue),
        };
        let carrier_id = result["carrierId"].as_str().map(String::from);
        let error = result["error"].as_str().map(String::from);
        phone_message::Entity::update_many()
            .col_expr(phone_message::Column::Status, Expr::value(status))
            .col_expr(
                phone_message::Column::CarrierMessageId,
                Expr::value(carrier_id),
            )
            .col_expr(phone_message::Column::Error, Expr::value(error))
            .col_expr(phone_message::Column::UpdatedAt, Expr::value(Utc::now()))
            .filter(phone_message::Column::Id.eq(id))
            .exec(txn)
            .await?;
        if let (Outcome::Done(_), Some(report)) = (outcome, result["report"].as_str())
            && let Some(msg) = phone_message::Entity::find_by_id(id).one(txn).await?
        {
            record_report(txn, &msg, report).await?;
        }
        Ok(Next::Continue)
    }

    fn retention(&self) -> Duration {
        Duration::from_secs(30 * 24 * 3600)
    }
}

struct Worker {
    db: DatabaseConnection,
    claims: GroupCommit<Claims>,
    carrier: Arc<dyn Carrier>,
    line: phone_line::Model,
}

#[async_trait::async_trait]
impl LaneWorker for Worker {
    async fn run(&mut self, job: &Job) -> anyhow::Result<Outcome> {
        let Some(id) = message_id(job) else {
            return Ok(Outcome::Skipped(json!({ "error": "unreadable job" })));
        };
        // A recipient who texted STOP after the message was queued is not
        // sent to (rule 8 holds for queued messages too).
        if let Some(msg) = phone_message::Entity::find_by_id(id).one(&self.db).await?
            && msg.status == "pending"
            && phone_opt_out::Entity::find_by_id((msg.line_id, msg.to_number.clone()))
                .one(&self.db)
                .await?
                .is_some()
        {
            return Ok(Outcome::Failed(json!({
                "error": "the recipient opted out (STOP) after the message was queued"
            })));
        }
        // The claim: committed before anything leaves.
        let claimed = self.claims.submit(id).await?;
        let Some(msg) = phone_message::Entity::find_by_id(id).one(&self.db).await? else {
            return Ok(Outcome::Skipped(json!({ "error": "message gone" })));
        };
        if !claimed {
            return Ok(if msg.status == "submitting" {
                Outcome::Held(json!({
                    "error": "an earlier submission was interrupted; its outcome is unknown"
                }))
            } else {
                Outcome::Skipped(json!({ "error": format!("message is {}", msg.status) }))
            });
        }
        let out = Outgoing {
            message_id: msg.id,
            channel: msg.channel.clone(),
            from: self.line.number.clone(),
            to: msg.to_number.clone(),
            text: msg.text.clone(),
            messaging_profile: self.line.messaging_profile.clone(),
        };
        Ok(match self.carrier.submit(&out).await {
            Submission::Accepted { carrier_id, report } => {
                Outcome::Done(json!({ "carrierId": carrier_id, "report": report }))
            }
            Submission::Rejected(e) => Outcome::Failed(json!({ "error": e })),
            // Nothing left: back to pending (by the record) for another try.
            Submission::NotSent(e) => Outcome::Retry {
                after: Duration::from_secs(5),
                result: json!({ "error": e }),
            },
            Submission::Unknown(e) => Outcome::Held(json!({ "error": e })),
        })
    }
}
