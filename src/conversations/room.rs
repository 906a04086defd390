//! A conversation's room: the stream actor's domain for conversation
//! streams (the shared machinery is `sse::StreamActor`). It holds local
//! presence, orders messages by sequence (filling gaps from the database),
//! and knows who may read the conversation; the keep-alive tick re-reads
//! its access and last sequence.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use actix::prelude::*;
use futures_util::future::BoxFuture;
use sea_orm::{DatabaseConnection, DbErr};

use entity::conversation;

use super::model::{Participant, message_created_data, presence_data};
use super::presence::{self, PresenceWriter};
use super::{events, service};
use crate::bus::{BusEvent, EventBus};
use crate::caller::CallerInfo;
use crate::config::RoomTuning;
use crate::error::ApiError;
use crate::sse::{self, Ctx, Frame, Item, Member, StreamActor, StreamError, Subscription};

sse::tuning_from!(RoomTuning);

/// Rows fetched per round when filling a gap.
const FETCH_PAGE: u64 = 500;

/// The `message.created` frame of sequence `seq`, encoded once.
pub fn message_frame(seq: i64, data: &str) -> Frame {
    Frame::event("message.created", Some(&seq.to_string()), data)
}

fn no_access() -> StreamError {
    StreamError::not_found("conversation")
}

/// This instance's rooms, by conversation uid.
#[derive(Clone)]
pub struct Rooms {
    hub: sse::Hub<Room>,
    db: DatabaseConnection,
    bus: EventBus,
    tuning: RoomTuning,
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
        Rooms {
            hub: sse::Hub::new(db.clone(), &bus, (&tuning).into(), shutdown),
            db,
            bus,
            tuning,
        }
    }

    /// Is any of these conversations' rooms open on this instance?
    pub fn any_open(&self, uids: &[&str]) -> bool {
        self.hub.any_open(uids)
    }

    /// Rooms currently running on this instance.
    pub fn len(&self) -> usize {
        self.hub.len()
    }

    pub fn is_empty(&self) -> bool {
        self.hub.is_empty()
    }

    /// Joins the caller to the conversation's room, starting it if needed.
    /// Refused (404) when the room knows the caller may not read it.
    pub async fn join(
        &self,
        conv: &conversation::Model,
        caller: &CallerInfo,
    ) -> Result<Subscription, ApiError> {
        let shared_allowed = caller.account.shared_conversations_enabled;
        let make = || Room {
            uid: conv.uid.clone(),
            account_id: conv.account_id.clone(),
            owner_user_id: conv.owner_user_id,
            sharing_enabled: conv.sharing_enabled,
            shared_allowed,
            db: self.db.clone(),
            bus: self.bus.clone(),
            tuning: self.tuning.clone(),
            last_seq: conv.last_sequence,
            pending: BTreeMap::new(),
            want_upto: conv.last_sequence,
            fetching: false,
            participants: None,
            presence_gen: 0,
            awaiting_presence: Vec::new(),
            local_users: HashMap::new(),
            writer: None,
        };
        self.hub.join(&conv.uid, make, caller, ()).await
    }
}

/// A conversation's room: what its streams carry.
pub struct Room {
    uid: String,
    account_id: String,
    owner_user_id: i64,
    sharing_enabled: bool,
    /// The account allows shared conversations.
    shared_allowed: bool,
    db: DatabaseConnection,
    bus: EventBus,
    tuning: RoomTuning,
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
}

type Act = StreamActor<Room>;

impl sse::Domain for Room {
    type Join = ();
    type State = service::RoomState;

    const WHAT: &'static str = "conversation";
    const TOPICS: &'static str = events::PREFIX;

    fn routes(topic: &str) -> bool {
        topic != events::CHANGED
    }

    fn account_id(&self) -> &str {
        &self.account_id
    }

    fn read(&self) -> BoxFuture<'static, Result<Option<service::RoomState>, DbErr>> {
        let db = self.db.clone();
        let uid = self.uid.clone();
        Box::pin(async move { service::room_state(&db, &uid).await })
    }

    /// The conversation's access as the database has it, and any message
    /// whose notification was lost.
    fn checked(act: &mut Act, state: service::RoomState, ctx: &mut Ctx<Room>) {
        act.owner_user_id = state.owner_user_id;
        act.sharing_enabled = state.sharing_enabled;
        act.shared_allowed = state.shared_allowed;
        act.enforce_access(ctx);
        act.want_upto = act.want_upto.max(state.last_sequence);
        act.fetch(ctx);
    }

    fn admits(&self, member: &Member, _: &()) -> bool {
        self.may_read(member.user_id)
    }

    fn joined(act: &mut Act, id: u64, member: &Member, _: (), ctx: &mut Ctx<Room>) -> i64 {
        let count = act.local_users.entry(member.user_id).or_default();
        *count += 1;
        if *count == 1 {
            // The writer persists and announces; the reload that follows
            // broadcasts the new presence to everyone, this stream included.
            act.publish_local_users();
            act.awaiting_presence.push(id);
        } else if let Some((_, item)) = &act.participants {
            let item = item.clone();
            act.send_to(id, item, ctx);
        } else {
            act.awaiting_presence.push(id);
            act.load_presence(ctx);
        }
        act.last_seq
    }

    /// Local presence after subscribers went away.
    fn left(act: &mut Act, gone: &[(u64, Member)], _: &mut Ctx<Room>) {
        let mut changed = false;
        for (id, member) in gone {
            act.awaiting_presence.retain(|w| w != id);
            if let Some(count) = act.local_users.get_mut(&member.user_id) {
                *count -= 1;
                if *count == 0 {
                    act.local_users.remove(&member.user_id);
                    changed = true;
                }
            }
        }
        if changed {
            act.publish_local_users();
        }
    }

    fn on_event(act: &mut Act, event: &BusEvent, ctx: &mut Ctx<Room>) {
        let number = |field: &str| event.payload.get(field).and_then(|v| v.as_i64());
        match event.topic.as_str() {
            events::MESSAGE => {
                if let Some(sequence) = number("sequence") {
                    act.on_message(sequence, event.bulk.clone(), ctx);
                }
            }
            events::PRESENCE => act.load_presence(ctx),
            // Ephemeral: no id, not replayed (the persisted messages are).
            events::DELTA => act.broadcast_ephemeral("message.delta", &event.payload, ctx),
            events::RUN => act.broadcast_ephemeral("run.updated", &event.payload, ctx),
            events::ACCESS => {
                if let Some(owner) = number("ownerUserId") {
                    act.owner_user_id = owner;
                }
                if let Some(sharing) = event
                    .payload
                    .get("sharingEnabled")
                    .and_then(|v| v.as_bool())
                {
                    act.sharing_enabled = sharing;
                }
                act.enforce_access(ctx);
                // The account's own switch is read from the database.
                act.revalidate(ctx);
            }
            _ => {}
        }
    }

    /// Also notices stale remote rows and a lost database.
    fn tick(act: &mut Act, ctx: &mut Ctx<Room>) {
        act.load_presence(ctx);
    }

    fn resync(act: &mut Act, ctx: &mut Ctx<Room>) {
        act.load_presence(ctx);
    }

    fn started(act: &mut Act, ctx: &mut Ctx<Room>) {
        crate::metrics::room_opened();
        act.writer = Some(presence::start_writer(
            act.db.clone(),
            act.bus.clone(),
            act.account_id.clone(),
            act.uid.clone(),
            act.tuning.keepalive,
            ctx.address().downgrade().recipient(),
        ));
    }

    fn stopped(act: &mut Act, _: &mut Ctx<Room>) {
        if let Some(writer) = act.writer.take() {
            writer.do_send(presence::Finish);
        }
        crate::metrics::room_closed();
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
}

impl Act {
    fn enforce_access(&mut self, ctx: &mut Ctx<Room>) {
        let (sharing, allowed, owner) = (
            self.sharing_enabled,
            self.shared_allowed,
            self.owner_user_id,
        );
        let may_read = move |user: i64| if sharing { allowed } else { user == owner };
        self.close_where(|m| !may_read(m.user_id), no_access(), ctx);
    }

    fn on_message(&mut self, sequence: i64, data: Option<String>, ctx: &mut Ctx<Room>) {
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

    fn broadcast_ephemeral(&mut self, name: &str, data: &serde_json::Value, ctx: &mut Ctx<Room>) {
        let item = Item::new(None, Frame::event(name, None, &data.to_string()));
        self.broadcast(item, ctx);
    }

    fn emit_message(&mut self, sequence: i64, data: &str, ctx: &mut Ctx<Room>) {
        self.last_seq = sequence;
        self.broadcast(
            Item::new(Some(sequence), message_frame(sequence, data)),
            ctx,
        );
    }

    fn drain_pending(&mut self, ctx: &mut Ctx<Room>) {
        loop {
            let next = self.last_seq + 1;
            let Some(data) = self.pending.remove(&next) else {
                break;
            };
            self.emit_message(next, &data, ctx);
        }
        let last = self.last_seq;
        self.pending.retain(|&seq, _| seq > last);
    }

    /// Reads missing sequences (last_seq, want_upto] from the database.
    fn fetch(&mut self, ctx: &mut Ctx<Room>) {
        if self.fetching || self.want_upto <= self.last_seq || self.is_failed() {
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
            let res = res.unwrap_or_else(|| Err(DbErr::Custom("gap fill cancelled".into())));
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

    fn load_presence(&mut self, ctx: &mut Ctx<Room>) {
        if self.is_failed() {
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
            let res = res.unwrap_or_else(|| Err(DbErr::Custom("presence load cancelled".into())));
            match res {
                Ok(participants) => room.apply_presence(participants, ctx),
                Err(err) => {
                    tracing::warn!(error = %err, "presence load failed");
                    room.fail(StreamError::database_unavailable(), ctx);
                }
            }
        }));
    }

    fn apply_presence(&mut self, participants: Vec<Participant>, ctx: &mut Ctx<Room>) {
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
            for id in waiting {
                self.send_to(id, item.clone(), ctx);
            }
        }
    }
}

impl Room {
    fn publish_local_users(&self) {
        if let Some(writer) = &self.writer {
            let users: BTreeSet<i64> = self.local_users.keys().copied().collect();
            writer.do_send(presence::SetUsers(users));
        }
    }
}
