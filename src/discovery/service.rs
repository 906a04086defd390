//! Discovery sessions in the database: created with their agents, advanced
//! one settled storefront at a time in a single transaction (persist first,
//! then broadcast), read back as snapshots and as published revisions, and
//! completed by whoever finds one abandoned (restart recovery).

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, DatabaseConnection, DbErr, EntityTrait,
    QueryFilter, QueryOrder, QuerySelect, Set, TransactionTrait,
};

use entity::{discovery_agent, discovery_group, discovery_revision, discovery_session};

use crate::db::WriteGate;
use crate::notifications::Notices;
use crate::outbox::Kicks;
use crate::webhooks::events as webhook_events;

use super::model::{
    AgentRef, IncompleteAgent, ProductGroup, ProductOut, StorefrontResult, group_id,
};

pub const PENDING: &str = "pending";
pub const ANSWERED: &str = "answered";
pub const FAILED: &str = "failed";
pub const TIMED_OUT: &str = "timed_out";
pub const INTERRUPTED: &str = "interrupted";

/// A session about to start.
pub struct NewSession {
    pub id: String,
    pub account_id: String,
    pub advertiser_id: String,
    pub user_id: i64,
    pub request: serde_json::Value,
    pub agents: Vec<AgentRef>,
    pub deadline: DateTime<Utc>,
    pub lease_owner: String,
    pub lease_until: DateTime<Utc>,
}

/// How one storefront settled.
#[derive(Debug, Clone)]
pub enum Outcome {
    Answered {
        products: Vec<ProductOut>,
        message: Option<String>,
        incomplete_scopes: Vec<String>,
        proposals: Vec<serde_json::Value>,
    },
    Failed(String),
    TimedOut,
    Interrupted,
}

/// A revision as published: what its frames and webhooks carry.
#[derive(Debug, Clone)]
pub struct Published {
    pub revision: i64,
    pub results_complete: bool,
    pub groups: Vec<ProductGroup>,
    pub pending: Vec<AgentRef>,
    pub incomplete: Vec<IncompleteAgent>,
    pub created_at: DateTime<Utc>,
    /// Webhook deliveries the revision queued, to announce after commit
    /// (empty when read back).
    pub kicks: Kicks,
    /// The `discovery.completed` notifications of a completing revision,
    /// to publish after commit (empty when read back).
    pub notices: Notices,
}

impl Published {
    fn from_row(r: &discovery_revision::Model) -> Result<Published, DbErr> {
        fn parse<T: serde::de::DeserializeOwned>(s: &str) -> Result<T, DbErr> {
            serde_json::from_str(s).map_err(|e| DbErr::Custom(format!("discovery revision: {e}")))
        }
        Ok(Published {
            revision: r.revision,
            results_complete: r.results_complete,
            groups: parse(&r.product_groups)?,
            pending: parse(&r.pending_agents)?,
            incomplete: parse(&r.incomplete_agents)?,
            created_at: r.created_at,
            kicks: Kicks::default(),
            notices: Notices::default(),
        })
    }
}

fn json(v: &impl serde::Serialize) -> Result<String, DbErr> {
    serde_json::to_string(v).map_err(|e| DbErr::Custom(e.to_string()))
}

/// Creates the session with its agents pending, and revision 0.
pub async fn create(
    db: &DatabaseConnection,
    writes: &WriteGate,
    s: &NewSession,
) -> Result<Published, DbErr> {
    let now = Utc::now();
    let _write = writes.enter().await;
    let txn = crate::db::begin_write(db).await?;
    discovery_session::ActiveModel {
        id: Set(s.id.clone()),
        account_id: Set(s.account_id.clone()),
        advertiser_id: Set(s.advertiser_id.clone()),
        created_by_user_id: Set(s.user_id),
        request: Set(json(&s.request)?),
        revision: Set(0),
        results_complete: Set(false),
        round: Set(0),
        deadline: Set(s.deadline),
        lease_owner: Set(Some(s.lease_owner.clone())),
        lease_until: Set(Some(s.lease_until)),
        completed_at: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&txn)
    .await?;
    // One statement for all of them: creation shares the writer with
    // every seller answer being recorded.
    if !s.agents.is_empty() {
        discovery_agent::Entity::insert_many(s.agents.iter().map(|a| {
            discovery_agent::ActiveModel {
                session_id: Set(s.id.clone()),
                storefront_id: Set(a.agent_id),
                agent_name: Set(a.agent_name.clone()),
                status: Set(PENDING.into()),
                message: Set(None),
                incomplete_scopes: Set(None),
                settled_revision: Set(None),
            }
        }))
        .exec_without_returning(&txn)
        .await?;
    }
    // Only the subscriptions active now receive this session's events.
    webhook_events::capture_audience(&txn, &s.account_id, WEBHOOK_EVENT, &webhook_scope(&s.id))
        .await?;
    let first = finish_revision(&txn, &s.account_id, &s.id, 0, Vec::new(), now).await?;
    txn.commit().await?;
    Ok(first)
}

/// Starts a new round (refine) over the session's agents: all pending
/// again, the session incomplete again, under this instance's lease.
pub async fn restart_round(
    db: &DatabaseConnection,
    writes: &WriteGate,
    id: &str,
    deadline: DateTime<Utc>,
    lease_owner: &str,
    lease_until: DateTime<Utc>,
) -> Result<Option<(i64, Published)>, DbErr> {
    let now = Utc::now();
    let _write = writes.enter().await;
    let txn = crate::db::begin_write(db).await?;
    let Some(session) = discovery_session::Entity::update_many()
        .col_expr(
            discovery_session::Column::Round,
            Expr::col(discovery_session::Column::Round).add(1),
        )
        .col_expr(
            discovery_session::Column::Revision,
            Expr::col(discovery_session::Column::Revision).add(1),
        )
        .col_expr(
            discovery_session::Column::ResultsComplete,
            Expr::value(false),
        )
        .col_expr(
            discovery_session::Column::CompletedAt,
            Expr::value(Option::<DateTime<Utc>>::None),
        )
        .col_expr(discovery_session::Column::Deadline, Expr::value(deadline))
        .col_expr(
            discovery_session::Column::LeaseOwner,
            Expr::value(lease_owner.to_string()),
        )
        .col_expr(
            discovery_session::Column::LeaseUntil,
            Expr::value(lease_until),
        )
        .col_expr(discovery_session::Column::UpdatedAt, Expr::value(now))
        .filter(discovery_session::Column::Id.eq(id))
        // A round in flight is finished first.
        .filter(discovery_session::Column::ResultsComplete.eq(true))
        .exec_with_returning(&txn)
        .await?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    discovery_agent::Entity::update_many()
        .col_expr(discovery_agent::Column::Status, Expr::value(PENDING))
        .col_expr(
            discovery_agent::Column::Message,
            Expr::value(Option::<String>::None),
        )
        .col_expr(
            discovery_agent::Column::IncompleteScopes,
            Expr::value(Option::<String>::None),
        )
        .filter(discovery_agent::Column::SessionId.eq(id))
        .exec(&txn)
        .await?;
    let published = finish_revision(
        &txn,
        &session.account_id,
        id,
        session.revision,
        Vec::new(),
        now,
    )
    .await?;
    txn.commit().await?;
    Ok(Some((session.round, published)))
}

/// Records how storefronts settled as the next revision, in one
/// transaction. `None` when nothing changed (the round moved on, the
/// session completed, or these agents had settled already).
pub async fn settle(
    db: &DatabaseConnection,
    writes: &WriteGate,
    id: &str,
    round: i64,
    settled: &[(AgentRef, Outcome)],
) -> Result<Option<Published>, DbErr> {
    let now = Utc::now();
    let _write = writes.enter_urgent().await;
    let txn = crate::db::begin_write(db).await?;
    // Takes the session's row lock first, so settlements commit one by one
    // with increasing revisions.
    let Some(session) = discovery_session::Entity::update_many()
        .col_expr(
            discovery_session::Column::Revision,
            Expr::col(discovery_session::Column::Revision).add(1),
        )
        .col_expr(discovery_session::Column::UpdatedAt, Expr::value(now))
        .filter(discovery_session::Column::Id.eq(id))
        .filter(discovery_session::Column::Round.eq(round))
        .filter(discovery_session::Column::ResultsComplete.eq(false))
        .exec_with_returning(&txn)
        .await?
        .into_iter()
        .next()
    else {
        return Ok(None);
    };
    let revision = session.revision;
    let mut landed = Vec::new();
    let mut changed = false;
    for (agent, outcome) in settled {
        let (status, message, scopes) = match outcome {
            Outcome::Answered {
                message,
                incomplete_scopes,
                ..
            } => (
                ANSWERED,
                message.clone(),
                (!incomplete_scopes.is_empty())
                    .then(|| json(incomplete_scopes))
                    .transpose()?,
            ),
            Outcome::Failed(m) => (FAILED, Some(m.clone()), None),
            Outcome::TimedOut => (
                TIMED_OUT,
                Some("the storefront did not answer in time".into()),
                None,
            ),
            Outcome::Interrupted => (
                INTERRUPTED,
                Some("the server restarted while the storefront was asked".into()),
                None,
            ),
        };
        let res = discovery_agent::Entity::update_many()
            .col_expr(discovery_agent::Column::Status, Expr::value(status))
            .col_expr(discovery_agent::Column::Message, Expr::value(message))
            .col_expr(
                discovery_agent::Column::IncompleteScopes,
                Expr::value(scopes),
            )
            .col_expr(
                discovery_agent::Column::SettledRevision,
                Expr::value(Some(revision)),
            )
            .filter(discovery_agent::Column::SessionId.eq(id))
            .filter(discovery_agent::Column::StorefrontId.eq(agent.agent_id))
            .filter(discovery_agent::Column::Status.eq(PENDING))
            .exec(&txn)
            .await?;
        if res.rows_affected == 0 {
            continue;
        }
        changed = true;
        if let Outcome::Answered {
            products,
            proposals,
            ..
        } = outcome
        {
            landed.push(put_group(&txn, id, agent, revision, products, proposals).await?);
        }
    }
    if !changed {
        // Rolled back: the revision is not spent.
        return Ok(None);
    }
    let published = finish_revision(&txn, &session.account_id, id, revision, landed, now).await?;
    txn.commit().await?;
    Ok(Some(published))
}

/// Replaces (or adds) the storefront's group in one statement. Its
/// position is the revision that first landed it, kept on replacement, so
/// groups list in landing order.
async fn put_group(
    txn: &impl ConnectionTrait,
    id: &str,
    agent: &AgentRef,
    revision: i64,
    products: &[ProductOut],
    proposals: &[serde_json::Value],
) -> Result<ProductGroup, DbErr> {
    use sea_orm::sea_query::OnConflict;
    let gid = group_id(agent.agent_id);
    discovery_group::Entity::insert(discovery_group::ActiveModel {
        session_id: Set(id.to_string()),
        group_id: Set(gid.clone()),
        group_name: Set(agent.agent_name.clone()),
        position: Set(revision),
        revision: Set(revision),
        product_count: Set(products.len() as i64),
        products: Set(json(&products)?),
        proposals: Set((!proposals.is_empty())
            .then(|| json(&proposals))
            .transpose()?),
    })
    .on_conflict(
        OnConflict::columns([
            discovery_group::Column::SessionId,
            discovery_group::Column::GroupId,
        ])
        .update_columns([
            discovery_group::Column::GroupName,
            discovery_group::Column::Revision,
            discovery_group::Column::ProductCount,
            discovery_group::Column::Products,
            discovery_group::Column::Proposals,
        ])
        .to_owned(),
    )
    .exec_without_returning(txn)
    .await?;
    Ok(ProductGroup {
        group_id: gid,
        group_name: agent.agent_name.clone(),
        revision,
        total_products: products.len() as i64,
        products: products.to_vec(),
        proposals: proposals.to_vec(),
    })
}

/// The webhook event of a revision.
pub const WEBHOOK_EVENT: &str = "discovery.revision";

/// The session's webhook audience.
fn webhook_scope(id: &str) -> String {
    format!("discovery:{id}")
}

/// Writes revision `revision` with what is pending now; completes the
/// session when nothing is. Its webhook deliveries are queued in the same
/// transaction (the transactional outbox): they exist exactly when the
/// revision does.
async fn finish_revision(
    txn: &sea_orm::DatabaseTransaction,
    account_id: &str,
    id: &str,
    revision: i64,
    landed: Vec<ProductGroup>,
    now: DateTime<Utc>,
) -> Result<Published, DbErr> {
    let agents = discovery_agent::Entity::find()
        .filter(discovery_agent::Column::SessionId.eq(id))
        .order_by_asc(discovery_agent::Column::StorefrontId)
        .all(txn)
        .await?;
    let pending: Vec<AgentRef> = agents
        .iter()
        .filter(|a| a.status == PENDING)
        .map(|a| AgentRef {
            agent_id: a.storefront_id,
            agent_name: a.agent_name.clone(),
        })
        .collect();
    let complete = pending.is_empty();
    let incomplete = incomplete_agents(&agents, complete);
    if complete {
        discovery_session::Entity::update_many()
            .col_expr(
                discovery_session::Column::ResultsComplete,
                Expr::value(true),
            )
            .col_expr(
                discovery_session::Column::CompletedAt,
                Expr::value(Some(now)),
            )
            .col_expr(
                discovery_session::Column::LeaseOwner,
                Expr::value(Option::<String>::None),
            )
            .col_expr(
                discovery_session::Column::LeaseUntil,
                Expr::value(Option::<DateTime<Utc>>::None),
            )
            .filter(discovery_session::Column::Id.eq(id))
            .exec(txn)
            .await?;
    }
    discovery_revision::ActiveModel {
        session_id: Set(id.to_string()),
        revision: Set(revision),
        results_complete: Set(complete),
        product_groups: Set(json(&landed)?),
        pending_agents: Set(json(&pending)?),
        incomplete_agents: Set(json(&incomplete)?),
        created_at: Set(now),
    }
    .insert(txn)
    .await?;
    let mut published = Published {
        revision,
        results_complete: complete,
        groups: landed,
        pending,
        incomplete,
        created_at: now,
        kicks: Kicks::default(),
        notices: Notices::default(),
    };
    published.kicks = webhook_events::emit(
        txn,
        account_id,
        &webhook_scope(id),
        WEBHOOK_EVENT,
        webhook_body(id, &published)?,
        now,
    )
    .await?;
    // Each completion is one revision (unique per session), written once.
    if complete {
        let incomplete = published.incomplete.len();
        let body = if incomplete == 0 {
            "Every storefront answered; browse the results.".to_string()
        } else {
            format!("{incomplete} storefront(s) did not answer in time; browse the results.")
        };
        published.notices = crate::notifications::notify(
            txn,
            crate::notifications::New {
                account_id: account_id.to_string(),
                topic: crate::notifications::topics::DISCOVERY_COMPLETED,
                title: format!("Discovery {id} is complete"),
                body,
                data: serde_json::json!({ "discoveryId": id, "revision": revision }),
            },
            now,
        )
        .await?;
    }
    Ok(published)
}

/// The payload of the `discovery.revision` webhook event (the catalog's
/// fields; `event` and `timestamp` are added by the emitter).
fn webhook_body(
    id: &str,
    p: &Published,
) -> Result<serde_json::Map<String, serde_json::Value>, DbErr> {
    let value = serde_json::json!({
        "discoveryId": id,
        "revision": p.revision,
        "resultsComplete": p.results_complete,
        "productGroups": p.groups,
        "pendingAgents": p.pending,
        "incompleteAgents": p.incomplete,
    });
    match value {
        serde_json::Value::Object(map) => Ok(map),
        _ => Err(DbErr::Custom("webhook body is not an object".into())),
    }
}

/// Agents whose results are missing or partial. While the session runs,
/// pending agents are listed too (waiting longer can still bring them).
pub fn incomplete_agents(
    agents: &[discovery_agent::Model],
    complete: bool,
) -> Vec<IncompleteAgent> {
    agents
        .iter()
        .filter_map(|a| {
            let scopes: Vec<String> = a
                .incomplete_scopes
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok())
                .unwrap_or_default();
            let reason = match a.status.as_str() {
                PENDING if !complete => "pending",
                ANSWERED if !scopes.is_empty() => "partial",
                ANSWERED | PENDING => return None,
                other => other,
            };
            let scopes = if scopes.is_empty() {
                vec!["products".to_string()]
            } else {
                scopes
            };
            Some(IncompleteAgent {
                agent_id: a.storefront_id,
                agent_name: a.agent_name.clone(),
                reason: reason.to_string(),
                message: a.message.clone(),
                retry_with_longer_wait_available: a.status == PENDING,
                incomplete_scopes: scopes,
            })
        })
        .collect()
}

/// The session if it belongs to the account.
pub async fn find(
    db: &impl ConnectionTrait,
    account_id: &str,
    id: &str,
) -> Result<Option<discovery_session::Model>, DbErr> {
    discovery_session::Entity::find_by_id(id.to_string())
        .filter(discovery_session::Column::AccountId.eq(account_id))
        .one(db)
        .await
}

pub async fn agents(
    db: &impl ConnectionTrait,
    id: &str,
) -> Result<Vec<discovery_agent::Model>, DbErr> {
    discovery_agent::Entity::find()
        .filter(discovery_agent::Column::SessionId.eq(id))
        .order_by_asc(discovery_agent::Column::StorefrontId)
        .all(db)
        .await
}

pub fn storefront_results(agents: &[discovery_agent::Model]) -> Vec<StorefrontResult> {
    agents
        .iter()
        .map(|a| StorefrontResult {
            agent_id: a.storefront_id,
            agent_name: a.agent_name.clone(),
            status: a.status.clone(),
            message: a.message.clone(),
        })
        .collect()
}

pub fn pending(agents: &[discovery_agent::Model]) -> Vec<AgentRef> {
    agents
        .iter()
        .filter(|a| a.status == PENDING)
        .map(|a| AgentRef {
            agent_id: a.storefront_id,
            agent_name: a.agent_name.clone(),
        })
        .collect()
}

/// A session's agents, row and groups as of one moment: a read-only
/// transaction (repeatable read on PostgreSQL; SQLite's WAL reader already
/// sees one snapshot for the whole transaction).
pub async fn read_consistent(
    db: &DatabaseConnection,
    id: &str,
) -> Result<
    (
        Vec<discovery_agent::Model>,
        Option<discovery_session::Model>,
        Vec<discovery_group::Model>,
    ),
    DbErr,
> {
    let txn = match db.get_database_backend() {
        sea_orm::DbBackend::Postgres => {
            db.begin_with_config(
                Some(sea_orm::IsolationLevel::RepeatableRead),
                Some(sea_orm::AccessMode::ReadOnly),
            )
            .await?
        }
        _ => db.begin().await?,
    };
    let agents = agents(&txn, id).await?;
    let row = discovery_session::Entity::find_by_id(id.to_string())
        .one(&txn)
        .await?;
    let all = groups(&txn, id, None).await?;
    txn.commit().await?;
    Ok((agents, row, all))
}

/// The session's groups in landing order, optionally only those landed
/// after `since`.
pub async fn groups(
    db: &impl ConnectionTrait,
    id: &str,
    since: Option<i64>,
) -> Result<Vec<discovery_group::Model>, DbErr> {
    let mut q = discovery_group::Entity::find().filter(discovery_group::Column::SessionId.eq(id));
    if let Some(since) = since {
        q = q.filter(discovery_group::Column::Revision.gt(since));
    }
    q.order_by_asc(discovery_group::Column::Position)
        .all(db)
        .await
}

/// Published revisions after `after`, oldest first.
pub async fn revisions_after(
    db: &impl ConnectionTrait,
    id: &str,
    after: i64,
    upto: Option<i64>,
    limit: u64,
) -> Result<Vec<Published>, DbErr> {
    let mut q = discovery_revision::Entity::find()
        .filter(discovery_revision::Column::SessionId.eq(id))
        .filter(discovery_revision::Column::Revision.gt(after));
    if let Some(upto) = upto {
        q = q.filter(discovery_revision::Column::Revision.lte(upto));
    }
    q.order_by_asc(discovery_revision::Column::Revision)
        .limit(limit)
        .all(db)
        .await?
        .iter()
        .map(Published::from_row)
        .collect()
}

/// Renews this instance's lease on sessions it drives.
pub async fn renew_lease(
    db: &impl ConnectionTrait,
    ids: &[String],
    owner: &str,
    until: DateTime<Utc>,
) -> Result<(), DbErr> {
    if ids.is_empty() {
        return Ok(());
    }
    discovery_session::Entity::update_many()
        .col_expr(
            discovery_session::Column::LeaseUntil,
            Expr::value(Some(until)),
        )
        .filter(discovery_session::Column::Id.is_in(ids.iter().cloned()))
        .filter(discovery_session::Column::LeaseOwner.eq(owner))
        .filter(discovery_session::Column::ResultsComplete.eq(false))
        .exec(db)
        .await?;
    Ok(())
}

/// Takes over one incomplete session whose driver's lease ran out (the
/// instance stopped or crashed). Returns it once claimed: the caller then
/// settles its pending agents as interrupted.
pub async fn claim_abandoned(
    db: &impl ConnectionTrait,
    owner: &str,
    until: DateTime<Utc>,
) -> Result<Option<discovery_session::Model>, DbErr> {
    let now = Utc::now();
    let candidates = discovery_session::Entity::find()
        .filter(discovery_session::Column::ResultsComplete.eq(false))
        .filter(discovery_session::Column::LeaseUntil.lt(now))
        .limit(10)
        .all(db)
        .await?;
    for c in candidates {
        // Only one instance wins the update.
        let res = discovery_session::Entity::update_many()
            .col_expr(
                discovery_session::Column::LeaseOwner,
                Expr::value(owner.to_string()),
            )
            .col_expr(
                discovery_session::Column::LeaseUntil,
                Expr::value(Some(until)),
            )
            .filter(discovery_session::Column::Id.eq(c.id.clone()))
            .filter(discovery_session::Column::ResultsComplete.eq(false))
            .filter(discovery_session::Column::LeaseUntil.lt(now))
            .exec(db)
            .await?;
        if res.rows_affected == 1 {
            return Ok(Some(c));
        }
    }
    Ok(None)
}
