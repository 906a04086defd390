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
/// States an attempt's outcome may still be recorded on.
const OPEN: [&str; 2] = [PENDING, HELD];

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
///
/// Read through the lane's index (queue, lane, state, id), with the due
/// time checked here: given `available_at <= now` in SQL, SQLite's planner
/// takes the due index (queue, state, available_at) instead, which reads
/// every lane's pending jobs and sorts them, for every lane, each time.
pub async fn next_jobs(
    conn: &impl ConnectionTrait,
    queue: &str,
    lane: &str,
    now: DateTime<Utc>,
    limit: u64,
) -> Result<Vec<job::Model>, DbErr> {
    let mut due = Vec::new();
    let mut after = None;
    loop {
        let mut q = job::Entity::find()
            .filter(job::Column::Queue.eq(queue))
            .filter(job::Column::Lane.eq(lane))
            .filter(job::Column::State.eq(PENDING));
        if let Some(id) = after {
            q = q.filter(job::Column::Id.gt(id));
        }
        let page = q
            .order_by_asc(job::Column::Id)
            .limit(limit)
            .all(conn)
            .await?;
        let full = page.len() as u64 == limit;
        after = page.last().map(|j| j.id);
        due.extend(page.into_iter().filter(|j| j.available_at <= now));
        // Jobs put back for later (a retry) are passed over, as before.
        if due.len() as u64 >= limit || !full {
            due.truncate(limit as usize);
            return Ok(due);
        }
    }
}

/// How an attempt ends a job, or puts it back for later.
#[derive(Debug, Clone)]
pub struct Finish<'a> {
    pub state: &'a str,
    pub result: Option<String>,
    /// For a job put back (`state` pending): when it is due again.
    pub available_at: Option<DateTime<Utc>>,
}

/// Records an attempt on a job whose outcome is still open: pending, or
/// held (unknown) by a holder that found the attempt under way when it
/// took the lane over; the attempt's own outcome supersedes that. False
/// when the job was finished meanwhile (done, failed, cancelled, deleted):
/// a late outcome never overwrites a settled one.
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
        .filter(job::Column::State.is_in(OPEN))
        .exec(conn)
        .await?;
    Ok(res.rows_affected == 1)
}

/// [`finish`] for several jobs in one statement: each open job of `jobs`
/// gets its own [`Finish`]; returns the ids that were recorded (a job
/// finished meanwhile is left as it is and missing from the answer).
pub async fn finish_many(
    conn: &impl ConnectionTrait,
    jobs: &[(i64, Finish<'_>)],
) -> Result<std::collections::HashSet<i64>, DbErr> {
    use sea_orm::QueryTrait;
    use sea_orm::sea_query::CaseStatement;
    if jobs.is_empty() {
        return Ok(Default::default());
    }
    let now = Utc::now();
    let is = |id: i64| Expr::col((job::Entity, job::Column::Id)).eq(id);
    let (mut state, mut result) = (CaseStatement::new(), CaseStatement::new());
    let (mut available, mut finished) = (None::<CaseStatement>, None::<CaseStatement>);
    for (id, f) in jobs {
        state = state.case(is(*id), Expr::value(f.state));
        result = result.case(is(*id), Expr::value(f.result.clone()));
        if f.state == PENDING {
            let at = Expr::value(f.available_at.unwrap_or(now));
            available = Some(available.unwrap_or_default().case(is(*id), at));
        } else {
            let at = Expr::value(Some(now));
            finished = Some(finished.unwrap_or_default().case(is(*id), at));
        }
    }
    let mut q = job::Entity::update_many()
        .col_expr(
            job::Column::State,
            state.finally(Expr::col(job::Column::State)).into(),
        )
        .col_expr(
            job::Column::Result,
            result.finally(Expr::col(job::Column::Result)).into(),
        )
        .col_expr(
            job::Column::Attempts,
            Expr::col(job::Column::Attempts).add(1),
        );
    if let Some(c) = available {
        q = q.col_expr(
            job::Column::AvailableAt,
            c.finally(Expr::col(job::Column::AvailableAt)).into(),
        );
    }
    if let Some(c) = finished {
        q = q.col_expr(
            job::Column::FinishedAt,
            c.finally(Expr::col(job::Column::FinishedAt)).into(),
        );
    }
    let mut stmt = q
        .filter(job::Column::Id.is_in(jobs.iter().map(|(id, _)| *id)))
        .filter(job::Column::State.is_in(OPEN))
        .into_query();
    stmt.returning_col(job::Column::Id);
    conn.query_all(&stmt)
        .await?
        .iter()
        .map(|row| row.try_get::<i64>("", "id"))
        .collect()
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

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    async fn database() -> (sea_orm::DatabaseConnection, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}/outbox.db?mode=rwc", dir.path().display());
        let db = crate::db::connect(&url).await.unwrap();
        crate::db::migrate(&db).await.unwrap();
        (db, dir)
    }

    fn jobs(lane: &str, n: usize) -> Vec<NewJob> {
        (0..n)
            .map(|i| NewJob {
                queue: "test",
                lane: lane.into(),
                payload: format!("{{\"n\":{i}}}"),
            })
            .collect()
    }

    async fn all(db: &sea_orm::DatabaseConnection) -> Vec<job::Model> {
        job::Entity::find()
            .order_by_asc(job::Column::Id)
            .all(db)
            .await
            .unwrap()
    }

    #[tokio::test]
    async fn finish_many_records_each_pending_job_its_own_way_and_skips_the_others() {
        let (db, _dir) = database().await;
        enqueue(&db, &jobs("a", 4)).await.unwrap();
        let ids: Vec<i64> = all(&db).await.iter().map(|j| j.id).collect();
        // The last job is no longer pending.
        assert!(
            finish(
                &db,
                ids[3],
                &Finish {
                    state: CANCELLED,
                    result: None,
                    available_at: None
                }
            )
            .await
            .unwrap()
        );
        let later = Utc::now() + chrono::Duration::seconds(60);
        let done = finish_many(
            &db,
            &[
                (
                    ids[0],
                    Finish {
                        state: DONE,
                        result: Some("ok".into()),
                        available_at: None,
                    },
                ),
                (
                    ids[1],
                    Finish {
                        state: PENDING,
                        result: Some("again".into()),
                        available_at: Some(later),
                    },
                ),
                (
                    ids[2],
                    Finish {
                        state: FAILED,
                        result: Some("no".into()),
                        available_at: None,
                    },
                ),
                (
                    ids[3],
                    Finish {
                        state: DONE,
                        result: Some("late".into()),
                        available_at: None,
                    },
                ),
            ],
        )
        .await
        .unwrap();
        assert_eq!(done, [ids[0], ids[1], ids[2]].into_iter().collect());
        let rows = all(&db).await;
        let summary: Vec<(&str, Option<&str>, i32, bool)> = rows
            .iter()
            .map(|j| {
                (
                    j.state.as_str(),
                    j.result.as_deref(),
                    j.attempts,
                    j.finished_at.is_some(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (DONE, Some("ok"), 1, true),
                (PENDING, Some("again"), 1, false),
                (FAILED, Some("no"), 1, true),
                (CANCELLED, None, 1, true),
            ]
        );
        assert_eq!(
            rows[1].available_at.timestamp_millis(),
            later.timestamp_millis()
        );
        assert!(finish_many(&db, &[]).await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn an_outcome_supersedes_a_hold_but_never_a_settled_job() {
        let (db, _dir) = database().await;
        enqueue(&db, &jobs("a", 1)).await.unwrap();
        let id = all(&db).await[0].id;
        let end = |state| Finish {
            state,
            result: Some(state.to_string()),
            available_at: None,
        };
        // Held by a holder that took the lane over mid-attempt...
        assert!(finish(&db, id, &end(HELD)).await.unwrap());
        // ...then settled by the attempt's own outcome...
        assert_eq!(
            finish_many(&db, &[(id, end(DONE))]).await.unwrap(),
            [id].into_iter().collect()
        );
        // ...which nothing late undoes.
        for late in [HELD, FAILED, PENDING] {
            assert!(!finish(&db, id, &end(late)).await.unwrap());
            assert!(
                finish_many(&db, &[(id, end(late))])
                    .await
                    .unwrap()
                    .is_empty()
            );
        }
        let job = &all(&db).await[0];
        assert_eq!((job.state.as_str(), job.attempts), (DONE, 2));
    }

    #[tokio::test]
    async fn next_jobs_are_the_lanes_oldest_due_ones_past_jobs_put_back_for_later() {
        let (db, _dir) = database().await;
        enqueue(&db, &jobs("a", 3)).await.unwrap();
        enqueue(&db, &jobs("b", 2)).await.unwrap();
        enqueue(&db, &jobs("a", 3)).await.unwrap();
        let a: Vec<i64> = all(&db)
            .await
            .iter()
            .filter(|j| j.lane == "a")
            .map(|j| j.id)
            .collect();
        // The first three of lane a are put back for later.
        let later = Utc::now() + chrono::Duration::seconds(60);
        for id in &a[..3] {
            finish(
                &db,
                *id,
                &Finish {
                    state: PENDING,
                    result: None,
                    available_at: Some(later),
                },
            )
            .await
            .unwrap();
        }
        let now = Utc::now();
        let ids = |v: Vec<job::Model>| v.into_iter().map(|j| j.id).collect::<Vec<_>>();
        // A page of two holds only jobs not due yet: the next page is read.
        assert_eq!(
            ids(next_jobs(&db, "test", "a", now, 2).await.unwrap()),
            a[3..5]
        );
        assert_eq!(
            ids(next_jobs(&db, "test", "a", now, 32).await.unwrap()),
            a[3..]
        );
        assert_eq!(
            ids(next_jobs(&db, "test", "a", later, 32).await.unwrap()),
            a
        );
        assert_eq!(next_jobs(&db, "test", "b", now, 32).await.unwrap().len(), 2);
        assert!(
            next_jobs(&db, "test", "c", now, 32)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
