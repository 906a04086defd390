//! A discovery session: the stream actor's domain for discovery streams
//! (the shared machinery is `sse::StreamActor`), one per session with work
//! or watchers on this instance. On the instance that started a round it
//! asks every storefront concurrently and, as each settles, commits the
//! next revision (persist first) and then broadcasts it to its SSE
//! subscribers and on the bus. On other instances it follows the bus and
//! reads revisions from the database. Either way the keep-alive tick
//! re-reads the session, so a lost event delays a revision by at most one
//! tick.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use actix::prelude::*;
use chrono::Utc;
use futures_util::future::BoxFuture;
use sea_orm::{DatabaseConnection, DbErr, EntityTrait};
use serde_json::json;
use tokio::sync::oneshot;

use entity::discovery_session;

use super::events;
use super::model::{AgentRef, ProductOut};
use super::seller::{ProductQuery, SellerError, StorefrontTarget};
use super::sellers::Sellers;
use super::service::{self, Outcome, Published};
use crate::bus::{BusEvent, EventBus};
use crate::caller::CallerInfo;
use crate::config::DiscoveryTuning;
use crate::db::WriteGate;
use crate::error::ApiError;
use crate::sse::{self, Ctx, Frame, Item, Member, StreamActor, Subscription};

sse::tuning_from!(DiscoveryTuning);

/// Stream cursor of revision `r`'s frame; its `complete` frame is one more.
/// (Both are ordered and de-duplicated by the shared SSE body.)
pub fn revision_seq(r: i64) -> i64 {
    r * 2
}

pub fn revision_frame(id: &str, p: &Published) -> Frame {
    let data = json!({
        "discoveryId": id,
        "revision": p.revision,
        "resultsComplete": p.results_complete,
        "productGroups": p.groups,
        "pendingAgents": p.pending,
    });
    Frame::event("revision", Some(&p.revision.to_string()), &data.to_string())
}

pub fn complete_frame(id: &str, p: &Published) -> Frame {
    let data = json!({
        "discoveryId": id,
        "revision": p.revision,
        "incompleteAgents": p.incomplete,
    });
    Frame::event("complete", None, &data.to_string())
}

/// The frames of a published revision, with their stream cursors.
pub fn frames(id: &str, p: &Published) -> Vec<(i64, Frame)> {
    let mut out = vec![(revision_seq(p.revision), revision_frame(id, p))];
    if p.results_complete {
        out.push((revision_seq(p.revision) + 1, complete_frame(id, p)));
    }
    out
}

/// A round of questions to drive on this instance.
pub struct Round {
    pub round: i64,
    pub agents: Vec<(AgentRef, Result<StorefrontTarget, String>)>,
    pub query: ProductQuery,
    /// Whatever is still pending then is settled as timed out.
    pub deadline: Instant,
    /// The revision that opened this round (a refine), to broadcast.
    pub opened: Option<Published>,
}

/// This instance's discovery sessions.
#[derive(Clone)]
pub struct Sessions {
    inner: Arc<Inner>,
}

struct Inner {
    db: DatabaseConnection,
    writes: WriteGate,
    bus: EventBus,
    tuning: DiscoveryTuning,
    sellers: Sellers,
    hub: sse::Hub<Session>,
    /// Sessions this instance drives (their leases are renewed).
    driving: Arc<parking_lot::Mutex<HashSet<String>>>,
    /// This process, as a lease owner.
    instance: String,
}

/// What a subscriber read of the session before joining: newer than what
/// the actor knows when a round ran on another instance.
#[derive(Debug, Clone, Copy)]
pub struct Seen {
    revision: i64,
    complete: bool,
}

impl Sessions {
    pub fn new(
        db: DatabaseConnection,
        writes: WriteGate,
        bus: EventBus,
        tuning: DiscoveryTuning,
        sellers: Sellers,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Self {
        let inner = Arc::new(Inner {
            hub: sse::Hub::new(db.clone(), &bus, (&tuning).into(), shutdown.clone()),
            db,
            writes,
            bus,
            tuning,
            sellers,
            driving: Default::default(),
            instance: uuid::Uuid::new_v4().to_string(),
        });
        tokio::spawn(sweep(Arc::downgrade(&inner), shutdown));
        Sessions { inner }
    }

    pub fn instance(&self) -> &str {
        &self.inner.instance
    }

    pub fn writes(&self) -> &WriteGate {
        &self.inner.writes
    }

    pub fn tuning(&self) -> &DiscoveryTuning {
        &self.inner.tuning
    }

    /// Drives a round of a session on this instance.
    pub fn drive(&self, session: &discovery_session::Model, round: Round) {
        // The actor is registered first, so the sweep never takes a session
        // being started for an orphan.
        let actor = self.actor(session);
        self.inner.driving.lock().insert(session.id.clone());
        actor.do_send(Drive(round));
    }

    /// Waits until the session completes or `wait` passes; false if it
    /// did not complete in time.
    pub async fn wait(&self, session: &discovery_session::Model, wait: Duration) -> bool {
        if session.results_complete {
            return true;
        }
        let Ok(rx) = self.actor(session).send(Wait).await else {
            return false;
        };
        matches!(tokio::time::timeout(wait, rx).await, Ok(Ok(())))
    }

    /// [`Sessions::wait`], calling `settled(pending)` each time a revision
    /// leaves fewer storefronts pending (for progress reports).
    pub async fn wait_reporting(
        &self,
        session: &discovery_session::Model,
        wait: Duration,
        mut settled: impl FnMut(usize),
    ) -> bool {
        if session.results_complete {
            return true;
        }
        let actor = self.actor(session);
        let (Ok(done), Ok(mut pending)) = (actor.send(Wait).await, actor.send(WatchPending).await)
        else {
            return false;
        };
        let deadline = tokio::time::sleep(wait);
        tokio::pin!(done, deadline);
        loop {
            tokio::select! {
                _ = &mut done => {
                    settled(0);
                    return true;
                }
                changed = pending.changed() => match changed {
                    Ok(()) => settled(*pending.borrow_and_update()),
                    Err(_) => return false,
                },
                _ = &mut deadline => return false,
            }
        }
    }

    /// Subscribes the caller to the session's revisions.
    pub async fn join(
        &self,
        session: &discovery_session::Model,
        caller: &CallerInfo,
    ) -> Result<Subscription, ApiError> {
        let seen = Seen {
            revision: session.revision,
            complete: session.results_complete,
        };
        let make = || self.session(session);
        self.inner.hub.join(&session.id, make, caller, seen).await
    }

    fn actor(&self, s: &discovery_session::Model) -> Addr<Act> {
        self.inner.hub.actor(&s.id, || self.session(s))
    }

    fn session(&self, s: &discovery_session::Model) -> Session {
        let inner = &self.inner;
        Session {
            id: s.id.clone(),
            account_id: s.account_id.clone(),
            db: inner.db.clone(),
            writes: inner.writes.clone(),
            bus: inner.bus.clone(),
            tuning: inner.tuning.clone(),
            sellers: inner.sellers.clone(),
            driving: inner.driving.clone(),
            revision: s.revision,
            complete: s.results_complete,
            round: s.round,
            waiters: Vec::new(),
            pending: tokio::sync::watch::Sender::new(usize::MAX),
            queue: VecDeque::new(),
            committing: false,
            loading: false,
            want: s.revision,
            drives: 0,
        }
    }
}

/// Renews the leases of the sessions this instance drives, and completes
/// sessions abandoned by a stopped instance.
async fn sweep(weak: Weak<Inner>, shutdown: tokio_util::sync::CancellationToken) {
    loop {
        let period = match weak.upgrade() {
            Some(inner) => inner.tuning.sweep,
            None => return,
        };
        tokio::select! {
            _ = shutdown.cancelled() => {
                // (The hub ends the streams.)
                if let Some(inner) = weak.upgrade() {
                    // Nobody will ask this instance's sellers any more: its
                    // sessions complete now rather than when the lease runs
                    // out (a crash still leaves that to the lease).
                    let ids: Vec<String> = inner.driving.lock().drain().collect();
                    interrupt_all(&inner, ids).await;
                }
                return;
            }
            _ = tokio::time::sleep(period) => {}
        }
        let Some(inner) = weak.upgrade() else { return };
        // A session whose actor stopped is asked by nobody any more.
        let orphans: Vec<String> = {
            let mut driving = inner.driving.lock();
            let gone: Vec<String> = driving
                .iter()
                .filter(|id| inner.hub.get(id).is_none_or(|a| !a.connected()))
                .cloned()
                .collect();
            for id in &gone {
                driving.remove(id);
            }
            gone
        };
        interrupt_all(&inner, orphans).await;
        let until = Utc::now() + chrono::Duration::from_std(inner.tuning.lease).unwrap_or_default();
        let ids: Vec<String> = inner.driving.lock().iter().cloned().collect();
        if let Err(err) = service::renew_lease(&inner.db, &ids, &inner.instance, until).await {
            tracing::warn!(error = %err, "discovery: lease renewal failed");
        }
        recover(&inner, until).await;
    }
}

/// Completes every abandoned session it can claim: its pending agents are
/// settled as interrupted, and the final revision is announced.
async fn recover(inner: &Inner, until: chrono::DateTime<Utc>) {
    loop {
        let claimed = match service::claim_abandoned(&inner.db, &inner.instance, until).await {
            Ok(Some(s)) => s,
            Ok(None) => return,
            Err(err) => {
                tracing::warn!(error = %err, "discovery: recovery sweep failed");
                return;
            }
        };
        interrupt(inner, &claimed).await;
    }
}

/// Completes these sessions, if they are still running.
async fn interrupt_all(inner: &Inner, ids: Vec<String>) {
    for id in ids {
        match discovery_session::Entity::find_by_id(id)
            .one(&inner.db)
            .await
        {
            Ok(Some(s)) if !s.results_complete => interrupt(inner, &s).await,
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "discovery: cannot complete a session"),
        }
    }
}

/// Settles a session's pending storefronts as interrupted (nobody is asking
/// them any more) and announces the revision that completes it.
async fn interrupt(inner: &Inner, session: &discovery_session::Model) {
    let pending = match service::agents(&inner.db, &session.id).await {
        Ok(a) => service::pending(&a),
        Err(err) => {
            tracing::warn!(error = %err, "discovery: cannot read a session to complete");
            return;
        }
    };
    let settled: Vec<(AgentRef, Outcome)> = pending
        .into_iter()
        .map(|a| (a, Outcome::Interrupted))
        .collect();
    match service::settle(
        &inner.db,
        &inner.writes,
        &session.id,
        session.round,
        &settled,
    )
    .await
    {
        Ok(Some(p)) => {
            tracing::info!(discovery_id = %session.id, "discovery: completed a session nobody drives");
            crate::outbox::announce(&inner.bus, &p.kicks);
            p.notices.clone().announce(&inner.bus);
            inner
                .bus
                .publish(events::revision(
                    &session.account_id,
                    &session.id,
                    p.revision,
                    p.results_complete,
                ))
                .await;
        }
        Ok(None) => {}
        Err(err) => tracing::warn!(error = %err, "discovery: cannot complete a session"),
    }
}

/// A discovery session: what its streams carry, and the rounds this
/// instance drives.
pub struct Session {
    id: String,
    account_id: String,
    db: DatabaseConnection,
    writes: WriteGate,
    bus: EventBus,
    tuning: DiscoveryTuning,
    sellers: Sellers,
    driving: Arc<parking_lot::Mutex<HashSet<String>>>,
    /// Last revision broadcast here.
    revision: i64,
    complete: bool,
    round: i64,
    waiters: Vec<oneshot::Sender<()>>,
    /// Storefronts still pending at the last revision broadcast here.
    pending: tokio::sync::watch::Sender<usize>,
    /// Settlements waiting for the commit in flight.
    queue: VecDeque<(i64, AgentRef, Outcome)>,
    committing: bool,
    /// Reading revisions (up to `want`) written elsewhere.
    loading: bool,
    want: i64,
    /// Rounds driven by this actor that are not finished.
    drives: usize,
}

type Act = StreamActor<Session>;

impl sse::Domain for Session {
    type Join = Seen;
    type State = discovery_session::Model;

    const WHAT: &'static str = "discovery session";
    const TOPICS: &'static str = events::PREFIX;

    fn routes(topic: &str) -> bool {
        topic == events::REVISION
    }

    fn account_id(&self) -> &str {
        &self.account_id
    }

    fn read(&self) -> BoxFuture<'static, Result<Option<discovery_session::Model>, DbErr>> {
        let db = self.db.clone();
        let (account, id) = (self.account_id.clone(), self.id.clone());
        Box::pin(async move { service::find(&db, &account, &id).await })
    }

    /// A revision whose event was lost is read now.
    fn checked(act: &mut Act, row: discovery_session::Model, ctx: &mut Ctx<Session>) {
        if row.revision > act.revision {
            act.want = act.want.max(row.revision);
            act.load(ctx);
        }
    }

    fn joined(act: &mut Act, id: u64, _: &Member, seen: Seen, ctx: &mut Ctx<Session>) -> i64 {
        if seen.revision > act.revision {
            // Its frames come from the database (the replay, then `load`).
            act.want = act.want.max(seen.revision);
            act.load(ctx);
        }
        if act.complete && !seen.complete && seen.revision >= act.revision {
            // Refined elsewhere: another round is running.
            act.complete = false;
        }
        let mut live_from = revision_seq(act.revision);
        if act.complete {
            // Nothing more will come: the stream replays and ends.
            live_from += 1;
            act.end(id, ctx);
        }
        live_from
    }

    fn on_event(act: &mut Act, event: &BusEvent, ctx: &mut Ctx<Session>) {
        if event.topic == events::REVISION
            && let Some(r) = event.payload.get("revision").and_then(|v| v.as_i64())
        {
            act.want = act.want.max(r);
            act.load(ctx);
        }
    }

    fn busy(&self) -> bool {
        (self.drives > 0 && !self.complete)
            || self.committing
            || !self.queue.is_empty()
            || self.waiters.iter().any(|w| !w.is_closed())
    }
}

#[derive(Message)]
#[rtype(result = "oneshot::Receiver<()>")]
struct Wait;

#[derive(Message)]
#[rtype(result = "tokio::sync::watch::Receiver<usize>")]
struct WatchPending;

#[derive(Message)]
#[rtype(result = "()")]
struct Drive(Round);

#[derive(Message)]
#[rtype(result = "()")]
struct Settled {
    round: i64,
    agent: AgentRef,
    outcome: Outcome,
}

#[derive(Message)]
#[rtype(result = "()")]
struct Expire {
    round: i64,
    agents: Vec<AgentRef>,
}

impl Handler<Wait> for Act {
    type Result = MessageResult<Wait>;

    fn handle(&mut self, _: Wait, _: &mut Ctx<Session>) -> MessageResult<Wait> {
        let (tx, rx) = oneshot::channel();
        if self.complete {
            let _ = tx.send(());
        } else {
            self.waiters.retain(|w| !w.is_closed());
            self.waiters.push(tx);
        }
        MessageResult(rx)
    }
}

impl Handler<WatchPending> for Act {
    type Result = MessageResult<WatchPending>;

    fn handle(&mut self, _: WatchPending, _: &mut Ctx<Session>) -> MessageResult<WatchPending> {
        MessageResult(self.pending.subscribe())
    }
}

impl Handler<Drive> for Act {
    type Result = ();

    fn handle(&mut self, Drive(round): Drive, ctx: &mut Ctx<Session>) {
        self.round = round.round;
        self.complete = false;
        self.drives += 1;
        if let Some(opened) = &round.opened {
            self.publish(opened, true, ctx);
        }
        let query = Arc::new(round.query);
        let mut asked = Vec::new();
        for (agent, target) in round.agents {
            let me = ctx.address();
            let r = round.round;
            match target {
                Err(reason) => me.do_send(Settled {
                    round: r,
                    agent,
                    outcome: Outcome::Failed(reason),
                }),
                Ok(target) => {
                    asked.push(agent.clone());
                    let seller = self.sellers.for_storefront(&target);
                    let query = query.clone();
                    let timeout = self.tuning.storefront_timeout;
                    tokio::spawn(async move {
                        let answer =
                            tokio::time::timeout(timeout, seller.get_products(&target, &query))
                                .await;
                        let outcome = match answer {
                            Err(_) | Ok(Err(SellerError::Timeout(_))) => Outcome::TimedOut,
                            Ok(Err(e)) => Outcome::Failed(e.to_string()),
                            Ok(Ok(a)) => Outcome::Answered {
                                products: a
                                    .products
                                    .iter()
                                    .map(|p| ProductOut::from_seller(p, target.id, &target.name))
                                    .collect(),
                                message: a.message,
                                incomplete_scopes: a.incomplete_scopes,
                                proposals: a.proposals,
                            },
                        };
                        me.do_send(Settled {
                            round: r,
                            agent,
                            outcome,
                        });
                    });
                }
            }
        }
        let left = round.deadline.saturating_duration_since(Instant::now());
        let r = round.round;
        // Sent as a message so it queues behind answers already in.
        ctx.run_later(left, move |_, ctx| {
            ctx.address().do_send(Expire {
                round: r,
                agents: asked,
            });
        });
    }
}

impl Handler<Settled> for Act {
    type Result = ();

    fn handle(&mut self, msg: Settled, ctx: &mut Ctx<Session>) {
        self.queue.push_back((msg.round, msg.agent, msg.outcome));
        self.commit(ctx);
    }
}

impl Handler<Expire> for Act {
    type Result = ();

    fn handle(&mut self, msg: Expire, ctx: &mut Ctx<Session>) {
        // Agents that settled already are skipped by the commit.
        for agent in msg.agents {
            self.queue.push_back((msg.round, agent, Outcome::TimedOut));
        }
        self.commit(ctx);
    }
}

impl Act {
    /// Commits what settled (all of it in one revision when several
    /// answers queued up behind a commit), then publishes it.
    fn commit(&mut self, ctx: &mut Ctx<Session>) {
        if self.committing || self.queue.is_empty() {
            return;
        }
        let round = self.queue.front().map_or(self.round, |q| q.0);
        let mut batch = Vec::new();
        while let Some(front) = self.queue.front() {
            if front.0 != round {
                break;
            }
            if let Some((_, agent, outcome)) = self.queue.pop_front()
                && !batch
                    .iter()
                    .any(|(a, _): &(AgentRef, Outcome)| a.agent_id == agent.agent_id)
            {
                batch.push((agent, outcome));
            }
        }
        self.committing = true;
        let db = self.db.clone();
        let writes = self.writes.clone();
        let id = self.id.clone();
        let retry = batch.clone();
        let work =
            crate::rt::detached(
                async move { service::settle(&db, &writes, &id, round, &batch).await },
            );
        ctx.spawn(work.into_actor(self).map(move |res, s, ctx| {
            s.committing = false;
            match res {
                Some(Ok(Some(p))) => {
                    crate::outbox::announce(&s.bus, &p.kicks);
                    p.notices.clone().announce(&s.bus);
                    s.publish(&p, true, ctx);
                }
                Some(Ok(None)) => {}
                Some(Err(err)) => {
                    tracing::warn!(error = %err, discovery_id = %s.id, "discovery: cannot record a revision; retrying");
                    for (agent, outcome) in retry.into_iter().rev() {
                        s.queue.push_front((round, agent, outcome));
                    }
                    ctx.run_later(Duration::from_millis(500), |s, ctx| s.commit(ctx));
                    return;
                }
                None => return,
            }
            s.commit(ctx);
        }));
    }

    /// Broadcasts a persisted revision (and, if it is the last, the
    /// `complete` frame, after which every stream ends); `announce` also
    /// tells other instances through the bus.
    fn publish(&mut self, p: &Published, announce: bool, ctx: &mut Ctx<Session>) {
        if p.revision <= self.revision && (self.complete || !p.results_complete) {
            return;
        }
        if p.revision > self.revision {
            // A later revision of a new round (refine) reopens the session.
            self.complete = p.results_complete;
        }
        self.revision = self.revision.max(p.revision);
        self.want = self.want.max(p.revision);
        self.pending.send_replace(p.pending.len());
        for (seq, frame) in frames(&self.id, p) {
            self.broadcast(Item::new(Some(seq), frame), ctx);
        }
        if p.results_complete {
            self.complete = true;
            self.drives = 0;
            self.driving.lock().remove(&self.id);
            // Each stream ends after the frames it holds.
            self.end_all(ctx);
            for w in self.waiters.drain(..) {
                let _ = w.send(());
            }
        }
        if announce {
            let bus = self.bus.clone();
            let event =
                events::revision(&self.account_id, &self.id, p.revision, p.results_complete);
            tokio::spawn(async move { bus.publish(event).await });
        }
        self.stop_if_idle(ctx);
    }

    /// Reads revisions written by another instance, up to `want`.
    fn load(&mut self, ctx: &mut Ctx<Session>) {
        if self.loading || self.want <= self.revision {
            return;
        }
        self.loading = true;
        let db = self.db.clone();
        let id = self.id.clone();
        let after = self.revision;
        let work = crate::rt::detached(async move {
            service::revisions_after(&db, &id, after, None, 200).await
        });
        ctx.spawn(work.into_actor(self).map(|res, s, ctx| {
            s.loading = false;
            match res {
                Some(Ok(list)) => {
                    let more = list.len() == 200;
                    for p in &list {
                        s.publish(p, false, ctx);
                    }
                    if more {
                        s.load(ctx);
                    }
                }
                Some(Err(err)) => {
                    tracing::warn!(error = %err, "discovery: cannot read revisions");
                }
                None => {}
            }
        }));
    }
}
