//! The stream actor: one per live resource (a conversation, a discovery
//! session) with open streams on this instance. It owns what every stream
//! needs, whatever it carries:
//! - its subscribers ([`Member`]s: who opened the stream, with which
//!   credential, when, and until when that credential is valid);
//! - the keep-alive tick, which also closes streams past their maximum
//!   duration and re-checks the resource and the credentials;
//! - the credential checks: a revoked key or user (bus event, or found by
//!   the re-check) and an expired OAuth access token close the stream with
//!   `UNAUTHORIZED`;
//! - failure (the database, shutdown): every stream ends with the error
//!   and the actor stops, so the next subscriber rebuilds it (a failed
//!   re-check spares an actor whose domain still has work: only its
//!   streams end);
//! - stopping once nobody watches and the domain has no work left.
//!
//! What the stream carries is the [`Domain`]'s: its access check, its
//! events, the state it re-reads, and any work of its own. The domain's
//! fields are reached through the actor (`Deref`), and its own messages
//! are handled by `StreamActor<ItsDomain>`.

use std::collections::HashSet;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::future::BoxFuture;
use sea_orm::{DatabaseConnection, DbErr};

use super::fanout::{CloseReason, Item, Subscribers};
use super::hub::HubInner;
use super::{Frame, StreamError};
use crate::bus::BusEvent;
use crate::caller::CallerInfo;

/// Timings and bounds of one kind of stream.
#[derive(Debug, Clone)]
pub struct Tuning {
    /// Keep-alive comment interval, and how often the resource and the
    /// credentials are re-checked.
    pub keepalive: Duration,
    /// Items buffered per subscriber before it counts as too slow.
    pub subscriber_buffer: usize,
    /// How long an actor nobody watches lingers before it stops.
    pub idle_grace: Duration,
    /// A stream older than this is closed (`STREAM_MAX_DURATION`) at the
    /// next tick; the client resumes from its cursor.
    pub max_stream_duration: Duration,
}

/// `From<&Settings> for Tuning`, for a domain's settings that hold the
/// same four fields under the same names.
macro_rules! tuning_from {
    ($settings:ty) => {
        impl From<&$settings> for $crate::sse::Tuning {
            fn from(t: &$settings) -> Self {
                $crate::sse::Tuning {
                    keepalive: t.keepalive,
                    subscriber_buffer: t.subscriber_buffer,
                    idle_grace: t.idle_grace,
                    max_stream_duration: t.max_stream_duration,
                }
            }
        }
    };
}
pub(crate) use tuning_from;

/// One subscriber, as the actor knows it.
#[derive(Debug, Clone)]
pub struct Member {
    pub user_id: i64,
    /// The credential the stream was opened with: revoking it closes it.
    pub key_id: i64,
    opened: Instant,
    /// When that credential expires by itself (an OAuth access token).
    expires: Option<Instant>,
}

impl Member {
    pub fn of(caller: &CallerInfo) -> Member {
        let now = Instant::now();
        let expires = caller.expires_at.map(|at| {
            let left = (at - chrono::Utc::now()).to_std().unwrap_or(Duration::ZERO);
            now + left
        });
        Member {
            user_id: caller.user.id,
            key_id: caller.api_key_id,
            opened: now,
            expires,
        }
    }
}

pub type Ctx<D> = Context<StreamActor<D>>;

/// What a kind of stream adds to the shared actor. Hooks receive the
/// actor (the domain's state is `*act`) and its context.
pub trait Domain: Sized + Unpin + 'static {
    /// What a subscriber brings to its join besides its credential.
    type Join: Clone + Send + 'static;
    /// What the periodic re-check reads.
    type State: Send + 'static;

    /// The resource, in errors: "conversation" gives `conversation not found`.
    const WHAT: &'static str;
    /// The prefix of the domain's bus topics.
    const TOPICS: &'static str;

    /// Whether a bus event of this topic goes to the actor keyed by the
    /// event's key (`on_event`).
    fn routes(topic: &str) -> bool;

    /// The account the resource belongs to (credentials are checked in it).
    fn account_id(&self) -> &str;

    /// Reads the resource's state for the re-check; `None` once it is gone
    /// (every stream then ends with `NOT_FOUND`).
    fn read(&self) -> BoxFuture<'static, Result<Option<Self::State>, DbErr>>;

    /// Applies what the re-check read (streams with revoked credentials
    /// are already closed).
    fn checked(act: &mut StreamActor<Self>, state: Self::State, ctx: &mut Ctx<Self>);

    /// May this subscriber join? Refused joins answer 404.
    fn admits(&self, _member: &Member, _join: &Self::Join) -> bool {
        true
    }

    /// A subscriber joined as `id`; returns the sequence its live delivery
    /// continues after (its replay covers what came before).
    fn joined(
        act: &mut StreamActor<Self>,
        id: u64,
        member: &Member,
        join: Self::Join,
        ctx: &mut Ctx<Self>,
    ) -> i64;

    /// Subscribers went away: left, closed, or cut off as too slow.
    fn left(_act: &mut StreamActor<Self>, _gone: &[(u64, Member)], _ctx: &mut Ctx<Self>) {}

    /// A bus event of a routed topic, for this resource.
    fn on_event(_act: &mut StreamActor<Self>, _event: &BusEvent, _ctx: &mut Ctx<Self>) {}

    /// Every keep-alive tick, before the re-check.
    fn tick(_act: &mut StreamActor<Self>, _ctx: &mut Ctx<Self>) {}

    /// Bus events may have been lost; the re-check runs too.
    fn resync(_act: &mut StreamActor<Self>, _ctx: &mut Ctx<Self>) {}

    /// Work that keeps the actor running with nobody watching (and through
    /// a database failure, which then only ends the streams).
    fn busy(&self) -> bool {
        false
    }

    fn started(_act: &mut StreamActor<Self>, _ctx: &mut Ctx<Self>) {}

    fn stopped(_act: &mut StreamActor<Self>, _ctx: &mut Ctx<Self>) {}
}

/// The in-flight guard of the re-check: one at a time; asked for while one
/// runs, it runs once more afterwards (requests in between coalesce), so a
/// slow database never piles re-checks up, and nothing asked for is lost.
#[derive(Debug, Default)]
struct Recheck {
    running: bool,
    again: bool,
}

impl Recheck {
    /// True if a re-check starts now.
    fn start(&mut self) -> bool {
        if self.running {
            self.again = true;
            false
        } else {
            self.running = true;
            true
        }
    }

    /// The re-check ended; true if another was asked for meanwhile.
    fn finish(&mut self) -> bool {
        self.running = false;
        std::mem::take(&mut self.again)
    }
}

pub(super) struct Shared {
    pub db: DatabaseConnection,
    pub tuning: Tuning,
}

pub struct StreamActor<D: Domain> {
    domain: D,
    key: String,
    members: Subscribers<Member>,
    shared: Arc<Shared>,
    hub: Weak<HubInner<D>>,
    recheck: Recheck,
    failed: bool,
    /// The one timer for the earliest credential expiry among members.
    expiry: Option<(Instant, SpawnHandle)>,
    idle_timer: bool,
}

impl<D: Domain> Deref for StreamActor<D> {
    type Target = D;
    fn deref(&self) -> &D {
        &self.domain
    }
}

impl<D: Domain> DerefMut for StreamActor<D> {
    fn deref_mut(&mut self) -> &mut D {
        &mut self.domain
    }
}

impl<D: Domain> StreamActor<D> {
    pub(super) fn new(domain: D, key: &str, shared: Arc<Shared>, hub: Weak<HubInner<D>>) -> Self {
        StreamActor {
            domain,
            key: key.to_string(),
            members: Subscribers::new(shared.tuning.subscriber_buffer),
            shared,
            hub,
            recheck: Recheck::default(),
            failed: false,
            expiry: None,
            idle_timer: false,
        }
    }

    /// The actor is ending every stream and stopping.
    pub fn is_failed(&self) -> bool {
        self.failed
    }

    /// Offers the item to every subscriber; a full buffer closes that one.
    pub fn broadcast(&mut self, item: Arc<Item>, ctx: &mut Ctx<D>) {
        let gone = self.members.broadcast(&item);
        self.gone(gone, ctx);
    }

    /// Offers the item to one subscriber.
    pub fn send_to(&mut self, id: u64, item: Arc<Item>, ctx: &mut Ctx<D>) {
        let gone = self.members.send_to(id, item);
        self.gone(gone.into_iter().collect(), ctx);
    }

    /// Ends every stream whose member matches with `err`.
    pub fn close_where(
        &mut self,
        which: impl Fn(&Member) -> bool,
        err: StreamError,
        ctx: &mut Ctx<D>,
    ) {
        let gone = self.members.close_where(which, err);
        self.gone(gone, ctx);
    }

    /// Ends one stream, without an error, after what it holds.
    pub fn end(&mut self, id: u64, ctx: &mut Ctx<D>) {
        let gone = self.members.remove(id);
        self.gone(gone.into_iter().collect(), ctx);
    }

    /// Ends every stream, without an error, after what it holds.
    pub fn end_all(&mut self, ctx: &mut Ctx<D>) {
        let gone = self.members.end_all();
        self.gone(gone, ctx);
    }

    fn gone(&mut self, gone: Vec<(u64, Member)>, ctx: &mut Ctx<D>) {
        if gone.is_empty() {
            return;
        }
        D::left(self, &gone, ctx);
        self.stop_if_idle(ctx);
    }

    /// Stops after the idle grace if still nobody watches and the domain
    /// has no work then.
    pub fn stop_if_idle(&mut self, ctx: &mut Ctx<D>) {
        if self.idle_timer || !self.idle() {
            return;
        }
        self.idle_timer = true;
        ctx.run_later(self.shared.tuning.idle_grace, |act, ctx| {
            act.idle_timer = false;
            if act.idle() {
                ctx.stop();
            }
        });
    }

    fn idle(&self) -> bool {
        self.members.is_empty() && !self.domain.busy()
    }

    /// Ends every stream with `err` and stops: the next subscriber starts
    /// a fresh actor, which rebuilds its state from the database.
    pub fn fail(&mut self, err: StreamError, ctx: &mut Ctx<D>) {
        if self.failed {
            return;
        }
        self.failed = true;
        let gone = self.members.close_where(|_| true, err);
        D::left(self, &gone, ctx);
        self.forget(ctx);
        ctx.stop();
    }

    fn forget(&self, ctx: &mut Ctx<D>) {
        if let Some(hub) = self.hub.upgrade() {
            hub.live.forget(&self.key, &ctx.address());
        }
    }

    fn tick(&mut self, ctx: &mut Ctx<D>) {
        self.broadcast(Item::new(None, Frame::keep_alive()), ctx);
        let max = self.shared.tuning.max_stream_duration;
        self.close_where(
            |m| m.opened.elapsed() >= max,
            StreamError::max_duration(),
            ctx,
        );
        D::tick(self, ctx);
        // No missed event leaves access open, or an event undelivered, for
        // longer than one tick.
        self.revalidate(ctx);
        self.stop_if_idle(ctx);
    }

    /// Re-reads the resource and the members' credentials: closes the
    /// streams whose key was revoked or whose user left the account (also
    /// when no event said so: another process), then lets the domain apply
    /// the state. One at a time (see [`Recheck`]).
    pub fn revalidate(&mut self, ctx: &mut Ctx<D>) {
        if self.failed || !self.recheck.start() {
            return;
        }
        let mut keys: Vec<i64> = self.members.metas().map(|m| m.key_id).collect();
        keys.sort_unstable();
        keys.dedup();
        let read = self.domain.read();
        let db = self.shared.db.clone();
        let account = self.domain.account_id().to_string();
        let work = crate::rt::detached(async move {
            let state = read.await?;
            let live = crate::auth::service::live_keys(&db, &account, &keys).await?;
            Ok::<_, DbErr>((state, keys, live))
        });
        ctx.spawn(work.into_actor(self).map(|res, act, ctx| {
            let again = act.recheck.finish();
            if act.failed {
                return;
            }
            let res = res.unwrap_or_else(|| Err(DbErr::Custom("re-check cancelled".into())));
            match res {
                Ok((None, _, _)) => return act.fail(StreamError::not_found(D::WHAT), ctx),
                Ok((Some(state), checked, live)) => {
                    // Members who joined meanwhile are judged next time.
                    let revoked: HashSet<i64> =
                        checked.into_iter().filter(|k| !live.contains(k)).collect();
                    if !revoked.is_empty() {
                        act.close_where(
                            |m| revoked.contains(&m.key_id),
                            StreamError::revoked(),
                            ctx,
                        );
                    }
                    D::checked(act, state, ctx);
                }
                Err(err) => {
                    tracing::warn!(error = %err, stream = D::WHAT, "stream re-check failed");
                    if act.domain.busy() {
                        act.close_where(|_| true, StreamError::database_unavailable(), ctx);
                    } else {
                        return act.fail(StreamError::database_unavailable(), ctx);
                    }
                }
            }
            if again {
                act.revalidate(ctx);
            }
        }));
    }

    /// Keeps the expiry timer on the earliest credential expiry.
    fn arm_expiry(&mut self, at: Instant, ctx: &mut Ctx<D>) {
        if self.expiry.as_ref().is_some_and(|(next, _)| *next <= at) {
            return;
        }
        if let Some((_, handle)) = self.expiry.take() {
            ctx.cancel_future(handle);
        }
        let wait = at.saturating_duration_since(Instant::now());
        let handle = ctx.run_later(wait, |act, ctx| {
            act.expiry = None;
            let now = Instant::now();
            act.close_where(
                |m| m.expires.is_some_and(|e| e <= now),
                StreamError::credential_expired(),
                ctx,
            );
            if let Some(next) = act.members.metas().filter_map(|m| m.expires).min() {
                act.arm_expiry(next, ctx);
            }
        });
        self.expiry = Some((at, handle));
    }
}

impl<D: Domain> Actor for StreamActor<D> {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Ctx<D>) {
        D::started(self, ctx);
        ctx.run_interval(self.shared.tuning.keepalive, |act, ctx| act.tick(ctx));
    }

    fn stopped(&mut self, ctx: &mut Ctx<D>) {
        D::stopped(self, ctx);
        self.forget(ctx);
    }
}

pub(super) struct Joined {
    pub id: u64,
    pub rx: tokio::sync::mpsc::Receiver<Arc<Item>>,
    pub closed: CloseReason,
    pub live_from: i64,
}

/// `None`: refused (the caller may not read the resource).
pub(super) struct Join<D: Domain> {
    pub member: Member,
    pub join: D::Join,
}

impl<D: Domain> Message for Join<D> {
    type Result = Option<Joined>;
}

#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Leave(pub u64);

#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Deliver(pub BusEvent);

/// Bus events may have been lost: re-check and let the domain catch up.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct Resync;

/// Ends every stream with the error and stops the actor.
#[derive(Message, Clone)]
#[rtype(result = "()")]
pub struct Fail(pub StreamError);

impl<D: Domain> Handler<Join<D>> for StreamActor<D> {
    type Result = MessageResult<Join<D>>;

    fn handle(&mut self, msg: Join<D>, ctx: &mut Ctx<D>) -> MessageResult<Join<D>> {
        if self.failed || !self.domain.admits(&msg.member, &msg.join) {
            return MessageResult(None);
        }
        let (id, rx, closed) = self.members.add(msg.member.clone());
        if let Some(at) = msg.member.expires {
            self.arm_expiry(at, ctx);
        }
        let live_from = D::joined(self, id, &msg.member, msg.join, ctx);
        MessageResult(Some(Joined {
            id,
            rx,
            closed,
            live_from,
        }))
    }
}

impl<D: Domain> Handler<Leave> for StreamActor<D> {
    type Result = ();

    fn handle(&mut self, Leave(id): Leave, ctx: &mut Ctx<D>) {
        self.end(id, ctx);
    }
}

impl<D: Domain> Handler<Deliver> for StreamActor<D> {
    type Result = ();

    fn handle(&mut self, Deliver(event): Deliver, ctx: &mut Ctx<D>) {
        let id = || event.key.parse::<i64>().ok();
        match event.topic.as_str() {
            crate::auth::events::KEY_REVOKED => {
                let key = id();
                self.close_where(|m| Some(m.key_id) == key, StreamError::revoked(), ctx);
            }
            crate::auth::events::USER_REVOKED => {
                let user = id();
                self.close_where(|m| Some(m.user_id) == user, StreamError::revoked(), ctx);
            }
            _ => D::on_event(self, &event, ctx),
        }
    }
}

impl<D: Domain> Handler<Resync> for StreamActor<D> {
    type Result = ();

    fn handle(&mut self, _: Resync, ctx: &mut Ctx<D>) {
        self.revalidate(ctx);
        D::resync(self, ctx);
    }
}

impl<D: Domain> Handler<Fail> for StreamActor<D> {
    type Result = ();

    fn handle(&mut self, Fail(err): Fail, ctx: &mut Ctx<D>) {
        self.fail(err, ctx);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::Semaphore;

    use super::*;
    use crate::sse::Hub;

    /// A domain whose re-check read blocks until the test lets it through.
    struct SlowRead {
        reads: Arc<AtomicUsize>,
        gate: Arc<Semaphore>,
    }

    impl Domain for SlowRead {
        type Join = ();
        type State = ();
        const WHAT: &'static str = "probe";
        const TOPICS: &'static str = "probe.";

        fn routes(_: &str) -> bool {
            false
        }

        fn account_id(&self) -> &str {
            "acc"
        }

        fn read(&self) -> BoxFuture<'static, Result<Option<()>, DbErr>> {
            let (reads, gate) = (self.reads.clone(), self.gate.clone());
            Box::pin(async move {
                reads.fetch_add(1, Ordering::SeqCst);
                gate.acquire().await.unwrap().forget();
                Ok(Some(()))
            })
        }

        fn checked(_: &mut StreamActor<Self>, _: (), _: &mut Ctx<Self>) {}

        fn joined(_: &mut StreamActor<Self>, _: u64, _: &Member, _: (), _: &mut Ctx<Self>) -> i64 {
            0
        }

        fn busy(&self) -> bool {
            true
        }
    }

    #[actix_rt::test]
    async fn ticks_during_a_slow_recheck_start_no_other_and_queue_one() {
        let db = sea_orm::Database::connect("sqlite::memory:").await.unwrap();
        let tick = Duration::from_millis(20);
        let tuning = Tuning {
            keepalive: tick,
            subscriber_buffer: 8,
            idle_grace: Duration::from_secs(60),
            max_stream_duration: Duration::from_secs(60),
        };
        let bus = crate::bus::EventBus::in_process("test".into());
        let shutdown = tokio_util::sync::CancellationToken::new();
        let hub: Hub<SlowRead> = Hub::new(db, &bus, tuning, shutdown.clone());
        let reads = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new(Semaphore::new(0));
        let _actor = hub.actor("p", || SlowRead {
            reads: reads.clone(),
            gate: gate.clone(),
        });

        // Ten ticks while the first re-check waits on the database.
        tokio::time::sleep(tick * 10).await;
        assert_eq!(reads.load(Ordering::SeqCst), 1);
        // It ends: the ticks in between ran as one more re-check.
        gate.add_permits(1);
        tokio::time::sleep(tick * 10).await;
        assert_eq!(reads.load(Ordering::SeqCst), 2);
        gate.add_permits(1);
        tokio::time::sleep(tick * 10).await;
        assert_eq!(reads.load(Ordering::SeqCst), 3);
        shutdown.cancel();
    }
}
