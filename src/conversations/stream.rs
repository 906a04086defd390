//! One subscriber's SSE stream: `ready`, then a replay of persisted messages
//! after the cursor, then live events, de-duplicated by sequence. The room
//! is joined before the replay reads the database, so nothing committed in
//! between can be missed, and anything seen twice is dropped.

use std::collections::VecDeque;
use std::convert::Infallible;

use actix_web_lab::sse;
use futures_util::Stream;
use sea_orm::DatabaseConnection;
use tokio_util::sync::CancellationToken;

use super::model::{MessageOut, message_created_data};
use super::room::{RoomEvent, StreamError, Subscription};
use super::service;

const REPLAY_PAGE: u64 = 200;

enum Phase {
    Ready,
    Replay { exhausted: bool },
    Live,
    Done,
}

struct State {
    phase: Phase,
    db: DatabaseConnection,
    uid: String,
    /// Ready cursor, then the last sequence sent.
    after: i64,
    buffer: VecDeque<MessageOut>,
    sub: Subscription,
    shutdown: CancellationToken,
}

pub fn room_stream(
    db: DatabaseConnection,
    uid: String,
    after: i64,
    sub: Subscription,
    shutdown: CancellationToken,
) -> impl Stream<Item = Result<sse::Event, Infallible>> {
    let state = State {
        phase: Phase::Ready,
        db,
        uid,
        after,
        buffer: VecDeque::new(),
        sub,
        shutdown,
    };
    futures_util::stream::unfold(state, |mut st| async move {
        let event = st.next().await?;
        Some((Ok(event), st))
    })
}

fn error_event(err: &StreamError) -> sse::Event {
    let data = serde_json::to_string(err).unwrap_or_else(|_| "{}".into());
    sse::Data::new(data).event("error").into()
}

impl State {
    async fn next(&mut self) -> Option<sse::Event> {
        loop {
            match self.phase {
                Phase::Ready => {
                    self.phase = Phase::Replay { exhausted: false };
                    let data = serde_json::json!({
                        "conversationUid": self.uid,
                        "after": self.after,
                    });
                    return Some(sse::Data::new(data.to_string()).event("ready").into());
                }
                Phase::Replay { exhausted } => {
                    if let Some(m) = self.buffer.pop_front() {
                        self.after = m.sequence;
                        let data = message_created_data(&self.uid, &m);
                        return Some(
                            sse::Data::new(data)
                                .event("message.created")
                                .id(m.sequence.to_string())
                                .into(),
                        );
                    }
                    if exhausted {
                        self.phase = Phase::Live;
                        continue;
                    }
                    match service::messages_between(
                        &self.db,
                        &self.uid,
                        self.after,
                        None,
                        REPLAY_PAGE,
                    )
                    .await
                    {
                        Ok(rows) => {
                            let exhausted = (rows.len() as u64) < REPLAY_PAGE;
                            self.buffer.extend(rows);
                            self.phase = Phase::Replay { exhausted };
                        }
                        Err(err) => {
                            tracing::warn!(error = %err, "room replay failed");
                            self.phase = Phase::Done;
                            return Some(error_event(&StreamError::database_unavailable()));
                        }
                    }
                }
                Phase::Live => {
                    let next = tokio::select! {
                        biased;
                        _ = self.shutdown.cancelled() => {
                            self.phase = Phase::Done;
                            return Some(error_event(&StreamError::shutting_down()));
                        }
                        next = self.sub.rx.recv() => next,
                    };
                    let Some(event) = next else {
                        self.phase = Phase::Done;
                        return self.sub.closed.get().map(error_event);
                    };
                    match &*event {
                        RoomEvent::Message { sequence, data } => {
                            if *sequence <= self.after {
                                continue;
                            }
                            self.after = *sequence;
                            return Some(
                                sse::Data::new(data.clone())
                                    .event("message.created")
                                    .id(sequence.to_string())
                                    .into(),
                            );
                        }
                        RoomEvent::Presence(data) => {
                            return Some(
                                sse::Data::new(data.clone())
                                    .event("presence.changed")
                                    .into(),
                            );
                        }
                        RoomEvent::KeepAlive => {
                            return Some(sse::Event::Comment("ka".into()));
                        }
                    }
                }
                Phase::Done => return None,
            }
        }
    }
}
