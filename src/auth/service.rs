//! Bearer-token authentication with a short-lived cache, so a hot key costs
//! no database round trip per request. API keys and OAuth access tokens go
//! through the same lookup and the same cache.

use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};
use moka::future::Cache;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

use entity::{account, api_key, user};

use super::events;
use crate::bus::{BusEvent, BusSink, EventBus};
use crate::caller::{AccountInfo, CallerInfo, UserInfo};
use crate::error::ApiError;
use crate::types::{Permission, Role};

use super::keys;

/// How long a resolved (or rejected) token is trusted without asking the
/// database. Revocations made in this process invalidate at once; made by
/// another process (the admin CLI), they take effect within this TTL.
pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(5);

/// A resolved credential (its expiry, if any, is checked on every hit), or
/// `None` for a rejection.
type CallerCache = Cache<String, Option<Arc<CallerInfo>>>;

#[derive(Clone)]
pub struct AuthService {
    db: DatabaseConnection,
    /// Keyed by SHA-256 of the token; `None` caches a rejection.
    cache: CallerCache,
    /// Drops cached callers when the bus says their credential changed;
    /// held here, since the bus holds sinks weakly.
    _sink: Arc<dyn BusSink>,
}

/// Invalidates exactly the entries an auth event concerns: one key, or one
/// user's keys. Nobody can flush every tenant's cache.
struct CacheSink(CallerCache);

impl BusSink for CacheSink {
    fn deliver(&self, event: &BusEvent) {
        let Ok(id) = event.key.parse::<i64>() else {
            return;
        };
        let by_key = event.topic == events::KEY_REVOKED;
        // Rejections (`None`) are keyed by token, not by key: they stay.
        let _ = self.0.invalidate_entries_if(move |_, cached| {
            cached.as_ref().is_some_and(|c| {
                if by_key {
                    c.api_key_id == id
                } else {
                    c.user.id == id
                }
            })
        });
    }

    fn transport_lost(&self) {
        // Revocations from other instances may be lost: entries live at
        // most AUTH_CACHE_TTL; drop them now rather than then.
        self.0.invalidate_all();
    }
}

impl AuthService {
    pub fn new(db: DatabaseConnection, bus: &EventBus) -> Self {
        let cache: CallerCache = Cache::builder()
            .max_capacity(100_000)
            .time_to_live(AUTH_CACHE_TTL)
            .support_invalidation_closures()
            .build();
        let sink: Arc<dyn BusSink> = Arc::new(CacheSink(cache.clone()));
        bus.subscribe(events::PREFIX, Arc::downgrade(&sink));
        AuthService {
            db,
            cache,
            _sink: sink,
        }
    }

    /// The caller behind a bearer credential: an API key or an OAuth access
    /// token; `None` for anything unknown, revoked or expired.
    pub async fn authenticate(&self, token: &str) -> Result<Option<Arc<CallerInfo>>, ApiError> {
        let hash = keys::hash_hex(token);
        let db = self.db.clone();
        let cached = if let Some(prefix) = keys::prefix_of(token) {
            let prefix = prefix.to_string();
            let hash_for_lookup = hash.clone();
            self.cache
                .try_get_with(
                    hash,
                    async move { lookup(&db, &prefix, &hash_for_lookup).await },
                )
                .await
        } else if super::oauth::tokens::is_access_token(token) {
            let token = token.to_string();
            self.cache
                .try_get_with(hash, async move {
                    let Some((key, expires_at)) =
                        super::oauth::tokens::find_access(&db, &token).await?
                    else {
                        return Ok(None);
                    };
                    resolve(&db, key, Some(expires_at)).await
                })
                .await
        } else {
            return Ok(None);
        };
        let cached = cached.map_err(|e: Arc<ApiError>| ApiError::internal(e))?;
        // A cached access token is refused from the moment it expires.
        Ok(cached.filter(|c| c.expires_at.is_none_or(|at| at > Utc::now())))
    }
    /// The caller behind an API key id (for credentials derived from a key,
    /// such as stream tokens): `None` once the key is revoked or its user or
    /// account is gone. Cached like a bearer key, and invalidated with it.
    pub async fn authenticate_api_key(
        &self,
        api_key_id: i64,
    ) -> Result<Option<Arc<CallerInfo>>, ApiError> {
        let db = self.db.clone();
        let cached = self
            .cache
            .try_get_with(format!("key-id:{api_key_id}"), async move {
                let key = api_key::Entity::find_by_id(api_key_id)
                    .filter(api_key::Column::RevokedAt.is_null())
                    .one(&db)
                    .await?;
                match key {
                    Some(key) => resolve(&db, key, None).await,
                    None => Ok(None),
                }
            })
            .await
            .map_err(|e: Arc<ApiError>| ApiError::internal(e))?;
        Ok(cached)
    }
}

/// Of `key_ids`, those still valid: not revoked, and their user still in
/// `account_id`. Streams re-check their credential with it.
pub async fn live_keys(
    db: &impl sea_orm::ConnectionTrait,
    account_id: &str,
    key_ids: &[i64],
) -> Result<std::collections::HashSet<i64>, sea_orm::DbErr> {
    if key_ids.is_empty() {
        return Ok(Default::default());
    }
    let keys = api_key::Entity::find()
        .filter(api_key::Column::Id.is_in(key_ids.iter().copied()))
        .filter(api_key::Column::RevokedAt.is_null())
        .all(db)
        .await?;
    let user_ids: Vec<i64> = keys.iter().map(|k| k.user_id).collect();
    let users: std::collections::HashSet<i64> = user::Entity::find()
        .filter(user::Column::Id.is_in(user_ids))
        .filter(user::Column::AccountId.eq(account_id))
        .all(db)
        .await?
        .into_iter()
        .map(|u| u.id)
        .collect();
    Ok(keys
        .into_iter()
        .filter(|k| users.contains(&k.user_id))
        .map(|k| k.id)
        .collect())
}

async fn lookup(
    db: &DatabaseConnection,
    prefix: &str,
    hash: &str,
) -> Result<Option<Arc<CallerInfo>>, ApiError> {
    let Some(key) = api_key::Entity::find()
        .filter(api_key::Column::Prefix.eq(prefix))
        .filter(api_key::Column::Kind.eq(keys::KIND_API_KEY))
        .filter(api_key::Column::RevokedAt.is_null())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    if !keys::hashes_match(&key.key_hash, hash) {
        return Ok(None);
    }
    resolve(db, key, None).await
}

/// The caller behind a live key row (an API key or an OAuth grant's
/// credential): its user, account and permissions; `expires_at` for a
/// credential that expires by itself.
async fn resolve(
    db: &DatabaseConnection,
    key: api_key::Model,
    expires_at: Option<DateTime<Utc>>,
) -> Result<Option<Arc<CallerInfo>>, ApiError> {
    let Some(u) = user::Entity::find_by_id(key.user_id).one(db).await? else {
        return Ok(None);
    };
    let Some(a) = account::Entity::find_by_id(u.account_id.clone())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let role: Role = u
        .role
        .parse()
        .map_err(|e: String| ApiError::internal(format!("user {}: {e}", u.id)))?;
    let permissions = key
        .permissions
        .split_whitespace()
        .filter_map(|p| p.parse::<Permission>().ok())
        .collect();
    Ok(Some(Arc::new(CallerInfo {
        account: AccountInfo {
            id: a.id,
            name: a.name,
            assistant_enabled: a.assistant_enabled,
            shared_conversations_enabled: a.shared_conversations_enabled,
            phone_lines_enabled: a.phone_lines_enabled,
        },
        user: UserInfo {
            id: u.id,
            name: u.name,
            email: u.email,
            role,
        },
        api_key_id: key.id,
        permissions,
        expires_at,
    })))
}
