//! Stream tokens: short-lived credentials for one event stream, for browser
//! clients whose native `EventSource` cannot send an `Authorization` header.
//!
//! A token is minted with a bearer credential and is bound to that API key
//! (and its user) and to one stream path. It looks like an API key
//! (`sst_<prefix>_<secret>`, ~238 bits of secret); only SHA-256 of it is
//! stored, found by its non-secret prefix and compared in constant time.
//! It is not single-use: an `EventSource` retries the same URL after a
//! dropped connection, so the token opens its stream until it expires.
//! Minted with an OAuth access token, it expires no later than that token,
//! and a stream it opens ends when that token expires.
//! Rows live in the database, so any instance can redeem a token minted by
//! another; expired rows are pruned whenever a token is minted.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};

use entity::stream_token;

use crate::caller::CallerInfo;
use crate::error::ApiError;

use super::keys;

/// Stream tokens are `sst_<prefix>_<secret>`.
pub const TOKEN_TAG: &str = "sst";

/// A freshly minted token: the only time its value is visible.
#[derive(Debug, Clone)]
pub struct Issued {
    pub token: String,
    pub expires_at: DateTime<Utc>,
}

/// Whom a valid token speaks for; re-resolve the key before trusting it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub api_key_id: i64,
    pub user_id: i64,
    /// The minting credential's own expiry: the stream's caller expires then.
    pub credential_expires_at: Option<DateTime<Utc>>,
}

/// Why a token does not open a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Malformed, unknown or not matching its stored hash.
    Invalid,
    Expired,
    /// Valid, but minted for another stream.
    OtherStream,
}

impl Refusal {
    pub fn message(self) -> &'static str {
        match self {
            Refusal::Invalid => "invalid stream token",
            Refusal::Expired => "stream token expired; mint a new one",
            Refusal::OtherStream => "stream token was minted for another stream",
        }
    }
}

/// Mints a token for `stream_path` on behalf of `caller`, valid for `ttl`.
/// The caller must already have been checked to be able to read the stream.
pub async fn issue(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    stream_path: &str,
    ttl: Duration,
) -> Result<Issued, ApiError> {
    let now = Utc::now();
    prune_expired(db, now).await?;
    let ttl = chrono::Duration::from_std(ttl).map_err(ApiError::internal)?;
    // Never outlives the credential that minted it.
    let expires_at = caller.expires_at.map_or(now + ttl, |at| at.min(now + ttl));
    let new = keys::generate_tagged(TOKEN_TAG);
    stream_token::ActiveModel {
        prefix: Set(new.prefix),
        token_hash: Set(new.hash),
        api_key_id: Set(caller.api_key_id),
        user_id: Set(caller.user.id),
        stream_path: Set(stream_path.to_string()),
        created_at: Set(now),
        expires_at: Set(expires_at),
        credential_expires_at: Set(caller.expires_at),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(Issued {
        token: new.key,
        expires_at,
    })
}

/// Checks `token` against `stream_path` at this moment.
pub async fn redeem(
    db: &impl ConnectionTrait,
    token: &str,
    stream_path: &str,
) -> Result<Result<Grant, Refusal>, ApiError> {
    let Some(prefix) = keys::prefix_of_tagged(TOKEN_TAG, token) else {
        return Ok(Err(Refusal::Invalid));
    };
    let Some(row) = stream_token::Entity::find()
        .filter(stream_token::Column::Prefix.eq(prefix))
        .one(db)
        .await?
    else {
        return Ok(Err(Refusal::Invalid));
    };
    if !keys::hashes_match(&row.token_hash, &keys::hash_hex(token)) {
        return Ok(Err(Refusal::Invalid));
    }
    if row.expires_at <= Utc::now() {
        return Ok(Err(Refusal::Expired));
    }
    if row.stream_path != stream_path {
        return Ok(Err(Refusal::OtherStream));
    }
    Ok(Ok(Grant {
        api_key_id: row.api_key_id,
        user_id: row.user_id,
        credential_expires_at: row.credential_expires_at,
    }))
}

/// Deletes tokens that expired before `now`; returns how many.
pub async fn prune_expired(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<u64, ApiError> {
    let res = stream_token::Entity::delete_many()
        .filter(stream_token::Column::ExpiresAt.lt(now))
        .exec(db)
        .await?;
    Ok(res.rows_affected)
}
