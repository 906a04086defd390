//! Pruning of what the authorization server stores. Registration and
//! `GET /authorize` write rows without authentication, so a scheduled job
//! (every `OAuthTuning::prune_every`, 10 minutes by default) deletes:
//! authorization requests past their expiry; codes and tokens a day after
//! theirs (so a late second use is still recognised as a replay and
//! revokes its grant); grants with no token left (their credential row in
//! `api_keys` with them); and clients registered over a day ago that never
//! obtained a grant and have nothing in progress.
//!
//! Every statement is a conditional delete, so several instances on one
//! PostgreSQL database may run it at once.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, Query, SelectStatement};
use sea_orm::{ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait, QueryFilter};
use tokio_util::sync::CancellationToken;

use entity::{api_key, oauth_client, oauth_code, oauth_grant, oauth_request, oauth_token};

use crate::auth::keys;

/// Codes and tokens stay this long after they expire: a reuse within it is
/// still recognised (and revokes the grant), not taken for an unknown one.
pub const KEPT_AFTER_EXPIRY: chrono::Duration = chrono::Duration::days(1);
/// A client that obtained no grant within this long after registering.
pub const UNUSED_CLIENT_AGE: chrono::Duration = chrono::Duration::hours(24);

/// How many rows one run deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pruned {
    pub requests: u64,
    pub codes: u64,
    pub tokens: u64,
    pub grants: u64,
    pub clients: u64,
}

impl Pruned {
    pub fn total(&self) -> u64 {
        self.requests + self.codes + self.tokens + self.grants + self.clients
    }
}

/// Grants that have no token left: none can be issued for them again.
fn dead_grants() -> SelectStatement {
    Query::select()
        .column(oauth_grant::Column::ApiKeyId)
        .from(oauth_grant::Entity)
        .and_where(
            Expr::col(oauth_grant::Column::ApiKeyId).not_in_subquery(
                Query::select()
                    .column(oauth_token::Column::GrantId)
                    .from(oauth_token::Entity)
                    .to_owned(),
            ),
        )
        .to_owned()
}

fn client_ids_of<E: EntityTrait>(
    entity: E,
    column: impl sea_orm::sea_query::IntoColumnRef,
) -> SelectStatement {
    Query::select().column(column).from(entity).to_owned()
}

/// One pass, as of `now`. Callable directly (tests, operators' tools).
pub async fn prune(db: &impl ConnectionTrait, now: DateTime<Utc>) -> Result<Pruned, DbErr> {
    let kept = now - KEPT_AFTER_EXPIRY;
    let requests = oauth_request::Entity::delete_many()
        .filter(oauth_request::Column::ExpiresAt.lt(now))
        .exec(db)
        .await?
        .rows_affected;
    let codes = oauth_code::Entity::delete_many()
        .filter(oauth_code::Column::ExpiresAt.lt(kept))
        .exec(db)
        .await?
        .rows_affected;
    let tokens = oauth_token::Entity::delete_many()
        .filter(oauth_token::Column::ExpiresAt.lt(kept))
        .exec(db)
        .await?
        .rows_affected;
    // The credential row takes its grant with it (foreign key cascade); the
    // second statement only matters where that did not happen.
    let grants = api_key::Entity::delete_many()
        .filter(api_key::Column::Kind.eq(keys::KIND_OAUTH_GRANT))
        .filter(api_key::Column::Id.in_subquery(dead_grants()))
        .exec(db)
        .await?
        .rows_affected;
    oauth_grant::Entity::delete_many()
        .filter(oauth_grant::Column::ApiKeyId.in_subquery(dead_grants()))
        .exec(db)
        .await?;
    let clients = oauth_client::Entity::delete_many()
        .filter(oauth_client::Column::UsedAt.is_null())
        .filter(oauth_client::Column::CreatedAt.lt(now - UNUSED_CLIENT_AGE))
        .filter(oauth_client::Column::Id.not_in_subquery(client_ids_of(
            oauth_request::Entity,
            oauth_request::Column::ClientId,
        )))
        .filter(oauth_client::Column::Id.not_in_subquery(client_ids_of(
            oauth_code::Entity,
            oauth_code::Column::ClientId,
        )))
        .filter(oauth_client::Column::Id.not_in_subquery(client_ids_of(
            oauth_grant::Entity,
            oauth_grant::Column::ClientId,
        )))
        .exec(db)
        .await?
        .rows_affected;
    Ok(Pruned {
        requests,
        codes,
        tokens,
        grants,
        clients,
    })
}

/// Runs `prune` every `every` until `stop`; the first run is one interval
/// after start, so instances starting together do not all prune at once.
pub fn spawn(db: DatabaseConnection, every: Duration, stop: CancellationToken) {
    let every = every.max(Duration::from_millis(10));
    tokio::spawn(async move {
        let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                _ = tick.tick() => {}
            }
            match prune(&db, Utc::now()).await {
                Ok(p) if p.total() > 0 => tracing::info!(
                    requests = p.requests,
                    codes = p.codes,
                    tokens = p.tokens,
                    grants = p.grants,
                    clients = p.clients,
                    "oauth: pruned"
                ),
                Ok(_) => {}
                Err(err) => tracing::warn!(error = %err, "oauth: pruning failed"),
            }
        }
    });
}
