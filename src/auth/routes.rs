//! Caller-facing auth routes: `GET/PATCH /api/v2/me` so integrators can check
//! a key, and the caller's own API keys (list, revoke).

use actix_web::{HttpResponse, delete, get, patch, post, web};
use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use entity::{api_key, user};

use crate::auth::stream_tokens;
use crate::caller::{AccountInfo, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::http::AppState;
use crate::http::auth::Writer;
use crate::http::streams::KnownStream;
use crate::http::{ApiJson, Caller, Envelope, ErrorEnvelope, ListEnvelope, Page, envelope};
use crate::types::Permission;

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(me)
        .service(update_me)
        .service(list_api_keys)
        .service(revoke_api_key)
        .service(create_stream_token);
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeOut {
    pub account: AccountInfo,
    pub user: UserInfo,
    pub permissions: Vec<Permission>,
}

/// The caller behind the bearer credential (served from the auth cache).
#[utoipa::path(
    tag = "auth",
    security(("bearer" = [])),
    responses(
        (status = 200, body = Envelope<MeOut>),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[get("/me")]
pub async fn me(caller: Caller) -> ApiResult<HttpResponse> {
    Ok(envelope::ok(MeOut {
        account: caller.account.clone(),
        user: caller.user.clone(),
        permissions: caller.permissions.clone(),
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MePatch {
    /// Display name, 1 to 255 characters after trimming.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: String,
}

/// Update the caller's display name.
#[utoipa::path(
    tag = "auth",
    security(("bearer" = [])),
    request_body = MePatch,
    responses(
        (status = 200, body = Envelope<MeOut>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[patch("/me")]
pub async fn update_me(
    state: web::Data<AppState>,
    Writer(caller): Writer,
    body: ApiJson<MePatch>,
) -> ApiResult<HttpResponse> {
    let name = body.0.name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return Err(ApiError::invalid("name", "must be 1 to 255 characters"));
    }
    let row = user::Entity::find_by_id(caller.user.id)
        .filter(user::Column::AccountId.eq(caller.account_id()))
        .one(&state.db)
        .await?
        .ok_or_else(|| ApiError::not_found("user"))?;
    let mut active = row.into_active_model();
    active.name = Set(name.to_string());
    active.update(&state.db).await?;
    state
        .bus
        .publish(super::events::user_changed(
            caller.account_id(),
            caller.user.id,
        ))
        .await;
    let mut user = caller.user.clone();
    user.name = name.to_string();
    Ok(envelope::ok(MeOut {
        account: caller.account.clone(),
        user,
        permissions: caller.permissions.clone(),
    }))
}

/// An API key as listed: never the secret.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyOut {
    pub id: i64,
    /// The readable, non-secret part: the key starts with `agk_{prefix}_`.
    pub prefix: String,
    pub permissions: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<api_key::Model> for ApiKeyOut {
    fn from(m: api_key::Model) -> Self {
        ApiKeyOut {
            id: m.id,
            prefix: m.prefix,
            permissions: m.permissions.split_whitespace().map(String::from).collect(),
            created_at: m.created_at,
            revoked_at: m.revoked_at,
        }
    }
}

/// The caller's own API keys, newest first.
#[utoipa::path(
    tag = "auth",
    security(("bearer" = [])),
    params(Page<20, 100>),
    responses(
        (status = 200, body = ListEnvelope<Vec<ApiKeyOut>>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
    )
)]
#[get("/api-keys")]
pub async fn list_api_keys(
    state: web::Data<AppState>,
    caller: Caller,
    page: Page<20, 100>,
) -> ApiResult<HttpResponse> {
    let query = api_key::Entity::find()
        .filter(api_key::Column::UserId.eq(caller.user.id))
        .filter(api_key::Column::Kind.eq(super::keys::KIND_API_KEY));
    let total = query.clone().count(&state.db).await?;
    let rows = query
        .order_by_desc(api_key::Column::Id)
        .offset(page.skip)
        .limit(page.take)
        .all(&state.db)
        .await?;
    let data: Vec<ApiKeyOut> = rows.into_iter().map(Into::into).collect();
    Ok(envelope::list(data, page.of(total)))
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedOut {
    pub api_key: ApiKeyOut,
}

/// Revoke one of the caller's keys (possibly the one in use). Takes effect at once.
#[utoipa::path(
    tag = "auth",
    security(("bearer" = [])),
    params(("keyId" = i64, Path, description = "API key id")),
    responses(
        (status = 200, body = Envelope<RevokedOut>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope),
    )
)]
#[delete("/api-keys/{keyId}")]
pub async fn revoke_api_key(
    state: web::Data<AppState>,
    Writer(caller): Writer,
    path: web::Path<String>,
) -> ApiResult<HttpResponse> {
    let id: i64 = path
        .parse()
        .map_err(|_| ApiError::invalid("keyId", "must be an integer"))?;
    let row = api_key::Entity::find_by_id(id)
        .filter(api_key::Column::UserId.eq(caller.user.id))
        .filter(api_key::Column::Kind.eq(super::keys::KIND_API_KEY))
        .one(&state.db)
        .await?
        .ok_or_else(|| ApiError::not_found("API key"))?;
    let row = if row.revoked_at.is_some() {
        row
    } else {
        let mut active = row.into_active_model();
        active.revoked_at = Set(Some(Utc::now()));
        active.update(&state.db).await?
    };
    state
        .bus
        .publish(super::events::key_revoked(caller.account_id(), row.id))
        .await;
    Ok(envelope::ok(RevokedOut {
        api_key: row.into(),
    }))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StreamTokenIn {
    /// The path of the event stream to open, e.g.
    /// `/api/v2/assistant/conversations/{conversationUid}/events`.
    #[schema(
        example = "/api/v2/assistant/conversations/8f14e45f-ceea-467f-a0e6-3b5f1c2b7c1d/events"
    )]
    pub stream: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StreamTokenOut {
    /// Shown once. Pass it as `?streamToken=...` on the stream URL.
    pub token: String,
    pub expires_at: DateTime<Utc>,
    /// The canonical stream path the token opens (and nothing else).
    pub stream: String,
}

/// Mint a short-lived token that opens one event stream without an
/// `Authorization` header (for a browser's `EventSource`). It acts as the
/// calling API key, only on that stream path, until it expires; reconnects
/// of the same stream may reuse it.
#[utoipa::path(
    tag = "auth",
    security(("bearer" = [])),
    request_body = StreamTokenIn,
    responses(
        (status = 201, body = Envelope<StreamTokenOut>),
        (status = 400, body = ErrorEnvelope, description = "not the path of a known event stream"),
        (status = 401, body = ErrorEnvelope),
        (status = 404, body = ErrorEnvelope, description = "the stream is not visible to the caller"),
    )
)]
#[post("/auth/stream-tokens")]
pub async fn create_stream_token(
    state: web::Data<AppState>,
    caller: Caller,
    body: ApiJson<StreamTokenIn>,
) -> ApiResult<HttpResponse> {
    let stream = KnownStream::parse(&body.0.stream)?;
    stream.check_readable(&state, &caller).await?;
    let path = stream.path();
    let issued =
        stream_tokens::issue(&state.db, &caller, &path, state.config.stream_token_ttl).await?;
    Ok(envelope::created(StreamTokenOut {
        token: issued.token,
        expires_at: issued.expires_at,
        stream: path,
    }))
}
