//! MCP sessions shared by every instance on the database (`mcp_sessions`),
//! bound to the user and account that opened them.
//!
//! rmcp keeps a session's live state (its worker, its streams) in the
//! memory of one instance (`LocalSessionManager`). With
//! `StreamableHttpServerConfig::session_store` it also writes the client's
//! `initialize` parameters (`SessionState`) to a [`SessionStore`] after the
//! handshake, and an instance that gets a request for a session it does not
//! hold loads them and replays the handshake into a new worker of its own
//! before serving the request; `DELETE` removes the entry. [`Sessions`] is
//! that store, one per endpoint, in the database.
//!
//! rmcp consults the store only for sessions an instance does not hold,
//! and its trait carries no caller. So the adapter asks [`Sessions::admit`]
//! on every request that names a session, on every instance: the session
//! must exist for this endpoint, be unexpired and belong to the caller's
//! user and account, else the answer is rmcp's own 404 for an unknown
//! session (another caller cannot tell it exists, nor end it). The owner
//! written with a new session is the caller of the `initialize` request,
//! which the adapter sets for the duration of the request ([`as_caller`]):
//! rmcp calls `store` inline while it handles that request.
//!
//! Lifetime: a session lasts [`DEFAULT_TTL`] after its last request
//! (renewed by use, written at most once per 1/24 of it); expired rows are
//! pruned whenever a session is opened. A removed user or account takes its
//! sessions with it (foreign keys).

use std::future::Future;
use std::time::Duration;

use chrono::Utc;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};

use entity::mcp_session;

use crate::caller::CallerInfo;
use crate::error::ApiError;

/// How long an idle session is kept.
pub const DEFAULT_TTL: Duration = crate::config::MCP_SESSION_TTL;

/// Who may use a session: the user, in their account, whose credential
/// opened it (any of that user's credentials, such as a refreshed access
/// token; each request is still authorized as its own credential).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub account_id: String,
    pub user_id: i64,
}

impl Owner {
    pub fn of(caller: &CallerInfo) -> Self {
        Owner {
            account_id: caller.account.id.clone(),
            user_id: caller.user.id,
        }
    }

    fn owns(&self, row: &mcp_session::Model) -> bool {
        self.account_id == row.account_id && self.user_id == row.user_id
    }
}

tokio::task_local! {
    static CALLER: Owner;
}

/// Runs `handling` (rmcp handling one request) as `owner`'s request, so a
/// session it opens is stored as theirs.
pub async fn as_caller<F: Future>(owner: Owner, handling: F) -> F::Output {
    CALLER.scope(owner, handling).await
}

/// May a request use the session it names?
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Never opened at this endpoint, ended, or expired.
    Unknown,
    /// Another user's or another account's.
    Stranger,
}

/// The sessions of one endpoint.
pub struct Sessions {
    db: DatabaseConnection,
    endpoint: &'static str,
    ttl: Duration,
}

impl Sessions {
    pub fn new(db: DatabaseConnection, endpoint: &'static str, ttl: Duration) -> Self {
        Sessions { db, endpoint, ttl }
    }

    async fn find(&self, id: &str) -> Result<Option<mcp_session::Model>, sea_orm::DbErr> {
        mcp_session::Entity::find_by_id(id.to_string())
            .filter(mcp_session::Column::Endpoint.eq(self.endpoint))
            .filter(mcp_session::Column::ExpiresAt.gt(Utc::now()))
            .one(&self.db)
            .await
    }

    fn ttl(&self) -> Result<chrono::Duration, ApiError> {
        chrono::Duration::from_std(self.ttl).map_err(ApiError::internal)
    }

    /// Checks that `owner` may use session `id` now, and renews it.
    pub async fn admit(&self, id: &str, owner: &Owner) -> Result<Admission, ApiError> {
        let Some(row) = self.find(id).await? else {
            return Ok(Admission::Unknown);
        };
        if !owner.owns(&row) {
            return Ok(Admission::Stranger);
        }
        let ttl = self.ttl()?;
        let now = Utc::now();
        if row.expires_at - now < ttl - ttl / 24 {
            mcp_session::Entity::update_many()
                .col_expr(mcp_session::Column::ExpiresAt, Expr::value(now + ttl))
                .filter(mcp_session::Column::Id.eq(id))
                .exec(&self.db)
                .await?;
        }
        Ok(Admission::Admitted)
    }
}

#[async_trait::async_trait]
impl SessionStore for Sessions {
    /// The session's state for restoring it on this instance; only for its
    /// owner (the adapter has admitted the request already; this holds even
    /// if rmcp came here another way).
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Ok(owner) = CALLER.try_with(Owner::clone) else {
            return Ok(None);
        };
        match self.find(session_id).await? {
            Some(row) if owner.owns(&row) => Ok(Some(serde_json::from_str(&row.state)?)),
            _ => Ok(None),
        }
    }

    /// A session rmcp has just opened, as the caller's.
    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let owner = CALLER
            .try_with(Owner::clone)
            .map_err(|_| "an MCP session stored outside a request has no owner")?;
        let now = Utc::now();
        mcp_session::Entity::delete_many()
            .filter(mcp_session::Column::ExpiresAt.lt(now))
            .exec(&self.db)
            .await?;
        mcp_session::ActiveModel {
            id: Set(session_id.to_string()),
            endpoint: Set(self.endpoint.to_string()),
            account_id: Set(owner.account_id),
            user_id: Set(owner.user_id),
            state: Set(serde_json::to_string(state)?),
            created_at: Set(now),
            expires_at: Set(now + self.ttl()?),
        }
        .insert(&self.db)
        .await?;
        Ok(())
    }

    /// `DELETE` (admitted by the adapter): gone on every instance.
    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        mcp_session::Entity::delete_many()
            .filter(mcp_session::Column::Id.eq(session_id))
            .filter(mcp_session::Column::Endpoint.eq(self.endpoint))
            .exec(&self.db)
            .await?;
        Ok(())
    }
}
