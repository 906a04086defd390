//! Webhook events into the outbox, inside the transaction of the change
//! they report: [`capture_audience`] when a source of events begins (a
//! discovery session), [`emit`] each time it has something to say. Only
//! the subscriptions captured at the beginning receive its events, and only
//! while they are active. A one-off event (a notification) goes with
//! [`emit_to_account`] to the account's active subscriptions of its type.
//!
//! A module of its own, below `webhooks` (subscriptions and delivery) and
//! `notifications`: the delivery reports its failures as notifications,
//! and notifications go out as webhook events.

use chrono::{DateTime, SecondsFormat, Utc};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, JoinType, QueryFilter, QuerySelect,
    RelationTrait, Set,
};
use serde_json::Value;

use entity::{webhook_audience as audience, webhook_event as event, webhook_subscription as sub};

use crate::outbox::{Kicks, NewJob, store};

/// The outbox queue of webhook deliveries; a lane is a subscription.
pub const QUEUE: &str = "webhook";

/// A subscription that receives events (`webhooks::model` re-exports it).
pub const STATUS_ACTIVE: &str = "active";

/// What a delivery job carries: the event to send and the delivery's id.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryJob {
    pub event_id: String,
    pub delivery_id: String,
    pub event_type: String,
}

/// Records which of the account's active subscriptions take `event_type`
/// now: the audience of `scope` for good.
pub async fn capture_audience(
    conn: &impl ConnectionTrait,
    account_id: &str,
    event_type: &str,
    scope: &str,
) -> Result<(), DbErr> {
    let subs = active_subscriptions(conn, account_id).await?;
    let rows: Vec<audience::ActiveModel> = subs
        .into_iter()
        .filter(|(_, types)| takes(types, event_type))
        .map(|(id, _)| audience::ActiveModel {
            scope: Set(scope.to_string()),
            subscription_id: Set(id),
        })
        .collect();
    if !rows.is_empty() {
        audience::Entity::insert_many(rows)
            .exec_without_returning(conn)
            .await?;
    }
    Ok(())
}

/// The account's active subscriptions: id and stored event types.
async fn active_subscriptions(
    conn: &impl ConnectionTrait,
    account_id: &str,
) -> Result<Vec<(String, String)>, DbErr> {
    sub::Entity::find()
        .select_only()
        .column(sub::Column::Id)
        .column(sub::Column::EventTypes)
        .filter(sub::Column::AccountId.eq(account_id))
        .filter(sub::Column::Status.eq(STATUS_ACTIVE))
        .into_tuple()
        .all(conn)
        .await
}

fn takes(stored_types: &str, event_type: &str) -> bool {
    serde_json::from_str::<Vec<String>>(stored_types)
        .map(|t| t.iter().any(|t| t == event_type))
        .unwrap_or(false)
}

/// Queues `body` (with `event` and `timestamp` added) for every active
/// subscription in the audience of `scope`; returns the lanes to announce
/// once the caller commits. Nothing is written when nobody listens.
pub async fn emit(
    conn: &impl ConnectionTrait,
    account_id: &str,
    scope: &str,
    event_type: &str,
    body: serde_json::Map<String, Value>,
    at: DateTime<Utc>,
) -> Result<Kicks, DbErr> {
    let subs: Vec<(String, String)> = audience::Entity::find()
        .select_only()
        .column_as(sub::Column::Id, "id")
        .column_as(sub::Column::EventTypes, "event_types")
        .join(JoinType::InnerJoin, audience::Relation::Subscription.def())
        .filter(audience::Column::Scope.eq(scope))
        .filter(sub::Column::Status.eq(STATUS_ACTIVE))
        .into_tuple()
        .all(conn)
        .await?;
    enqueue(conn, account_id, subs, event_type, body, at).await
}

/// Queues `body` (as [`emit`] does) for every active subscription of the
/// account that takes `event_type` now; nothing when none does.
pub async fn emit_to_account(
    conn: &impl ConnectionTrait,
    account_id: &str,
    event_type: &str,
    body: serde_json::Map<String, Value>,
    at: DateTime<Utc>,
) -> Result<Kicks, DbErr> {
    let subs = active_subscriptions(conn, account_id).await?;
    enqueue(conn, account_id, subs, event_type, body, at).await
}

/// One event row and a delivery job per subscription (of `subs`, with
/// their stored types) that takes `event_type`.
async fn enqueue(
    conn: &impl ConnectionTrait,
    account_id: &str,
    subs: Vec<(String, String)>,
    event_type: &str,
    mut body: serde_json::Map<String, Value>,
    at: DateTime<Utc>,
) -> Result<Kicks, DbErr> {
    let lanes: Vec<String> = subs
        .into_iter()
        .filter(|(_, types)| takes(types, event_type))
        .map(|(id, _)| id)
        .collect();
    let mut kicks = Kicks::default();
    if lanes.is_empty() {
        return Ok(kicks);
    }
    let mut ordered = serde_json::Map::with_capacity(body.len() + 2);
    ordered.insert("event".into(), Value::from(event_type));
    ordered.append(&mut body);
    ordered.insert(
        "timestamp".into(),
        Value::from(at.to_rfc3339_opts(SecondsFormat::Millis, true)),
    );
    let bytes = serde_json::to_string(&ordered).map_err(|e| DbErr::Custom(e.to_string()))?;
    let event_id = format!("evt_{}", random_tail());
    event::Entity::insert(event::ActiveModel {
        id: Set(event_id.clone()),
        account_id: Set(account_id.to_string()),
        event_type: Set(event_type.to_string()),
        body: Set(bytes),
        created_at: Set(at),
    })
    .exec_without_returning(conn)
    .await?;
    let mut jobs = Vec::with_capacity(lanes.len());
    for lane in lanes {
        let payload = serde_json::to_string(&DeliveryJob {
            event_id: event_id.clone(),
            delivery_id: format!("whd_{}", random_tail()),
            event_type: event_type.to_string(),
        })
        .map_err(|e| DbErr::Custom(e.to_string()))?;
        kicks.add(QUEUE, &lane);
        jobs.push(NewJob {
            queue: QUEUE,
            lane,
            payload,
        });
    }
    store::enqueue(conn, &jobs).await?;
    Ok(kicks)
}

/// 24 random letters or digits.
fn random_tail() -> String {
    use rand::Rng;
    rand::rng()
        .sample_iter(&rand::distr::Alphanumeric)
        .take(24)
        .map(char::from)
        .collect()
}

/// Deletes events no job refers to any more (after the outbox pruned its
/// finished jobs): those older than `before`.
pub async fn prune(conn: &impl ConnectionTrait, before: DateTime<Utc>) -> Result<u64, DbErr> {
    let res = event::Entity::delete_many()
        .filter(event::Column::CreatedAt.lt(before))
        .exec(conn)
        .await?;
    Ok(res.rows_affected)
}
