//! Presence persistence. Each instance writes one row per (conversation,
//! user) with at least one open stream on it and refreshes it while the
//! stream lasts; the union of fresh rows across instances is the room's
//! presence, so any instance can answer for all of them.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter,
    TransactionTrait,
};
use tokio::sync::watch;

use entity::{conversation_presence as presence, user};

use super::list_cache;
use super::model::Participant;
use crate::bus::{BusEvent, EventBus};

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
    let txn = db.begin().await?;
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

/// Writes a room's local presence to the database, one change at a time
/// (rapid joins and leaves coalesce), announces each change on the bus and
/// refreshes the rows every `refresh`. Ends, removing the rows, when the
/// room drops its sender. `on_error` hears about a failing database.
pub fn spawn_writer(
    db: DatabaseConnection,
    bus: EventBus,
    account_id: String,
    uid: String,
    mut users: watch::Receiver<BTreeSet<i64>>,
    refresh: Duration,
    on_error: impl Fn(DbErr) + 'static,
) {
    actix_rt::spawn(async move {
        let instance = bus.instance_id().to_string();
        let mut tick = tokio::time::interval(refresh);
        tick.tick().await;
        let mut written = BTreeSet::new();
        loop {
            let closed = tokio::select! {
                changed = users.changed() => changed.is_err(),
                _ = tick.tick() => {
                    if !written.is_empty()
                        && let Err(err) = reconcile(&db, &uid, &instance, &written, None).await
                    {
                        on_error(err);
                    }
                    continue;
                }
            };
            let current = if closed {
                BTreeSet::new()
            } else {
                users.borrow_and_update().clone()
            };
            if closed && written.is_empty() {
                return;
            }
            let changed = (current != written).then_some(account_id.as_str());
            match reconcile(&db, &uid, &instance, &current, changed).await {
                Ok(()) => {
                    written = current;
                    bus.publish(BusEvent::RoomPresence {
                        account_id: account_id.clone(),
                        conversation_uid: uid.clone(),
                    })
                    .await
                }
                Err(err) => on_error(err),
            }
            if closed {
                return;
            }
        }
    });
}
