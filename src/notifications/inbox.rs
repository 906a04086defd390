//! A user's live notifications: one stream actor per user with open
//! streams on this instance (`Inbox`, a domain of the shared SSE hub), fed
//! by `notification.created` and catching up from the database on every
//! tick; the route `GET /notifications/events` with stream tokens,
//! `Last-Event-ID` resume and keep-alives from the hub.

use std::future::Future;
use std::pin::Pin;

use actix::prelude::*;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::future::BoxFuture;
use sea_orm::{DatabaseConnection, DbErr};
use serde::Deserialize;
use utoipa::IntoParams;

use super::model::NotificationOut;
use super::service;
use crate::bus::BusEvent;
use crate::caller::CallerInfo;
use crate::error::{ApiError, ApiResult};
use crate::http::{ApiQuery, AppState, StreamCaller};
use crate::ops::{Ctx as OpsCtx, StreamRoute};
use crate::sse::{
    self, Ctx, Frame, Item, Member, ReplayPage, ReplaySource, StreamActor, StreamError,
};

/// The stream, as stream tokens know it: the caller's own, always readable.
pub static STREAM: StreamRoute = StreamRoute {
    template: "/notifications/events",
    canonical: |_| Ok(String::new()),
    check: readable,
};

fn readable(_: OpsCtx, _: CallerInfo, _: String) -> BoxFuture<'static, Result<(), ApiError>> {
    Box::pin(async { Ok(()) })
}

/// This instance's inboxes.
#[derive(Clone)]
pub struct Inboxes(pub sse::Hub<Inbox>);

/// One user's notifications on this instance.
pub struct Inbox {
    db: DatabaseConnection,
    account_id: String,
    user_id: i64,
    /// The newest number sent to the streams.
    last_seq: i64,
    /// The newest number known to exist.
    want: i64,
    fetching: bool,
}

/// The `notification.created` frame: `id:` is the number.
pub fn frame(n: &NotificationOut) -> Frame {
    let data = serde_json::to_string(n).unwrap_or_else(|_| "{}".into());
    Frame::event("notification.created", Some(&n.sequence.to_string()), &data)
}

type Act = StreamActor<Inbox>;

impl sse::Domain for Inbox {
    type Join = ();
    type State = i64;
    const WHAT: &'static str = "notification stream";
    const TOPICS: &'static str = service::PREFIX;

    fn routes(topic: &str) -> bool {
        topic == service::CREATED
    }

    fn account_id(&self) -> &str {
        &self.account_id
    }

    fn read(&self) -> BoxFuture<'static, Result<Option<i64>, DbErr>> {
        let (db, user) = (self.db.clone(), self.user_id);
        Box::pin(async move { service::last_seq(&db, user).await.map(Some) })
    }

    /// A notification whose event was lost is sent within one tick.
    fn checked(act: &mut Act, newest: i64, ctx: &mut Ctx<Inbox>) {
        act.want = act.want.max(newest);
        act.fetch(ctx);
    }

    fn admits(&self, member: &Member, _: &()) -> bool {
        member.user_id == self.user_id
    }

    fn joined(act: &mut Act, _: u64, _: &Member, _: (), _: &mut Ctx<Inbox>) -> i64 {
        act.last_seq
    }

    fn on_event(act: &mut Act, event: &BusEvent, ctx: &mut Ctx<Inbox>) {
        if let Some(seq) = event.payload.get("seq").and_then(|v| v.as_i64()) {
            act.want = act.want.max(seq);
            act.fetch(ctx);
        }
    }
}

impl StreamActor<Inbox> {
    /// Reads what is newer than what was sent and broadcasts it in order.
    fn fetch(&mut self, ctx: &mut Ctx<Inbox>) {
        if self.fetching || self.want <= self.last_seq || self.is_failed() {
            return;
        }
        self.fetching = true;
        let (db, user, from) = (self.db.clone(), self.user_id, self.last_seq);
        let work = crate::rt::detached(async move {
            service::after(&db, user, from, sse::body::REPLAY_ROWS).await
        });
        ctx.spawn(work.into_actor(self).map(move |res, act, ctx| {
            act.fetching = false;
            match res.unwrap_or_else(|| Err(DbErr::Custom("inbox read cancelled".into()))) {
                Ok(rows) => {
                    for row in rows {
                        let n = NotificationOut::from(row);
                        act.last_seq = act.last_seq.max(n.sequence);
                        act.broadcast(Item::new(Some(n.sequence), frame(&n)), ctx);
                    }
                    if act.last_seq == from {
                        // Nothing readable yet: the next event or tick retries.
                        act.want = act.last_seq;
                    }
                    act.fetch(ctx);
                }
                Err(err) => {
                    tracing::warn!(error = %err, "notification stream read failed");
                    act.fail(StreamError::database_unavailable(), ctx);
                }
            }
        }));
    }
}

impl Inboxes {
    pub fn new(
        db: &DatabaseConnection,
        bus: &crate::bus::EventBus,
        tuning: sse::Tuning,
        shutdown: tokio_util::sync::CancellationToken,
    ) -> Self {
        Inboxes(sse::Hub::new(db.clone(), bus, tuning, shutdown))
    }
}

/// Described in the OpenAPI document by `crate::openapi`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(STREAM.template, web::get().to(notification_events));
}

/// The user's notifications after the client's cursor, as frames.
struct Replay {
    db: DatabaseConnection,
    user_id: i64,
}

impl ReplaySource for Replay {
    fn page(&self, after: i64, rows: u64) -> Pin<Box<dyn Future<Output = ReplayPage> + Send>> {
        let (db, user) = (self.db.clone(), self.user_id);
        let read = crate::rt::detached(async move { service::after(&db, user, after, rows).await });
        Box::pin(async move {
            let list = read
                .await
                .unwrap_or_else(|| Err(DbErr::Custom("replay cancelled".into())))
                .map_err(|err| {
                    tracing::warn!(error = %err, "notification replay failed");
                    StreamError::database_unavailable()
                })?;
            Ok(list
                .into_iter()
                .map(|row| {
                    let n = NotificationOut::from(row);
                    (n.sequence, frame(&n))
                })
                .collect())
        })
    }
}

#[derive(Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Resume after this notification number (`sequence`). A
    /// `Last-Event-ID` header takes precedence. Without either the stream
    /// starts with what comes next.
    #[param(value_type = Option<i64>, minimum = 0)]
    pub after: Option<String>,
}

/// The caller's notification stream (`text/event-stream`): `ready`,
/// `notification.created` (with `id:` = sequence), `error` then the end,
/// `: ka` keep-alives.
pub async fn notification_events(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: StreamCaller,
    query: ApiQuery<EventsQuery>,
) -> ApiResult<HttpResponse> {
    let resume = crate::sse::Resume::read(&req, query.0.after.as_deref())?;
    let ctx: &OpsCtx = &state.ctx;
    let inboxes = ctx.get::<Inboxes>()?;
    let user = caller.user.id;
    let newest = service::last_seq(&ctx.db, user).await?;
    resume.within(newest, "notification")?;
    let (db, account) = (ctx.db.clone(), caller.account_id().to_string());
    let make = || Inbox {
        db: db.clone(),
        account_id: account.clone(),
        user_id: user,
        last_seq: newest,
        want: newest,
        fetching: false,
    };
    let sub = inboxes.0.join(&user.to_string(), make, &caller, ()).await?;
    let after = resume.after.unwrap_or(sub.live_from);
    let ready = serde_json::json!({ "userId": user, "after": after });
    let replay = Replay {
        db: ctx.db.clone(),
        user_id: user,
    };
    Ok(sse::response(
        Frame::event("ready", None, &ready.to_string()),
        after,
        Some(Box::new(replay)),
        sub,
        Some(Box::new(crate::metrics::stream_opened("notifications"))),
    ))
}
