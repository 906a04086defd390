//! REST and SSE routes of shared conversations: thin adapters that parse
//! into validated types and call the service.

use std::collections::HashMap;

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, Responder, get, patch, post, web};
use actix_web_lab::sse::Sse;
use bytes::Bytes;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_actix_web::service_config::ServiceConfig;

use super::list_cache::ListKey;
use super::model::{
    Audience, Content, ConversationOut, ConversationUid, MessageOut, Participant, Title,
};
use super::{service, stream};
use crate::error::{ApiError, ApiResult};
use crate::http::{
    ApiJson, ApiQuery, Caller, Envelope, ErrorEnvelope, ListEnvelope, ListMeta, OptionalJson, Page,
    envelope,
};
use crate::state::AppState;

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(list_conversations)
        .service(create_conversation)
        .service(rename_conversation)
        .service(share_conversation)
        .service(post_message)
        .service(conversation_events);
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationList {
    pub conversations: Vec<ConversationOut>,
    /// Conversation uid to the users with the room open (only conversations
    /// with someone present; empty when shared conversations are disabled).
    pub presence_by_conversation_uid: HashMap<String, Vec<Participant>>,
    pub total_count: u64,
    pub has_more: bool,
}

/// The caller's private conversations and the account's shared ones, most
/// recently active first.
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    params(Page<20, 100>),
    responses(
        (status = 200, body = ListEnvelope<ConversationList>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[get("/assistant/conversations")]
pub async fn list_conversations(
    state: web::Data<AppState>,
    caller: Caller,
    page: Page<20, 100>,
) -> ApiResult<HttpResponse> {
    let key = ListKey {
        account_id: caller.account_id().to_string(),
        user_id: caller.user.id,
        shared_enabled: caller.account.shared_conversations_enabled,
        take: page.take,
        skip: page.skip,
        generation: state
            .conversation_lists
            .generation(&state.db, caller.account_id())
            .await?,
    };
    if let Some(body) = state.conversation_lists.get(&key) {
        return Ok(json_response(body));
    }
    let ttl = state.config.rooms.presence_ttl();
    let possible = |uids: &[&str]| state.bus.is_distributed() || state.rooms.any_open(uids);
    let found = service::list(&state.db, &caller, page.take, page.skip, ttl, possible).await?;
    let meta = page.meta(found.total);
    let data = ConversationList {
        has_more: meta.has_more,
        total_count: found.total,
        conversations: found.conversations,
        presence_by_conversation_uid: found.presence,
    };
    let body = Bytes::from(
        serde_json::to_vec(&envelope::ListEnvelope {
            data,
            error: None,
            meta: ListMeta { pagination: meta },
        })
        .map_err(ApiError::internal)?,
    );
    state
        .conversation_lists
        .put(key, body.clone(), found.presence_until);
    Ok(json_response(body))
}

fn json_response(body: Bytes) -> HttpResponse {
    HttpResponse::Ok()
        .insert_header(header::ContentType::json())
        .body(body)
}

#[derive(Deserialize, Default, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CreateConversation {
    /// Explicit value wins; else the account default; else `false`.
    pub sharing_enabled: Option<bool>,
    /// 1 to 255 characters after trimming; auto-generated when omitted.
    #[schema(min_length = 1, max_length = 255)]
    pub title: Option<String>,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationEnvelope {
    pub conversation: ConversationOut,
}

/// Start a conversation owned by the caller. The body is optional.
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    request_body(content = CreateConversation, description = "Optional: a request without a body creates with the defaults."),
    responses(
        (status = 201, body = Envelope<ConversationEnvelope>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[post("/assistant/conversations")]
pub async fn create_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    body: OptionalJson<CreateConversation>,
) -> ApiResult<HttpResponse> {
    let body = body.0;
    let title = body.title.as_deref().map(Title::parse).transpose()?;
    let conversation =
        service::create(&state.db, &state.bus, &caller, body.sharing_enabled, title).await?;
    Ok(envelope::created(ConversationEnvelope { conversation }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RenameConversation {
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub title: String,
}

/// Rename a conversation (owner only).
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    params(("conversationUid" = uuid::Uuid, Path)),
    request_body = RenameConversation,
    responses(
        (status = 200, body = Envelope<ConversationEnvelope>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 403, body = ErrorEnvelope, description = "a teammate who is not the owner"),
        (status = 404, body = ErrorEnvelope),
    )
)]
#[patch("/assistant/conversations/{conversationUid}/title")]
pub async fn rename_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: ApiJson<RenameConversation>,
) -> ApiResult<HttpResponse> {
    let uid = ConversationUid::parse(&path)?;
    let title = Title::parse(&body.0.title)?;
    let conversation = service::rename(&state.db, &state.bus, &caller, &uid, title).await?;
    Ok(envelope::ok(ConversationEnvelope { conversation }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ShareConversation {
    pub sharing_enabled: bool,
}

/// Turn sharing on or off (anyone who can read the conversation).
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    params(("conversationUid" = uuid::Uuid, Path)),
    request_body = ShareConversation,
    responses(
        (status = 200, body = Envelope<ConversationEnvelope>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
    )
)]
#[patch("/assistant/conversations/{conversationUid}/sharing")]
pub async fn share_conversation(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: ApiJson<ShareConversation>,
) -> ApiResult<HttpResponse> {
    let uid = ConversationUid::parse(&path)?;
    let conversation =
        service::set_sharing(&state.db, &state.bus, &caller, &uid, body.0.sharing_enabled).await?;
    Ok(envelope::ok(ConversationEnvelope { conversation }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PostMessage {
    /// `room` (the only audience accepted here for now; `assistant` is a 400).
    #[schema(pattern = "^room$")]
    pub audience: String,
    #[schema(min_length = 1, max_length = 32000)]
    pub content: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MessageEnvelope {
    pub message: MessageOut,
}

/// Post a room message: visible to participants, does not prompt the assistant.
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    params(("conversationUid" = uuid::Uuid, Path)),
    request_body = PostMessage,
    responses(
        (status = 201, body = Envelope<MessageEnvelope>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
    )
)]
#[post("/assistant/conversations/{conversationUid}/messages")]
pub async fn post_message(
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    body: ApiJson<PostMessage>,
) -> ApiResult<HttpResponse> {
    let uid = ConversationUid::parse(&path)?;
    let body = body.0;
    let audience = Audience::parse_postable(&body.audience)?;
    let content = Content::parse(body.content)?;
    let message =
        service::post_message(&state.db, &state.bus, &caller, &uid, audience, content).await?;
    Ok(envelope::created(MessageEnvelope { message }))
}

#[derive(Deserialize, IntoParams)]
pub struct EventsQuery {
    /// Resume after this message sequence (replays newer messages first).
    /// A `Last-Event-ID` header, as sent by a reconnecting `EventSource`,
    /// takes precedence. Without either the stream starts at the newest.
    #[param(value_type = Option<i64>, minimum = 0)]
    pub after: Option<String>,
}

fn parse_cursor(raw: &str, field: &str) -> Result<i64, ApiError> {
    raw.trim()
        .parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| ApiError::invalid(field, "must be a non-negative integer sequence"))
}

/// The room's event stream (`text/event-stream`): `ready`, `message.created`
/// (with `id:` = sequence), `presence.changed`, `error`; `: ka` keep-alives.
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    params(
        ("conversationUid" = uuid::Uuid, Path),
        EventsQuery,
        ("Last-Event-ID" = Option<String>, Header, description = "Resume after this sequence"),
    ),
    responses(
        (status = 200, content_type = "text/event-stream", body = String),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
    )
)]
#[get("/assistant/conversations/{conversationUid}/events")]
pub async fn conversation_events(
    req: HttpRequest,
    state: web::Data<AppState>,
    caller: Caller,
    path: web::Path<String>,
    query: ApiQuery<EventsQuery>,
) -> ApiResult<HttpResponse> {
    let uid = ConversationUid::parse(&path)?;
    let from_header = req
        .headers()
        .get("last-event-id")
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::invalid("Last-Event-ID", "must be a sequence"))
                .and_then(|v| parse_cursor(v, "Last-Event-ID"))
        })
        .transpose()?;
    let from_query = query
        .0
        .after
        .as_deref()
        .map(|v| parse_cursor(v, "after"))
        .transpose()?;
    let conv = service::visible(&state.db, &caller, &uid).await?;
    let requested = from_header.or(from_query);
    if let Some(after) = requested
        && after > conv.last_sequence
    {
        let field = if from_header.is_some() {
            "Last-Event-ID"
        } else {
            "after"
        };
        return Err(ApiError::invalid(
            field,
            format!("is beyond the newest message ({})", conv.last_sequence),
        ));
    }
    let sub = state.rooms.join(&conv, caller.user.id).await?;
    let after = requested.unwrap_or(sub.live_from);
    let events = stream::room_stream(
        state.db.clone(),
        conv.uid.clone(),
        after,
        sub,
        state.shutdown.clone(),
    );
    let mut res = Sse::from_stream(events)
        .respond_to(&req)
        .map_into_boxed_body();
    res.headers_mut().insert(
        header::HeaderName::from_static("x-accel-buffering"),
        header::HeaderValue::from_static("no"),
    );
    Ok(res)
}
