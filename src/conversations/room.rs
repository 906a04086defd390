//! The room actor: one per conversation with open streams on this instance.
//! It holds the subscriber set and local presence, orders messages by
//! sequence (filling gaps from the database) and fans out to each
//! subscriber's bounded buffer without ever waiting on one of them.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock, Weak};

use actix::prelude::*;
use bytestring::ByteString;
use parking_lot::Mutex;
use sea_orm::DatabaseConnection;
use serde::Serialize;
use tokio::sync::{mpsc, watch};

use entity::conversation;

use super::model::{Participant, message_created_data, presence_data};
use super::{presence, service};
use crate::bus::{BusEvent, BusSink, EventBus};
use crate::config::RoomTuning;
use crate::error::ApiError;

/// Rows fetched per round when filling a gap.
const FETCH_PAGE: u64 = 500;

/// What a subscriber receives from its room.
#[derive(Debug, Clone)]
pub enum RoomEvent {
    Message { sequence: i64, data: ByteString },
    Presence(ByteString),
    KeepAlive,
}

/// Why the room closed a stream: sent to the client as the `error` event.
#[derive(Debug, Clone, Serialize)]
pub struct StreamError {
    pub code: &'static str,
    pub message: String,
    pub status: u16,
}

impl StreamError {
    pub fn slow_consumer() -> Self {
        StreamError {
            code: "SLOW_CONSUMER",
            message: "the stream fell too far behind; reconnect with Last-Event-ID or after set to the last sequence received".into(),
            status: 503,
        }
    }

    pub fn database_unavailable() -> Self {
        StreamError {
            code: "SERVICE_UNAVAILABLE",
            message: "the database is unreachable; reconnect from the last sequence received"
                .into(),
            status: 503,
        }
    }

    pub fn bus_lost() -> Self {
        StreamError {
            code: "SERVICE_UNAVAILABLE",
            message: "events between instances were interrupted; reconnect from the last sequence received".into(),
            status: 503,
        }
    }

    pub fn shutting_down() -> Self {
        StreamError {
            code: "SERVICE_UNAVAILABLE",
            message: "the server is shutting down; reconnect from the last sequence received"
                .into(),
            status: 503,
        }
    }

    pub fn no_access() -> Self {
        StreamError {
            code: "NOT_FOUND",
            message: "conversation not found".into(),
            status: 404,
        }
    }
}

type CloseReason = Arc<OnceLock<StreamError>>;

/// One open stream, as the stream side holds it. Dropping it leaves the room.
pub struct Subscription {
    pub rx: mpsc::Receiver<Arc<RoomEvent>>,
    pub closed: CloseReason,
    /// The room's sequence when the stream joined: live delivery continues
    /// after it (replay covers what came before).
    pub live_from: i64,
    _guard: LeaveGuard,
}

struct LeaveGuard {
    room: Addr<Room>,
    sub_id: u64,
}

impl Drop for LeaveGuard {
    fn drop(&mut self) {
        self.room.do_send(Leave {
            sub_id: self.sub_id,
        });
    }
}

/// This instance's rooms, by conversation uid; also the bus sink that routes
/// events to them.
#[derive(Clone)]
pub struct Rooms {
    inner: Arc<RoomsInner>,
}

struct RoomsInner {
    db: DatabaseConnection,
    bus: EventBus,
    tuning: RoomTuning,
    map: Mutex<HashMap<String, Addr<Room>>>,
}

impl Rooms {
    pub fn new(db: DatabaseConnection, bus: EventBus, tuning: RoomTuning) -> Self {
        let inner = Arc::new(RoomsInner {
            db,
            bus: bus.clone(),
            tuning,
            map: Mutex::new(HashMap::new()),
        });
        let weak: Weak<RoomsInner> = Arc::downgrade(&inner);
        bus.register(weak);
        Rooms { inner }
    }

    /// Is any of these conversations' rooms open on this instance?
    pub fn any_open(&self, uids: &[&str]) -> bool {
        let map = self.inner.map.lock();
        uids.iter().any(|uid| map.contains_key(*uid))
    }

    /// Rooms currently running on this instance.
    pub fn len(&self) -> usize {
        self.inner.map.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Joins user `user_id` to the conversation's room, starting it if needed.
    pub async fn join(
        &self,
        conv: &conversation::Model,
        user_id: i64,
    ) -> Result<Subscription, ApiError> {
        for _ in 0..3 {
            let room = self.get_or_start(conv);
            let (tx, rx) = mpsc::channel(self.inner.tuning.subscriber_buffer.max(1));
            let closed: CloseReason = Arc::new(OnceLock::new());
            let join = Join {
                user_id,
                tx,
                closed: closed.clone(),
            };
            match room.send(join).await {
                Ok((sub_id, live_from)) => {
                    return Ok(Subscription {
                        rx,
                        closed,
                        live_from,
                        _guard: LeaveGuard { room, sub_id },
                    });
                }
                // The room stopped between lookup and join: start afresh.
                Err(_) => self.inner.forget(&conv.uid, &room),
            }
        }
        Err(ApiError::ServiceUnavailable(
            "the conversation room is unavailable; retry".into(),
        ))
    }

    fn get_or_start(&self, conv: &conversation::Model) -> Addr<Room> {
        let mut map = self.inner.map.lock();
        if let Some(addr) = map.get(&conv.uid)
            && addr.connected()
        {
            return addr.clone();
        }
        let (users_tx, _) = watch::channel(BTreeSet::new());
        let room = Room {
            uid: conv.uid.clone(),
            account_id: conv.account_id.clone(),
            owner_user_id: conv.owner_user_id,
            registry: Arc::downgrade(&self.inner),
            db: self.inner.db.clone(),
            bus: self.inner.bus.clone(),
            tuning: self.inner.tuning.clone(),
            subs: HashMap::new(),
            next_id: 0,
            last_seq: conv.last_sequence,
            pending: BTreeMap::new(),
            want_upto: conv.last_sequence,
            fetching: false,
            participants: None,
            presence_gen: 0,
            awaiting_presence: Vec::new(),
            local_users: HashMap::new(),
            users_tx,
            failed: false,
        };
        let addr = room.start();
        map.insert(conv.uid.clone(), addr.clone());
        addr
    }
}

impl RoomsInner {
    fn forget(&self, uid: &str, addr: &Addr<Room>) {
        let mut map = self.map.lock();
        if map.get(uid) == Some(addr) {
            map.remove(uid);
        }
    }
}

impl BusSink for RoomsInner {
    fn deliver(&self, event: &BusEvent) {
        let uid = match event {
            BusEvent::RoomMessage {
                conversation_uid, ..
            }
            | BusEvent::RoomPresence {
                conversation_uid, ..
            }
            | BusEvent::RoomAccess {
                conversation_uid, ..
            } => conversation_uid,
            BusEvent::ConversationChanged { .. } => return,
        };
        if let Some(room) = self.map.lock().get(uid) {
            room.do_send(Deliver(event.clone()));
        }
    }

    fn transport_lost(&self) {
        for room in self.map.lock().values() {
            room.do_send(Fail(StreamError::bus_lost()));
        }
    }
}

struct Subscriber {
    user_id: i64,
    tx: mpsc::Sender<Arc<RoomEvent>>,
    closed: CloseReason,
}

pub struct Room {
    uid: String,
    account_id: String,
    owner_user_id: i64,
    registry: Weak<RoomsInner>,
    db: DatabaseConnection,
    bus: EventBus,
    tuning: RoomTuning,
    subs: HashMap<u64, Subscriber>,
    next_id: u64,
    /// Highest sequence broadcast (or known to precede every subscriber).
    last_seq: i64,
    /// Messages that arrived ahead of a gap.
    pending: BTreeMap<i64, ByteString>,
    /// Highest sequence known to exist.
    want_upto: i64,
    fetching: bool,
    /// Last broadcast participants and their event payload.
    participants: Option<(Vec<Participant>, ByteString)>,
    presence_gen: u64,
    /// Subscribers owed a presence snapshot once the next load lands.
    awaiting_presence: Vec<u64>,
    /// This instance's open streams per user.
    local_users: HashMap<i64, usize>,
    users_tx: watch::Sender<BTreeSet<i64>>,
    failed: bool,
}

impl Actor for Room {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        crate::metrics::room_opened();
        let me = ctx.address().downgrade();
        presence::spawn_writer(
            self.db.clone(),
            self.bus.clone(),
            self.account_id.clone(),
            self.uid.clone(),
            self.users_tx.subscribe(),
            self.tuning.keepalive,
            move |err| {
                tracing::warn!(error = %err, "presence write failed");
                if let Some(room) = me.upgrade() {
                    room.do_send(Fail(StreamError::database_unavailable()));
                }
            },
        );
        ctx.run_interval(self.tuning.keepalive, |room, ctx| {
            room.broadcast(RoomEvent::KeepAlive, ctx);
            // Also notices stale remote rows and a lost database.
            room.load_presence(ctx);
        });
    }

    fn stopped(&mut self, ctx: &mut Context<Self>) {
        crate::metrics::room_closed();
        if let Some(registry) = self.registry.upgrade() {
            registry.forget(&self.uid, &ctx.address());
        }
    }
}

#[derive(Message)]
#[rtype(result = "(u64, i64)")]
struct Join {
    user_id: i64,
    tx: mpsc::Sender<Arc<RoomEvent>>,
    closed: CloseReason,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Leave {
    sub_id: u64,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Deliver(BusEvent);

#[derive(Message)]
#[rtype(result = "()")]
struct Fail(StreamError);

impl Handler<Join> for Room {
    type Result = MessageResult<Join>;

    fn handle(&mut self, msg: Join, ctx: &mut Context<Self>) -> MessageResult<Join> {
        self.next_id += 1;
        let id = self.next_id;
        let user_id = msg.user_id;
        self.subs.insert(
            id,
            Subscriber {
                user_id,
                tx: msg.tx,
                closed: msg.closed,
            },
        );
        let count = self.local_users.entry(user_id).or_default();
        *count += 1;
        if *count == 1 {
            // The writer persists and announces; the reload that follows
            // broadcasts the new presence to everyone, this stream included.
            self.users_tx.send_modify(|users| {
                users.insert(user_id);
            });
            self.awaiting_presence.push(id);
        } else if let Some((_, data)) = &self.participants {
            let snapshot = RoomEvent::Presence(data.clone());
            self.send_to(id, snapshot, ctx);
        } else {
            self.awaiting_presence.push(id);
            self.load_presence(ctx);
        }
        MessageResult((id, self.last_seq))
    }
}

impl Handler<Leave> for Room {
    type Result = ();

    fn handle(&mut self, msg: Leave, ctx: &mut Context<Self>) {
        self.remove(msg.sub_id, ctx);
    }
}

impl Handler<Deliver> for Room {
    type Result = ();

    fn handle(&mut self, Deliver(event): Deliver, ctx: &mut Context<Self>) {
        match event {
            BusEvent::RoomMessage { sequence, data, .. } => self.on_message(sequence, data, ctx),
            BusEvent::RoomPresence { .. } => self.load_presence(ctx),
            BusEvent::ConversationChanged { .. } => {}
            BusEvent::RoomAccess {
                owner_user_id,
                sharing_enabled,
                ..
            } => {
                self.owner_user_id = owner_user_id;
                if !sharing_enabled {
                    let others: Vec<u64> = self
                        .subs
                        .iter()
                        .filter(|(_, s)| s.user_id != owner_user_id)
                        .map(|(id, _)| *id)
                        .collect();
                    for id in others {
                        self.close(id, StreamError::no_access(), ctx);
                    }
                }
            }
        }
    }
}

impl Handler<Fail> for Room {
    type Result = ();

    fn handle(&mut self, Fail(err): Fail, ctx: &mut Context<Self>) {
        self.fail(err, ctx);
    }
}

impl Room {
    fn on_message(&mut self, sequence: i64, data: Option<String>, ctx: &mut Context<Self>) {
        if sequence <= self.last_seq {
            return;
        }
        if let Some(data) = data {
            if sequence == self.last_seq + 1 && !self.fetching {
                self.emit_message(sequence, data.into(), ctx);
                self.drain_pending(ctx);
                return;
            }
            self.pending.insert(sequence, data.into());
        }
        self.want_upto = self.want_upto.max(sequence);
        self.fetch(ctx);
    }

    fn emit_message(&mut self, sequence: i64, data: ByteString, ctx: &mut Context<Self>) {
        self.last_seq = sequence;
        self.broadcast(RoomEvent::Message { sequence, data }, ctx);
    }

    fn drain_pending(&mut self, ctx: &mut Context<Self>) {
        while let Some(data) = self.pending.remove(&(self.last_seq + 1)) {
            self.emit_message(self.last_seq + 1, data, ctx);
        }
        let last = self.last_seq;
        self.pending.retain(|&seq, _| seq > last);
    }

    /// Reads missing sequences (last_seq, want_upto] from the database.
    fn fetch(&mut self, ctx: &mut Context<Self>) {
        if self.fetching || self.want_upto <= self.last_seq || self.failed {
            return;
        }
        self.fetching = true;
        let db = self.db.clone();
        let uid = self.uid.clone();
        let (from, upto) = (self.last_seq, self.want_upto);
        let work =
            async move { service::messages_between(&db, &uid, from, Some(upto), FETCH_PAGE).await };
        ctx.spawn(work.into_actor(self).map(move |res, room, ctx| {
            room.fetching = false;
            match res {
                Ok(messages) => {
                    for m in messages {
                        if m.sequence == room.last_seq + 1 {
                            let data = message_created_data(&room.uid, &m);
                            room.emit_message(m.sequence, data.into(), ctx);
                            room.drain_pending(ctx);
                        }
                    }
                    if room.last_seq == from {
                        // Nothing readable yet: never spin; the next event retries.
                        room.want_upto = room.last_seq;
                    }
                    room.fetch(ctx);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "room gap fill failed");
                    room.fail(StreamError::database_unavailable(), ctx);
                }
            }
        }));
    }

    fn load_presence(&mut self, ctx: &mut Context<Self>) {
        if self.failed {
            return;
        }
        self.presence_gen += 1;
        let generation = self.presence_gen;
        let db = self.db.clone();
        let uid = self.uid.clone();
        let ttl = self.tuning.presence_ttl();
        let work = async move { presence::load(&db, &uid, ttl).await };
        ctx.spawn(work.into_actor(self).map(move |res, room, ctx| {
            if generation != room.presence_gen {
                return;
            }
            match res {
                Ok(participants) => room.apply_presence(participants, ctx),
                Err(err) => {
                    tracing::warn!(error = %err, "presence load failed");
                    room.fail(StreamError::database_unavailable(), ctx);
                }
            }
        }));
    }

    fn apply_presence(&mut self, participants: Vec<Participant>, ctx: &mut Context<Self>) {
        let changed = self
            .participants
            .as_ref()
            .is_none_or(|(current, _)| *current != participants);
        let waiting = std::mem::take(&mut self.awaiting_presence);
        if changed {
            let data: ByteString = presence_data(&self.uid, &participants).into();
            self.participants = Some((participants, data.clone()));
            self.broadcast(RoomEvent::Presence(data), ctx);
        } else if let Some((_, data)) = &self.participants {
            let data = data.clone();
            for id in waiting {
                self.send_to(id, RoomEvent::Presence(data.clone()), ctx);
            }
        }
    }

    /// Offers the event to every subscriber; a full buffer closes that one.
    fn broadcast(&mut self, event: RoomEvent, ctx: &mut Context<Self>) {
        // One allocation per event, shared by every subscriber's buffer.
        let event = Arc::new(event);
        let mut gone = Vec::new();
        for (&id, sub) in &self.subs {
            match sub.tx.try_send(event.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let _ = sub.closed.set(StreamError::slow_consumer());
                    gone.push(id);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
            }
        }
        for id in gone {
            self.remove(id, ctx);
        }
    }

    fn send_to(&mut self, id: u64, event: RoomEvent, ctx: &mut Context<Self>) {
        let Some(sub) = self.subs.get(&id) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(_)) = sub.tx.try_send(Arc::new(event)) {
            self.close(id, StreamError::slow_consumer(), ctx);
        }
    }

    fn close(&mut self, id: u64, err: StreamError, ctx: &mut Context<Self>) {
        if let Some(sub) = self.subs.get(&id) {
            let _ = sub.closed.set(err);
        }
        self.remove(id, ctx);
    }

    /// Drops a subscriber (its stream ends after what is buffered) and
    /// updates local presence.
    fn remove(&mut self, id: u64, ctx: &mut Context<Self>) {
        let Some(sub) = self.subs.remove(&id) else {
            return;
        };
        let user_id = sub.user_id;
        if let Some(count) = self.local_users.get_mut(&user_id) {
            *count -= 1;
            if *count == 0 {
                self.local_users.remove(&user_id);
                self.users_tx.send_modify(|users| {
                    users.remove(&user_id);
                });
            }
        }
        self.awaiting_presence.retain(|&w| w != id);
        if self.subs.is_empty() {
            ctx.run_later(self.tuning.idle_grace, |room, ctx| {
                if room.subs.is_empty() {
                    ctx.stop();
                }
            });
        }
    }

    /// Ends every stream with `err` and stops: state is rebuilt from the
    /// database by the next subscriber.
    fn fail(&mut self, err: StreamError, ctx: &mut Context<Self>) {
        self.failed = true;
        for sub in self.subs.values() {
            let _ = sub.closed.set(err.clone());
        }
        self.subs.clear();
        self.local_users.clear();
        self.users_tx.send_modify(BTreeSet::clear);
        if let Some(registry) = self.registry.upgrade() {
            registry.forget(&self.uid, &ctx.address());
        }
        ctx.stop();
    }
}
