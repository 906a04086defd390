//! Grants and their tokens: the code exchange, refresh with rotation,
//! revocation, and the access-token lookup behind `AuthService`.
//!
//! A grant is what a user allowed a client. Its credential is a row of
//! `api_keys` (kind `oauth`, no secret), so a caller authenticated with an
//! access token has an `api_key_id` like any key holder, and revoking the
//! grant is revoking that row: announced on the bus (`auth.key_revoked`),
//! it drops cached callers and closes open streams on every instance.
//! Revocation is per grant: a refresh token, an access token, a reused
//! code or a reused refresh token all end the whole family.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};
use serde::Serialize;

use entity::{api_key, oauth_grant, oauth_token, user};

use super::error::OAuthError;
use super::model::{Resource, Scopes, pkce_matches};
use super::store;
use crate::auth::keys;
use crate::ops::Ctx;

/// Access tokens are `oat_<prefix>_<secret>` (~238 bits of secret).
pub const ACCESS_TAG: &str = "oat";
/// Refresh tokens are `ort_<prefix>_<secret>`.
pub const REFRESH_TAG: &str = "ort";
const ACCESS: &str = "access";
const REFRESH: &str = "refresh";

pub use crate::config::oauth::OAuthTuning;

/// The token endpoint's successful answer (RFC 6749 section 5.1).
#[derive(Debug, Clone, Serialize)]
pub struct TokenSet {
    pub access_token: String,
    pub token_type: &'static str,
    pub expires_in: u64,
    pub refresh_token: String,
    pub scope: String,
}

fn after(now: DateTime<Utc>, ttl: std::time::Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX)
}

pub fn is_access_token(token: &str) -> bool {
    keys::prefix_of_tagged(ACCESS_TAG, token).is_some()
}

/// A stored token of `kind` behind `token` (constant-time hash compare).
async fn find_token(
    db: &impl ConnectionTrait,
    tag: &str,
    kind: &str,
    token: &str,
) -> Result<Option<oauth_token::Model>, DbErr> {
    let Some(prefix) = keys::prefix_of_tagged(tag, token) else {
        return Ok(None);
    };
    let row = oauth_token::Entity::find()
        .filter(oauth_token::Column::Prefix.eq(prefix))
        .filter(oauth_token::Column::Kind.eq(kind))
        .one(db)
        .await?;
    Ok(row.filter(|r| keys::hashes_match(&r.token_hash, &keys::hash_hex(token))))
}

/// The live grant credential behind an unexpired access token, with the
/// token's expiry.
pub async fn find_access(
    db: &impl ConnectionTrait,
    token: &str,
) -> Result<Option<(api_key::Model, DateTime<Utc>)>, DbErr> {
    let Some(row) = find_token(db, ACCESS_TAG, ACCESS, token).await? else {
        return Ok(None);
    };
    if row.expires_at <= Utc::now() {
        return Ok(None);
    }
    let key = live_grant_key(db, row.grant_id).await?;
    Ok(key.map(|k| (k, row.expires_at)))
}

async fn live_grant_key(
    db: &impl ConnectionTrait,
    grant_id: i64,
) -> Result<Option<api_key::Model>, DbErr> {
    api_key::Entity::find_by_id(grant_id)
        .filter(api_key::Column::Kind.eq(keys::KIND_OAUTH_GRANT))
        .filter(api_key::Column::RevokedAt.is_null())
        .one(db)
        .await
}

/// A new access and refresh token for `grant_id`.
async fn issue_pair(
    db: &impl ConnectionTrait,
    tuning: &OAuthTuning,
    grant_id: i64,
    scope: String,
) -> Result<TokenSet, DbErr> {
    let now = Utc::now();
    let access = keys::generate_tagged(ACCESS_TAG);
    let refresh = keys::generate_tagged(REFRESH_TAG);
    for (kind, new, ttl) in [
        (ACCESS, &access, tuning.access_ttl),
        (REFRESH, &refresh, tuning.refresh_ttl),
    ] {
        oauth_token::ActiveModel {
            grant_id: Set(grant_id),
            kind: Set(kind.to_string()),
            prefix: Set(new.prefix.clone()),
            token_hash: Set(new.hash.clone()),
            created_at: Set(now),
            expires_at: Set(after(now, ttl)),
            used_at: Set(None),
            ..Default::default()
        }
        .insert(db)
        .await?;
    }
    Ok(TokenSet {
        access_token: access.key,
        token_type: "Bearer",
        expires_in: tuning.access_ttl.as_secs(),
        refresh_token: refresh.key,
        scope,
    })
}

/// Revokes a grant (all its tokens) and announces it, so every instance
/// drops it from its auth cache and closes streams opened with it.
pub async fn revoke_grant(ctx: &Ctx, grant_id: i64) -> Result<(), DbErr> {
    api_key::Entity::update_many()
        .col_expr(
            api_key::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(api_key::Column::Id.eq(grant_id))
        .filter(api_key::Column::Kind.eq(keys::KIND_OAUTH_GRANT))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(&ctx.db)
        .await?;
    let Some(grant) = oauth_grant::Entity::find_by_id(grant_id)
        .one(&ctx.db)
        .await?
    else {
        return Ok(());
    };
    if let Some(owner) = user::Entity::find_by_id(grant.user_id).one(&ctx.db).await? {
        ctx.bus
            .publish(crate::auth::events::key_revoked(
                &owner.account_id,
                grant_id,
            ))
            .await;
    }
    Ok(())
}

/// `grant_type=authorization_code`, already parsed.
#[derive(Debug, Clone)]
pub struct CodeExchange {
    pub code: String,
    pub client_id: String,
    pub redirect_uri: String,
    pub verifier: String,
    pub resource: Option<String>,
}

pub async fn exchange_code(
    ctx: &Ctx,
    public_url: &str,
    x: CodeExchange,
) -> Result<TokenSet, OAuthError> {
    let db = &ctx.db;
    if store::find_client(db, &x.client_id).await?.is_none() {
        return Err(OAuthError::invalid_client("unknown client_id"));
    }
    let Some(code) = store::find_code(db, &x.code).await? else {
        return Err(OAuthError::invalid_grant("unknown authorization code"));
    };
    if code.client_id != x.client_id {
        return Err(OAuthError::invalid_grant(
            "the code was issued to another client",
        ));
    }
    if code.used_at.is_some() {
        // RFC 6749 section 4.1.2: a code used twice revokes what it issued.
        if let Some(grant) = code.grant_id {
            revoke_grant(ctx, grant).await?;
        }
        return Err(OAuthError::invalid_grant(
            "the authorization code was already used; the tokens issued with it are revoked",
        ));
    }
    if code.expires_at <= Utc::now() {
        return Err(OAuthError::invalid_grant("the authorization code expired"));
    }
    if code.redirect_uri != x.redirect_uri {
        return Err(OAuthError::invalid_grant(
            "redirect_uri differs from the authorization request's",
        ));
    }
    if !pkce_matches(&code.code_challenge, &x.verifier) {
        return Err(OAuthError::invalid_grant(
            "code_verifier does not match the code_challenge",
        ));
    }
    if let Some(resource) = &x.resource {
        let resource = Resource::parse(resource, public_url).map_err(OAuthError::invalid_target)?;
        if code
            .resource
            .as_deref()
            .is_some_and(|r| r != resource.as_str())
        {
            return Err(OAuthError::invalid_target(
                "resource differs from the authorization request's",
            ));
        }
    }

    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    // Single use even under a race: only one update finds it unused.
    let claimed = entity::oauth_code::Entity::update_many()
        .col_expr(
            entity::oauth_code::Column::UsedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(entity::oauth_code::Column::Id.eq(code.id))
        .filter(entity::oauth_code::Column::UsedAt.is_null())
        .exec(&txn)
        .await?
        .rows_affected
        == 1;
    if !claimed {
        txn.rollback().await?;
        let grant = store::find_code(db, &x.code)
            .await?
            .and_then(|c| c.grant_id);
        if let Some(grant) = grant {
            revoke_grant(ctx, grant).await?;
        }
        return Err(OAuthError::invalid_grant(
            "the authorization code was already used; the tokens issued with it are revoked",
        ));
    }
    let granted = Scopes::from_stored(&code.scope);
    let credential = api_key::ActiveModel {
        user_id: Set(code.user_id),
        prefix: Set(keys::random_base62(keys::PREFIX_LEN)),
        // No secret: this row can never be presented as an API key.
        key_hash: Set(String::new()),
        // The granted platform scopes are its permissions: `platform:read`
        // alone is read-only; none acts with its user's access, like a key
        // made without permissions.
        permissions: Set(granted.platform().to_param()),
        created_at: Set(now),
        revoked_at: Set(None),
        kind: Set(keys::KIND_OAUTH_GRANT.into()),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    oauth_grant::ActiveModel {
        api_key_id: Set(credential.id),
        client_id: Set(code.client_id.clone()),
        user_id: Set(code.user_id),
        scope: Set(granted.to_param()),
        resource: Set(code.resource.clone()),
        created_at: Set(now),
    }
    .insert(&txn)
    .await?;
    entity::oauth_code::Entity::update_many()
        .col_expr(
            entity::oauth_code::Column::GrantId,
            sea_orm::sea_query::Expr::value(credential.id),
        )
        .filter(entity::oauth_code::Column::Id.eq(code.id))
        .exec(&txn)
        .await?;
    store::mark_client_used(&txn, &code.client_id, now).await?;
    let tokens = issue_pair(&txn, &ctx.config.oauth, credential.id, granted.to_param()).await?;
    txn.commit().await?;
    Ok(tokens)
}

/// `grant_type=refresh_token`, already parsed.
#[derive(Debug, Clone)]
pub struct RefreshRequest {
    pub refresh_token: String,
    pub client_id: Option<String>,
    pub scope: Option<String>,
    pub resource: Option<String>,
}

pub async fn refresh(
    ctx: &Ctx,
    public_url: &str,
    r: RefreshRequest,
) -> Result<TokenSet, OAuthError> {
    let db = &ctx.db;
    if let Some(client_id) = &r.client_id
        && store::find_client(db, client_id).await?.is_none()
    {
        return Err(OAuthError::invalid_client("unknown client_id"));
    }
    let Some(row) = find_token(db, REFRESH_TAG, REFRESH, &r.refresh_token).await? else {
        return Err(OAuthError::invalid_grant("unknown refresh token"));
    };
    let Some(grant) = oauth_grant::Entity::find_by_id(row.grant_id)
        .one(db)
        .await?
    else {
        return Err(OAuthError::invalid_grant("unknown refresh token"));
    };
    if r.client_id.as_deref().is_some_and(|c| c != grant.client_id) {
        return Err(OAuthError::invalid_grant(
            "the refresh token was issued to another client",
        ));
    }
    if live_grant_key(db, grant.api_key_id).await?.is_none() {
        return Err(OAuthError::invalid_grant("the grant was revoked"));
    }
    if row.used_at.is_some() {
        // A rotated refresh token came back: it may have been stolen, so
        // the whole family goes (RFC 9700 section 4.14.2).
        revoke_grant(ctx, grant.api_key_id).await?;
        return Err(OAuthError::invalid_grant(
            "the refresh token was already used; the grant is revoked",
        ));
    }
    if row.expires_at <= Utc::now() {
        return Err(OAuthError::invalid_grant("the refresh token expired"));
    }
    let granted = Scopes::from_stored(&grant.scope);
    // A narrower scope narrows what the token says of the user, never the
    // grant's platform access, which is its credential's (RFC 6749
    // section 5.1 lets the answer's `scope` differ from the request's).
    let scope = match r.scope.as_deref() {
        None => granted,
        Some(raw) => {
            let asked = Scopes::parse(Some(raw))
                .map_err(|s| OAuthError::invalid_scope(format!("unknown scope '{s}'")))?;
            if !asked.is_subset_of(&granted) {
                return Err(OAuthError::invalid_scope("scope exceeds what was granted"));
            }
            asked.with_platform_of(&granted)
        }
    };
    if let Some(resource) = &r.resource {
        let resource = Resource::parse(resource, public_url).map_err(OAuthError::invalid_target)?;
        if grant
            .resource
            .as_deref()
            .is_some_and(|g| g != resource.as_str())
        {
            return Err(OAuthError::invalid_target(
                "resource differs from the grant's",
            ));
        }
    }

    let txn = crate::db::begin_write(db).await?;
    let claimed = oauth_token::Entity::update_many()
        .col_expr(
            oauth_token::Column::UsedAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(oauth_token::Column::Id.eq(row.id))
        .filter(oauth_token::Column::UsedAt.is_null())
        .exec(&txn)
        .await?
        .rows_affected
        == 1;
    if !claimed {
        txn.rollback().await?;
        revoke_grant(ctx, grant.api_key_id).await?;
        return Err(OAuthError::invalid_grant(
            "the refresh token was already used; the grant is revoked",
        ));
    }
    let tokens = issue_pair(&txn, &ctx.config.oauth, grant.api_key_id, scope.to_param()).await?;
    txn.commit().await?;
    Ok(tokens)
}

/// RFC 7009: revokes the grant of an access or refresh token. Unknown
/// tokens (and API keys, which are not OAuth tokens) are not an error.
pub async fn revoke(ctx: &Ctx, token: &str, client_id: Option<&str>) -> Result<(), OAuthError> {
    let db = &ctx.db;
    if let Some(client_id) = client_id
        && store::find_client(db, client_id).await?.is_none()
    {
        return Err(OAuthError::invalid_client("unknown client_id"));
    }
    let row = match find_token(db, ACCESS_TAG, ACCESS, token).await? {
        Some(row) => Some(row),
        None => find_token(db, REFRESH_TAG, REFRESH, token).await?,
    };
    let Some(row) = row else {
        return Ok(());
    };
    if let Some(client_id) = client_id {
        let grant = oauth_grant::Entity::find_by_id(row.grant_id)
            .one(db)
            .await?;
        if grant.is_some_and(|g| g.client_id != client_id) {
            return Err(OAuthError::invalid_client(
                "the token was issued to another client",
            ));
        }
    }
    revoke_grant(ctx, row.grant_id).await?;
    Ok(())
}
