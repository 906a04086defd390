//! A live actor's subscribers. The actor never waits on one: every item is
//! offered with `try_send` into the subscriber's bounded buffer, and a full
//! buffer closes that subscriber with `SLOW_CONSUMER` (it reconnects with
//! its cursor and loses nothing). Items are shared (`Arc`), frames encoded
//! once.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc;

use super::{Frame, StreamError};

/// What a subscriber receives: a frame, and for resumable events their
/// sequence (the stream drops what it already sent).
#[derive(Debug)]
pub struct Item {
    pub seq: Option<i64>,
    pub frame: Frame,
}

impl Item {
    pub fn new(seq: Option<i64>, frame: Frame) -> Arc<Item> {
        Arc::new(Item { seq, frame })
    }
}

/// Set once, by whoever closes the subscriber; the stream ends with it.
pub type CloseReason = Arc<OnceLock<StreamError>>;

/// One open stream, as the stream side holds it. Dropping it drops the
/// guard, which tells the actor to forget the subscriber.
pub struct Subscription {
    pub rx: mpsc::Receiver<Arc<Item>>,
    pub closed: CloseReason,
    /// The actor's sequence when the stream joined: live delivery continues
    /// after it (replay covers what came before).
    pub live_from: i64,
    pub guard: Box<dyn Send + Sync>,
}

struct Sub<M> {
    meta: M,
    tx: mpsc::Sender<Arc<Item>>,
    closed: CloseReason,
}

/// The subscribers of one actor, with per-subscriber metadata `M` (who
/// they are, when they opened...).
pub struct Subscribers<M> {
    subs: HashMap<u64, Sub<M>>,
    next_id: u64,
    buffer: usize,
}

impl<M> Subscribers<M> {
    pub fn new(buffer: usize) -> Self {
        Subscribers {
            subs: HashMap::new(),
            next_id: 0,
            buffer: buffer.max(1),
        }
    }

    /// A new subscriber: its id, and the receiving half for its stream.
    pub fn add(&mut self, meta: M) -> (u64, mpsc::Receiver<Arc<Item>>, CloseReason) {
        self.next_id += 1;
        let (tx, rx) = mpsc::channel(self.buffer);
        let closed: CloseReason = Arc::new(OnceLock::new());
        self.subs.insert(
            self.next_id,
            Sub {
                meta,
                tx,
                closed: closed.clone(),
            },
        );
        (self.next_id, rx, closed)
    }

    /// Offers `item` to everyone; returns the subscribers dropped for being
    /// too slow or gone.
    pub fn broadcast(&mut self, item: &Arc<Item>) -> Vec<(u64, M)> {
        let mut gone = Vec::new();
        for (&id, sub) in &self.subs {
            match sub.tx.try_send(item.clone()) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    let _ = sub.closed.set(StreamError::slow_consumer());
                    gone.push(id);
                }
                Err(mpsc::error::TrySendError::Closed(_)) => gone.push(id),
            }
        }
        gone.into_iter().filter_map(|id| self.remove(id)).collect()
    }

    /// Offers `item` to one subscriber; `Some` if it was dropped.
    pub fn send_to(&mut self, id: u64, item: Arc<Item>) -> Option<(u64, M)> {
        let sub = self.subs.get(&id)?;
        match sub.tx.try_send(item) {
            Ok(()) => None,
            Err(mpsc::error::TrySendError::Full(_)) => self.close(id, StreamError::slow_consumer()),
            Err(mpsc::error::TrySendError::Closed(_)) => self.remove(id),
        }
    }

    /// Ends one stream with `err` (after what is buffered).
    pub fn close(&mut self, id: u64, err: StreamError) -> Option<(u64, M)> {
        if let Some(sub) = self.subs.get(&id) {
            let _ = sub.closed.set(err);
        }
        self.remove(id)
    }

    /// Ends every stream whose metadata matches.
    pub fn close_where(&mut self, which: impl Fn(&M) -> bool, err: StreamError) -> Vec<(u64, M)> {
        let ids: Vec<u64> = self
            .subs
            .iter()
            .filter(|(_, s)| which(&s.meta))
            .map(|(id, _)| *id)
            .collect();
        ids.into_iter()
            .filter_map(|id| self.close(id, err.clone()))
            .collect()
    }

    /// Ends every stream, without an error, after what it holds.
    pub fn end_all(&mut self) -> Vec<(u64, M)> {
        self.subs.drain().map(|(id, s)| (id, s.meta)).collect()
    }

    /// Forgets a subscriber (its stream ends after what is buffered).
    pub fn remove(&mut self, id: u64) -> Option<(u64, M)> {
        self.subs.remove(&id).map(|s| (id, s.meta))
    }

    pub fn metas(&self) -> impl Iterator<Item = &M> {
        self.subs.values().map(|s| &s.meta)
    }

    pub fn len(&self) -> usize {
        self.subs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }
}
