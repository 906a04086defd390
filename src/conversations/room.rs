//! The room actor: one per conversation with open streams on this instance.
//! It holds the subscribers (through the shared SSE fan-out) and local
//! presence, orders messages by sequence (filling gaps from the database),
//! knows who may read the conversation and with which credential each
//! stream was opened, and re-validates all of it on every keep-alive tick.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Weak};
use std::time::Instant;

use actix::prelude::*;
use sea_orm::DatabaseConnection;

use entity::conversation;

use super::model::{Participant, message_created_data, presence_data};
use super::presence::{self, PresenceWriter};
use super::{events, service};
use crate::auth::CallerInfo;
use crate::bus::{BusEvent, BusSink, EventBus};
use crate::config::RoomTuning;
use crate::error::ApiError;
use crate::sse::{self, Frame, Item, StreamError, Subscribers, Subscription};

/// Rows fetched per round when filling a gap.
const FETCH_PAGE: u64 = 500;

/// The `message.created` frame of sequence `seq`, encoded once.
pub fn message_frame(seq: i64, data: &str) -> Frame {
    Frame::event("message.created", Some(&seq.to_string()), data)
}

fn no_access() -> StreamError {
    StreamError::not_found("conversation")
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
    live: sse::Registry<Room>,
}

impl Rooms {
    /// The rooms of this instance; on `shutdown` every stream gets the
    /// shutting-down error and ends.
    pub fn new(
        db: DatabaseConnection,
        bus: EventBus,
        tuning: RoomTuning,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Self {
        let inner = Arc::new(RoomsInner {
            db,
            bus: bus.clone(),
            tuning,
            live: sse::Registry::default(),
        });
        let weak: Weak<RoomsInner> = Arc::downgrade(&inner);
        bus.subscribe(events::PREFIX, weak.clone());
        bus.subscribe(crate::auth::events::PREFIX, weak.clone());
        tokio::spawn(async move {
            shutdown.cancelled().await;
            if let Some(inner) = weak.upgrade() {
                for room in inner.live.all() {
                    room.do_send(Fail(StreamError::shutting_down()));
                }
            }
        });
        Rooms { inner }
    }

    /// Is any of these conversations' rooms open on this instance?
    pub fn any_open(&self, uids: &[&str]) -> bool {
        self.inner.live.any_open(uids)
    }

    /// Rooms currently running on this instance.
    pub fn len(&self) -> usize {
        self.inner.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Joins the caller to the conversation's room, starting it if needed.
    /// Refused (404) when the room knows the caller may not read it.
    pub async fn join(
        &self,
        conv: &conversation::Model,
        caller: &CallerInfo,
    ) -> Result<Subscription, ApiError> {
        for _ in 0..3 {
            let room = self.get_or_start(conv, caller.account.shared_conversations_enabled);
            let join = Join {
                user_id: caller.user.id,
                key_id: caller.api_key_id,
            };
            match room.send(join).await {
                Ok(None) => return Err(ApiError::not_found("conversation")),
                Ok(Some(joined)) => {
                    return Ok(Subscription {
                        rx: joined.rx,
                        closed: joined.closed,
                        live_from: joined.live_from,
                        guard: Box::new(LeaveGuard {
                            room,
                            sub_id: joined.id,
                        }),
                    });
                }
                // The room stopped between lookup and join: start afresh.
                Err(_) => self.inner.live.forget(&conv.uid, &room),
            }
        }
        Err(ApiError::ServiceUnavailable(
            "the conversation room is unavailable; retry".into(),
        ))
    }

    fn get_or_start(&self, conv: &conversation::Model, shared_allowed: bool) -> Addr<Room> {
        self.inner.live.get_or_start(&conv.uid, || {
            Room {
                uid: conv.uid.clone(),
                account_id: conv.account_id.clone(),
                owner_user_id: conv.owner_user_id,
                sharing_enabled: conv.sharing_enabled,
                shared_allowed,
                revalidating: false,
                registry: Arc::downgrade(&self.inner),
                db: self.inner.db.clone(),
                bus: self.inner.bus.clone(),
                tuning: self.inner.tuning.clone(),
                subs: Subscribers::new(self.inner.tuning.subscriber_buffer),
                last_seq: conv.last_sequence,
                pending: BTreeMap::new(),
                want_upto: conv.last_sequence,
                fetching: false,
                participants: None,
                presence_gen: 0,
                awaiting_presence: Vec::new(),
                local_users: HashMap::new(),
                writer: None,
                failed: false,
            }
            .start()
        })
    }
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

impl BusSink for RoomsInner {
    fn deliver(&self, event: &BusEvent) {
        if event.topic.starts_with(crate::auth::events::PREFIX) {
            // Revocations concern whichever rooms hold that key or user.
            for room in self.live.all() {
                room.do_send(Deliver(event.clone()));
            }
        } else if event.topic != events::CHANGED
            && let Some(room) = self.live.get(&event.key)
        {
            room.do_send(Deliver(event.clone()));
        }
    }

    /// Events from other instances may be lost: every room resynchronises
    /// in place from the database (messages, access, presence) instead of
    /// closing its streams.
    fn transport_lost(&self) {
        for room in self.live.all() {
            room.do_send(Resync);
        }
    }
}

/// Who a subscriber is.
struct Member {
    user_id: i64,
    /// The credential the stream was opened with: revoking it closes it.
    key_id: i64,
    opened: Instant,
}

pub struct Room {
    uid: String,
    account_id: String,
    owner_user_id: i64,
    sharing_enabled: bool,
    /// The account allows shared conversations.
    shared_allowed: bool,
    revalidating: bool,
    registry: Weak<RoomsInner>,
    db: DatabaseConnection,
    bus: EventBus,
    tuning: RoomTuning,
    subs: Subscribers<Member>,
    /// Highest sequence broadcast (or known to precede every subscriber).
    last_seq: i64,
    /// Messages that arrived ahead of a gap, as their data.
    pending: BTreeMap<i64, String>,
    /// Highest sequence known to exist.
    want_upto: i64,
    fetching: bool,
    /// Last broadcast participants and their frame.
    participants: Option<(Vec<Participant>, Arc<Item>)>,
    presence_gen: u64,
    /// Subscribers owed a presence snapshot once the next load lands.
    awaiting_presence: Vec<u64>,
    /// This instance's open streams per user.
    local_users: HashMap<i64, usize>,
    /// Persists local presence (a supervised actor).
    writer: Option<Addr<PresenceWriter>>,
    failed: bool,
}

impl Actor for Room {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        crate::metrics::room_opened();
        self.writer = Some(presence::start_writer(
            self.db.clone(),
            self.bus.clone(),
            self.account_id.clone(),
            self.uid.clone(),
            self.tuning.keepalive,
            ctx.address().downgrade().recipient(),
        ));
        ctx.run_interval(self.tuning.keepalive, |room, ctx| {
            room.broadcast(Item::new(None, Frame::keep_alive()), ctx);
            let max = room.tuning.max_stream_duration;
            let gone = room
                .subs
                .close_where(|m| m.opened.elapsed() >= max, StreamError::max_duration());
            room.forget_members(gone, ctx);
            // Also notices stale remote rows and a lost database.
            room.load_presence(ctx);
            // No missed event leaves access open, or a message undelivered,
            // for longer than one tick.
            room.revalidate(ctx);
        });
    }

    fn stopped(&mut self, ctx: &mut Context<Self>) {
        if let Some(writer) = self.writer.take() {
            writer.do_send(presence::Finish);
        }
        crate::metrics::room_closed();
        if let Some(registry) = self.registry.upgrade() {
            registry.live.forget(&self.uid, &ctx.address());
        }
    }
}

struct Joined {
    id: u64,
    rx: tokio::sync::mpsc::Receiver<Arc<Item>>,
    closed: sse::fanout::CloseReason,
    live_from: i64,
}

/// `None`: refused (the caller may not read the conversation).
#[derive(Message)]
#[rtype(result = "Option<Joined>")]
struct Join {
    user_id: i64,
    key_id: i64,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Leave {
    sub_id: u64,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Deliver(BusEvent);

/// Ends every stream with the error and stops the room: its state is
/// rebuilt from the database by the next subscriber.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct Fail(pub StreamError);

#[derive(Message)]
#[rtype(result = "()")]
struct Resync;

impl Handler<Join> for Room {
    type Result = MessageResult<Join>;

    fn handle(&mut self, msg: Join, ctx: &mut Context<Self>) -> MessageResult<Join> {
        if self.failed || !self.may_read(msg.user_id) {
            return MessageResult(None);
        }
        let user_id = msg.user_id;
        let (id, rx, closed) = self.subs.add(Member {
            user_id,
            key_id: msg.key_id,
            opened: Instant::now(),
        });
        let count = self.local_users.entry(user_id).or_default();
        *count += 1;
        if *count == 1 {
            // The writer persists and announces; the reload that follows
            // broadcasts the new presence to everyone, this stream included.
            self.publish_local_users();
            self.awaiting_presence.push(id);
        } else if let Some((_, item)) = &self.participants {
            let item = item.clone();
            if let Some(gone) = self.subs.send_to(id, item) {
                self.forget_members(vec![gone], ctx);
            }
        } else {
            self.awaiting_presence.push(id);
            self.load_presence(ctx);
        }
        MessageResult(Some(Joined {
            id,
            rx,
            closed,
            live_from: self.last_seq,
        }))
    }
}

impl Handler<Leave> for Room {
    type Result = ();

    fn handle(&mut self, msg: Leave, ctx: &mut Context<Self>) {
        if let Some(member) = self.subs.remove(msg.sub_id) {
            self.forget_members(vec![member], ctx);
        }
    }
}

impl Handler<Deliver> for Room {
    type Result = ();

    fn handle(&mut self, Deliver(event): Deliver, ctx: &mut Context<Self>) {
        let number = |field: &str| event.payload.get(field).and_then(|v| v.as_i64());
        match event.topic.as_str() {
            events::MESSAGE => {
                if let Some(sequence) = number("sequence") {
                    self.on_message(sequence, event.bulk, ctx);
                }
            }
            events::PRESENCE => self.load_presence(ctx),
            events::ACCESS => {
                if let Some(owner) = number("ownerUserId") {
                    self.owner_user_id = owner;
                }
                if let Some(sharing) = event
                    .payload
                    .get("sharingEnabled")
                    .and_then(|v| v.as_bool())
                {
                    self.sharing_enabled = sharing;
                }
                self.enforce_access(ctx);
                // The account's own switch is read from the database.
                self.revalidate(ctx);
            }
            crate::auth::events::KEY_REVOKED => {
                let key: Option<i64> = event.key.parse().ok();
                let gone = self
                    .subs
                    .close_where(|m| Some(m.key_id) == key, StreamError::revoked());
                self.forget_members(gone, ctx);
            }
            crate::auth::events::USER_REVOKED => {
                let user: Option<i64> = event.key.parse().ok();
                let gone = self
                    .subs
                    .close_where(|m| Some(m.user_id) == user, StreamError::revoked());
                self.forget_members(gone, ctx);
            }
            _ => {}
        }
    }
}

impl Handler<Fail> for Room {
    type Result = ();

    fn handle(&mut self, Fail(err): Fail, ctx: &mut Context<Self>) {
        self.fail(err, ctx);
    }
}

impl Handler<Resync> for Room {
    type Result = ();

    fn handle(&mut self, _: Resync, ctx: &mut Context<Self>) {
        self.revalidate(ctx);
        self.load_presence(ctx);
    }
}

impl Room {
    /// Who may read the conversation, as this room knows it.
    fn may_read(&self, user_id: i64) -> bool {
        if self.sharing_enabled {
            self.shared_allowed
        } else {
            user_id == self.owner_user_id
        }
    }

    fn enforce_access(&mut self, ctx: &mut Context<Self>) {
        let (sharing, allowed, owner) = (
            self.sharing_enabled,
            self.shared_allowed,
            self.owner_user_id,
        );
        let may_read = move |user: i64| if sharing { allowed } else { user == owner };
        let gone = self.subs.close_where(|m| !may_read(m.user_id), no_access());
        self.forget_members(gone, ctx);
    }

    /// Re-reads the conversation, the account's switch and the subscribers'
    /// credentials: closes whoever may no longer read, and fills any gap
    /// up to the conversation's last sequence (a lost notification).
    fn revalidate(&mut self, ctx: &mut Context<Self>) {
        if self.revalidating || self.failed {
            return;
        }
        self.revalidating = true;
        let db = self.db.clone();
        let uid = self.uid.clone();
        let account = self.account_id.clone();
        let mut keys: Vec<i64> = self.subs.metas().map(|m| m.key_id).collect();
        keys.sort_unstable();
        keys.dedup();
        let work = crate::rt::detached(async move {
            let state = service::room_state(&db, &uid).await?;
            let live = crate::auth::service::live_keys(&db, &account, &keys).await?;
            Ok::<_, sea_orm::DbErr>((state, live))
        });
        ctx.spawn(work.into_actor(self).map(|res, room, ctx| {
            room.revalidating = false;
            let res =
                res.unwrap_or_else(|| Err(sea_orm::DbErr::Custom("revalidation cancelled".into())));
            match res {
                Ok((None, _)) => {
                    let gone = room.subs.close_where(|_| true, no_access());
                    room.forget_members(gone, ctx);
                }
                Ok((Some(state), live)) => {
                    room.owner_user_id = state.owner_user_id;
                    room.sharing_enabled = state.sharing_enabled;
                    room.shared_allowed = state.shared_allowed;
                    room.enforce_access(ctx);
                    let gone = room
                        .subs
                        .close_where(|m| !live.contains(&m.key_id), StreamError::revoked());
                    room.forget_members(gone, ctx);
                    room.want_upto = room.want_upto.max(state.last_sequence);
                    room.fetch(ctx);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "room revalidation failed");
                    room.fail(StreamError::database_unavailable(), ctx);
                }
            }
        }));
    }

    fn on_message(&mut self, sequence: i64, data: Option<String>, ctx: &mut Context<Self>) {
        if sequence <= self.last_seq {
            return;
        }
        if let Some(data) = data {
            if sequence == self.last_seq + 1 && !self.fetching {
                self.emit_message(sequence, &data, ctx);
                self.drain_pending(ctx);
                return;
            }
            self.pending.insert(sequence, data);
        }
        self.want_upto = self.want_upto.max(sequence);
        self.fetch(ctx);
    }

    fn emit_message(&mut self, sequence: i64, data: &str, ctx: &mut Context<Self>) {
        self.last_seq = sequence;
        self.broadcast(
            Item::new(Some(sequence), message_frame(sequence, data)),
            ctx,
        );
    }

    fn drain_pending(&mut self, ctx: &mut Context<Self>) {
        while let Some(data) = self.pending.remove(&(self.last_seq + 1)) {
            self.emit_message(self.last_seq + 1, &data, ctx);
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
        let work = crate::rt::detached(async move {
            service::messages_between(&db, &uid, from, Some(upto), FETCH_PAGE).await
        });
        ctx.spawn(work.into_actor(self).map(move |res, room, ctx| {
            room.fetching = false;
            let res =
                res.unwrap_or_else(|| Err(sea_orm::DbErr::Custom("gap fill cancelled".into())));
            match res {
                Ok(messages) => {
                    for m in messages {
                        if m.sequence == room.last_seq + 1 {
                            let data = message_created_data(&room.uid, &m);
                            room.emit_message(m.sequence, &data, ctx);
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
        let work = crate::rt::detached(async move { presence::load(&db, &uid, ttl).await });
        ctx.spawn(work.into_actor(self).map(move |res, room, ctx| {
            if generation != room.presence_gen {
                return;
            }
            let res = res
                .unwrap_or_else(|| Err(sea_orm::DbErr::Custom("presence load cancelled".into())));
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
            let data = presence_data(&self.uid, &participants);
            let item = Item::new(None, Frame::event("presence.changed", None, &data));
            self.participants = Some((participants, item.clone()));
            self.broadcast(item, ctx);
        } else if let Some((_, item)) = &self.participants {
            let item = item.clone();
            let mut gone = Vec::new();
            for id in waiting {
                gone.extend(self.subs.send_to(id, item.clone()));
            }
            self.forget_members(gone, ctx);
        }
    }

    /// Offers the item to every subscriber; a full buffer closes that one.
    fn broadcast(&mut self, item: Arc<Item>, ctx: &mut Context<Self>) {
        let gone = self.subs.broadcast(&item);
        self.forget_members(gone, ctx);
    }

    /// Local presence and the idle timer after subscribers went away.
    fn forget_members(&mut self, gone: Vec<(u64, Member)>, ctx: &mut Context<Self>) {
        if gone.is_empty() {
            return;
        }
        let mut changed = false;
        for (id, member) in gone {
            self.awaiting_presence.retain(|&w| w != id);
            if let Some(count) = self.local_users.get_mut(&member.user_id) {
                *count -= 1;
                if *count == 0 {
                    self.local_users.remove(&member.user_id);
                    changed = true;
                }
            }
        }
        if changed {
            self.publish_local_users();
        }
        if self.subs.is_empty() {
            ctx.run_later(self.tuning.idle_grace, |room, ctx| {
                if room.subs.is_empty() {
                    ctx.stop();
                }
            });
        }
    }

    fn publish_local_users(&self) {
        if let Some(writer) = &self.writer {
            let users: BTreeSet<i64> = self.local_users.keys().copied().collect();
            writer.do_send(presence::SetUsers(users));
        }
    }

    /// Ends every stream with `err` and stops: state is rebuilt from the
    /// database by the next subscriber.
    fn fail(&mut self, err: StreamError, ctx: &mut Context<Self>) {
        self.failed = true;
        self.subs.close_where(|_| true, err);
        self.local_users.clear();
        self.publish_local_users();
        if let Some(registry) = self.registry.upgrade() {
            registry.live.forget(&self.uid, &ctx.address());
        }
        ctx.stop();
    }
}
