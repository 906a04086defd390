//! The event bus: every cross-request fan-out goes through it. An event is
//! addressed by a topic (`conversation.message`, `auth.key_revoked`, ...) and
//! a key (the conversation uid, the key id...); sinks subscribe to topic
//! prefixes, so a domain adds topics without editing the bus and a sink
//! never hears what it did not ask for. Events are delivered to this
//! instance's sinks at once; with PostgreSQL they also travel over
//! LISTEN/NOTIFY to every other instance sharing the database.
//!
//! The bus carries notifications, not truth: receivers reconcile with the
//! database (persist first, then broadcast), so a lost notification costs
//! latency, never data.

mod generations;
mod pg;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use generations::Generations;
pub use pg::PgTransport;

/// What travels on the bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BusEvent {
    /// Dotted name; sinks subscribe by prefix.
    pub topic: String,
    /// The account the event belongs to (empty for instance-wide events).
    pub account_id: String,
    /// What the event is about, within the topic (a uid, an id).
    pub key: String,
    /// Small, topic-specific fields.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub payload: Value,
    /// Optional ready-made data that a transport may drop when it does not
    /// fit (receivers then read it from the database).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bulk: Option<String>,
}

impl BusEvent {
    pub fn new(topic: &str, account_id: &str, key: impl Into<String>, payload: Value) -> Self {
        BusEvent {
            topic: topic.to_string(),
            account_id: account_id.to_string(),
            key: key.into(),
            payload,
            bulk: None,
        }
    }

    pub fn with_bulk(mut self, bulk: String) -> Self {
        self.bulk = Some(bulk);
        self
    }

    pub fn account_id(&self) -> &str {
        &self.account_id
    }
}

/// A receiver of bus events on this instance. `deliver` must not block.
pub trait BusSink: Send + Sync {
    fn deliver(&self, event: &BusEvent);
    /// The inter-instance transport lost events (connection dropped or
    /// silent): whatever depends on it must resynchronise from the database.
    fn transport_lost(&self);
}

#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

struct Subscription {
    prefix: String,
    sink: Weak<dyn BusSink>,
}

struct Inner {
    instance_id: String,
    sinks: RwLock<Vec<Subscription>>,
    transport: Option<PgTransport>,
    /// The transport is connected and its heartbeat comes back in time.
    healthy: AtomicBool,
    /// Stops the listener when the bus goes away.
    listener_stop: tokio_util::sync::CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener_stop.cancel();
    }
}

/// How often the PostgreSQL listener proves itself alive, by receiving its
/// own NOTIFY; three missed beats and the connection counts as dead.
pub const DEFAULT_HEARTBEAT: Duration = Duration::from_secs(5);

impl EventBus {
    /// Single-instance bus: in-process delivery only.
    pub fn in_process(instance_id: String) -> Self {
        Self::with(instance_id, None)
    }

    /// In-process delivery plus PostgreSQL NOTIFY to other instances; call
    /// [`EventBus::start_listener`] to receive theirs.
    pub fn postgres(instance_id: String, pool: sea_orm::sqlx::PgPool, heartbeat: Duration) -> Self {
        Self::with(instance_id, Some(PgTransport::new(pool, heartbeat)))
    }

    fn with(instance_id: String, transport: Option<PgTransport>) -> Self {
        EventBus {
            inner: Arc::new(Inner {
                instance_id,
                sinks: RwLock::new(Vec::new()),
                healthy: AtomicBool::new(transport.is_none()),
                transport,
                listener_stop: Default::default(),
            }),
        }
    }

    pub fn instance_id(&self) -> &str {
        &self.inner.instance_id
    }

    pub fn is_distributed(&self) -> bool {
        self.inner.transport.is_some()
    }

    /// Is every event from other instances reaching this one? Always true
    /// in process; with PostgreSQL, while the listener's heartbeat returns.
    pub fn is_healthy(&self) -> bool {
        self.inner.healthy.load(Ordering::Relaxed)
    }

    /// Waits (at most `limit`) until the bus delivers between instances, so
    /// an instance starts serving with its listener in place.
    pub async fn wait_healthy(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        while !self.is_healthy() {
            if tokio::time::Instant::now() >= deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        true
    }

    /// Subscribes `sink` to every topic starting with `prefix` (`""` for
    /// all). Sinks are held weakly: the bus never keeps a domain alive.
    pub fn subscribe(&self, prefix: &str, sink: Weak<dyn BusSink>) {
        self.inner.sinks.write().push(Subscription {
            prefix: prefix.to_string(),
            sink,
        });
    }

    /// Deliver locally, then to other instances. A transport failure is
    /// logged, not returned: the event's data is already committed, and
    /// remote readers reconcile from the database.
    pub async fn publish(&self, event: BusEvent) {
        self.deliver_local(&event);
        if let Some(transport) = &self.inner.transport
            && let Err(err) = transport.notify(&self.inner.instance_id, &event).await
        {
            tracing::warn!(error = %err, "event bus: NOTIFY failed");
        }
    }

    fn deliver_local(&self, event: &BusEvent) {
        let sinks: Vec<Arc<dyn BusSink>> = self
            .inner
            .sinks
            .read()
            .iter()
            .filter(|s| event.topic.starts_with(&s.prefix))
            .filter_map(|s| s.sink.upgrade())
            .collect();
        for sink in sinks {
            sink.deliver(event);
        }
    }

    fn set_healthy(&self, healthy: bool) {
        self.inner.healthy.store(healthy, Ordering::Relaxed);
        crate::metrics::set_bus_healthy(healthy);
    }

    fn lost(&self) {
        self.set_healthy(false);
        let sinks: Vec<Arc<dyn BusSink>> = self
            .inner
            .sinks
            .read()
            .iter()
            .filter_map(|s| s.sink.upgrade())
            .collect();
        for sink in sinks {
            sink.transport_lost();
        }
    }

    /// Receives other instances' events until `shutdown` or until this bus
    /// is dropped; reconnects after a lost or silent connection and tells
    /// sinks that events may have been missed.
    ///
    /// The listener runs on its own thread and runtime with its own
    /// connections, so it outlives no runtime it depends on and always
    /// closes its connections cleanly.
    pub fn start_listener(&self, shutdown: tokio_util::sync::CancellationToken) {
        let Some(transport) = self.inner.transport.clone() else {
            return;
        };
        let weak = Arc::downgrade(&self.inner);
        let origin = self.inner.instance_id.clone();
        let stop = self.inner.listener_stop.clone();
        let spawned = std::thread::Builder::new()
            .name("agentic-bus-listener".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(rt) => rt,
                    Err(err) => {
                        tracing::error!(error = %err, "event bus: no runtime for the listener");
                        return;
                    }
                };
                let with_bus = |f: &dyn Fn(&EventBus)| {
                    if let Some(inner) = weak.upgrade() {
                        f(&EventBus { inner });
                    }
                };
                let stop_on_shutdown = stop.clone();
                runtime.spawn(async move {
                    shutdown.cancelled().await;
                    stop_on_shutdown.cancel();
                });
                runtime.block_on(transport.listen(
                    &origin,
                    stop,
                    |event| with_bus(&|bus| bus.deliver_local(&event)),
                    |healthy| {
                        with_bus(&|bus| {
                            if healthy {
                                bus.set_healthy(true);
                            } else {
                                bus.lost();
                            }
                        })
                    },
                ));
            });
        if let Err(err) = spawned {
            tracing::error!(error = %err, "event bus: cannot start the listener thread");
        }
    }
}

/// Wire form of an event between instances.
#[derive(Serialize, Deserialize)]
struct Wire {
    origin: String,
    event: BusEvent,
}
