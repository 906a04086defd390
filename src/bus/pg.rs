//! PostgreSQL LISTEN/NOTIFY transport: one listening connection per process.

use std::time::Duration;

use sea_orm::sqlx::{self, PgPool, postgres::PgListener};
use tokio_util::sync::CancellationToken;

use super::{BusEvent, Wire};

const CHANNEL: &str = "agentic_bus";
/// NOTIFY payloads must stay under 8000 bytes; larger events go without data
/// and receivers read it from the database.
const MAX_PAYLOAD: usize = 7_500;

#[derive(Clone)]
pub struct PgTransport {
    pool: PgPool,
}

impl PgTransport {
    pub fn new(pool: PgPool) -> Self {
        PgTransport { pool }
    }

    pub async fn notify(&self, origin: &str, event: &BusEvent) -> Result<(), sqlx::Error> {
        let mut wire = Wire {
            origin: origin.to_string(),
            event: event.clone(),
        };
        let mut payload =
            serde_json::to_string(&wire).map_err(|e| sqlx::Error::Encode(e.into()))?;
        if payload.len() > MAX_PAYLOAD {
            if let BusEvent::RoomMessage { data, .. } = &mut wire.event {
                *data = None;
            }
            payload = serde_json::to_string(&wire).map_err(|e| sqlx::Error::Encode(e.into()))?;
        }
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(CHANNEL)
            .bind(payload)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn listen(
        &self,
        own_origin: &str,
        stop: CancellationToken,
        deliver: impl Fn(BusEvent),
        lost: impl Fn(),
    ) {
        let mut backoff = Duration::from_millis(200);
        let mut connected_before = false;
        while !stop.is_cancelled() {
            let mut listener = match self.connect().await {
                Ok(l) => l,
                Err(err) => {
                    tracing::warn!(error = %err, "event bus: LISTEN connection failed");
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
                lost();
            }
            connected_before = true;
            backoff = Duration::from_millis(200);
            loop {
                let next = tokio::select! {
                    _ = stop.cancelled() => return,
                    n = listener.try_recv() => n,
                };
                match next {
                    Ok(Some(note)) => match serde_json::from_str::<Wire>(note.payload()) {
                        Ok(wire) if wire.origin != own_origin => deliver(wire.event),
                        Ok(_) => {}
                        Err(err) => tracing::warn!(error = %err, "event bus: bad payload"),
                    },
                    Ok(None) | Err(_) => {
                        tracing::warn!("event bus: LISTEN connection lost");
                        lost();
                        break;
                    }
                }
            }
        }
    }

    /// A dedicated connection, opened on the listener's own runtime.
    async fn connect(&self) -> Result<PgListener, sqlx::Error> {
        let own = sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect_with((*self.pool.connect_options()).clone())
            .await?;
        let mut listener = PgListener::connect_with(&own).await?;
        listener.listen(CHANNEL).await?;
        Ok(listener)
    }
}
