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
//!
//! A sender that lost its lease mid-submit (the new holder found the
//! message `submitting` and held it) still records what the carrier said:
//! the carrier id, and a status that only moves forward, so the held
//! message is settled and its delivery reports match.

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    PaginatorTrait, QueryFilter, QueryOrder, QuerySelect,
};
use serde::{Deserialize, Serialize};
use serde_json::json;

use entity::{phone_daily_spend, phone_line, phone_message, phone_opt_out};

use super::carrier::{Carrier, Outgoing, Submission};
use crate::db::WriteGate;
use crate::db::group::{Batch, GroupCommit};
use crate::notifications::Notices;
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
    /// `phone.message_held` notifications of the batch being recorded,
    /// announced once it committed ([`Handler::committed`]).
    held: std::sync::Mutex<Notices>,
}

impl Sender {
    pub fn new(carrier: Arc<dyn Carrier>, db: DatabaseConnection, writes: WriteGate) -> Self {
        Sender {
            carrier,
            claims: GroupCommit::start(db, writes, Claims),
            held: std::sync::Mutex::new(Notices::default()),
        }
    }

    fn keep(&self, notices: Notices) {
        if !notices.is_empty()
            && let Ok(mut held) = self.held.lock()
        {
            held.merge(notices);
        }
    }
}

/// The claims of every lane, group-committed: each is still a committed
/// compare-and-set before its message leaves, but the lanes that claim at
/// once share one commit. The claim also reads what the worker needs (the
/// message, and whether its recipient opted out since it was queued), so
/// sending costs no reads of its own.
pub struct Claims;

/// What a claim found.
pub enum Claim {
    /// Moved `pending` → `submitting`: this worker alone may send it.
    Claimed(Box<phone_message::Model>),
    /// Still pending, but the recipient texted STOP meanwhile (rule 8
    /// holds for queued messages too): not claimed, never sent.
    OptedOut,
    /// Not pending (its status): claimed before, or finished.
    NotPending(String),
    Gone,
}

#[derive(sea_orm::FromQueryResult)]
struct ClaimRow {
    #[sea_orm(nested)]
    message: phone_message::Model,
    opted_out: bool,
}

#[async_trait::async_trait]
impl Batch for Claims {
    /// A message id.
    type Item = i64;
    type Out = Claim;
    const NAME: &'static str = "text claims";

    async fn run(&self, txn: &DatabaseTransaction, ids: &[i64]) -> Result<Vec<Claim>, DbErr> {
        use sea_orm::sea_query::{ExprTrait, Query};
        // Two statements for the whole batch: the messages with their
        // recipients' opt-outs (rows locked on PostgreSQL; SQLite's write
        // transaction is exclusive), then move exactly the claimable ones.
        let opted_out = Query::select()
            .expr(Expr::val(1))
            .from(phone_opt_out::Entity)
            .and_where(
                Expr::col((phone_opt_out::Entity, phone_opt_out::Column::LineId))
                    .equals((phone_message::Entity, phone_message::Column::LineId)),
            )
            .and_where(
                Expr::col((phone_opt_out::Entity, phone_opt_out::Column::Recipient))
                    .equals((phone_message::Entity, phone_message::Column::ToNumber)),
            )
            .to_owned();
        let rows: std::collections::HashMap<i64, ClaimRow> = phone_message::Entity::find()
            .expr_as(Expr::exists(opted_out), "opted_out")
            .filter(phone_message::Column::Id.is_in(ids.iter().copied()))
            .lock_exclusive()
            .into_model::<ClaimRow>()
            .all(txn)
            .await?
            .into_iter()
            .map(|r| (r.message.id, r))
            .collect();
        let claimable: Vec<i64> = rows
            .values()
            .filter(|r| r.message.status == "pending" && !r.opted_out)
            .map(|r| r.message.id)
            .collect();
        if !claimable.is_empty() {
            phone_message::Entity::update_many()
                .col_expr(phone_message::Column::Status, Expr::value("submitting"))
                .col_expr(phone_message::Column::UpdatedAt, Expr::value(Utc::now()))
                .filter(phone_message::Column::Id.is_in(claimable))
                .exec(txn)
                .await?;
        }
        // A message claimed twice in one batch is claimed by the first.
        let mut claimed = std::collections::HashSet::new();
        Ok(ids
            .iter()
            .map(|id| match rows.get(id) {
                None => Claim::Gone,
                Some(r) if r.message.status != "pending" => {
                    Claim::NotPending(r.message.status.clone())
                }
                Some(r) if r.opted_out => Claim::OptedOut,
                Some(_) if !claimed.insert(*id) => Claim::NotPending("submitting".into()),
                Some(r) => Claim::Claimed(Box::new(r.message.clone())),
            })
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
            claims: self.claims.clone(),
            carrier: self.carrier.clone(),
            line,
        })))
    }

    async fn record(
        &self,
        txn: &DatabaseTransaction,
        lane: &str,
        job: &Job,
        outcome: &Outcome,
    ) -> Result<Next, DbErr> {
        self.record_many(txn, &[(lane, job, outcome)])
            .await
            .map(|_| Next::Continue)
    }

    /// Every attempt's message in one `UPDATE … CASE`: its new status (a
    /// report the carrier gave with its acceptance already applied, where
    /// rule 7 lets it count), its carrier id and error.
    async fn record_many(
        &self,
        txn: &DatabaseTransaction,
        attempts: &[(&str, &Job, &Outcome)],
    ) -> Result<Vec<Next>, DbErr> {
        self.keep(record_messages(txn, attempts).await?);
        Ok(vec![Next::Continue; attempts.len()])
    }

    /// A submission's outcome learned after its job was settled (the
    /// sender lost its lease mid-submit and an operator resolved the held
    /// message, or the line's jobs were cancelled): the same fenced update,
    /// so the carrier id is kept and reports can be matched.
    async fn record_late(
        &self,
        txn: &DatabaseTransaction,
        attempts: &[(&str, &Job, &Outcome)],
    ) -> Result<(), DbErr> {
        self.keep(record_messages(txn, attempts).await?);
        Ok(())
    }

    fn committed(&self) -> Vec<crate::bus::BusEvent> {
        match self.held.lock() {
            Ok(mut held) => std::mem::take(&mut *held).events(),
            Err(_) => Vec::new(),
        }
    }

    fn retention(&self) -> Duration {
        Duration::from_secs(30 * 24 * 3600)
    }

    /// The lines' daily spend is needed for today only; a month is kept
    /// for operators.
    async fn pruned(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let before = super::limits::day(Utc::now() - chrono::Duration::days(31));
        phone_daily_spend::Entity::delete_many()
            .filter(phone_daily_spend::Column::Day.lt(before))
            .exec(db)
            .await?;
        Ok(())
    }
}

/// Records attempts on their messages, fenced: a message's status only
/// moves forward from the states the outcome can follow, so an outcome
/// learned late (by a sender that lost its lease mid-submit) never undoes
/// a newer one, and the carrier id the carrier gave is always kept.
async fn record_messages(
    txn: &DatabaseTransaction,
    attempts: &[(&str, &Job, &Outcome)],
) -> Result<Notices, DbErr> {
    let mut updates: Vec<Recorded> = Vec::with_capacity(attempts.len());
    for (_, job, outcome) in attempts {
        let Some(id) = message_id(job) else { continue };
        let (status, from, result): (_, &'static [&'static str], _) = match outcome {
            // The carrier's answer settles what a new holder could only
            // hold as unknown.
            Outcome::Done(r) => ("submitted", &["submitting", "held"], r),
            // Also a message never claimed (its recipient opted out).
            Outcome::Failed(r) => ("failed", &["pending", "submitting", "held"], r),
            // Only the claim's own state: never over a known outcome.
            Outcome::Held(r) => ("held", &["submitting"], r),
            // Nothing reached the carrier: safe to send again.
            Outcome::Retry { result, .. } => ("pending", &["submitting", "held"], result),
            Outcome::Skipped(_) => continue,
        };
        let report = match (outcome, result["report"].as_str()) {
            (Outcome::Done(_), Some("delivered")) => Some("delivered"),
            (Outcome::Done(_), Some("failed")) => Some("failed"),
            (Outcome::Done(_), Some("read")) => Some("read"),
            _ => None,
        };
        updates.push(Recorded {
            id,
            status,
            from,
            report,
            carrier_id: result["carrierId"].as_str().map(String::from),
            error: result["error"].as_str().map(String::from),
        });
    }
    refuse_unrecorded_reports(txn, &mut updates).await?;
    // The messages this batch holds: locked, so a concurrent record
    // cannot hold them too; the fenced update below moves exactly these.
    let holding: Vec<i64> = updates
        .iter()
        .filter(|u| u.status == "held")
        .map(|u| u.id)
        .collect();
    let held = if holding.is_empty() {
        Vec::new()
    } else {
        phone_message::Entity::find()
            .filter(phone_message::Column::Id.is_in(holding))
            .filter(phone_message::Column::Status.eq("submitting"))
            // Accounts' notification sequences are then locked in one order.
            .order_by_asc(phone_message::Column::AccountId)
            .order_by_asc(phone_message::Column::Id)
            .lock_exclusive()
            .all(txn)
            .await?
    };
    update_messages(txn, &updates).await?;
    notify_held(txn, &held).await
}

/// `phone.message_held` to the account's operators for each message held,
/// in the recording transaction, last.
async fn notify_held(
    txn: &DatabaseTransaction,
    held: &[phone_message::Model],
) -> Result<Notices, DbErr> {
    let mut notices = Notices::default();
    let now = Utc::now();
    for m in held {
        let n = crate::notifications::New {
            account_id: m.account_id.clone(),
            topic: crate::notifications::topics::PHONE_MESSAGE_HELD,
            title: format!("Text {} is held", m.id),
            body: format!(
                "The carrier's answer for the text to {} is unknown; it is held, not re-sent. Resolve it (admin list-held-messages, resolve-held-message).",
                m.to_number
            ),
            data: serde_json::json!({ "messageId": m.id, "lineId": m.line_id }),
        };
        notices.merge(crate::notifications::notify(txn, n, now).await?);
    }
    Ok(notices)
}

/// One message's recorded attempt.
struct Recorded {
    id: i64,
    status: &'static str,
    /// The statuses `status` may follow.
    from: &'static [&'static str],
    /// The report that came with the carrier's acceptance, if any.
    report: Option<&'static str>,
    carrier_id: Option<String>,
    error: Option<String>,
}

/// Drops the reports rule 7 does not let count (RCS on a line that shares
/// its messaging profile); one read for the batch, and only when RCS
/// messages brought reports.
async fn refuse_unrecorded_reports(
    txn: &DatabaseTransaction,
    updates: &mut [Recorded],
) -> Result<(), DbErr> {
    let reported: Vec<i64> = updates
        .iter()
        .filter(|u| u.report.is_some())
        .map(|u| u.id)
        .collect();
    if reported.is_empty() {
        return Ok(());
    }
    let rcs: Vec<(i64, i64)> = phone_message::Entity::find()
        .select_only()
        .column(phone_message::Column::Id)
        .column(phone_message::Column::LineId)
        .filter(phone_message::Column::Id.is_in(reported))
        .filter(phone_message::Column::Channel.eq("rcs"))
        .into_tuple()
        .all(txn)
        .await?;
    let mut lines: std::collections::HashMap<i64, bool> = Default::default();
    for (id, line) in rcs {
        let recorded = match lines.get(&line) {
            Some(r) => *r,
            None => {
                let r = reports_recorded(txn, "rcs", line).await?;
                lines.insert(line, r);
                r
            }
        };
        if !recorded && let Some(u) = updates.iter_mut().find(|u| u.id == id) {
            u.report = None;
        }
    }
    Ok(())
}

/// One statement for the whole batch: each message's status and error
/// change only from the statuses its outcome may follow; a carrier id is
/// set where none is recorded yet.
async fn update_messages(txn: &DatabaseTransaction, updates: &[Recorded]) -> Result<(), DbErr> {
    use sea_orm::sea_query::{CaseStatement, ExprTrait};
    if updates.is_empty() {
        return Ok(());
    }
    let col = |c: phone_message::Column| Expr::col((phone_message::Entity, c));
    let is = |id: i64| col(phone_message::Column::Id).eq(id);
    let (mut status, mut carrier, mut error) = (
        CaseStatement::new(),
        None::<CaseStatement>,
        CaseStatement::new(),
    );
    for u in updates {
        let follows =
            || is(u.id).and(col(phone_message::Column::Status).is_in(u.from.iter().copied()));
        status = status.case(follows(), Expr::value(u.report.unwrap_or(u.status)));
        error = error.case(follows(), Expr::value(u.error.clone()));
        if let Some(id) = &u.carrier_id {
            let unset = is(u.id).and(col(phone_message::Column::CarrierMessageId).is_null());
            carrier = Some(
                carrier
                    .unwrap_or_default()
                    .case(unset, Expr::value(id.clone())),
            );
        }
    }
    let mut q = phone_message::Entity::update_many()
        .col_expr(
            phone_message::Column::Status,
            status
                .finally(Expr::col(phone_message::Column::Status))
                .into(),
        )
        .col_expr(
            phone_message::Column::Error,
            error
                .finally(Expr::col(phone_message::Column::Error))
                .into(),
        )
        .col_expr(phone_message::Column::UpdatedAt, Expr::value(Utc::now()));
    if let Some(carrier) = carrier {
        q = q.col_expr(
            phone_message::Column::CarrierMessageId,
            carrier
                .finally(Expr::col(phone_message::Column::CarrierMessageId))
                .into(),
        );
    }
    q.filter(phone_message::Column::Id.is_in(updates.iter().map(|u| u.id)))
        .exec(txn)
        .await?;
    Ok(())
}

struct Worker {
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
        // The claim: committed before anything leaves.
        let msg = match self.claims.submit(id).await? {
            Claim::Claimed(msg) => msg,
            Claim::OptedOut => {
                return Ok(Outcome::Failed(json!({
                    "error": "the recipient opted out (STOP) after the message was queued"
                })));
            }
            Claim::NotPending(status) if status == "submitting" => {
                return Ok(Outcome::Held(json!({
                    "error": "an earlier submission was interrupted; its outcome is unknown"
                })));
            }
            Claim::NotPending(status) => {
                return Ok(Outcome::Skipped(
                    json!({ "error": format!("message is {status}") }),
                ));
            }
            Claim::Gone => return Ok(Outcome::Skipped(json!({ "error": "message gone" }))),
        };
        let out = Outgoing {
            message_id: msg.id,
            channel: msg.channel,
            from: self.line.number.clone(),
            to: msg.to_number,
            text: msg.text,
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use sea_orm::{ActiveModelTrait, Set};
    use serde_json::json;

    use super::*;
    use crate::auth::tenancy::{self, NewAccount, NewLine};
    use crate::outbox::committer::{Committer, Recorded};
    use crate::outbox::{NewJob, Queue, store};
    use crate::phone::carrier::{SimMode, Simulated};

    struct Setup {
        db: DatabaseConnection,
        committer: Committer,
        queue: Arc<Queue>,
        line: String,
        _dir: tempfile::TempDir,
    }

    async fn setup() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/sender.db?mode=rwc", dir.path().display());
        let db = crate::db::connect(&url).await.unwrap();
        crate::db::migrate(&db).await.unwrap();
        let mut account = NewAccount::named("Acme");
        account.phone_lines = true;
        let account = tenancy::create_account(&db, account).await.unwrap();
        let line = tenancy::provision_line(
            &db,
            NewLine {
                account_id: account,
                number: "+14155550100".into(),
                kind: "sms".into(),
                rcs_agent_verified: false,
                messaging_profile: None,
                inactive: false,
            },
        )
        .await
        .unwrap();
        let writes = WriteGate::for_db(&db);
        let sender = Sender::new(
            Arc::new(Simulated::new(SimMode::Deliver)),
            db.clone(),
            writes.clone(),
        );
        Setup {
            committer: Committer::start(
                db.clone(),
                writes,
                crate::bus::EventBus::in_process("test".into()),
            ),
            queue: Arc::new(Queue::new(Arc::new(sender))),
            db,
            line: line.to_string(),
            _dir: dir,
        }
    }

    impl Setup {
        /// A message claimed for sending (`submitting`) and its job.
        async fn submitting(&self, text: &str) -> (i64, Job) {
            let line = phone_line::Entity::find_by_id(self.line.parse::<i64>().unwrap())
                .one(&self.db)
                .await
                .unwrap()
                .unwrap();
            let now = Utc::now();
            let msg = phone_message::ActiveModel {
                account_id: Set(line.account_id),
                line_id: Set(line.id),
                channel: Set("sms".into()),
                to_number: Set("+14155550124".into()),
                text: Set(text.into()),
                request_id: Set(uuid::Uuid::new_v4().to_string()),
                segments: Set(1),
                encoding: Set("gsm7".into()),
                cost_micros: Set(0),
                status: Set("submitting".into()),
                created_at: Set(now),
                updated_at: Set(now),
                ..Default::default()
            }
            .insert(&self.db)
            .await
            .unwrap();
            let payload = serde_json::to_string(&MessageJob { message_id: msg.id }).unwrap();
            store::enqueue(
                &self.db,
                &[NewJob {
                    queue: QUEUE,
                    lane: self.line.clone(),
                    payload: payload.clone(),
                }],
            )
            .await
            .unwrap();
            let job = entity::outbox_job::Entity::find()
                .filter(entity::outbox_job::Column::Payload.eq(payload))
                .one(&self.db)
                .await
                .unwrap()
                .unwrap();
            (msg.id, job)
        }

        async fn record(&self, job: &Job, outcome: Outcome) -> Recorded {
            self.committer
                .record(self.queue.clone(), self.line.clone(), job.clone(), outcome)
                .await
                .unwrap()
        }

        /// The message's status and carrier id, and its job's state.
        async fn state(&self, id: i64, job: &Job) -> (String, Option<String>, String) {
            let m = phone_message::Entity::find_by_id(id)
                .one(&self.db)
                .await
                .unwrap()
                .unwrap();
            let j = entity::outbox_job::Entity::find_by_id(job.id)
                .one(&self.db)
                .await
                .unwrap()
                .unwrap();
            (m.status, m.carrier_message_id, j.state)
        }
    }

    fn accepted(carrier_id: &str) -> Outcome {
        Outcome::Done(json!({ "carrierId": carrier_id, "report": null }))
    }

    fn held() -> Outcome {
        Outcome::Held(json!({ "error": "an earlier submission was interrupted" }))
    }

    fn not_sent() -> Outcome {
        Outcome::Retry {
            after: Duration::from_secs(5),
            result: json!({ "error": "connection refused" }),
        }
    }

    fn st(status: &str, carrier: Option<&str>, job: &str) -> (String, Option<String>, String) {
        (status.into(), carrier.map(String::from), job.into())
    }

    #[tokio::test]
    async fn a_late_carrier_answer_settles_a_message_the_new_holder_held() {
        let s = setup().await;
        let (id, job) = s.submitting("a").await;
        // The new holder found it mid-submit: held.
        assert!(matches!(s.record(&job, held()).await, Recorded::Next(_)));
        assert_eq!(s.state(id, &job).await, st("held", None, "held"));
        // The old holder's carrier answer arrives: recorded, forward.
        assert!(matches!(
            s.record(&job, accepted("c-1")).await,
            Recorded::Next(_)
        ));
        assert_eq!(
            s.state(id, &job).await,
            st("submitted", Some("c-1"), "done")
        );
        // Its delivery report now matches.
        let m = phone_message::Entity::find_by_id(id)
            .one(&s.db)
            .await
            .unwrap()
            .unwrap();
        assert!(record_report(&s.db, &m, "delivered").await.unwrap());
        // Stale outcomes after that change nothing.
        for stale in [held(), not_sent(), accepted("c-other")] {
            assert_eq!(s.record(&job, stale).await, Recorded::Gone);
            assert_eq!(
                s.state(id, &job).await,
                st("delivered", Some("c-1"), "done")
            );
        }
    }

    #[tokio::test]
    async fn a_stale_hold_never_undoes_a_recorded_submission() {
        let s = setup().await;
        let (id, job) = s.submitting("b").await;
        s.record(&job, accepted("c-2")).await;
        assert_eq!(s.record(&job, held()).await, Recorded::Gone);
        assert_eq!(
            s.state(id, &job).await,
            st("submitted", Some("c-2"), "done")
        );

        // Held by a new holder, then the old one learns nothing reached the
        // carrier: pending again, to be sent.
        let (id, job) = s.submitting("c").await;
        s.record(&job, held()).await;
        s.record(&job, not_sent()).await;
        assert_eq!(s.state(id, &job).await, st("pending", None, "pending"));
    }

    #[tokio::test]
    async fn a_carrier_id_learned_after_an_operator_resolved_the_message_is_kept() {
        let s = setup().await;
        let (id, job) = s.submitting("d").await;
        s.record(&job, held()).await;
        crate::phone::admin::resolve_held(&s.db, &id.to_string(), true, None)
            .await
            .unwrap();
        assert_eq!(s.state(id, &job).await, st("submitted", None, "done"));
        // The job is settled; the carrier id is recorded all the same.
        assert_eq!(s.record(&job, accepted("c-3")).await, Recorded::Gone);
        assert_eq!(
            s.state(id, &job).await,
            st("submitted", Some("c-3"), "done")
        );
    }
}
