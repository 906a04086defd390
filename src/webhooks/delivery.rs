//! Webhook delivery: the outbox queue whose lanes are subscriptions. Each
//! subscription's worker sends its events in order, one POST per event, no
//! retry, no redirect, within a timeout, through the SSRF guard (checked
//! on the addresses of every attempt). The body is the event's stored
//! bytes, exactly; `X-Webhook-Signature` is the lowercase hex HMAC-SHA256
//! of those bytes keyed with the subscription's secret.
//!
//! Each attempt is recorded with the subscription's new state in one
//! transaction: 2xx resets `failureCount` and sets `lastSuccess`; anything
//! else adds one and sets `lastFailure`, and the tenth in a row makes the
//! subscription `failed`, which stops its deliveries for good.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use hmac::{Hmac, KeyInit, Mac};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, DatabaseTransaction, DbErr, EntityTrait,
    QueryFilter, QuerySelect,
};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use entity::{webhook_event as event, webhook_subscription as sub};

use super::events::{DeliveryJob, QUEUE};
use super::model::{MAX_CONSECUTIVE_FAILURES, STATUS_ACTIVE, STATUS_FAILED};
use super::secret::SecretKey;
use super::service::signing_secret;
use crate::net::{NetError, Outbound};
use crate::notifications::Notices;
use crate::outbox::{Handler, Job, LaneWorker, Next, Outcome, store};

/// Header names of a delivery.
pub const SIGNATURE_HEADER: &str = "X-Webhook-Signature";
pub const DELIVERY_ID_HEADER: &str = "X-Webhook-Id";
pub const EVENT_TYPE_HEADER: &str = "X-Webhook-Event";

/// Largest part of a receiver's answer that is read (and then ignored).
const MAX_ANSWER: usize = 64 * 1024;

pub use crate::config::webhooks::DeliveryTuning;

/// What the log says of one attempt (stored as the job's result).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub attempted_at: Option<String>,
    pub status_code: Option<u16>,
    pub duration_ms: Option<u64>,
    /// `http_status`, `redirect`, `timeout`, `connection`, `tls`,
    /// `ssrf_blocked`; `expired` when the event was pruned before its turn.
    pub error_class: Option<String>,
    pub error: Option<String>,
}

/// The webhook queue.
pub struct Deliveries {
    outbound: Outbound,
    key: Option<SecretKey>,
    tuning: DeliveryTuning,
    /// Event bodies by id: one event goes to every subscription of its
    /// audience, so it is read once, not once per subscription (lanes that
    /// reach it together wait for one read).
    bodies: moka::future::Cache<String, Arc<str>>,
    /// `webhook_subscription.failed` notifications of the batch being
    /// recorded, announced once it committed ([`Handler::committed`]).
    failed: std::sync::Mutex<Notices>,
}

impl Deliveries {
    pub fn new(outbound: Outbound, key: Option<SecretKey>, tuning: DeliveryTuning) -> Self {
        Deliveries {
            outbound,
            key,
            tuning,
            bodies: moka::future::Cache::builder()
                .max_capacity(4096)
                .time_to_live(Duration::from_secs(300))
                .build(),
            failed: std::sync::Mutex::new(Notices::default()),
        }
    }
}

/// `webhook_subscription.failed` to the account's users, in the
/// transaction whose fenced update made the subscription `failed` (once).
async fn notify_failed(txn: &DatabaseTransaction, s: &sub::Model) -> Result<Notices, DbErr> {
    let n = crate::notifications::New {
        account_id: s.account_id.clone(),
        topic: crate::notifications::topics::WEBHOOK_SUBSCRIPTION_FAILED,
        title: format!("Webhook subscription {} failed", s.id),
        body: format!(
            "{MAX_CONSECUTIVE_FAILURES} deliveries in a row to {} failed; nothing more is sent to it. Create a new subscription once the endpoint works.",
            s.url
        ),
        data: serde_json::json!({ "subscriptionId": s.id }),
    };
    crate::notifications::notify(txn, n, Utc::now()).await
}

type HmacSha256 = Hmac<Sha256>;

/// Lowercase hex HMAC-SHA256 of `body` keyed with `secret`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    // HMAC takes keys of any length.
    let mut mac = match HmacSha256::new_from_slice(secret) {
        Ok(m) => m,
        Err(_) => return String::new(),
    };
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

#[async_trait::async_trait]
impl Handler for Deliveries {
    fn queue(&self) -> &'static str {
        QUEUE
    }

    /// Every active subscription keeps its worker.
    async fn standing_lanes(&self, db: &DatabaseConnection) -> Result<Vec<String>, DbErr> {
        sub::Entity::find()
            .select_only()
            .column(sub::Column::Id)
            .filter(sub::Column::Status.eq(STATUS_ACTIVE))
            .into_tuple()
            .all(db)
            .await
    }

    async fn open(
        &self,
        db: &DatabaseConnection,
        lane: &str,
    ) -> anyhow::Result<Option<Box<dyn LaneWorker>>> {
        let Some(row) = sub::Entity::find_by_id(lane.to_string()).one(db).await? else {
            return Ok(None);
        };
        if row.status != STATUS_ACTIVE {
            return Ok(None);
        }
        // A secret that cannot be read is the operator's to fix (key
        // missing or changed): the lane waits and retries, it does not
        // burn the subscription's failures.
        let secret = signing_secret(&row, self.key.as_ref())
            .map_err(|e| anyhow::anyhow!("subscription {}: {e}", row.id))?;
        Ok(Some(Box::new(Worker {
            db: db.clone(),
            outbound: self.outbound.clone(),
            bodies: self.bodies.clone(),
            url: row.url,
            secret,
            timeout: self.tuning.timeout,
        })))
    }

    async fn record(
        &self,
        txn: &DatabaseTransaction,
        lane: &str,
        _job: &Job,
        outcome: &Outcome,
    ) -> Result<Next, DbErr> {
        let now = Utc::now();
        let live = || {
            sub::Entity::update_many()
                .filter(sub::Column::Id.eq(lane))
                .filter(sub::Column::Status.eq(STATUS_ACTIVE))
                .col_expr(sub::Column::UpdatedAt, Expr::value(now))
        };
        match outcome {
            Outcome::Done(_) => {
                let res = live()
                    .col_expr(sub::Column::FailureCount, Expr::value(0))
                    .col_expr(sub::Column::LastSuccess, Expr::value(Some(now)))
                    .exec(txn)
                    .await?;
                Ok(if res.rows_affected == 1 {
                    Next::Continue
                } else {
                    Next::Retire
                })
            }
            Outcome::Failed(_) => {
                // Both columns are computed from the row as it was.
                let count = Expr::col(sub::Column::FailureCount).add(1);
                let status = Expr::case(
                    Expr::col(sub::Column::FailureCount)
                        .add(1)
                        .gte(MAX_CONSECUTIVE_FAILURES),
                    STATUS_FAILED,
                )
                .finally(Expr::col(sub::Column::Status));
                let rows = live()
                    .col_expr(sub::Column::FailureCount, count)
                    .col_expr(sub::Column::Status, status.into())
                    .col_expr(sub::Column::LastFailure, Expr::value(Some(now)))
                    .exec_with_returning(txn)
                    .await?;
                match rows.first() {
                    Some(row) if row.status == STATUS_ACTIVE => Ok(Next::Continue),
                    Some(row) => {
                        store::cancel_lane(txn, QUEUE, lane, "subscription failed").await?;
                        let notices = notify_failed(txn, row).await?;
                        if let Ok(mut failed) = self.failed.lock() {
                            failed.merge(notices);
                        }
                        Ok(Next::Retire)
                    }
                    None => Ok(Next::Retire),
                }
            }
            Outcome::Skipped(_) | Outcome::Retry { .. } | Outcome::Held(_) => Ok(Next::Continue),
        }
    }

    /// Successes (nearly every attempt) update their subscriptions in one
    /// statement; failures one by one, as [`Handler::record`] does.
    async fn record_many(
        &self,
        txn: &DatabaseTransaction,
        attempts: &[(&str, &Job, &Outcome)],
    ) -> Result<Vec<Next>, DbErr> {
        use sea_orm::QueryTrait;
        let done: Vec<&str> = attempts
            .iter()
            .filter(|(_, _, o)| matches!(o, Outcome::Done(_)))
            .map(|(lane, _, _)| *lane)
            .collect();
        // The subscriptions still active (the others retire their lanes).
        let mut live = std::collections::HashSet::new();
        if !done.is_empty() {
            let now = Utc::now();
            let mut stmt = sub::Entity::update_many()
                .filter(sub::Column::Id.is_in(done.iter().copied()))
                .filter(sub::Column::Status.eq(STATUS_ACTIVE))
                .col_expr(sub::Column::UpdatedAt, Expr::value(now))
                .col_expr(sub::Column::FailureCount, Expr::value(0))
                .col_expr(sub::Column::LastSuccess, Expr::value(Some(now)))
                .into_query();
            stmt.returning_col(sub::Column::Id);
            for row in txn.query_all(&stmt).await? {
                live.insert(row.try_get::<String>("", "id")?);
            }
        }
        let mut next = Vec::with_capacity(attempts.len());
        for (lane, job, outcome) in attempts {
            next.push(match outcome {
                Outcome::Done(_) if live.contains(*lane) => Next::Continue,
                Outcome::Done(_) => Next::Retire,
                _ => self.record(txn, lane, job, outcome).await?,
            });
        }
        Ok(next)
    }

    fn committed(&self) -> Vec<crate::bus::BusEvent> {
        match self.failed.lock() {
            Ok(mut failed) => std::mem::take(&mut *failed).events(),
            Err(_) => Vec::new(),
        }
    }

    fn retention(&self) -> Duration {
        self.tuning.retention
    }

    async fn pruned(&self, db: &DatabaseConnection) -> Result<(), DbErr> {
        let before =
            Utc::now() - chrono::Duration::from_std(self.tuning.retention).unwrap_or_default();
        super::events::prune(db, before).await.map(|_| ())
    }
}

struct Worker {
    db: DatabaseConnection,
    outbound: Outbound,
    bodies: moka::future::Cache<String, Arc<str>>,
    url: String,
    secret: String,
    timeout: Duration,
}

impl Worker {
    async fn body(&self, event_id: &str) -> Result<Option<Arc<str>>, DbErr> {
        let db = self.db.clone();
        let id = event_id.to_string();
        let read = async move {
            match event::Entity::find_by_id(id).one(&db).await {
                Ok(Some(row)) => Ok(Arc::<str>::from(row.body)),
                Ok(None) => Err(None),
                Err(e) => Err(Some(e)),
            }
        };
        // Lanes woken by one revision ask together: one reads, the others
        // wait for its answer (an answer that is not a body is not kept).
        match self.bodies.try_get_with(event_id.to_string(), read).await {
            Ok(body) => Ok(Some(body)),
            Err(e) => match e.as_ref() {
                None => Ok(None),
                Some(err) => Err(DbErr::Custom(err.to_string())),
            },
        }
    }
}

#[async_trait::async_trait]
impl LaneWorker for Worker {
    async fn run(&mut self, job: &Job) -> anyhow::Result<Outcome> {
        let Ok(d) = serde_json::from_str::<DeliveryJob>(&job.payload) else {
            return Ok(skipped("invalid_job", "the delivery job cannot be read"));
        };
        let Some(body) = self.body(&d.event_id).await? else {
            return Ok(skipped("expired", "the event was pruned before its turn"));
        };
        let signature = sign(self.secret.as_bytes(), body.as_bytes());
        let url = self.url.clone();
        let timeout = self.timeout;
        let attempted_at = Utc::now();
        let started = Instant::now();
        let sent = self
            .outbound
            .run(move |client| async move {
                let request = client
                    .post(url)
                    .timeout(timeout)
                    .insert_header((awc::http::header::CONTENT_TYPE, "application/json"))
                    .insert_header((SIGNATURE_HEADER, signature))
                    .insert_header((DELIVERY_ID_HEADER, d.delivery_id))
                    .insert_header((EVENT_TYPE_HEADER, d.event_type));
                let attempt = async {
                    let mut res = request
                        .send_body(bytes::Bytes::copy_from_slice(body.as_bytes()))
                        .await
                        .map_err(NetError::from)?;
                    // The answer is read (so the connection can be reused)
                    // and ignored; only its status counts.
                    let _ = crate::net::read_body(&mut res, MAX_ANSWER).await;
                    Ok::<u16, NetError>(res.status().as_u16())
                };
                tokio::time::timeout(timeout, attempt)
                    .await
                    .unwrap_or(Err(NetError::Timeout))
            })
            .await;
        let elapsed = started.elapsed().as_millis() as u64;
        let mut attempt = Attempt {
            attempted_at: Some(attempted_at.to_rfc3339_opts(SecondsFormat::Millis, true)),
            duration_ms: Some(elapsed),
            ..Attempt::default()
        };
        let outcome = match sent {
            Err(NetError::Stopped) | Ok(Err(NetError::Stopped)) => {
                anyhow::bail!("outbound HTTP worker stopped")
            }
            Ok(Ok(code)) => {
                attempt.status_code = Some(code);
                if (200..300).contains(&code) {
                    Outcome::Done(json(&attempt))
                } else {
                    attempt.error_class = Some(
                        if (300..400).contains(&code) {
                            "redirect"
                        } else {
                            "http_status"
                        }
                        .into(),
                    );
                    attempt.error = Some(format!("the receiver answered {code}"));
                    Outcome::Failed(json(&attempt))
                }
            }
            Ok(Err(e)) | Err(e) => {
                attempt.error_class = Some(e.class().into());
                attempt.error = Some(e.to_string());
                Outcome::Failed(json(&attempt))
            }
        };
        Ok(outcome)
    }
}

fn skipped(class: &str, why: &str) -> Outcome {
    Outcome::Skipped(json(&Attempt {
        error_class: Some(class.into()),
        error: Some(why.into()),
        ..Attempt::default()
    }))
}

fn json(a: &Attempt) -> serde_json::Value {
    serde_json::to_value(a).unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn signature_is_lowercase_hex_hmac_sha256() {
        // RFC 4231 test case 2.
        assert_eq!(
            sign(b"Jefe", b"what do ya want for nothing?"),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }
}
