//! The inbound fax pipeline, a supervised actor on every instance. A fax is
//! recorded `stored` by its carrier event (`receive`); from there each stage
//! is done and persisted before the next, under a lease on the fax, so a
//! crash resumes at the stage it was in, on any instance:
//!
//! 1. `stored` → `extracted`: bounded text extraction in a child process
//!    (`pdf`), so a hostile file can fail only its own fax;
//! 2. `extracted` → `replied`: the line's storefront agent answers (`agent`);
//! 3. `replied` → `rendered`: the answer rendered as a PDF, stored beside the
//!    fax, with a random token naming it for the carrier;
//! 4. `rendered` → `sent`: faxed to the verified originating number with a
//!    request id derived from the fax, so a resumed stage never sends twice.
//!
//! A file-caused failure (malformed, too many pages) fails the fax; a passing
//! one (the model down) is tried again on later rounds, up to five times.
//! Once a minute, faxes past the retention have their files and texts
//! deleted (`expired`).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QuerySelect};
use sha2::{Digest, Sha256};

use entity::inbound_fax;

use super::agent::{self, AgentFailure};
use super::pdf::{self, ExtractLimits};
use super::service::{self, Outcome};
use super::storage::Storage;
use crate::ops::Ctx;

/// Stages with work left.
const OPEN: [&str; 4] = ["stored", "extracted", "replied", "rendered"];
/// Passing failures of one fax before it is given up.
const MAX_ATTEMPTS: i32 = 5;
/// Faxes worked on at once by one instance.
const BATCH: u64 = 4;
/// How long a reply's PDF is served to the carrier.
pub const REPLY_MEDIA_TTL: Duration = Duration::from_secs(24 * 3600);

/// What the pipeline works with (a domain handle).
#[derive(Clone)]
pub struct Pipeline {
    pub backend: Arc<dyn crate::agent::Backend>,
    pub storage: Storage,
    pub limits: ExtractLimits,
    pub program: Option<PathBuf>,
    pub retention: Duration,
}

/// Starts this instance's pipeline (restarted by its supervisor if it fails).
pub fn start(ctx: &Ctx) {
    let Ok(pipeline) = ctx.get::<Pipeline>().cloned() else {
        return;
    };
    let (ctx, tick) = (ctx.clone(), ctx.config.fax.tick);
    Supervisor::start(move |_| Worker {
        ctx,
        pipeline,
        tick,
        busy: false,
        swept: None,
    });
}

struct Worker {
    ctx: Ctx,
    pipeline: Pipeline,
    tick: Duration,
    busy: bool,
    swept: Option<std::time::Instant>,
}

impl Actor for Worker {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.tick, |act, ctx| {
            if act.ctx.shutdown.is_cancelled() {
                ctx.stop();
                return;
            }
            if act.busy {
                return;
            }
            act.busy = true;
            let sweep = act
                .swept
                .is_none_or(|t| t.elapsed() >= Duration::from_secs(60));
            if sweep {
                act.swept = Some(std::time::Instant::now());
            }
            let (c, p) = (act.ctx.clone(), act.pipeline.clone());
            let round = async move { crate::rt::detached(round(c, p, sweep)).await };
            ctx.spawn(round.into_actor(act).map(|res, act, _| {
                act.busy = false;
                if let Some(Err(e)) = res {
                    tracing::warn!(error = %e, "fax pipeline round failed");
                }
            }));
        });
    }
}

impl Supervised for Worker {
    fn restarting(&mut self, _: &mut Context<Self>) {
        self.busy = false;
    }
}

/// One round: the retention sweep when due, then batches of up to
/// [`BATCH`] faxes, each taken as far as it goes, until a batch is not full
/// (so a burst is worked through at once, not one batch per tick).
pub async fn round(ctx: Ctx, p: Pipeline, sweep: bool) -> Result<usize, sea_orm::DbErr> {
    if sweep {
        expire(&ctx, &p).await?;
    }
    let mut total = 0;
    loop {
        if ctx.shutdown.is_cancelled() {
            return Ok(total);
        }
        let n = batch(&ctx, &p).await?;
        total += n;
        if n < BATCH as usize {
            return Ok(total);
        }
    }
}

/// Claims up to [`BATCH`] faxes and takes each as far as it goes.
async fn batch(ctx: &Ctx, p: &Pipeline) -> Result<usize, sea_orm::DbErr> {
    let ctx = ctx.clone();
    let p = p.clone();
    let me = ctx.bus.instance_id().to_string();
    let now = Utc::now();
    let candidates: Vec<i64> = inbound_fax::Entity::find()
        .select_only()
        .column(inbound_fax::Column::Id)
        .filter(inbound_fax::Column::Stage.is_in(OPEN))
        .filter(
            sea_orm::Condition::any()
                .add(inbound_fax::Column::LeaseUntil.is_null())
                .add(inbound_fax::Column::LeaseUntil.lt(now)),
        )
        .limit(BATCH)
        .into_tuple()
        .all(&ctx.db)
        .await?;
    let mut claimed = Vec::new();
    let until = now + chrono::Duration::from_std(ctx.config.fax.lease).unwrap_or_default();
    for id in candidates {
        let res = inbound_fax::Entity::update_many()
            .col_expr(inbound_fax::Column::LeaseOwner, Expr::value(me.as_str()))
            .col_expr(inbound_fax::Column::LeaseUntil, Expr::value(Some(until)))
            .filter(inbound_fax::Column::Id.eq(id))
            .filter(inbound_fax::Column::Stage.is_in(OPEN))
            .filter(
                sea_orm::Condition::any()
                    .add(inbound_fax::Column::LeaseUntil.is_null())
                    .add(inbound_fax::Column::LeaseUntil.lt(now)),
            )
            .exec(&ctx.db)
            .await?;
        if res.rows_affected == 1 {
            claimed.push(id);
        }
    }
    let n = claimed.len();
    let work = claimed.into_iter().map(|id| {
        let (ctx, p, me) = (ctx.clone(), p.clone(), me.clone());
        async move {
            if let Err(e) = drive(&ctx, &p, id, &me).await {
                tracing::warn!(fax = id, error = %e, "fax pipeline: a stage could not be recorded");
            }
        }
    });
    futures_util::future::join_all(work).await;
    Ok(n)
}

/// What one stage came to.
enum Step {
    /// Recorded; go on.
    Next(Box<inbound_fax::ActiveModel>, &'static str),
    Fail(String),
    /// Try again on a later round.
    Retry(String),
}

/// Takes one claimed fax through its stages, persisting each.
async fn drive(ctx: &Ctx, p: &Pipeline, id: i64, me: &str) -> Result<(), sea_orm::DbErr> {
    loop {
        let Some(fax) = inbound_fax::Entity::find_by_id(id).one(&ctx.db).await? else {
            return Ok(());
        };
        if fax.lease_owner.as_deref() != Some(me) || !OPEN.contains(&fax.stage.as_str()) {
            return Ok(());
        }
        let stage: &'static str = match fax.stage.as_str() {
            "stored" => "extracted",
            "extracted" => "replied",
            "replied" => "rendered",
            _ => "sent",
        };
        let started = std::time::Instant::now();
        let step = match stage {
            "extracted" => extract(p, &fax).await,
            "replied" => reply(ctx, p, &fax).await,
            "rendered" => render(p, &fax).await,
            _ => send(ctx, &fax).await,
        };
        crate::metrics::fax_stage_time(stage, started.elapsed());
        let owned = || {
            inbound_fax::Entity::update_many()
                .filter(inbound_fax::Column::Id.eq(id))
                .filter(inbound_fax::Column::LeaseOwner.eq(me))
                .filter(inbound_fax::Column::Stage.eq(fax.stage.as_str()))
        };
        let now = Utc::now();
        match step {
            Step::Next(row, next) => {
                let mut row = *row;
                row.id = sea_orm::ActiveValue::Unchanged(id);
                row.stage = sea_orm::Set(next.to_string());
                row.attempts = sea_orm::Set(0);
                row.updated_at = sea_orm::Set(now);
                let res = inbound_fax::Entity::update_many()
                    .set(row)
                    .filter(inbound_fax::Column::Id.eq(id))
                    .filter(inbound_fax::Column::LeaseOwner.eq(me))
                    .filter(inbound_fax::Column::Stage.eq(fax.stage.as_str()))
                    .exec(&ctx.db)
                    .await?;
                crate::metrics::fax_stage(stage, "ok");
                if res.rows_affected != 1 {
                    return Ok(());
                }
            }
            Step::Fail(why) => {
                tracing::info!(fax = id, stage, %why, "inbound fax failed");
                crate::metrics::fax_stage(stage, "failed");
                owned()
                    .col_expr(inbound_fax::Column::Stage, Expr::value("failed"))
                    .col_expr(
                        inbound_fax::Column::Failure,
                        Expr::value(Some(format!("{stage}: {why}"))),
                    )
                    .col_expr(inbound_fax::Column::LeaseOwner, Expr::value(None::<String>))
                    .col_expr(inbound_fax::Column::UpdatedAt, Expr::value(now))
                    .exec(&ctx.db)
                    .await?;
                return Ok(());
            }
            Step::Retry(why) if fax.attempts + 1 >= MAX_ATTEMPTS => {
                crate::metrics::fax_stage(stage, "failed");
                owned()
                    .col_expr(inbound_fax::Column::Stage, Expr::value("failed"))
                    .col_expr(
                        inbound_fax::Column::Failure,
                        Expr::value(Some(format!(
                            "{stage}: gave up after {MAX_ATTEMPTS} tries: {why}"
                        ))),
                    )
                    .col_expr(inbound_fax::Column::LeaseOwner, Expr::value(None::<String>))
                    .col_expr(inbound_fax::Column::UpdatedAt, Expr::value(now))
                    .exec(&ctx.db)
                    .await?;
                return Ok(());
            }
            Step::Retry(why) => {
                tracing::info!(fax = id, stage, %why, "inbound fax: will try again");
                crate::metrics::fax_stage(stage, "retry");
                // Released: a later round (on any instance) takes it again.
                let later = now + chrono::Duration::seconds(5);
                owned()
                    .col_expr(inbound_fax::Column::Attempts, Expr::value(fax.attempts + 1))
                    .col_expr(inbound_fax::Column::Failure, Expr::value(Some(why)))
                    .col_expr(inbound_fax::Column::LeaseUntil, Expr::value(Some(later)))
                    .col_expr(inbound_fax::Column::UpdatedAt, Expr::value(now))
                    .exec(&ctx.db)
                    .await?;
                return Ok(());
            }
        }
    }
}

fn row() -> inbound_fax::ActiveModel {
    inbound_fax::ActiveModel::default()
}

async fn extract(p: &Pipeline, fax: &inbound_fax::Model) -> Step {
    let Some(path) = &fax.file_path else {
        return Step::Fail("the stored file is missing".into());
    };
    let bytes = match p.storage.read(path).await {
        Ok(b) => b,
        Err(e) => return Step::Retry(format!("cannot read the stored file: {e}")),
    };
    let program = match &p.program {
        Some(p) => p.clone(),
        None => match pdf::default_program() {
            Ok(p) => p,
            Err(e) => return Step::Retry(format!("no extractor program: {e}")),
        },
    };
    match pdf::extract(&bytes, &p.limits, &program).await {
        Ok(ex) => {
            let mut r = row();
            r.pages = sea_orm::Set(i32::try_from(ex.pages).unwrap_or(i32::MAX));
            r.truncated = sea_orm::Set(ex.truncated);
            r.extracted_text = sea_orm::Set(Some(ex.text));
            r.failure = sea_orm::Set(None);
            Step::Next(Box::new(r), "extracted")
        }
        Err(e) if e.is_permanent() => Step::Fail(format!("{} ({})", e, e.code())),
        Err(e) => Step::Retry(e.to_string()),
    }
}

async fn reply(ctx: &Ctx, p: &Pipeline, fax: &inbound_fax::Model) -> Step {
    let text = fax.extracted_text.clone().unwrap_or_default();
    match agent::answer(ctx, p.backend.as_ref(), fax, &text).await {
        Ok(answer) => {
            let mut r = row();
            r.reply_text = sea_orm::Set(Some(answer));
            r.failure = sea_orm::Set(None);
            Step::Next(Box::new(r), "replied")
        }
        Err(AgentFailure::Retry(why)) => Step::Retry(why),
        Err(AgentFailure::Failed(why)) => Step::Fail(why),
    }
}

async fn render(p: &Pipeline, fax: &inbound_fax::Model) -> Step {
    let body = fax.reply_text.clone().unwrap_or_default();
    let title = format!("Reply to your fax of {}", fax.created_at.format("%Y-%m-%d"));
    let bytes = match pdf::render_text(&title, &body) {
        Ok(b) => b,
        Err(e) => return Step::Retry(e.to_string()),
    };
    let name = format!("{}-reply.pdf", fax.id);
    match p
        .storage
        .put(&fax.account_id, fax.customer_id, &name, &bytes)
        .await
    {
        Ok(rel) => {
            let mut r = row();
            r.reply_path = sea_orm::Set(Some(rel));
            r.reply_token = sea_orm::Set(Some(crate::auth::keys::random_base62(43)));
            Step::Next(Box::new(r), "rendered")
        }
        Err(e) => Step::Retry(format!("cannot store the reply: {e}")),
    }
}

async fn send(ctx: &Ctx, fax: &inbound_fax::Model) -> Step {
    let (Some(token), Some(path)) = (&fax.reply_token, &fax.reply_path) else {
        return Step::Fail("the rendered reply is missing".into());
    };
    let Ok(p) = ctx.get::<Pipeline>() else {
        return Step::Retry("the pipeline is not running".into());
    };
    let bytes = match p.storage.read(path).await {
        Ok(b) => b,
        Err(e) => return Step::Retry(format!("cannot read the reply: {e}")),
    };
    let digest = hex::encode(Sha256::digest(&bytes));
    let url = format!("{}{}/{token}", ctx.public_url, super::media::PATH);
    match service::send_reply(ctx, fax, url, digest).await {
        Ok(Outcome::Queued(_)) => {
            let mut r = row();
            r.reply_fax_id = sea_orm::Set(
                entity::fax::Entity::find()
                    .filter(
                        entity::fax::Column::RequestId
                            .eq(service::reply_request_id(fax.id).hyphenated().to_string()),
                    )
                    .one(&ctx.db)
                    .await
                    .ok()
                    .flatten()
                    .map(|f| f.id),
            );
            r.failure = sea_orm::Set(None);
            Step::Next(Box::new(r), "sent")
        }
        Ok(Outcome::NotSent(why)) => Step::Retry(why),
        Ok(Outcome::Rejected(why)) => Step::Fail(format!("the carrier refused the reply: {why}")),
        Ok(Outcome::Unknown(why)) => Step::Fail(format!(
            "the reply's submission outcome is unknown ({why}); an operator resolves it (admin list-faxes --unresolved)"
        )),
        Err(e) => Step::Retry(e.to_string()),
    }
}

/// Deletes the files and texts of faxes past the retention.
async fn expire(ctx: &Ctx, p: &Pipeline) -> Result<(), sea_orm::DbErr> {
    let cutoff = Utc::now() - chrono::Duration::from_std(p.retention).unwrap_or_default();
    let old = inbound_fax::Entity::find()
        .filter(inbound_fax::Column::CreatedAt.lt(cutoff))
        .filter(inbound_fax::Column::Stage.ne("expired"))
        .limit(500)
        .all(&ctx.db)
        .await?;
    for fax in old {
        for path in [&fax.file_path, &fax.reply_path].into_iter().flatten() {
            if let Err(e) = p.storage.delete(path).await {
                tracing::warn!(fax = fax.id, error = %e, "fax retention: cannot delete a file");
            }
        }
        inbound_fax::Entity::update_many()
            .col_expr(inbound_fax::Column::Stage, Expr::value("expired"))
            .col_expr(inbound_fax::Column::FilePath, Expr::value(None::<String>))
            .col_expr(inbound_fax::Column::ReplyPath, Expr::value(None::<String>))
            .col_expr(inbound_fax::Column::ReplyToken, Expr::value(None::<String>))
            .col_expr(
                inbound_fax::Column::ExtractedText,
                Expr::value(None::<String>),
            )
            .col_expr(inbound_fax::Column::ReplyText, Expr::value(None::<String>))
            .col_expr(inbound_fax::Column::LeaseOwner, Expr::value(None::<String>))
            .col_expr(inbound_fax::Column::UpdatedAt, Expr::value(Utc::now()))
            .filter(inbound_fax::Column::Id.eq(fax.id))
            .exec(&ctx.db)
            .await?;
        crate::metrics::fax_stage("expired", "ok");
    }
    Ok(())
}
