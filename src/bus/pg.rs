//! PostgreSQL LISTEN/NOTIFY transport: one listening connection per process,
//! proved alive by a heartbeat it sends to itself.

use std::time::{Duration, Instant};

use sea_orm::sqlx::{self, PgPool, postgres::PgListener};
use tokio_util::sync::CancellationToken;

use super::{BusEvent, Wire};

const CHANNEL: &str = "agentic_bus";
/// NOTIFY payloads must stay under 8000 bytes; larger events go without
/// their bulk data and receivers read it from the database.
const MAX_PAYLOAD: usize = 7_500;
/// The listener's own liveness probe.
const HEARTBEAT_TOPIC: &str = "bus.heartbeat";

#[derive(Clone)]
pub struct PgTransport {
    pool: PgPool,
    heartbeat: Duration,
}

fn encode(origin: &str, event: &BusEvent) -> Result<String, sqlx::Error> {
    let mut wire = Wire {
        origin: origin.to_string(),
        event: event.clone(),
    };
    let mut payload = serde_json::to_string(&wire).map_err(|e| sqlx::Error::Encode(e.into()))?;
    if payload.len() > MAX_PAYLOAD {
        wire.event.bulk = None;
        payload = serde_json::to_string(&wire).map_err(|e| sqlx::Error::Encode(e.into()))?;
    }
    Ok(payload)
}

async fn send(pool: &PgPool, payload: String) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(pool)
        .await?;
    Ok(())
}

impl PgTransport {
    pub fn new(pool: PgPool, heartbeat: Duration) -> Self {
        PgTransport { pool, heartbeat }
    }

    pub async fn notify(&self, origin: &str, event: &BusEvent) -> Result<(), sqlx::Error> {
        send(&self.pool, encode(origin, event)?).await
    }

    /// Delivers other instances' events until `stop`. `health(false)` when
    /// events may have been lost (connection dropped, or the heartbeat
    /// missed its deadline: a silently dead connection), `health(true)`
    /// once the heartbeat comes back.
    pub async fn listen(
        &self,
        own_origin: &str,
        stop: CancellationToken,
        deliver: impl Fn(BusEvent),
        health: impl Fn(bool),
    ) {
        let mut backoff = Duration::from_millis(200);
        let mut connected_before = false;
        let deadline = self.heartbeat * 3;
        let beat = encode(
            own_origin,
            &BusEvent::new(HEARTBEAT_TOPIC, "", own_origin, serde_json::Value::Null),
        );
        let Ok(beat) = beat else { return };
        while !stop.is_cancelled() {
            let (own, mut listener) = match self.connect().await {
                Ok(c) => c,
                Err(err) => {
                    tracing::warn!(error = %err, "event bus: LISTEN connection failed");
                    health(false);
                    tokio::select! {
                        _ = stop.cancelled() => return,
                        _ = tokio::time::sleep(backoff) => {}
                    }
                    backoff = (backoff * 2).min(Duration::from_secs(5));
                    continue;
                }
            };
            if connected_before {
                // Anything sent while we were away is gone.
                health(false);
            }
            connected_before = true;
            backoff = Duration::from_millis(200);
            let mut last_beat = Instant::now();
            let mut tick = tokio::time::interval(self.heartbeat);
            let _ = send(&own, beat.clone()).await;
            loop {
                let next = tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {
                        if last_beat.elapsed() > deadline {
                            tracing::warn!("event bus: heartbeat missed; reconnecting");
                            health(false);
                            break;
                        }
                        // A failed send shows up as a missed beat.
                        let _ = send(&own, beat.clone()).await;
                        continue;
                    }
                    n = listener.try_recv() => n,
                };
                match next {
                    Ok(Some(note)) => match serde_json::from_str::<Wire>(note.payload()) {
                        Ok(wire) if wire.origin == own_origin => {
                            if wire.event.topic == HEARTBEAT_TOPIC {
                                last_beat = Instant::now();
                                health(true);
                            }
                        }
                        Ok(wire) if wire.event.topic == HEARTBEAT_TOPIC => {}
                        Ok(wire) => deliver(wire.event),
                        Err(err) => tracing::warn!(error = %err, "event bus: bad payload"),
                    },
                    Ok(None) | Err(_) => {
                        tracing::warn!("event bus: LISTEN connection lost");
                        health(false);
                        break;
                    }
                }
            }
            // The listener holds one of the pool's connections: release it
            // first, or closing the pool waits forever.
            drop(listener);
            own.close().await;
        }
    }

    /// Dedicated connections, opened on the listener's own runtime: one to
    /// listen on, one to send the heartbeat through.
    async fn connect(&self) -> Result<(PgPool, PgListener), sqlx::Error> {
        let own = sqlx::postgres::PgPoolOptions::new()
            .max_connections(2)
            .acquire_timeout(self.heartbeat)
            .connect_with((*self.pool.connect_options()).clone())
            .await?;
        let mut listener = PgListener::connect_with(&own).await?;
        listener.listen(CHANNEL).await?;
        Ok((own, listener))
    }
}
