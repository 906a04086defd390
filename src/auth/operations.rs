//! The caller's own profile and credentials, as operations: `GET/PATCH
//! /api/v2/me` so integrators can check a key, the caller's own API keys
//! (list, create, revoke: the keys page), and stream tokens for clients
//! that cannot send headers.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, IntoActiveModel, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{api_key, oauth_grant, user};

use crate::auth::{AccountInfo, CallerInfo, UserInfo, stream_tokens};
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Input, Json, Nothing, Operation, OperationDef, Page, Paged, Pagination, Params,
    Verb, def,
};
use crate::types::Permission;

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<GetMe>(),
    &def::<UpdateMe>(),
    &def::<ListApiKeys>(),
    &def::<CreateApiKey>(),
    &def::<RevokeApiKey>(),
    &def::<CreateStreamToken>(),
];

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeOut {
    pub account: AccountInfo,
    pub user: UserInfo,
    pub permissions: Vec<Permission>,
}

fn me(caller: &CallerInfo, user: UserInfo) -> MeOut {
    MeOut {
        account: caller.account.clone(),
        user,
        permissions: caller.permissions.clone(),
    }
}

pub struct GetMe;

impl Operation for GetMe {
    const NAME: &'static str = "get_me";
    const DESCRIPTION: &'static str =
        "The caller behind the credential: account, user and the key's permissions.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/me";
    type Path = Nothing;
    type Query = Nothing;
    type Body = Nothing;
    type Output = MeOut;

    async fn run(_: &Ctx, caller: &CallerInfo, _: Input<Self>) -> Result<MeOut, ApiError> {
        Ok(me(caller, caller.user.clone()))
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MePatch {
    /// Display name, 1 to 255 characters after trimming.
    #[schema(min_length = 1, max_length = 255, pattern = r"\S")]
    pub name: String,
}

pub struct UpdateMe;

impl Operation for UpdateMe {
    const NAME: &'static str = "update_me";
    const DESCRIPTION: &'static str = "Change the caller's display name.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Patch;
    const PATH: &'static str = "/me";
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<MePatch>;
    type Output = MeOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<MeOut, ApiError> {
        let name = input.body.0.name.trim();
        if name.is_empty() || name.chars().count() > 255 {
            return Err(ApiError::invalid("name", "must be 1 to 255 characters"));
        }
        let row = user::Entity::find_by_id(caller.user.id)
            .filter(user::Column::AccountId.eq(caller.account_id()))
            .one(&ctx.db)
            .await?
            .ok_or_else(|| ApiError::not_found("user"))?;
        let mut active = row.into_active_model();
        active.name = Set(name.to_string());
        active.update(&ctx.db).await?;
        ctx.bus
            .publish(super::events::user_changed(
                caller.account_id(),
                caller.user.id,
            ))
            .await;
        let mut user = caller.user.clone();
        user.name = name.to_string();
        Ok(me(caller, user))
    }
}

/// An API key as listed: never the secret.
#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyOut {
    pub id: i64,
    /// The label given when it was created (none for keys issued by the
    /// operator).
    pub name: Option<String>,
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
            name: m.name,
            prefix: m.prefix,
            permissions: m.permissions.split_whitespace().map(String::from).collect(),
            created_at: m.created_at,
            revoked_at: m.revoked_at,
        }
    }
}

pub struct ListApiKeys;

impl Operation for ListApiKeys {
    const NAME: &'static str = "list_api_keys";
    const DESCRIPTION: &'static str =
        "The caller's own API keys, newest first (never the secrets).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/api-keys";
    type Path = Nothing;
    type Query = Page<20, 100>;
    type Body = Nothing;
    type Output = Paged<ApiKeyOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let page = input.query;
        let query = api_key::Entity::find()
            .filter(api_key::Column::UserId.eq(caller.user.id))
            .filter(api_key::Column::Kind.eq(super::keys::KIND_API_KEY));
        let total = query.clone().count(&ctx.db).await?;
        let rows = query
            .order_by_desc(api_key::Column::Id)
            .offset(page.skip)
            .limit(page.take)
            .all(&ctx.db)
            .await?;
        Ok(Paged {
            items: rows.into_iter().map(Into::into).collect(),
            pagination: page.of(total),
        })
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

/// What a new key may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ToSchema)]
#[schema(rename_all = "lowercase")]
pub enum KeyAccess {
    /// Read-only: `platform:read`.
    Read,
    /// Reads and writes: `platform:write`.
    Write,
}

impl KeyAccess {
    /// Read as a string first, so any wrong value (a number, `null`, an
    /// unknown word) is a validation error naming `access`.
    fn parse(raw: &str) -> Result<Self, ApiError> {
        match raw {
            "read" => Ok(KeyAccess::Read),
            "write" => Ok(KeyAccess::Write),
            _ => Err(ApiError::invalid("access", "must be \"read\" or \"write\"")),
        }
    }

    fn permission(self) -> Permission {
        match self {
            KeyAccess::Read => Permission::PlatformRead,
            KeyAccess::Write => Permission::PlatformWrite,
        }
    }
}

/// A label's longest length, in characters.
pub const KEY_NAME_MAX: usize = 100;
/// Live (unrevoked) keys a user may hold at once.
pub const LIVE_KEYS_MAX: u64 = 100;

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ApiKeyIn {
    /// A label for the key, 1 to 100 characters after trimming.
    #[schema(min_length = 1, max_length = 100, pattern = r"\S")]
    pub name: Option<String>,
    /// `read` (a read-only key, `platform:read`) or `write` (reads and
    /// writes, `platform:write`).
    #[schema(value_type = KeyAccess)]
    pub access: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedApiKeyOut {
    pub api_key: ApiKeyOut,
    /// The key itself, shown this once: only its SHA-256 is stored.
    pub key: String,
}

/// A key's label: trimmed, 1 to 100 characters, no control characters.
fn key_name(raw: Option<String>) -> Result<Option<String>, ApiError> {
    let Some(raw) = raw else {
        return Ok(None);
    };
    let name = raw.trim();
    if name.is_empty() || name.chars().count() > KEY_NAME_MAX {
        return Err(ApiError::invalid(
            "name",
            format!("must be 1 to {KEY_NAME_MAX} characters after trimming"),
        ));
    }
    if name.chars().any(char::is_control) {
        return Err(ApiError::invalid(
            "name",
            "must not contain control characters",
        ));
    }
    Ok(Some(name.to_string()))
}

/// Keys are issued to a person: with an API key, or signed in to the
/// console. An OAuth grant of any other application cannot make one (a key
/// would outlive the grant's revocation).
async fn may_issue_keys(ctx: &Ctx, caller: &CallerInfo) -> Result<(), ApiError> {
    let credential = api_key::Entity::find_by_id(caller.api_key_id)
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::Unauthorized("the credential no longer exists".into()))?;
    if credential.kind != super::keys::KIND_OAUTH_GRANT {
        return Ok(());
    }
    let client = oauth_grant::Entity::find_by_id(credential.id)
        .one(&ctx.db)
        .await?
        .map(|g| g.client_id);
    if client.is_some_and(|c| super::oauth::console::is_console(&c)) {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "API keys are created in the console or with an API key; an application's OAuth access token cannot create them".into(),
        ))
    }
}

pub struct CreateApiKey;

impl Operation for CreateApiKey {
    const NAME: &'static str = "create_api_key";
    const DESCRIPTION: &'static str = "Create an API key for the caller's own user, in the caller's account: `access` `read` (platform:read, read-only) or `write` (platform:write), with an optional `name`. The answer holds the key itself, shown this once (only its hash is stored). A key never has more rights than the credential creating it: `write` needs a credential with platform:write.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/api-keys";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            403,
            "a read-only credential; `write` asked by a credential without platform:write; an OAuth access token of an application other than the console",
        ),
        (409, "the user already has 100 live keys"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<ApiKeyIn>;
    type Output = CreatedApiKeyOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CreatedApiKeyOut, ApiError> {
        let body = input.body.0;
        let access = KeyAccess::parse(&body.access)?;
        let name = key_name(body.name)?;
        may_issue_keys(ctx, caller).await?;
        let permission = access.permission();
        if access == KeyAccess::Write && !caller.has(Permission::PlatformWrite) {
            return Err(ApiError::Forbidden(
                "a key never has more rights than the credential creating it: `write` needs a credential with platform:write".into(),
            ));
        }
        let live = api_key::Entity::find()
            .filter(api_key::Column::UserId.eq(caller.user.id))
            .filter(api_key::Column::Kind.eq(super::keys::KIND_API_KEY))
            .filter(api_key::Column::RevokedAt.is_null())
            .count(&ctx.db)
            .await?;
        if live >= LIVE_KEYS_MAX {
            return Err(ApiError::conflict(format!(
                "this user already has {LIVE_KEYS_MAX} live API keys; revoke one first"
            )));
        }
        // The caller's own user, in the caller's account: never an id from
        // the request.
        let (row, key) = super::tenancy::issue_api_key(
            &ctx.db,
            caller.user.id,
            &[permission.as_str().to_string()],
            name,
        )
        .await
        .map_err(|e| match e {
            super::tenancy::TenancyError::Db(e) => ApiError::from(e),
            super::tenancy::TenancyError::Invalid(m) => ApiError::internal(m),
        })?;
        Ok(CreatedApiKeyOut {
            api_key: row.into(),
            key,
        })
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevokedOut {
    pub api_key: ApiKeyOut,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeyPath {
    /// The API key's id (an integer).
    pub key_id: String,
}

pub struct RevokeApiKey;

impl Operation for RevokeApiKey {
    const NAME: &'static str = "revoke_api_key";
    const DESCRIPTION: &'static str =
        "Revoke one of the caller's own API keys (possibly the one in use). Takes effect at once.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Delete;
    const PATH: &'static str = "/api-keys/{keyId}";
    type Path = Params<ApiKeyPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = RevokedOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<RevokedOut, ApiError> {
        let id: i64 = input
            .path
            .0
            .key_id
            .parse()
            .map_err(|_| ApiError::invalid("keyId", "must be an integer"))?;
        let row = api_key::Entity::find_by_id(id)
            .filter(api_key::Column::UserId.eq(caller.user.id))
            .filter(api_key::Column::Kind.eq(super::keys::KIND_API_KEY))
            .one(&ctx.db)
            .await?
            .ok_or_else(|| ApiError::not_found("API key"))?;
        let row = if row.revoked_at.is_some() {
            row
        } else {
            let mut active = row.into_active_model();
            active.revoked_at = Set(Some(Utc::now()));
            active.update(&ctx.db).await?
        };
        ctx.bus
            .publish(super::events::key_revoked(caller.account_id(), row.id))
            .await;
        Ok(RevokedOut {
            api_key: row.into(),
        })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StreamTokenIn {
    /// The path of the event stream to open:
    /// `/api/v2/assistant/conversations/{conversationUid}/events` or
    /// `/api/v2/buyer/discovery/{discoveryId}/events`.
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

pub struct CreateStreamToken;

impl Operation for CreateStreamToken {
    const NAME: &'static str = "create_stream_token";
    const DESCRIPTION: &'static str = "Mint a short-lived token that opens one event stream (a conversation's or a discovery session's) without an `Authorization` header, for a browser's `EventSource`: pass it as `?streamToken=` on the stream URL. It acts as the calling credential, only on that stream path, until it expires (minted with an OAuth access token, no later than that token); reconnects of the same stream may reuse it. The caller must be able to open the stream.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/auth/stream-tokens";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (400, "not the path of a known event stream"),
        (404, "the stream is not visible to the caller"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<StreamTokenIn>;
    type Output = StreamTokenOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<StreamTokenOut, ApiError> {
        let stream = ctx.streams.parse(&input.body.0.stream)?;
        stream.check_readable(ctx, caller).await?;
        let path = stream.path();
        let issued =
            stream_tokens::issue(&ctx.db, caller, &path, ctx.config.stream_token_ttl).await?;
        Ok(StreamTokenOut {
            token: issued.token,
            expires_at: issued.expires_at,
            stream: path,
        })
    }
}
