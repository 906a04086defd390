//! Bearer-token authentication with a short-lived cache, so a hot key costs
//! no database round trip per request.

use std::sync::Arc;
use std::time::Duration;

use moka::future::Cache;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

use entity::{account, api_key, user};

use crate::auth::{AccountInfo, CallerInfo, UserInfo};
use crate::error::ApiError;
use crate::types::{Permission, Role};

use super::keys;

/// How long a resolved (or rejected) token is trusted without asking the
/// database. Revocations made in this process invalidate at once; made by
/// another process (the admin CLI), they take effect within this TTL.
pub const AUTH_CACHE_TTL: Duration = Duration::from_secs(5);

#[derive(Clone)]
pub struct AuthService {
    db: DatabaseConnection,
    /// Keyed by SHA-256 of the token (or `key-id:{id}` for a lookup by key
    /// id); `None` caches a rejection.
    cache: Cache<String, Option<Arc<CallerInfo>>>,
}

impl AuthService {
    pub fn new(db: DatabaseConnection) -> Self {
        AuthService {
            db,
            cache: Cache::builder()
                .max_capacity(100_000)
                .time_to_live(AUTH_CACHE_TTL)
                .build(),
        }
    }

    pub async fn authenticate(&self, token: &str) -> Result<Option<Arc<CallerInfo>>, ApiError> {
        let Some(prefix) = keys::prefix_of(token) else {
            return Ok(None);
        };
        let hash = keys::hash_hex(token);
        let prefix = prefix.to_string();
        let db = self.db.clone();
        let hash_for_lookup = hash.clone();
        self.cache
            .try_get_with(
                hash,
                async move { lookup(&db, &prefix, &hash_for_lookup).await },
            )
            .await
            .map_err(|e: Arc<ApiError>| ApiError::internal(e))
    }

    /// The caller behind an API key id (for credentials derived from a key,
    /// such as stream tokens): `None` once the key is revoked or its user or
    /// account is gone. Cached like a bearer key, and invalidated with it.
    pub async fn authenticate_api_key(
        &self,
        api_key_id: i64,
    ) -> Result<Option<Arc<CallerInfo>>, ApiError> {
        let db = self.db.clone();
        self.cache
            .try_get_with(format!("key-id:{api_key_id}"), async move {
                let key = api_key::Entity::find_by_id(api_key_id)
                    .filter(api_key::Column::RevokedAt.is_null())
                    .one(&db)
                    .await?;
                match key {
                    Some(key) => resolve(&db, key).await,
                    None => Ok(None),
                }
            })
            .await
            .map_err(|e: Arc<ApiError>| ApiError::internal(e))
    }

    /// Drop every cached entry (after a revocation in this process).
    pub fn invalidate_all(&self) {
        self.cache.invalidate_all();
    }
}

async fn lookup(
    db: &DatabaseConnection,
    prefix: &str,
    hash: &str,
) -> Result<Option<Arc<CallerInfo>>, ApiError> {
    let Some(key) = api_key::Entity::find()
        .filter(api_key::Column::Prefix.eq(prefix))
        .filter(api_key::Column::RevokedAt.is_null())
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    if !keys::hashes_match(&key.key_hash, hash) {
        return Ok(None);
    }
    resolve(db, key).await
}

/// The caller behind a live key row: its user, account and permissions.
async fn resolve(
    db: &DatabaseConnection,
    key: api_key::Model,
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
    })))
}
