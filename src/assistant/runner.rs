//! Drives runs on this instance. A turn, a finished run or a decision
//! "kicks" its conversation: the oldest unfinished run starts here if it
//! is queued and no instance took it first. A supervised sweeper renews
//! this instance's leases, stops runs a participant canceled (if the bus
//! lost the notice), marks runs of dead instances interrupted and starts
//! queued runs whose kick was lost. Run state lives in the database, so
//! any instance can pick up after another.

use std::collections::HashMap;
use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::prelude::*;
use chrono::Utc;
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

use entity::assistant_run;

use super::host::{self, RunHost};
use super::model::{self, ProposedAction};
use super::service::{self, Ending};
use crate::agent::{self, Backend, Ended, Limits, ReplyError};
use crate::bus::{BusEvent, BusSink};
use crate::ops::Ctx;

/// Bus topics of this domain (instance to instance).
pub const PREFIX: &str = "assistant.";
/// A participant canceled a running run: key = run id.
pub const CANCEL: &str = "assistant.cancel";

/// How a run resumes after a decision.
pub enum Resume {
    /// A new run: straight to the model.
    Start,
    /// The participant confirmed the paused action: run it first.
    Confirmed(ProposedAction),
    /// Declined: the model is told (already recorded).
    Declined,
}

/// This instance's runner (a domain handle).
#[derive(Clone)]
pub struct Runner {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Arc<dyn Backend>,
    lease: Duration,
    sweep: Duration,
    limits: Limits,
    run_time: Duration,
    /// Runs driven here, by id.
    local: Mutex<HashMap<String, CancellationToken>>,
    /// Keeps the bus subscription alive.
    sink: Mutex<Option<Arc<dyn BusSink>>>,
}

struct CancelSink(Weak<Inner>);

impl BusSink for CancelSink {
    fn deliver(&self, event: &BusEvent) {
        if event.topic == CANCEL
            && let Some(inner) = self.0.upgrade()
            && let Some(token) = inner.local.lock().get(&event.key)
        {
            token.cancel();
        }
    }

    /// The sweeper re-reads cancel requests on every lease renewal.
    fn transport_lost(&self) {}
}

impl Runner {
    pub fn new(
        config: &crate::config::Config,
        bus: &crate::bus::EventBus,
        backend: Arc<dyn Backend>,
    ) -> Self {
        tracing::info!(backend = %backend.describe(), "assistant");
        let (lease, sweep) = crate::config::lease_and_sweep(
            config.lease_seconds.unwrap_or(30),
            Duration::from_secs(10),
        );
        let inner = Arc::new(Inner {
            backend,
            lease,
            sweep,
            limits: Limits {
                max_tool_calls: config.assistant_max_tool_calls,
                max_tokens: config.assistant_max_tokens,
            },
            run_time: Duration::from_secs(config.assistant_run_seconds),
            local: Mutex::new(HashMap::new()),
            sink: Mutex::new(None),
        });
        let sink: Arc<dyn BusSink> = Arc::new(CancelSink(Arc::downgrade(&inner)));
        bus.subscribe(PREFIX, Arc::downgrade(&sink));
        *inner.sink.lock() = Some(sink);
        Runner { inner }
    }

    fn until(&self) -> chrono::DateTime<Utc> {
        Utc::now() + chrono::Duration::from_std(self.inner.lease).unwrap_or_default()
    }

    /// Starts the conversation's next run here if it is due (in the
    /// background).
    pub fn kick(&self, ctx: &Ctx, conversation_uid: &str) {
        let (runner, ctx, uid) = (self.clone(), ctx.clone(), conversation_uid.to_string());
        tokio::spawn(async move {
            let me = ctx.bus.instance_id().to_string();
            match service::claim_next(&ctx.db, &uid, &me, runner.until()).await {
                Ok(Some(run)) => runner.drive(ctx, run, Resume::Start).await,
                Ok(None) => {}
                Err(e) => tracing::warn!(error = %e, "assistant: cannot start the next run"),
            }
        });
    }

    /// Takes a paused run over for a decision: `None` when it is no longer
    /// waiting (another decision or a cancel came first).
    pub async fn take_paused(
        &self,
        ctx: &Ctx,
        run_id: &str,
    ) -> Result<Option<assistant_run::Model>, sea_orm::DbErr> {
        let me = ctx.bus.instance_id().to_string();
        service::take_lease(&ctx.db, run_id, model::AWAITING, &me, self.until()).await
    }

    /// Continues a run this instance holds (in the background).
    pub fn resume(&self, ctx: &Ctx, run: assistant_run::Model, how: Resume) {
        let (runner, ctx) = (self.clone(), ctx.clone());
        tokio::spawn(async move { runner.drive(ctx, run, how).await });
    }

    /// Runs `run` (held by this instance) to its end or pause, records how
    /// it ended, and starts the conversation's next run.
    async fn drive(&self, ctx: Ctx, run: assistant_run::Model, how: Resume) {
        let token = CancellationToken::new();
        self.inner
            .local
            .lock()
            .insert(run.id.clone(), token.clone());
        service::announce(&ctx.bus, &run.clone().into(), &run.account_id).await;
        let host = match self.host(&ctx, &run).await {
            Ok(h) => Some(h),
            Err(e) => {
                tracing::warn!(error = %e, "assistant: cannot prepare a run");
                None
            }
        };
        let outcome = match &host {
            None => Outcome::Failed("internal", "the run could not be prepared".into()),
            Some(host) => {
                let work = self.work(&ctx, host, how);
                tokio::select! {
                    _ = token.cancelled() => Outcome::Canceled,
                    _ = ctx.shutdown.cancelled() => Outcome::Stopping,
                    r = tokio::time::timeout(self.inner.run_time, work) => match r {
                        Ok(o) => o,
                        Err(_) => Outcome::Failed(
                            "timeout",
                            format!("the run took longer than {} s", self.inner.run_time.as_secs()),
                        ),
                    },
                }
            }
        };
        self.inner.local.lock().remove(&run.id);
        let paused = host.as_ref().and_then(|h| h.paused.lock().take());
        self.finish(&ctx, &run, outcome, paused).await;
        self.kick(&ctx, &run.conversation_uid);
    }

    async fn host(
        &self,
        ctx: &Ctx,
        run: &assistant_run::Model,
    ) -> Result<RunHost, crate::error::ApiError> {
        let settings = crate::conversations::service::settings(&ctx.db, &run.account_id).await?;
        let (offered, writes) = match host::directing_caller(ctx, run).await? {
            Some(caller) => {
                let (tools, writes) = super::context::tools_for(ctx.operations, &caller);
                (tools.iter().map(|t| t.name).collect(), writes)
            }
            None => Default::default(),
        };
        Ok(RunHost {
            ctx: ctx.clone(),
            run: run.clone(),
            offered,
            writes,
            confirm_writes: settings.assistant_writes_need_confirmation,
            paused: Mutex::new(None),
        })
    }

    async fn work(&self, ctx: &Ctx, host: &RunHost, how: Resume) -> Outcome {
        let run = &host.run;
        let caller = match host::directing_caller(ctx, run).await {
            Ok(Some(c)) => c,
            Ok(None) => {
                return Outcome::Failed(
                    "credential_revoked",
                    "the credential that directed this turn is no longer valid".into(),
                );
            }
            Err(e) => return Outcome::Failed("internal", e.to_string()),
        };
        if let Resume::Confirmed(action) = how {
            let result = host::run_tool(ctx, run, &action.operation, &action.arguments).await;
            if let Err(e) = service::count(&ctx.db, &run.id, 0, 0, 1).await {
                return Outcome::Failed("internal", e.to_string());
            }
            if let Err(e) = host
                .result(&action.action_id, &action.operation, result)
                .await
            {
                return Outcome::Failed("internal", e);
            }
        }
        let (tools, _) = super::context::tools_for(ctx.operations, &caller);
        let messages = match super::context::history(&ctx.db, &run.conversation_uid).await {
            Ok(m) => m,
            Err(e) => return Outcome::Failed("internal", e.to_string()),
        };
        match agent::reply(
            self.inner.backend.as_ref(),
            messages,
            &tools,
            host,
            self.inner.limits,
        )
        .await
        {
            Ok(Ended::Answered) => Outcome::Completed,
            Ok(Ended::Paused) => Outcome::Paused,
            Ok(Ended::ToolLimit) => Outcome::Failed(
                "tool_limit",
                format!(
                    "the run reached its limit of {} tool calls",
                    self.inner.limits.max_tool_calls
                ),
            ),
            Ok(Ended::TokenLimit) => Outcome::Failed(
                "token_limit",
                format!(
                    "the run reached its limit of {} tokens",
                    self.inner.limits.max_tokens
                ),
            ),
            Err(ReplyError::Backend(e)) => Outcome::Failed(e.code(), e.to_string()),
            Err(ReplyError::Host(e)) => Outcome::Failed("internal", e),
        }
    }

    /// Records the outcome (only while this instance still holds the run),
    /// tells the room why a run ended early, and announces the run.
    async fn finish(
        &self,
        ctx: &Ctx,
        run: &assistant_run::Model,
        outcome: Outcome,
        paused: Option<ProposedAction>,
    ) {
        let me = ctx.bus.instance_id().to_string();
        let notice = |status: &str, code: &str, text: String| {
            Some(service::Notice {
                text,
                data: serde_json::json!({ "status": status, "code": code }),
            })
        };
        let (ending, notice) = match outcome {
            Outcome::Completed => (ending(model::COMPLETED, None), None),
            Outcome::Paused => (
                Ending {
                    status: model::AWAITING,
                    error: None,
                    pending: paused,
                },
                None,
            ),
            Outcome::Canceled => (
                ending(
                    model::CANCELED,
                    Some(("canceled", "canceled by a participant".into())),
                ),
                notice(
                    model::CANCELED,
                    "canceled",
                    "The run was canceled by a participant.".into(),
                ),
            ),
            Outcome::Stopping => (
                ending(
                    model::INTERRUPTED,
                    Some((
                        "interrupted",
                        "the server stopped before the run ended".into(),
                    )),
                ),
                Some(service::interrupted_notice()),
            ),
            Outcome::Failed(code, message) => {
                tracing::info!(run = %run.id, code, %message, "assistant run failed");
                let text = format!("I could not finish this turn: {message}.");
                (
                    ending(model::FAILED, Some((code, message))),
                    notice(model::FAILED, code, text),
                )
            }
        };
        match service::end(ctx.into(), &run.id, &me, ending, notice).await {
            Ok(Some(_)) => {}
            Ok(None) => {
                tracing::info!(run = %run.id, "assistant: the run was taken over before it ended here")
            }
            Err(e) => tracing::warn!(error = %e, "assistant: cannot record a run's end"),
        }
    }

    /// One sweep: leases, lost cancels, dead instances' runs, lost kicks.
    async fn sweep(&self, ctx: &Ctx) -> Result<(), crate::error::ApiError> {
        let me = ctx.bus.instance_id().to_string();
        let ids: Vec<String> = self.inner.local.lock().keys().cloned().collect();
        for id in service::renew(&ctx.db, &ids, &me, self.until()).await? {
            if let Some(token) = self.inner.local.lock().get(&id) {
                token.cancel();
            }
        }
        for run in service::interrupt_abandoned(ctx.into()).await? {
            self.kick(ctx, &run.conversation_uid);
        }
        for uid in service::with_queued(&ctx.db).await? {
            self.kick(ctx, &uid);
        }
        Ok(())
    }
}

fn ending(status: &'static str, error: Option<(&'static str, String)>) -> Ending {
    Ending {
        status,
        error: error.map(|(c, m)| (c.to_string(), m)),
        pending: None,
    }
}

enum Outcome {
    Completed,
    Paused,
    Canceled,
    Stopping,
    Failed(&'static str, String),
}

/// Starts this instance's sweeper (restarted by its supervisor if it fails).
pub fn start(ctx: &Ctx) {
    let Ok(runner) = ctx.get::<Runner>().cloned() else {
        return;
    };
    let (ctx, every) = (ctx.clone(), runner.inner.sweep);
    Supervisor::start(move |_| Sweeper {
        ctx,
        runner,
        every,
        busy: false,
    });
}

struct Sweeper {
    ctx: Ctx,
    runner: Runner,
    every: Duration,
    busy: bool,
}

impl Actor for Sweeper {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Context<Self>) {
        ctx.run_interval(self.every, |act, ctx| {
            if act.ctx.shutdown.is_cancelled() {
                ctx.stop();
                return;
            }
            if act.busy {
                return;
            }
            act.busy = true;
            let (runner, c) = (act.runner.clone(), act.ctx.clone());
            let round =
                async move { crate::rt::detached(async move { runner.sweep(&c).await }).await };
            ctx.spawn(round.into_actor(act).map(|res, act, _| {
                act.busy = false;
                if let Some(Err(e)) = res {
                    tracing::warn!(error = %e, "assistant sweep failed");
                }
            }));
        });
    }
}

impl Supervised for Sweeper {
    fn restarting(&mut self, _: &mut Context<Self>) {
        self.busy = false;
    }
}
