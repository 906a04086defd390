//! The conversation event stream route (the REST operations are derived
//! from the registry, see `operations.rs`).

use actix_web::{HttpRequest, HttpResponse, web};
use serde::Deserialize;
use utoipa::IntoParams;

use super::model::ConversationUid;
use super::{service, stream};
use crate::caller::CallerInfo;
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::http::{ApiQuery, StreamCaller};
use crate::ops::{BoxFuture, Ctx, StreamRoute};
use crate::sse::{self, Frame};

/// The room's event stream, as stream tokens know it: its path and the
/// route's own access check (the room must be visible to the caller).
pub static STREAM: StreamRoute = StreamRoute {
    template: "/assistant/conversations/{conversationUid}/events",
    canonical: |uid| parse_uid(uid).map(|uid| uid.as_str().to_string()),
    check: readable,
};

fn parse_uid(uid: &str) -> Result<ConversationUid, ApiError> {
    ConversationUid::parse(uid)
        .map_err(|_| ApiError::invalid("stream", "conversationUid must be a UUID"))
}

fn readable(ctx: Ctx, caller: CallerInfo, uid: String) -> BoxFuture<Result<(), ApiError>> {
    Box::pin(async move {
        service::visible(&ctx.db, &caller, &parse_uid(&uid)?)
            .await
            .map(|_| ())
    })
}

/// Described in the OpenAPI document by `crate::openapi`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(STREAM.template, web::get().to(conversation_events));
}

#[derive(Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Resume after this message sequence (replays newer messages first).
    /// A `Last-Event-ID` header, as sent by a reconnecting `EventSource`,
    /// takes precedence. Without either the stream starts at the newest.
    #[param(value_type = Option<i64>, minimum = 0)]
    pub after: Option<String>,
}

/// The room's event stream (`text/event-stream`): `ready`, `message.created`
/// (with `id:` = sequence), `presence.changed`, `error`; while the assistant
/// answers, `message.delta` and `run.updated` (no id, not replayed); `: ka`
/// keep-alives.
pub async fn conversation_events(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: StreamCaller,
    path: web::Path<String>,
    query: ApiQuery<EventsQuery>,
) -> ApiResult<HttpResponse> {
    let uid = ConversationUid::parse(&path)?;
    let resume = crate::sse::Resume::read(&req, query.0.after.as_deref())?;
    let conv = service::visible(&state.db, &caller, &uid).await?;
    resume.within(conv.last_sequence, "message")?;
    let sub = super::rooms_handle(&state)?.join(&conv, &caller).await?;
    // Re-checked once joined, like the replay: a change of access committed
    // before this read is seen here, and one committed after it reaches the
    // room, which now holds this subscriber.
    let conv = service::visible(&state.db, &caller, &uid).await?;
    let after = resume.after.unwrap_or(sub.live_from);
    let ready = serde_json::json!({ "conversationUid": conv.uid, "after": after });
    let replay = stream::MessageReplay {
        db: state.db.clone(),
        uid: conv.uid.clone(),
    };
    Ok(sse::response(
        Frame::event("ready", None, &ready.to_string()),
        after,
        Some(Box::new(replay)),
        sub,
        // Counted as open until the stream is dropped, however it ends.
        Some(Box::new(crate::metrics::stream_opened("conversation"))),
    ))
}
