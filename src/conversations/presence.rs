//! Presence persistence. Each instance writes one row per (conversation,
//! user) with at least one open stream on it and refreshes it while the
//! stream lasts; the union of fresh rows across instances is the room's
//! presence, so any instance can answer for all of them.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};

use entity::{conversation_presence as presence, user};

use super::list_cache;
use super::model::Participant;
use crate::bus::EventBus;
use crate::sse::{Fail, StreamError};

fn fresh_after(ttl: Duration) -> chrono::DateTime<Utc> {
    Utc::now() - chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::seconds(45))
}

/// Present users of each given conversation (only non-empty entries).
pub async fn load_many(
    db: &impl ConnectionTrait,
    uids: &[&str],
    ttl: Duration,
) -> Result<HashMap<String, Vec<Participant>>, DbErr> {
    Ok(load_many_until(db, uids, ttl).await?.0)
}

/// [`load_many`], and until when that answer holds without any write: the
/// moment the first (conversation, user) it shows goes stale, unless its
/// row is refreshed (`None` when nobody is present).
pub async fn load_many_until(
    db: &impl ConnectionTrait,
    uids: &[&str],
    ttl: Duration,
) -> Result<
    (
        HashMap<String, Vec<Participant>>,
        Option<chrono::DateTime<Utc>>,
    ),
    DbErr,
> {
    let rows = presence::Entity::find()
        .filter(presence::Column::ConversationUid.is_in(uids.iter().copied()))
        .filter(presence::Column::SeenAt.gt(fresh_after(ttl)))
        .all(db)
        .await?;
    if rows.is_empty() {
        return Ok((HashMap::new(), None));
    }
    // A user is present while any instance's row is fresh: the latest row
    // of each (conversation, user) decides when that pair goes stale.
    let mut latest: HashMap<(&str, i64), chrono::DateTime<Utc>> = HashMap::new();
    for row in &rows {
        let seen = latest
            .entry((row.conversation_uid.as_str(), row.user_id))
            .or_insert(row.seen_at);
        *seen = (*seen).max(row.seen_at);
    }
    let ttl = chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::seconds(45));
    let until = latest.into_values().min().map(|seen| seen + ttl);
    let user_ids: BTreeSet<i64> = rows.iter().map(|r| r.user_id).collect();
    let users: HashMap<i64, Participant> = user::Entity::find()
        .filter(user::Column::Id.is_in(user_ids))
        .all(db)
        .await?
        .into_iter()
        .map(|u| {
            (
                u.id,
                Participant {
                    user_id: u.id,
                    name: u.name,
                    email: Some(u.email),
                },
            )
        })
        .collect();
    let mut by_conv: HashMap<String, BTreeSet<Participant>> = HashMap::new();
    for row in rows {
        if let Some(p) = users.get(&row.user_id) {
            by_conv
                .entry(row.conversation_uid)
                .or_default()
                .insert(p.clone());
        }
    }
    let by_conv = by_conv
        .into_iter()
        .map(|(k, v)| (k, v.into_iter().collect()))
        .collect();
    Ok((by_conv, until))
}

/// Present users of one conversation, ordered by user id.
pub async fn load(
    db: &impl ConnectionTrait,
    uid: &str,
    ttl: Duration,
) -> Result<Vec<Participant>, DbErr> {
    Ok(load_many(db, &[uid], ttl)
        .await?
        .remove(uid)
        .unwrap_or_default())
}

/// Brings this instance's rows for `uid` to exactly `users`. A change of
/// who is present (`changed_in`: the conversation's account) also bumps the
/// account's list version, in the same transaction; a refresh does not.
async fn reconcile(
    db: &DatabaseConnection,
    uid: &str,
    instance_id: &str,
    users: &BTreeSet<i64>,
    changed_in: Option<&str>,
) -> Result<(), DbErr> {
    let Some(account_id) = changed_in else {
        return write_rows(db, uid, instance_id, users).await;
    };
    let txn = crate::db::begin_write(db).await?;
    write_rows(&txn, uid, instance_id, users).await?;
    list_cache::bump(&txn, account_id).await?;
    txn.commit().await
}

async fn write_rows(
    db: &impl ConnectionTrait,
    uid: &str,
    instance_id: &str,
    users: &BTreeSet<i64>,
) -> Result<(), DbErr> {
    presence::Entity::delete_many()
        .filter(presence::Column::ConversationUid.eq(uid))
        .filter(presence::Column::InstanceId.eq(instance_id))
        .filter(presence::Column::UserId.is_not_in(users.iter().copied()))
        .exec(db)
        .await?;
    if users.is_empty() {
        return Ok(());
    }
    let now = Utc::now();
    let rows = users.iter().map(|&user_id| presence::ActiveModel {
        conversation_uid: sea_orm::Set(uid.to_string()),
        instance_id: sea_orm::Set(instance_id.to_string()),
        user_id: sea_orm::Set(user_id),
        seen_at: sea_orm::Set(now),
    });
    presence::Entity::insert_many(rows)
        .on_conflict(
            OnConflict::columns([
                presence::Column::ConversationUid,
                presence::Column::InstanceId,
                presence::Column::UserId,
            ])
            .update_column(presence::Column::SeenAt)
            .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    Ok(())
}

/// Persists a room's local presence: one row per (conversation, instance,
/// user), brought to the room's current set one change at a time (rapid
/// joins and leaves coalesce), refreshed every `refresh`, each change
/// announced on the bus. Runs under an actix `Supervisor`: a failed write
/// tells the room (whose streams end with an error) and restarts the
/// writer, which then reconciles again from its desired set. `Finish`
/// removes the rows and ends it.
pub struct PresenceWriter {
    db: DatabaseConnection,
    bus: EventBus,
    account_id: String,
    uid: String,
    refresh: Duration,
    room: actix::WeakRecipient<Fail>,
    desired: BTreeSet<i64>,
    written: BTreeSet<i64>,
    writing: bool,
    finishing: bool,
}

/// The room's users on this instance changed.
#[derive(Message)]
#[rtype(result = "()")]
pub struct SetUsers(pub BTreeSet<i64>);

/// The room stopped: remove this instance's rows and stop.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Finish;

pub fn start_writer(
    db: DatabaseConnection,
    bus: EventBus,
    account_id: String,
    uid: String,
    refresh: Duration,
    room: actix::WeakRecipient<Fail>,
) -> Addr<PresenceWriter> {
    Supervisor::start(move |_| PresenceWriter {
        db,
        bus,
        account_id,
        uid,
        refresh,
        room,
        desired: BTreeSet::new(),
        written: BTreeSet::new(),
        writing: false,
        finishing: false,
    })
}

impl Actor for PresenceWriter {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.refresh, |w, ctx| {
            if !w.written.is_empty() {
                w.write(true, ctx);
            }
        });
        self.write(false, ctx);
    }
}

impl Supervised for PresenceWriter {
    fn restarting(&mut self, _: &mut Context<Self>) {
        self.writing = false;
    }
}

impl Handler<SetUsers> for PresenceWriter {
    type Result = ();

    fn handle(&mut self, SetUsers(users): SetUsers, ctx: &mut Context<Self>) {
        self.desired = users;
        self.write(false, ctx);
    }
}

impl Handler<Finish> for PresenceWriter {
    type Result = ();

    fn handle(&mut self, _: Finish, ctx: &mut Context<Self>) {
        self.finishing = true;
        self.desired.clear();
        self.write(false, ctx);
    }
}

impl PresenceWriter {
    /// Brings the rows to `desired` (or refreshes them); one write at a
    /// time, the next one picks up whatever changed meanwhile.
    fn write(&mut self, refresh: bool, ctx: &mut Context<Self>) {
        if self.writing {
            return;
        }
        let target = self.desired.clone();
        if !refresh && target == self.written {
            if self.finishing {
                ctx.stop();
            }
            return;
        }
        self.writing = true;
        let db = self.db.clone();
        let uid = self.uid.clone();
        let instance = self.bus.instance_id().to_string();
        // A change of who is present also bumps the account's list version.
        let changed = (target != self.written).then(|| self.account_id.clone());
        let work = crate::rt::detached(async move {
            reconcile(&db, &uid, &instance, &target, changed.as_deref())
                .await
                .map(|()| target)
        });
        ctx.spawn(work.into_actor(self).map(move |res, w, ctx| {
            w.writing = false;
            let res = res.unwrap_or_else(|| Err(DbErr::Custom("presence write cancelled".into())));
            match res {
                Ok(target) => {
                    let announce = target != w.written;
                    w.written = target;
                    if announce {
                        let bus = w.bus.clone();
                        let event = super::events::presence(&w.account_id, &w.uid);
                        tokio::spawn(async move { bus.publish(event).await });
                    }
                    w.write(false, ctx);
                }
                // Stopping anyway: nothing to retry for.
                Err(_) if w.finishing => ctx.stop(),
                Err(err) => {
                    tracing::warn!(error = %err, "presence write failed");
                    if let Some(room) = w.room.upgrade() {
                        room.do_send(Fail(StreamError::database_unavailable()));
                    }
                    // The supervisor restarts the writer, which retries.
                    ctx.stop();
                }
            }
        }));
    }
}
