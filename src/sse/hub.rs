//! This instance's stream actors of one kind: started on demand, joined
//! (retrying an actor that stopped in between), left when a stream's body
//! is dropped, fed from the bus (the domain's events by key, revocations
//! to all), and failed with `SERVICE_UNAVAILABLE` at shutdown.

use std::sync::{Arc, Weak};

use actix::prelude::*;
use sea_orm::DatabaseConnection;

use super::actor::{
    Deliver, Domain, Fail, Join, Leave, Member, Resync, Shared, StreamActor, Tuning,
};
use super::{Registry, StreamError, Subscription};
use crate::bus::{BusEvent, BusSink, EventBus};
use crate::caller::CallerInfo;
use crate::error::ApiError;

pub struct Hub<D: Domain> {
    inner: Arc<HubInner<D>>,
}

impl<D: Domain> Clone for Hub<D> {
    fn clone(&self) -> Self {
        Hub {
            inner: self.inner.clone(),
        }
    }
}

pub(super) struct HubInner<D: Domain> {
    pub live: Registry<StreamActor<D>>,
    shared: Arc<Shared>,
}

impl<D: Domain> Hub<D> {
    /// Subscribes to the domain's and the auth bus topics; on `shutdown`
    /// every stream gets the shutting-down error and ends.
    pub fn new(
        db: DatabaseConnection,
        bus: &EventBus,
        tuning: Tuning,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Self {
        let inner = Arc::new(HubInner {
            live: Registry::default(),
            shared: Arc::new(Shared { db, tuning }),
        });
        let weak: Weak<HubInner<D>> = Arc::downgrade(&inner);
        bus.subscribe(D::TOPICS, weak.clone());
        bus.subscribe(crate::auth::events::PREFIX, weak.clone());
        tokio::spawn(async move {
            shutdown.cancelled().await;
            if let Some(inner) = weak.upgrade() {
                for actor in inner.live.all() {
                    actor.do_send(Fail(StreamError::shutting_down()));
                }
            }
        });
        Hub { inner }
    }

    /// The running actor for `key`, or a new one with the domain `make`
    /// builds.
    pub fn actor(&self, key: &str, make: impl FnOnce() -> D) -> Addr<StreamActor<D>> {
        self.inner.live.get_or_start(key, || {
            StreamActor::new(
                make(),
                key,
                self.inner.shared.clone(),
                Arc::downgrade(&self.inner),
            )
            .start()
        })
    }

    /// Subscribes the caller to `key`'s actor, starting it if needed.
    /// Refused (404) when the domain says the caller may not read it.
    pub async fn join(
        &self,
        key: &str,
        make: impl Fn() -> D,
        caller: &CallerInfo,
        join: D::Join,
    ) -> Result<Subscription, ApiError> {
        let member = Member::of(caller);
        for _ in 0..3 {
            let actor = self.actor(key, &make);
            let msg = Join::<D> {
                member: member.clone(),
                join: join.clone(),
            };
            match actor.send(msg).await {
                Ok(None) => return Err(ApiError::not_found(D::WHAT)),
                Ok(Some(joined)) => {
                    return Ok(Subscription {
                        rx: joined.rx,
                        closed: joined.closed,
                        live_from: joined.live_from,
                        guard: Box::new(LeaveGuard {
                            actor,
                            id: joined.id,
                        }),
                    });
                }
                // It stopped between lookup and join: start afresh.
                Err(_) => self.inner.live.forget(key, &actor),
            }
        }
        Err(ApiError::ServiceUnavailable(format!(
            "the {} stream is unavailable; retry",
            D::WHAT
        )))
    }

    pub fn get(&self, key: &str) -> Option<Addr<StreamActor<D>>> {
        self.inner.live.get(key)
    }

    /// Every running actor.
    pub fn all(&self) -> Vec<Addr<StreamActor<D>>> {
        self.inner.live.all()
    }

    pub fn any_open(&self, keys: &[&str]) -> bool {
        self.inner.live.any_open(keys)
    }

    pub fn len(&self) -> usize {
        self.inner.live.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.live.is_empty()
    }
}

/// Leaves the actor when the stream's body is dropped, however it ends.
struct LeaveGuard<D: Domain> {
    actor: Addr<StreamActor<D>>,
    id: u64,
}

impl<D: Domain> Drop for LeaveGuard<D> {
    fn drop(&mut self) {
        self.actor.do_send(Leave(self.id));
    }
}

impl<D: Domain> BusSink for HubInner<D> {
    fn deliver(&self, event: &BusEvent) {
        match event.topic.as_str() {
            // Revocations concern whichever actors hold that key or user.
            crate::auth::events::KEY_REVOKED | crate::auth::events::USER_REVOKED => {
                for actor in self.live.all() {
                    actor.do_send(Deliver(event.clone()));
                }
            }
            topic if topic.starts_with(D::TOPICS) && D::routes(topic) => {
                if let Some(actor) = self.live.get(&event.key) {
                    actor.do_send(Deliver(event.clone()));
                }
            }
            _ => {}
        }
    }

    /// Events from other instances may have been lost: every actor
    /// re-checks and catches up from the database instead of closing its
    /// streams.
    fn transport_lost(&self) {
        for actor in self.live.all() {
            actor.do_send(Resync);
        }
    }
}
