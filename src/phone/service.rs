//! Accepting a text message: every check, the idempotency rule and the
//! enqueue, in one write transaction. The 202 goes out only after the
//! commit; nothing is written on any error.

use std::collections::HashMap;

use chrono::Utc;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseTransaction, DbErr, EntityTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};
use serde_json::json;

use entity::{account, phone_line, phone_message, phone_opt_out};

use super::limits::{self, Breach};
use super::model::{Channel, QueuedMessage, TextMessage};
use super::sender::{MessageJob, QUEUE};
use crate::caller::CallerInfo;
use crate::db::group::{self, Batch, GroupCommit};
use crate::error::{ApiError, Kind};
use crate::ops::Ctx;
use crate::outbox::{self, Kicks, NewJob};

pub const STATUS_PENDING: &str = "pending";

fn bad(code: &'static str, field: Option<&str>, message: String) -> ApiError {
    ApiError::Coded {
        kind: Kind::Invalid,
        code,
        message,
        field: field.map(String::from),
        details: None,
    }
}

/// The database could not take the message: 503, safe to retry with the
/// same requestId (nothing was committed).
fn unavailable(err: &dyn std::fmt::Display) -> ApiError {
    tracing::warn!(error = %err, "phone: cannot queue a message");
    ApiError::ServiceUnavailable(
        "the message could not be safely queued; retry with the same requestId".into(),
    )
}

/// Accepts go through one group commit (a batch of requests, one
/// transaction, one fsync on SQLite): each request in its own savepoint, in
/// arrival order, so the limits of a line count the batch's earlier
/// messages and a request that fails leaves no trace.
#[derive(Clone)]
pub struct Acceptor(GroupCommit<Accepts>);

impl Acceptor {
    pub fn start(db: sea_orm::DatabaseConnection, writes: crate::db::WriteGate) -> Self {
        Acceptor(GroupCommit::start(db, writes, Accepts))
    }
}

pub struct Accept {
    account_id: String,
    msg: TextMessage,
}

pub enum Accepted {
    New(i64, Kicks),
    Duplicate(i64),
    Refused(ApiError),
    /// Another transaction (another instance) committed this requestId
    /// first: answered as a retry once this batch is done.
    Raced,
    Failed(DbErr),
}

pub struct Accepts;

#[async_trait::async_trait]
impl Batch for Accepts {
    type Item = Accept;
    type Out = Accepted;
    const NAME: &'static str = "phone accepts";

    async fn run(
        &self,
        txn: &DatabaseTransaction,
        items: &[Accept],
    ) -> Result<Vec<Accepted>, DbErr> {
        // SQLite has one writer, this batch, so nothing can come between
        // its reads and its writes: the new messages go in with one
        // multi-row insert at the end. PostgreSQL inserts each at once, in
        // a savepoint, since another instance may race a requestId.
        let deferred = txn.get_database_backend() == sea_orm::DbBackend::Sqlite;
        let mut seen = Seen::read(txn, items).await?;
        let mut slots = Vec::with_capacity(items.len());
        let mut fresh: Vec<(&Accept, i64)> = Vec::new();
        for a in items {
            slots.push(match seen.check(txn, &a.account_id, &a.msg).await {
                Err(Failure::Api(e)) => Slot::Done(Accepted::Refused(e)),
                Err(Failure::Db(e)) => return Err(e),
                Ok(Verdict::Duplicate(Held::Id(id))) => Slot::Done(Accepted::Duplicate(id)),
                Ok(Verdict::Duplicate(Held::Fresh(k))) => Slot::DuplicateOf(k),
                Ok(Verdict::New { cost }) if deferred => {
                    let k = fresh.len();
                    fresh.push((a, cost));
                    seen.accepted(&a.account_id, &a.msg, Held::Fresh(k), cost);
                    Slot::Fresh(k)
                }
                Ok(Verdict::New { cost }) => {
                    let written =
                        group::item(txn, async |sp| write(sp, &[(a, cost)]).await).await?;
                    match written {
                        Ok(ids) => {
                            let id = ids.first().copied().unwrap_or_default();
                            seen.accepted(&a.account_id, &a.msg, Held::Id(id), cost);
                            Slot::Done(Accepted::New(id, kicks(a)))
                        }
                        Err(e) if is_unique(&e) => Slot::Done(Accepted::Raced),
                        Err(e) => Slot::Done(Accepted::Failed(e)),
                    }
                }
            });
        }
        let ids = write(txn, &fresh).await?;
        Ok(slots
            .into_iter()
            .map(|slot| match slot {
                Slot::Done(out) => out,
                Slot::Fresh(k) => Accepted::New(ids[k], kicks(fresh[k].0)),
                Slot::DuplicateOf(k) => Accepted::Duplicate(ids[k]),
            })
            .collect())
    }
}

/// An item's answer while its batch runs: known, or a message of the
/// batch's final insert.
enum Slot {
    Done(Accepted),
    Fresh(usize),
    DuplicateOf(usize),
}

/// Who holds a requestId: a message in the database, or the batch's k-th
/// new one (not inserted yet).
#[derive(Clone, Copy)]
enum Held {
    Id(i64),
    Fresh(usize),
}

fn kicks(a: &Accept) -> Kicks {
    let mut kicks = Kicks::default();
    kicks.add(QUEUE, &a.msg.line_id.to_string());
    kicks
}

fn is_unique(e: &DbErr) -> bool {
    matches!(
        e.sql_err(),
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_))
    )
}

/// The message that holds a requestId.
struct Prior {
    id: Held,
    line_id: i64,
    to: String,
    text: String,
    channel: String,
}

impl From<phone_message::Model> for Prior {
    fn from(m: phone_message::Model) -> Self {
        Prior {
            id: Held::Id(m.id),
            line_id: m.line_id,
            to: m.to_number,
            text: m.text,
            channel: m.channel,
        }
    }
}

impl Prior {
    /// Its id when `msg` is the same request; 409 when the requestId was
    /// used for anything else.
    fn answer(&self, msg: &TextMessage) -> Result<Held, Failure> {
        let same = self.line_id == msg.line_id
            && self.to == msg.to.as_str()
            && self.text == msg.text
            && self.channel == msg.channel.as_str();
        if same {
            return Ok(self.id);
        }
        let reason = if self.channel != msg.channel.as_str() {
            "the requestId was already used on the other channel"
        } else {
            "the requestId was already used with a different line, destination or text"
        };
        Err(Failure::Api(ApiError::Conflict {
            message: format!("{reason}; use a new requestId for a new message"),
            details: Some(json!({ "requestId": msg.request_id.to_string() })),
        }))
    }
}

struct LineState {
    line: phone_line::Model,
    limits: limits::Limits,
    used: limits::Used,
}

enum Verdict {
    Duplicate(Held),
    New { cost: i64 },
}

/// What one batch has read: each account, line and requestId once, then
/// kept current with what the batch itself accepts. All of it is read in
/// the batch's write transaction (which holds the lines' row locks on
/// PostgreSQL; SQLite's is exclusive), so it is what is committed.
struct Seen {
    now: chrono::DateTime<Utc>,
    enrolled: HashMap<String, bool>,
    prior: HashMap<(String, uuid::Uuid), Prior>,
    lines: HashMap<(String, i64), Option<LineState>>,
    account_spent: HashMap<String, Option<i64>>,
    /// (line, recipient) pairs of the batch that opted out.
    opted_out: std::collections::HashSet<(i64, String)>,
}

impl Seen {
    /// Reads the batch's requestIds up front, one query per account.
    async fn read(txn: &DatabaseTransaction, items: &[Accept]) -> Result<Self, DbErr> {
        let mut by_account: HashMap<&str, Vec<String>> = HashMap::new();
        for a in items {
            by_account
                .entry(a.account_id.as_str())
                .or_default()
                .push(a.msg.request_id.to_string());
        }
        let mut prior = HashMap::new();
        for (account_id, ids) in by_account {
            for m in phone_message::Entity::find()
                .filter(phone_message::Column::AccountId.eq(account_id))
                .filter(phone_message::Column::RequestId.is_in(ids))
                .all(txn)
                .await?
            {
                if let Ok(rid) = uuid::Uuid::parse_str(&m.request_id) {
                    prior.insert((account_id.to_string(), rid), Prior::from(m));
                }
            }
        }
        let mut seen = Seen {
            now: Utc::now(),
            enrolled: HashMap::new(),
            prior,
            lines: HashMap::new(),
            account_spent: HashMap::new(),
            opted_out: Default::default(),
        };
        // The batch's opt-outs in one query (a superset: any of its lines
        // with any of its recipients), kept for the exact pairs.
        let mut recipients: Vec<String> = items
            .iter()
            .map(|a| a.msg.to.as_str().to_string())
            .collect();
        recipients.sort_unstable();
        recipients.dedup();
        let mut line_ids: Vec<i64> = items.iter().map(|a| a.msg.line_id).collect();
        line_ids.sort_unstable();
        line_ids.dedup();
        seen.opted_out = phone_opt_out::Entity::find()
            .filter(phone_opt_out::Column::LineId.is_in(line_ids))
            .filter(phone_opt_out::Column::Recipient.is_in(recipients))
            .all(txn)
            .await?
            .into_iter()
            .map(|o| (o.line_id, o.recipient))
            .collect();
        // Every line of the batch in four queries, locked in id order: two
        // instances' batches then never wait on each other's locks in a
        // cycle.
        let mut wanted: Vec<(i64, String)> = items
            .iter()
            .map(|a| (a.msg.line_id, a.account_id.clone()))
            .collect();
        wanted.sort_unstable();
        wanted.dedup();
        let ids: Vec<i64> = wanted.iter().map(|w| w.0).collect();
        let lines: HashMap<i64, phone_line::Model> = phone_line::Entity::find()
            .filter(phone_line::Column::Id.is_in(ids.clone()))
            .order_by_asc(phone_line::Column::Id)
            .lock_exclusive()
            .all(txn)
            .await?
            .into_iter()
            .map(|l| (l.id, l))
            .collect();
        let owned: Vec<(i64, String)> = wanted
            .iter()
            .filter(|(id, account)| lines.get(id).is_some_and(|l| l.account_id == *account))
            .cloned()
            .collect();
        let mut limits = limits::for_lines(txn, &owned).await?;
        let used = limits::used_by_lines(txn, &ids, seen.now).await?;
        for (id, account) in wanted {
            // Another account's line is no line of this caller's.
            let state = lines
                .get(&id)
                .filter(|l| l.account_id == account)
                .and_then(|l| {
                    Some(LineState {
                        line: l.clone(),
                        limits: limits.remove(&id)?,
                        used: used.get(&id).copied().unwrap_or_default(),
                    })
                });
            seen.lines.insert((account, id), state);
        }
        Ok(seen)
    }

    /// Every check of rule order: enrolment, idempotency, the line, the
    /// recipient's opt-out, the sending limits. Writes nothing.
    async fn check(
        &mut self,
        txn: &DatabaseTransaction,
        account_id: &str,
        msg: &TextMessage,
    ) -> Result<Verdict, Failure> {
        let enrolled = match self.enrolled.get(account_id) {
            Some(e) => *e,
            None => {
                let e = account::Entity::find_by_id(account_id.to_string())
                    .one(txn)
                    .await?
                    .is_some_and(|a| a.phone_lines_enabled);
                self.enrolled.insert(account_id.to_string(), e);
                e
            }
        };
        if !enrolled {
            return Err(ApiError::NotFound(
                "the account is not enrolled in agent phone lines".into(),
            )
            .into());
        }
        if let Some(p) = self.prior.get(&(account_id.to_string(), msg.request_id)) {
            return p.answer(msg).map(Verdict::Duplicate);
        }
        let Some(Some(state)) = self.lines.get(&(account_id.to_string(), msg.line_id)) else {
            return Err(ApiError::Coded {
                kind: Kind::NotFound,
                code: "NOT_FOUND",
                message: "phone line not found".into(),
                field: Some("endpointId".into()),
                details: None,
            }
            .into());
        };
        let line = &state.line;
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
        if self
            .opted_out
            .contains(&(line.id, msg.to.as_str().to_string()))
        {
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
        let cost = i64::from(msg.count.segments) * state.limits.segment_price_micros;
        let account_spent = match state.limits.account_daily_spend_cap_micros {
            None => None,
            Some(_) => match self.account_spent.get(account_id) {
                Some(s) => *s,
                None => {
                    let s = Some(limits::account_spent(txn, account_id, self.now).await?);
                    self.account_spent.insert(account_id.to_string(), s);
                    s
                }
            },
        };
        if let Some(breach) = limits::judge(
            &state.limits,
            &state.used,
            account_spent,
            msg.country.as_deref(),
            cost,
        ) {
            return Err(refusal(breach).into());
        }
        Ok(Verdict::New { cost })
    }

    /// Counts a message the batch accepted, for the items after it.
    fn accepted(&mut self, account_id: &str, msg: &TextMessage, id: Held, cost: i64) {
        if let Some(Some(state)) = self.lines.get_mut(&(account_id.to_string(), msg.line_id)) {
            state.used.last_minute += 1;
            state.used.spent_micros += cost;
        }
        if let Some(Some(s)) = self.account_spent.get_mut(account_id) {
            *s += cost;
        }
        self.prior.insert(
            (account_id.to_string(), msg.request_id),
            Prior {
                id,
                line_id: msg.line_id,
                to: msg.to.as_str().to_string(),
                text: msg.text.clone(),
                channel: msg.channel.as_str().to_string(),
            },
        );
    }
}

fn refusal(breach: Breach) -> ApiError {
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
    ApiError::Coded {
        kind: Kind::Invalid,
        code,
        message,
        field: field.map(String::from),
        details: Some(details),
    }
}

/// Writes new messages, their outbox jobs and their lines' spend, three
/// statements whatever their number; answers their ids in order.
async fn write(txn: &DatabaseTransaction, fresh: &[(&Accept, i64)]) -> Result<Vec<i64>, DbErr> {
    if fresh.is_empty() {
        return Ok(Vec::new());
    }
    let now = Utc::now();
    let rows = phone_message::Entity::insert_many(fresh.iter().map(|(a, cost)| {
        let msg = &a.msg;
        phone_message::ActiveModel {
            account_id: Set(a.account_id.clone()),
            line_id: Set(msg.line_id),
            channel: Set(msg.channel.as_str().into()),
            to_number: Set(msg.to.as_str().into()),
            text: Set(msg.text.clone()),
            request_id: Set(msg.request_id.to_string()),
            segments: Set(msg.count.segments as i32),
            encoding: Set(msg.count.encoding.as_str().into()),
            cost_micros: Set(*cost),
            status: Set(STATUS_PENDING.into()),
            carrier_message_id: Set(None),
            error: Set(None),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
    }))
    .exec_with_returning(txn)
    .await?;
    // RETURNING's row order is unspecified: match rows by requestId.
    let by_request: HashMap<(String, String), i64> = rows
        .into_iter()
        .map(|m| ((m.account_id, m.request_id), m.id))
        .collect();
    let mut ids = Vec::with_capacity(fresh.len());
    let mut jobs = Vec::with_capacity(fresh.len());
    for (a, _) in fresh {
        let key = (a.account_id.clone(), a.msg.request_id.to_string());
        let id = *by_request
            .get(&key)
            .ok_or_else(|| DbErr::Custom("an inserted message was not returned".into()))?;
        ids.push(id);
        jobs.push(NewJob {
            queue: QUEUE,
            lane: a.msg.line_id.to_string(),
            payload: serde_json::to_string(&MessageJob { message_id: id })
                .map_err(|e| DbErr::Custom(e.to_string()))?,
        });
    }
    outbox::store::enqueue(txn, &jobs).await?;
    let spends: Vec<(i64, &str, i64)> = fresh
        .iter()
        .map(|(a, cost)| (a.msg.line_id, a.account_id.as_str(), *cost))
        .collect();
    limits::add_spend(txn, &spends, now).await?;
    Ok(ids)
}

/// What the caller gets: the queued message, new or the earlier one.
pub async fn accept(
    ctx: &Ctx,
    caller: &CallerInfo,
    msg: TextMessage,
) -> Result<QueuedMessage, ApiError> {
    let account_id = caller.account_id();
    let acceptor = ctx.get::<Acceptor>()?;
    let submitted = acceptor
        .0
        .submit(Accept {
            account_id: account_id.to_string(),
            msg: msg.clone(),
        })
        .await;
    let (id, duplicate) = match submitted {
        Err(not_committed) => return Err(unavailable(&not_committed)),
        Ok(Accepted::New(id, kicks)) => {
            outbox::announce(&ctx.bus, &kicks);
            (id, false)
        }
        Ok(Accepted::Duplicate(id)) => (id, true),
        Ok(Accepted::Refused(e)) => return Err(e),
        Ok(Accepted::Failed(e)) => return Err(unavailable(&e)),
        Ok(Accepted::Raced) => match earlier(&ctx.db, account_id, &msg).await {
            Ok(Some(id)) => (id, true),
            Ok(None) => return Err(unavailable(&"the requestId's first request vanished")),
            Err(Failure::Api(e)) => return Err(e),
            Err(Failure::Db(e)) => return Err(unavailable(&e)),
        },
    };
    Ok(QueuedMessage {
        outbox_id: id.to_string(),
        channel: (msg.channel == Channel::Rcs).then(|| "rcs".to_string()),
        status: STATUS_PENDING.into(),
        duplicate,
    })
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

/// The earlier message of the same requestId (after a race with another
/// instance): its id when it is the same request, else 409.
async fn earlier(
    conn: &impl ConnectionTrait,
    account_id: &str,
    msg: &TextMessage,
) -> Result<Option<i64>, Failure> {
    let prior = phone_message::Entity::find()
        .filter(phone_message::Column::AccountId.eq(account_id))
        .filter(phone_message::Column::RequestId.eq(msg.request_id.to_string()))
        .one(conn)
        .await?;
    let Some(p) = prior else {
        return Ok(None);
    };
    let id = p.id;
    Prior::from(p).answer(msg).map(|_| Some(id))
}
