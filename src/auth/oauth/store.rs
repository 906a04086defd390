//! Storage of clients, authorizations in progress and authorization codes.
//! Secrets (CSRF tokens, browser cookies, codes) are random, shown once and
//! stored only as SHA-256; they are compared in constant time.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, Set,
};

use entity::{oauth_client, oauth_code, oauth_request};

use super::model::{CodeChallenge, RedirectUri, Resource, Scopes};
use crate::auth::keys;

/// Client ids are `cli_` and 24 base62 characters (not secret).
pub const CLIENT_TAG: &str = "cli";
/// Authorization codes are `oac_<prefix>_<secret>`, like API keys.
pub const CODE_TAG: &str = "oac";

fn after(now: DateTime<Utc>, ttl: std::time::Duration) -> DateTime<Utc> {
    now + chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::MAX)
}

/// A registered client as the flows use it.
#[derive(Debug, Clone)]
pub struct Client {
    pub id: String,
    pub name: Option<String>,
    pub redirect_uris: Vec<String>,
    pub created_at: DateTime<Utc>,
}

impl Client {
    fn from_row(row: oauth_client::Model) -> Result<Client, DbErr> {
        let redirect_uris = serde_json::from_str(&row.redirect_uris)
            .map_err(|e| DbErr::Custom(format!("oauth client {}: redirect_uris: {e}", row.id)))?;
        Ok(Client {
            id: row.id,
            name: row.client_name,
            redirect_uris,
            created_at: row.created_at,
        })
    }

    /// Exact, character for character (the spec and RFC 9700 say so).
    pub fn allows_redirect(&self, uri: &str) -> bool {
        self.redirect_uris.iter().any(|u| u == uri)
    }
}

pub async fn register_client(
    db: &impl ConnectionTrait,
    name: Option<String>,
    redirect_uris: &[RedirectUri],
) -> Result<Client, DbErr> {
    let uris: Vec<&str> = redirect_uris.iter().map(RedirectUri::as_str).collect();
    let row = oauth_client::ActiveModel {
        id: Set(format!("{CLIENT_TAG}_{}", keys::random_base62(24))),
        client_name: Set(name),
        redirect_uris: Set(serde_json::to_string(&uris).map_err(|e| DbErr::Custom(e.to_string()))?),
        created_at: Set(Utc::now()),
        used_at: Set(None),
    }
    .insert(db)
    .await?;
    Client::from_row(row)
}

/// Records that `id` obtained a grant, so pruning keeps it.
pub async fn mark_client_used(
    db: &impl ConnectionTrait,
    id: &str,
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    oauth_client::Entity::update_many()
        .col_expr(
            oauth_client::Column::UsedAt,
            sea_orm::sea_query::Expr::value(now),
        )
        .filter(oauth_client::Column::Id.eq(id))
        .filter(oauth_client::Column::UsedAt.is_null())
        .exec(db)
        .await?;
    Ok(())
}

pub async fn find_client(db: &impl ConnectionTrait, id: &str) -> Result<Option<Client>, DbErr> {
    oauth_client::Entity::find_by_id(id.to_string())
        .one(db)
        .await?
        .map(Client::from_row)
        .transpose()
}

/// A validated authorization request, before the user saw it.
#[derive(Debug, Clone)]
pub struct NewRequest {
    pub client_id: String,
    pub redirect_uri: String,
    pub scopes: Scopes,
    pub state: Option<String>,
    pub challenge: CodeChallenge,
    pub resource: Option<Resource>,
}

/// The secrets of a request in progress: the only time they are visible.
#[derive(Debug, Clone)]
pub struct Opened {
    pub id: String,
    /// Goes into the forms.
    pub csrf: String,
    /// Goes into the browser's cookie.
    pub browser: String,
}

pub async fn open_request(
    db: &impl ConnectionTrait,
    ttl: std::time::Duration,
    new: NewRequest,
) -> Result<Opened, DbErr> {
    let now = Utc::now();
    let opened = Opened {
        id: keys::random_base62(32),
        csrf: keys::random_base62(40),
        browser: keys::random_base62(40),
    };
    oauth_request::ActiveModel {
        id: Set(opened.id.clone()),
        client_id: Set(new.client_id),
        redirect_uri: Set(new.redirect_uri),
        scope: Set(new.scopes.to_param()),
        state: Set(new.state),
        code_challenge: Set(new.challenge.as_str().to_string()),
        resource: Set(new.resource.map(|r| r.as_str().to_string())),
        csrf_hash: Set(keys::hash_hex(&opened.csrf)),
        browser_hash: Set(keys::hash_hex(&opened.browser)),
        user_id: Set(None),
        created_at: Set(now),
        expires_at: Set(after(now, ttl)),
    }
    .insert(db)
    .await?;
    Ok(opened)
}

/// Why a form does not continue a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Unknown, finished or expired.
    Gone,
    /// The CSRF token or the browser cookie is missing or wrong.
    Forged,
}

/// The request a form continues, if its CSRF token and the browser's
/// cookie both match it.
pub async fn find_request(
    db: &impl ConnectionTrait,
    id: &str,
    csrf: Option<&str>,
    browser: Option<&str>,
) -> Result<Result<oauth_request::Model, Refusal>, DbErr> {
    let Some(row) = oauth_request::Entity::find_by_id(id.to_string())
        .one(db)
        .await?
    else {
        return Ok(Err(Refusal::Gone));
    };
    if row.expires_at <= Utc::now() {
        return Ok(Err(Refusal::Gone));
    }
    let csrf_ok = csrf.is_some_and(|c| keys::hashes_match(&row.csrf_hash, &keys::hash_hex(c)));
    let browser_ok =
        browser.is_some_and(|b| keys::hashes_match(&row.browser_hash, &keys::hash_hex(b)));
    if csrf_ok && browser_ok {
        Ok(Ok(row))
    } else {
        Ok(Err(Refusal::Forged))
    }
}

pub async fn sign_in(db: &impl ConnectionTrait, id: &str, user_id: i64) -> Result<(), DbErr> {
    oauth_request::Entity::update_many()
        .col_expr(
            oauth_request::Column::UserId,
            sea_orm::sea_query::Expr::value(user_id),
        )
        .filter(oauth_request::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(())
}

/// Ends a request; `false` if another submission already did (so one
/// request yields at most one answer).
pub async fn finish_request(db: &impl ConnectionTrait, id: &str) -> Result<bool, DbErr> {
    let res = oauth_request::Entity::delete_many()
        .filter(oauth_request::Column::Id.eq(id))
        .exec(db)
        .await?;
    Ok(res.rows_affected == 1)
}

/// Issues an authorization code for a consented request, carrying the
/// scopes the user granted.
pub async fn issue_code(
    db: &impl ConnectionTrait,
    ttl: std::time::Duration,
    req: &oauth_request::Model,
    user_id: i64,
    granted: &Scopes,
) -> Result<String, DbErr> {
    let now = Utc::now();
    let code = keys::generate_tagged(CODE_TAG);
    oauth_code::ActiveModel {
        prefix: Set(code.prefix),
        code_hash: Set(code.hash),
        client_id: Set(req.client_id.clone()),
        user_id: Set(user_id),
        redirect_uri: Set(req.redirect_uri.clone()),
        scope: Set(granted.to_param()),
        code_challenge: Set(req.code_challenge.clone()),
        resource: Set(req.resource.clone()),
        created_at: Set(now),
        expires_at: Set(after(now, ttl)),
        used_at: Set(None),
        grant_id: Set(None),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(code.key)
}

/// The stored code behind `code`, if it is well-formed and known.
pub async fn find_code(
    db: &impl ConnectionTrait,
    code: &str,
) -> Result<Option<oauth_code::Model>, DbErr> {
    let Some(prefix) = keys::prefix_of_tagged(CODE_TAG, code) else {
        return Ok(None);
    };
    let row = oauth_code::Entity::find()
        .filter(oauth_code::Column::Prefix.eq(prefix))
        .one(db)
        .await?;
    Ok(row.filter(|r| keys::hashes_match(&r.code_hash, &keys::hash_hex(code))))
}
