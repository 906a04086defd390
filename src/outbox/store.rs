//! The outbox's SQL: jobs written in the caller's transaction, read a lane
//! at a time in order, finished once, and the leases that say which
//! instance works a lane. One code path for SQLite and PostgreSQL.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::{Expr, ExprTrait, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QueryOrder, QuerySelect, Set,
};

use entity::outbox_job as job;
use entity::outbox_lease as lease;

pub const PENDING: &str = "pending";
pub const DONE: &str = "done";
pub const FAILED: &str = "failed";
pub const HELD: &str = "held";
pub const CANCELLED: &str = "cancelled";

/// A job to write.
#[derive(Debug, Clone)]
pub struct NewJob {
    pub queue: &'static str,
    pub lane: String,
    /// Queue-specific JSON.
    pub payload: String,
}

/// Writes jobs on the caller's connection (inside its transaction), so they
/// exist exactly when the change that causes them does.
pub async fn enqueue(conn: &impl ConnectionTrait, jobs: &[NewJob]) -> Result<(), DbErr> {
    if jobs.is_empty() {
        return Ok(());
    }
    let now = Utc::now();
    job::Entity::insert_many(jobs.iter().map(|j| job::ActiveModel {
        queue: Set(j.queue.to_string()),
        lane: Set(j.lane.clone()),
        payload: Set(j.payload.clone()),
        state: Set(PENDING.into()),
        attempts: Set(0),
        available_at: Set(now),
        result: Set(None),
        created_at: Set(now),
        finished_at: Set(None),
        ..Default::default()
    }))
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

/// The lane's next due jobs, oldest first.
pub async fn next_jobs(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<job::Model>, DbErr> {
    job::Entity::find()
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::Lane.eq(lane))
        .filter(job::Column::State.eq(PENDING))
        .filter(job::Column::AvailableAt.lte(now))
        .order_by_asc(job::Column::Id)
        .limit(limit)
        .all(conn)
        .await
}

/// How an attempt ends a job, or puts it back for later.
#[derive(Debug, Clone)]
pub struct Finish<'a> {
    pub state: &'a str,
    pub result: Option<String>,
    /// For a job put back (`state` pending): when it is due again.
    pub available_at: Option<DateTime<Utc>>,
}

/// Records an attempt on a still-pending job; false when the job is no
/// longer pending (cancelled or deleted meanwhile), so nothing is recorded.
pub async fn finish(conn: &impl ConnectionTrait, id: i64, f: &Finish<'_>) -> Result<bool, DbErr> {
    let now = Utc::now();
    let mut q = job::Entity::update_many()
        .col_expr(job::Column::State, Expr::value(f.state))
        .col_expr(job::Column::Result, Expr::value(f.result.clone()))
        .col_expr(
            job::Column::Attempts,
            Expr::col(job::Column::Attempts).add(1),
        );
    if f.state == PENDING {
        q = q.col_expr(
            job::Column::AvailableAt,
            Expr::value(f.available_at.unwrap_or(now)),
        );
    } else {
        q = q.col_expr(job::Column::FinishedAt, Expr::value(Some(now)));
    }
    let res = q
        .filter(job::Column::Id.eq(id))
        .filter(job::Column::State.eq(PENDING))
        .exec(conn)
        .await?;
    Ok(res.rows_affected == 1)
}

/// Cancels every pending job of a lane (its reason to exist is gone).
pub async fn cancel_lane(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
    why: &str,
) -> Result<u64, DbErr> {
    let result = serde_json::json!({ "cancelled": why }).to_string();
    let res = job::Entity::update_many()
        .col_expr(job::Column::State, Expr::value(CANCELLED))
        .col_expr(job::Column::Result, Expr::value(Some(result)))
        .col_expr(job::Column::FinishedAt, Expr::value(Some(Utc::now())))
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::Lane.eq(lane))
        .filter(job::Column::State.eq(PENDING))
        .exec(conn)
        .await?;
    Ok(res.rows_affected)
}

/// Deletes a lane: its jobs, finished or not, and its lease.
pub async fn delete_lane(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
) -> Result<(), DbErr> {
    job::Entity::delete_many()
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::Lane.eq(lane))
        .exec(conn)
        .await?;
    lease::Entity::delete_many()
        .filter(lease::Column::Queue.eq(queue))
        .filter(lease::Column::Lane.eq(lane))
        .exec(conn)
        .await?;
    Ok(())
}

/// Lanes with due pending jobs.
pub async fn due_lanes(
    conn: &impl ConnectionTrait,
    queue: &str,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<String>, DbErr> {
    job::Entity::find()
        .select_only()
        .column(job::Column::Lane)
        .distinct()
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::State.eq(PENDING))
        .filter(job::Column::AvailableAt.lte(now))
        .limit(limit)
        .into_tuple::<String>()
        .all(conn)
        .await
}

/// Takes the lane for `owner` until `until` when nobody holds it, its
/// holder's lease ran out, or `owner` holds it already. One statement, so
/// two instances racing for a lane cannot both win.
pub async fn claim(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
    owner: &str,
    now: DateTime<Utc>,
    until: DateTime<Utc>,
) -> Result<bool, DbErr> {
    let res = lease::Entity::insert(lease::ActiveModel {
        queue: Set(queue.to_string()),
        lane: Set(lane.to_string()),
        owner: Set(owner.to_string()),
        until: Set(until),
    })
    .on_conflict(
        OnConflict::columns([lease::Column::Queue, lease::Column::Lane])
            .update_columns([lease::Column::Owner, lease::Column::Until])
            .action_and_where(
                Expr::col((lease::Entity, lease::Column::Until))
                    .lt(now)
                    .or(Expr::col((lease::Entity, lease::Column::Owner)).eq(owner)),
            )
            .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;
    Ok(res == 1)
}

/// Extends this owner's leases on `lanes` and returns the lanes it still
/// holds (a lane missing from the answer was lost and must stop).
pub async fn renew(
    conn: &impl ConnectionTrait,
    queue: &str,
    owner: &str,
    lanes: &[String],
    until: DateTime<Utc>,
) -> Result<Vec<String>, DbErr> {
    let mut held = Vec::with_capacity(lanes.len());
    for chunk in lanes.chunks(500) {
        lease::Entity::update_many()
            .col_expr(lease::Column::Until, Expr::value(until))
            .filter(lease::Column::Queue.eq(queue))
            .filter(lease::Column::Owner.eq(owner))
            .filter(lease::Column::Lane.is_in(chunk.iter().map(String::as_str)))
            .exec(conn)
            .await?;
        held.extend(
            lease::Entity::find()
                .select_only()
                .column(lease::Column::Lane)
                .filter(lease::Column::Queue.eq(queue))
                .filter(lease::Column::Owner.eq(owner))
                .filter(lease::Column::Lane.is_in(chunk.iter().map(String::as_str)))
                .into_tuple::<String>()
                .all(conn)
                .await?,
        );
    }
    Ok(held)
}

/// Lanes of `queue` whose live lease belongs to another owner.
pub async fn held_by_others(
    conn: &impl ConnectionTrait,
    queue: &str,
    owner: &str,
    now: DateTime<Utc>,
) -> Result<Vec<String>, DbErr> {
    lease::Entity::find()
        .select_only()
        .column(lease::Column::Lane)
        .filter(lease::Column::Queue.eq(queue))
        .filter(lease::Column::Owner.ne(owner))
        .filter(lease::Column::Until.gte(now))
        .into_tuple::<String>()
        .all(conn)
        .await
}

/// Gives a lane up, so another instance can take it at once.
pub async fn release(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
    owner: &str,
) -> Result<(), DbErr> {
    lease::Entity::delete_many()
        .filter(lease::Column::Queue.eq(queue))
        .filter(lease::Column::Lane.eq(lane))
        .filter(lease::Column::Owner.eq(owner))
        .exec(conn)
        .await?;
    Ok(())
}

/// Deletes jobs finished before `before`; returns how many.
pub async fn prune(
    conn: &impl ConnectionTrait,
    queue: &str,
    before: DateTime<Utc>,
) -> Result<u64, DbErr> {
    let res = job::Entity::delete_many()
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::State.ne(PENDING))
        .filter(job::Column::State.ne(HELD))
        .filter(job::Column::FinishedAt.lt(before))
        .exec(conn)
        .await?;
    Ok(res.rows_affected)
}

/// A lane's jobs, newest first (its log).
pub async fn history(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
    skip: u64,
    take: u64,
) -> Result<(Vec<job::Model>, u64), DbErr> {
    use sea_orm::PaginatorTrait;
    let mine = job::Entity::find()
        .filter(job::Column::Queue.eq(queue))
        .filter(job::Column::Lane.eq(lane));
    let total = mine.clone().count(conn).await?;
    let rows = mine
        .order_by_desc(job::Column::Id)
        .offset(skip)
        .limit(take)
        .all(conn)
        .await?;
    Ok((rows, total))
}
