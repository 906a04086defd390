//! The event bus: every cross-request fan-out goes through it. Events are
//! delivered to this instance's sinks at once; with PostgreSQL they also
//! travel over LISTEN/NOTIFY to every other instance sharing the database.
//! The bus carries notifications, not truth: receivers reconcile with the
//! database (persist first, then broadcast), so a lost notification costs
//! latency, never data.

mod pg;

use std::sync::{Arc, Weak};

use parking_lot::RwLock;
use serde::{Deserialize, Serialize};

pub use pg::PgTransport;

/// What travels on the bus.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all_fields = "camelCase")]
pub enum BusEvent {
    /// A message was committed with this sequence. `data` is the ready-made
    /// `message.created` payload when it fits in a notification.
    #[serde(rename = "room.message")]
    RoomMessage {
        account_id: String,
        conversation_uid: String,
        sequence: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        data: Option<String>,
    },
    /// Presence rows of this conversation changed on some instance.
    #[serde(rename = "room.presence")]
    RoomPresence {
        account_id: String,
        conversation_uid: String,
    },
    /// Who may read the conversation changed (sharing turned off).
    #[serde(rename = "room.access")]
    RoomAccess {
        account_id: String,
        conversation_uid: String,
        owner_user_id: i64,
        sharing_enabled: bool,
    },
    /// A conversation of the account was created or renamed.
    #[serde(rename = "conversation.changed")]
    ConversationChanged { account_id: String },
}

impl BusEvent {
    /// The account every event belongs to.
    pub fn account_id(&self) -> &str {
        match self {
            BusEvent::RoomMessage { account_id, .. }
            | BusEvent::RoomPresence { account_id, .. }
            | BusEvent::RoomAccess { account_id, .. }
            | BusEvent::ConversationChanged { account_id } => account_id,
        }
    }
}

/// A receiver of bus events on this instance. `deliver` must not block.
pub trait BusSink: Send + Sync {
    fn deliver(&self, event: &BusEvent);
    /// The inter-instance transport lost events (connection dropped):
    /// whatever depends on it must resynchronise.
    fn transport_lost(&self);
}

#[derive(Clone)]
pub struct EventBus {
    inner: Arc<Inner>,
}

struct Inner {
    instance_id: String,
    sinks: RwLock<Vec<Weak<dyn BusSink>>>,
    transport: Option<PgTransport>,
    /// Stops the listener when the bus goes away.
    listener_stop: tokio_util::sync::CancellationToken,
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.listener_stop.cancel();
    }
}

impl EventBus {
    /// Single-instance bus: in-process delivery only.
    pub fn in_process(instance_id: String) -> Self {
        EventBus {
            inner: Arc::new(Inner {
                instance_id,
                sinks: RwLock::new(Vec::new()),
                transport: None,
                listener_stop: Default::default(),
            }),
        }
    }

    /// In-process delivery plus PostgreSQL NOTIFY to other instances; call
    /// [`EventBus::start_listener`] to receive theirs.
    pub fn postgres(instance_id: String, pool: sea_orm::sqlx::PgPool) -> Self {
        EventBus {
            inner: Arc::new(Inner {
                instance_id,
                sinks: RwLock::new(Vec::new()),
                transport: Some(PgTransport::new(pool)),
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

    /// Sinks are held weakly: the bus never keeps a domain alive.
    pub fn register(&self, sink: Weak<dyn BusSink>) {
        self.inner.sinks.write().push(sink);
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
        for sink in self.sinks() {
            sink.deliver(event);
        }
    }

    fn sinks(&self) -> Vec<Arc<dyn BusSink>> {
        self.inner
            .sinks
            .read()
            .iter()
            .filter_map(Weak::upgrade)
            .collect()
    }

    /// Receives other instances' events until `shutdown` or until this bus
    /// is dropped; reconnects after a lost connection and tells sinks that
    /// events may have been missed.
    ///
    /// The listener runs on its own thread and runtime with its own
    /// connection, so it outlives no runtime it depends on and always closes
    /// its connection cleanly.
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
                    || {
                        with_bus(&|bus| {
                            for sink in bus.sinks() {
                                sink.transport_lost();
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
