//! One subscriber's response body: a prologue frame (`ready`), then a replay
//! of what came after the client's cursor, then live frames, de-duplicated
//! by sequence, ending with the `error` frame that closed the stream. The
//! actor is joined before the replay reads, so nothing committed in between
//! is missed, and anything seen twice is dropped.
//!
//! A hand-written `Stream`: an idle stream holds its receiver, its cursor
//! and nothing else (no timer, no parked database future).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use actix_web::HttpResponse;
use actix_web::http::header;
use bytes::Bytes;
use futures_util::Stream;

use super::{Frame, StreamError, Subscription};

/// Rows per replay page.
pub const REPLAY_ROWS: u64 = 200;
/// Bytes per replay page: a page of large messages is cut short (and the
/// rest re-read), so a resuming stream holds at most this much.
pub const REPLAY_BYTES: usize = 256 * 1024;

pub type ReplayPage = Result<Vec<(i64, Frame)>, StreamError>;

/// Where a stream replays from: persisted events after a cursor.
pub trait ReplaySource: Send + 'static {
    /// Frames of the events with `after < seq`, in order, at most `rows`.
    fn page(&self, after: i64, rows: u64) -> Pin<Box<dyn Future<Output = ReplayPage> + Send>>;
}

struct Body {
    prologue: Option<Bytes>,
    after: i64,
    replay: Option<Box<dyn ReplaySource>>,
    pending: Option<Pin<Box<dyn Future<Output = ReplayPage> + Send>>>,
    buffered: VecDeque<(i64, Frame)>,
    exhausted: bool,
    sub: Subscription,
    done: bool,
    _hold: Option<Box<dyn Send + Sync>>,
}

/// The `text/event-stream` response of one subscriber. `hold` lives as
/// long as the stream (a metrics gauge, say).
pub fn response(
    prologue: Frame,
    after: i64,
    replay: Option<Box<dyn ReplaySource>>,
    sub: Subscription,
    hold: Option<Box<dyn Send + Sync>>,
) -> HttpResponse {
    let body = Body {
        prologue: Some(prologue.0),
        after,
        replay,
        pending: None,
        buffered: VecDeque::new(),
        exhausted: false,
        sub,
        done: false,
        _hold: hold,
    };
    HttpResponse::Ok()
        .insert_header((header::CONTENT_TYPE, "text/event-stream"))
        .insert_header((header::CACHE_CONTROL, "no-cache"))
        .insert_header((header::CONTENT_ENCODING, "identity"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}

impl Body {
    fn poll_replay(&mut self, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        loop {
            if let Some((seq, frame)) = self.buffered.pop_front() {
                self.after = seq;
                return Poll::Ready(Some(frame.0));
            }
            if self.exhausted {
                self.replay = None;
                return Poll::Ready(None);
            }
            let Some(source) = &self.replay else {
                return Poll::Ready(None);
            };
            let after = self.after;
            let pending = self
                .pending
                .get_or_insert_with(|| source.page(after, REPLAY_ROWS));
            match pending.as_mut().poll(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Err(err)) => {
                    self.pending = None;
                    self.done = true;
                    return Poll::Ready(Some(err.frame().0));
                }
                Poll::Ready(Ok(rows)) => {
                    self.pending = None;
                    self.exhausted = (rows.len() as u64) < REPLAY_ROWS;
                    let mut bytes = 0;
                    for (seq, frame) in rows {
                        if bytes > 0 && bytes + frame.len() > REPLAY_BYTES {
                            // The rest is read again with the next page.
                            self.exhausted = false;
                            break;
                        }
                        bytes += frame.len();
                        self.buffered.push_back((seq, frame));
                    }
                }
            }
        }
    }
}

impl Stream for Body {
    type Item = Result<Bytes, Infallible>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if this.done {
            return Poll::Ready(None);
        }
        if let Some(p) = this.prologue.take() {
            return Poll::Ready(Some(Ok(p)));
        }
        if this.replay.is_some() {
            match this.poll_replay(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Some(bytes)) => return Poll::Ready(Some(Ok(bytes))),
                Poll::Ready(None) => {}
            }
        }
        loop {
            match this.sub.rx.poll_recv(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(None) => {
                    this.done = true;
                    return Poll::Ready(this.sub.closed.get().map(|e| Ok(e.frame().0)));
                }
                Poll::Ready(Some(item)) => {
                    if let Some(seq) = item.seq {
                        if seq <= this.after {
                            continue;
                        }
                        this.after = seq;
                    }
                    return Poll::Ready(Some(Ok(item.frame.0.clone())));
                }
            }
        }
    }
}
