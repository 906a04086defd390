//! Writing notifications (in the transaction of the change they report),
//! announcing them after the commit, and the reads and conditional
//! updates of the operations.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Func, OnConflict, Query};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};
use serde_json::{Value, json};

use entity::{
    notification as ntf, notification_preference as pref, notification_sequence as seqs,
    notification_setting as setting, user,
};

use super::model::NotificationOut;
use super::topics::{self, Audience};
use crate::bus::{BusEvent, EventBus};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Page, Paged};
use crate::outbox::Kicks;

/// The bus topics of this module.
pub const PREFIX: &str = "notification.";
/// A user has new notifications. Key: the user id; payload `{seq}`, the
/// newest; receivers read the rows from the database.
pub const CREATED: &str = "notification.created";

/// One notification to write, to every recipient of its topic's audience.
#[derive(Debug, Clone)]
pub struct New {
    pub account_id: String,
    pub topic: &'static str,
    pub title: String,
    pub body: String,
    /// The ids it is about (an object).
    pub data: Value,
}

/// The webhook event of a notification sent by webhook (the recipients
/// who chose that channel for its topic): one per notification, whatever
/// the number of such recipients.
pub const WEBHOOK_EVENT: &str = "notification.created";

/// Notifications written by a transaction, to announce once it committed:
/// `(account, user, seq)` per console recipient, and the webhook lanes
/// with new deliveries.
#[derive(Debug, Clone, Default)]
pub struct Notices(Vec<(String, i64, i64)>, Kicks);

impl Notices {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty() && self.1.is_empty()
    }

    pub fn merge(&mut self, other: Notices) {
        self.0.extend(other.0);
        self.1.merge(other.1);
    }

    /// One `notification.created` per recipient (its newest number).
    pub fn events(&self) -> Vec<BusEvent> {
        let mut newest: BTreeMap<i64, (&str, i64)> = BTreeMap::new();
        for (account, user, seq) in &self.0 {
            let e = newest.entry(*user).or_insert((account, *seq));
            e.1 = Ord::max(e.1, *seq);
        }
        newest
            .into_iter()
            .map(|(user, (account, seq))| {
                BusEvent::new(CREATED, account, user.to_string(), json!({ "seq": seq }))
            })
            .collect()
    }

    /// Tells every instance (this one first): one event per recipient.
    /// Call it after the commit: receivers read the rows.
    pub async fn publish(&self, bus: &EventBus) {
        for event in self.events() {
            bus.publish(event).await;
        }
        crate::outbox::announce(bus, &self.1);
    }

    /// [`Notices::publish`] from code that cannot wait.
    pub fn announce(self, bus: &EventBus) {
        if self.is_empty() {
            return;
        }
        let bus = bus.clone();
        tokio::spawn(async move { self.publish(&bus).await });
    }
}

pub fn new_id() -> String {
    format!("ntf_{}", uuid::Uuid::new_v4().simple())
}

/// Takes `n` numbers from the account's sequence; returns the last. The
/// sequence row stays locked until the caller commits, so an account's
/// notifications commit in the order of their numbers (a stream never
/// skips one that commits late). Called after the transaction's other
/// locks (what `notify` writes after it only inserts new rows), so it adds
/// no lock-order cycle.
async fn take_seqs(conn: &impl ConnectionTrait, account_id: &str, n: i64) -> Result<i64, DbErr> {
    let stmt = Query::insert()
        .into_table(seqs::Entity)
        .columns([seqs::Column::AccountId, seqs::Column::LastSeq])
        .values_panic([account_id.into(), n.into()])
        .on_conflict(
            OnConflict::column(seqs::Column::AccountId)
                .value(
                    seqs::Column::LastSeq,
                    Expr::col((seqs::Entity, seqs::Column::LastSeq)).add(n),
                )
                .to_owned(),
        )
        .returning_col(seqs::Column::LastSeq)
        .to_owned();
    let row = conn
        .query_one(&stmt)
        .await?
        .ok_or_else(|| DbErr::Custom("notification sequence: no row returned".into()))?;
    row.try_get::<i64>("", "last_seq")
}

/// Writes `n` for every recipient of its topic (its audience, each user's
/// channels): in the caller's transaction, so it exists exactly when the
/// change it reports does. A user with every channel off gets no row. A
/// transaction, not any connection: outside one, the sequence row's lock
/// would end with its own statement, two writers could commit their numbers
/// out of order, and a stream that had read the later one would skip the
/// earlier.
pub async fn notify(
    conn: &sea_orm::DatabaseTransaction,
    n: New,
    now: DateTime<Utc>,
) -> Result<Notices, DbErr> {
    let Some(audience) = topics::audience(n.topic) else {
        return Err(DbErr::Custom(format!(
            "unknown notification topic {}",
            n.topic
        )));
    };
    let mut q = user::Entity::find()
        .select_only()
        .column(user::Column::Id)
        .column(user::Column::Email)
        .filter(user::Column::AccountId.eq(n.account_id.as_str()));
    if audience == Audience::Admins {
        q = q.filter(user::Column::Role.is_in(["admin", "super-admin"]));
    }
    let users: Vec<(i64, String)> = q
        .order_by_asc(user::Column::Id)
        .into_tuple()
        .all(conn)
        .await?;
    if users.is_empty() {
        return Ok(Notices::default());
    }
    let ids: Vec<i64> = users.iter().map(|(id, _)| *id).collect();
    let chosen: Vec<(i64, String, bool)> = pref::Entity::find()
        .select_only()
        .column(pref::Column::UserId)
        .column(pref::Column::Channel)
        .column(pref::Column::Enabled)
        .filter(pref::Column::UserId.is_in(ids.clone()))
        .filter(pref::Column::Topic.eq(n.topic))
        .into_tuple()
        .all(conn)
        .await?;
    let chosen: HashMap<(i64, String), bool> =
        chosen.into_iter().map(|(u, c, on)| ((u, c), on)).collect();
    let on = |u: i64, channel: &str| {
        chosen
            .get(&(u, channel.to_string()))
            .copied()
            .unwrap_or_else(|| topics::default_on(channel))
    };
    let addresses: HashMap<i64, Option<String>> = setting::Entity::find()
        .select_only()
        .column(setting::Column::UserId)
        .column(setting::Column::EmailAddress)
        .filter(setting::Column::UserId.is_in(ids))
        .into_tuple::<(i64, Option<String>)>()
        .all(conn)
        .await?
        .into_iter()
        .collect();
    let recipients: Vec<(i64, bool, bool, Option<String>)> = users
        .into_iter()
        .filter_map(|(u, login)| {
            let console = on(u, topics::CONSOLE);
            let email = on(u, topics::EMAIL);
            let webhook = on(u, topics::WEBHOOK);
            if !(console || email || webhook) {
                return None;
            }
            let email_to = email.then(|| {
                addresses
                    .get(&u)
                    .cloned()
                    .flatten()
                    .unwrap_or_else(|| login.clone())
            });
            Some((u, console, webhook, email_to))
        })
        .collect();
    if recipients.is_empty() {
        return Ok(Notices::default());
    }
    let count = recipients.len() as i64;
    let last = take_seqs(conn, &n.account_id, count).await?;
    let data = n.data.to_string();
    let mut notices = Notices::default();
    let mut by_webhook: Vec<Value> = Vec::new();
    let rows: Vec<ntf::ActiveModel> = recipients
        .into_iter()
        .enumerate()
        .map(|(i, (u, console, webhook, email_to))| {
            let seq = last - count + 1 + i as i64;
            let id = new_id();
            if console {
                notices.0.push((n.account_id.clone(), u, seq));
            }
            if webhook {
                by_webhook.push(json!({"notificationId": id, "userId": u}));
            }
            ntf::ActiveModel {
                id: Set(id),
                account_id: Set(n.account_id.clone()),
                user_id: Set(u),
                seq: Set(seq),
                topic: Set(n.topic.to_string()),
                title: Set(n.title.clone()),
                body: Set(n.body.clone()),
                data: Set(data.clone()),
                in_console: Set(console),
                email_to: Set(email_to),
                created_at: Set(now),
                read_at: Set(None),
                acknowledged_at: Set(None),
            }
        })
        .collect();
    ntf::Entity::insert_many(rows)
        .exec_without_returning(conn)
        .await?;
    if !by_webhook.is_empty() {
        let Value::Object(body) = json!({
            "topic": n.topic, "title": n.title, "body": n.body, "data": n.data,
            "recipients": by_webhook,
        }) else {
            return Err(DbErr::Custom("notification webhook body".into()));
        };
        notices.1 =
            crate::webhook_events::emit_to_account(conn, &n.account_id, WEBHOOK_EVENT, body, now)
                .await?;
    }
    Ok(notices)
}

/// The caller's notifications shown in the console (and the stream).
fn mine(caller: &CallerInfo) -> sea_orm::Select<ntf::Entity> {
    ntf::Entity::find()
        .filter(ntf::Column::AccountId.eq(caller.account_id()))
        .filter(ntf::Column::UserId.eq(caller.user.id))
        .filter(ntf::Column::InConsole.eq(true))
}

/// Newest first; `unread` only those not read yet; `topic` only that one.
pub async fn list(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    page: Page<20, 100>,
    unread: bool,
    topic: Option<&str>,
) -> Result<Paged<NotificationOut>, ApiError> {
    let mut q = mine(caller);
    if unread {
        q = q.filter(ntf::Column::ReadAt.is_null());
    }
    if let Some(t) = topic {
        q = q.filter(ntf::Column::Topic.eq(t));
    }
    let q = q.order_by_desc(ntf::Column::Seq);
    Ok(page.fetch(db, q, NotificationOut::from).await?)
}

/// One of the caller's notifications, marked read (once: a conditional
/// update, so two instances reading it at once record one time).
pub async fn read(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<NotificationOut, ApiError> {
    let not_found = || ApiError::not_found("notification");
    let row = mine(caller)
        .filter(ntf::Column::Id.eq(id))
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    if row.read_at.is_some() {
        return Ok(row.into());
    }
    ntf::Entity::update_many()
        .col_expr(ntf::Column::ReadAt, Expr::value(Some(Utc::now())))
        .filter(ntf::Column::Id.eq(id))
        .filter(ntf::Column::ReadAt.is_null())
        .exec(db)
        .await?;
    let row = mine(caller)
        .filter(ntf::Column::Id.eq(id))
        .one(db)
        .await?
        .ok_or_else(not_found)?;
    Ok(row.into())
}

/// Which notifications to acknowledge.
pub enum Which {
    Ids(Vec<String>),
    All,
}

/// Acknowledges (and marks read) the caller's notifications; answers the
/// ids this call acknowledged. Unknown ids (or another user's) are a 404
/// and nothing is written. One conditional update: of two instances
/// acknowledging the same notification at once, one counts it.
pub async fn acknowledge(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    which: Which,
) -> Result<Vec<String>, ApiError> {
    let now = Utc::now();
    let mut update = ntf::Entity::update_many()
        .col_expr(ntf::Column::AcknowledgedAt, Expr::value(Some(now)))
        .col_expr(
            ntf::Column::ReadAt,
            Func::coalesce([
                Expr::col((ntf::Entity, ntf::Column::ReadAt)),
                Expr::value(Some(now)),
            ])
            .into(),
        )
        .filter(ntf::Column::AccountId.eq(caller.account_id()))
        .filter(ntf::Column::UserId.eq(caller.user.id))
        .filter(ntf::Column::InConsole.eq(true))
        .filter(ntf::Column::AcknowledgedAt.is_null());
    if let Which::Ids(ids) = &which {
        let found: Vec<String> = mine(caller)
            .select_only()
            .column(ntf::Column::Id)
            .filter(ntf::Column::Id.is_in(ids.iter().cloned()))
            .into_tuple()
            .all(db)
            .await?;
        let missing: Vec<&String> = ids.iter().filter(|i| !found.contains(i)).collect();
        if !missing.is_empty() {
            return Err(ApiError::coded(
                crate::error::Kind::NotFound,
                "NOT_FOUND",
                "notification not found",
                json!({ "missingIds": missing }),
            ));
        }
        update = update.filter(ntf::Column::Id.is_in(ids.iter().cloned()));
    }
    use sea_orm::QueryTrait;
    let mut stmt = update.into_query();
    stmt.returning_col(ntf::Column::Id);
    let mut done = Vec::new();
    for row in db.query_all(&stmt).await? {
        done.push(row.try_get::<String>("", "id")?);
    }
    done.sort();
    Ok(done)
}

/// The newest number among the user's console notifications (0: none).
pub async fn last_seq(db: &impl ConnectionTrait, user_id: i64) -> Result<i64, DbErr> {
    let max: Option<Option<i64>> = ntf::Entity::find()
        .select_only()
        .column_as(ntf::Column::Seq.max(), "m")
        .filter(ntf::Column::UserId.eq(user_id))
        .filter(ntf::Column::InConsole.eq(true))
        .into_tuple()
        .one(db)
        .await?;
    Ok(max.flatten().unwrap_or(0))
}

/// The user's console notifications numbered after `after`, oldest first.
pub async fn after(
    db: &impl ConnectionTrait,
    user_id: i64,
    after: i64,
    rows: u64,
) -> Result<Vec<ntf::Model>, DbErr> {
    ntf::Entity::find()
        .filter(ntf::Column::UserId.eq(user_id))
        .filter(ntf::Column::InConsole.eq(true))
        .filter(ntf::Column::Seq.gt(after))
        .order_by_asc(ntf::Column::Seq)
        .limit(rows)
        .all(db)
        .await
}
