//! The discovery event stream (the REST operations derive from the
//! registry, see `operations.rs`).

use std::future::Future;
use std::pin::Pin;

use actix_web::{HttpRequest, HttpResponse, web};
use chrono::Utc;
use sea_orm::DatabaseConnection;

use super::model::DiscoveryId;
use super::operations::visible_session;
use super::service;
use super::session::{Sessions, frames, revision_seq};
use crate::caller::CallerInfo;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::http::StreamCaller;
use crate::ops::{BoxFuture, Ctx, StreamRoute};
use crate::sse::{self, Frame, ReplayPage, ReplaySource, StreamError};

/// A session's event stream, as stream tokens know it: its path and the
/// route's own access check (the session must be the caller's account's).
pub static STREAM: StreamRoute = StreamRoute {
    template: "/buyer/discovery/{discoveryId}/events",
    canonical: |id| {
        DiscoveryId::parse(id, "stream")
            .map(|id| id.as_str().to_string())
            .map_err(|_| {
                ApiError::invalid("stream", "discoveryId must be a discovery id (disc_...)")
            })
    },
    check: readable,
};

fn readable(ctx: Ctx, caller: CallerInfo, id: String) -> BoxFuture<Result<(), ApiError>> {
    Box::pin(async move { visible_session(&ctx, &caller, &id).await.map(|_| ()) })
}

/// Described in the OpenAPI document by `crate::openapi`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(STREAM.template, web::get().to(discovery_events));
}

/// Published revisions after the client's cursor, as frames.
struct RevisionReplay {
    db: DatabaseConnection,
    id: String,
}

impl ReplaySource for RevisionReplay {
    fn page(&self, after: i64, rows: u64) -> Pin<Box<dyn Future<Output = ReplayPage> + Send>> {
        let db = self.db.clone();
        let id = self.id.clone();
        Box::pin(async move {
            // A revision's `complete` frame follows its `revision` frame:
            // read from the revision whose frames may not all be sent.
            let from = after.div_euclid(2) - 1;
            let read = crate::rt::detached({
                let id = id.clone();
                async move { service::revisions_after(&db, &id, from, None, rows + 1).await }
            });
            let list = read
                .await
                .unwrap_or_else(|| Err(sea_orm::DbErr::Custom("replay cancelled".into())))
                .map_err(|err| {
                    tracing::warn!(error = %err, "discovery replay failed");
                    StreamError::database_unavailable()
                })?;
            // Only the newest revision's `complete` is sent: an earlier one
            // closed a round that a refine has since reopened.
            let full = list.len() as u64 > rows;
            let last = list.len().saturating_sub(1);
            Ok(list
                .iter()
                .enumerate()
                .flat_map(|(i, p)| {
                    let mut f = frames(&id, p);
                    if i != last || full {
                        f.truncate(1);
                    }
                    f
                })
                .filter(|(seq, _)| *seq > after)
                .collect())
        })
    }
}

/// A session's event stream (`text/event-stream`): `ready`, `revision` (with
/// `id:` = revision; only the groups landed since the previous one),
/// `complete` then the end, `error` then the end, `: ka` keep-alives.
pub async fn discovery_events(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: StreamCaller,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let ctx: &Ctx = &state.ctx;
    let session = visible_session(ctx, &caller, &path).await?;
    let sessions = ctx.get::<Sessions>()?;
    let grace = chrono::Duration::from_std(sessions.tuning().complete_grace).unwrap_or_default();
    if session.results_complete
        && session
            .completed_at
            .is_some_and(|at| at + grace < Utc::now())
    {
        return Err(ApiError::invalid(
            "discoveryId",
            "the session is no longer active; browse its results instead",
        ));
    }
    let resume = req
        .headers()
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .ok()
                .and_then(|v| v.trim().parse::<i64>().ok())
                .filter(|n| *n >= 0)
                .ok_or_else(|| ApiError::invalid("Last-Event-ID", "must be a revision number"))
        })
        .transpose()?;
    if let Some(r) = resume
        && r > session.revision
    {
        return Err(ApiError::invalid(
            "Last-Event-ID",
            format!("is beyond the session's revision ({})", session.revision),
        ));
    }
    let sub = sessions.join(&session, &caller).await?;
    // A late subscriber first gets every revision it missed.
    let after = resume.map_or(-1, revision_seq);
    let ready = serde_json::json!({ "discoveryId": session.id });
    let replay = RevisionReplay {
        db: ctx.db.clone(),
        id: session.id.clone(),
    };
    Ok(sse::response(
        Frame::event("ready", None, &ready.to_string()),
        after,
        Some(Box::new(replay)),
        sub,
        Some(Box::new(crate::metrics::stream_opened("discovery"))),
    ))
}
