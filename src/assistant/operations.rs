//! The assistant operations, each declared once: directing a turn, reading
//! runs, canceling one, and deciding on a proposed action.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::model::{AWAITING, RunOut, kind};
use super::runner::{CANCEL, Resume, Runner};
use super::service::{self, Canceled};
use crate::bus::BusEvent;
use crate::caller::CallerInfo;
use crate::conversations::model::{Content, ConversationUid, MessageOut};
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Input, Json, Nothing, Operation, Page, Paged, Pagination, Params, Verb,
};

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ConversationPath {
    /// The conversation's uid (a UUID).
    pub conversation_uid: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPath {
    /// The conversation's uid (a UUID).
    pub conversation_uid: String,
    /// The run's id (a UUID).
    pub run_id: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActionPath {
    /// The conversation's uid (a UUID).
    pub conversation_uid: String,
    /// The run's id (a UUID).
    pub run_id: String,
    /// The proposed action's id (the run's `pendingAction.actionId`).
    pub action_id: String,
}

fn uid(raw: &str) -> Result<ConversationUid, ApiError> {
    ConversationUid::parse(raw)
}

fn run_id(raw: &str) -> Result<String, ApiError> {
    uuid::Uuid::parse_str(raw)
        .map(|u| u.hyphenated().to_string())
        .map_err(|_| ApiError::invalid("runId", "must be a UUID"))
}

/// Turns are for accounts with the assistant.
fn assistant_enabled(caller: &CallerInfo) -> Result<(), ApiError> {
    if caller.account.assistant_enabled {
        Ok(())
    } else {
        Err(ApiError::Forbidden(
            "the assistant is not enabled for this account".into(),
        ))
    }
}

fn runner(ctx: &Ctx) -> Result<&Runner, ApiError> {
    ctx.get::<Runner>()
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DirectTurnIn {
    /// `assistant` (the default; the only audience of a turn).
    #[schema(pattern = "^assistant$")]
    pub audience: Option<String>,
    #[schema(min_length = 1, max_length = 32000)]
    pub content: String,
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TurnOut {
    /// The turn as persisted (`audience: assistant`, author fields).
    pub message: MessageOut,
    /// Its run: `queued` until the conversation's earlier runs are over.
    pub run: RunOut,
}

pub struct DirectAssistantTurn;

impl Operation for DirectAssistantTurn {
    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        assistant_enabled(caller)
    }

    const NAME: &'static str = "direct_assistant_turn";
    const DESCRIPTION: &'static str = "Direct a turn at the assistant: the message is persisted and a run starts (after the conversation's earlier runs). The answer arrives as messages with audience assistant; while it is produced, room streams get message.delta events. The assistant's tools run with the caller's rights (a read-only key gets read tools only).";
    // A read-only key may ask; its run gets read tools only.
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/turns";
    const STATUS: u16 = 202;
    const ERRORS: &'static [(u16, &'static str)] =
        &[(403, "the assistant is not enabled for the account")];
    type Path = Params<ConversationPath>;
    type Query = Nothing;
    type Body = Json<DirectTurnIn>;
    type Output = TurnOut;

    async fn run(ctx: &Ctx, caller: &CallerInfo, input: Input<Self>) -> Result<TurnOut, ApiError> {
        let uid = uid(&input.path.0.conversation_uid)?;
        let body = input.body.0;
        if let Some(a) = body.audience.as_deref().filter(|a| *a != "assistant") {
            return Err(ApiError::invalid(
                "audience",
                format!(
                    "a turn's audience is \"assistant\", not {a:?}; room messages go to .../messages"
                ),
            ));
        }
        let content = Content::parse(body.content)?;
        let runner = runner(ctx)?;
        let (message, run) =
            service::direct_turn(&ctx.db, &ctx.writes, &ctx.bus, caller, &uid, content).await?;
        runner.kick(ctx, uid.as_str());
        Ok(TurnOut { message, run })
    }
}

pub struct ListAssistantRuns;

impl Operation for ListAssistantRuns {
    const NAME: &'static str = "list_assistant_runs";
    const DESCRIPTION: &'static str = "A conversation's assistant runs, newest first.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/runs";
    type Path = Params<ConversationPath>;
    type Query = Page<20, 100>;
    type Body = Nothing;
    type Output = Paged<RunOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Paged<RunOut>, ApiError> {
        let uid = uid(&input.path.0.conversation_uid)?;
        let page = input.query;
        let (items, total) = service::list(&ctx.db, caller, &uid, page.take, page.skip).await?;
        Ok(Paged {
            items,
            pagination: page.of(total),
        })
    }

    fn pagination(out: &Paged<RunOut>) -> Option<Pagination> {
        Some(out.pagination)
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunDetail {
    pub run: RunOut,
    /// Its tool calls, results and proposed actions, as posted in the room.
    pub activity: Vec<MessageOut>,
}

pub struct GetAssistantRun;

impl Operation for GetAssistantRun {
    const NAME: &'static str = "get_assistant_run";
    const DESCRIPTION: &'static str =
        "One assistant run with its tool calls, results and proposed actions.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/runs/{runId}";
    type Path = Params<RunPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = RunDetail;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<RunDetail, ApiError> {
        let path = input.path.0;
        let (uid, id) = (uid(&path.conversation_uid)?, run_id(&path.run_id)?);
        let run = service::find(&ctx.db, caller, &uid, &id).await?;
        let activity = service::activity(&ctx.db, &run.id).await?;
        Ok(RunDetail {
            run: run.into(),
            activity,
        })
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunEnvelope {
    pub run: RunOut,
}

pub struct CancelAssistantRun;

impl Operation for CancelAssistantRun {
    const NAME: &'static str = "cancel_assistant_run";
    const DESCRIPTION: &'static str = "Cancel a run (any participant): a queued or waiting run ends at once, a running one stops within moments (its status then reads canceled). A run already over is returned as it is.";
    // Stopping the assistant is open to every participant.
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/assistant/conversations/{conversationUid}/runs/{runId}/cancel";
    type Path = Params<RunPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = RunEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<RunEnvelope, ApiError> {
        let path = input.path.0;
        let (uid, id) = (uid(&path.conversation_uid)?, run_id(&path.run_id)?);
        let run = service::find(&ctx.db, caller, &uid, &id).await?;
        let run = match service::cancel(ctx.into(), run, &caller.user.name).await? {
            Canceled::Now(run) => {
                runner(ctx)?.kick(ctx, uid.as_str());
                run.into()
            }
            Canceled::Requested(run) => {
                let cancel = BusEvent::new(
                    CANCEL,
                    caller.account_id(),
                    run.id.clone(),
                    serde_json::Value::Null,
                );
                ctx.bus.publish(cancel).await;
                run.into()
            }
            Canceled::Over(run) => run.into(),
        };
        Ok(RunEnvelope { run })
    }
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DecisionIn {
    /// `confirm` runs the action with the rights of the person who directed
    /// the turn; `decline` tells the assistant it was declined.
    #[schema(pattern = "^(confirm|decline)$")]
    pub decision: String,
}

pub struct DecideAssistantAction;

impl Operation for DecideAssistantAction {
    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        assistant_enabled(caller)
    }

    const NAME: &'static str = "decide_assistant_action";
    const DESCRIPTION: &'static str = "Confirm or decline the write an assistant run proposed (any participant whose credential may write). The run then goes on.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str =
        "/assistant/conversations/{conversationUid}/runs/{runId}/actions/{actionId}";
    const ERRORS: &'static [(u16, &'static str)] = &[(
        409,
        "the run is not waiting for this action (already decided, canceled or over)",
    )];
    type Path = Params<ActionPath>;
    type Query = Nothing;
    type Body = Json<DecisionIn>;
    type Output = RunEnvelope;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<RunEnvelope, ApiError> {
        let path = input.path.0;
        let (uid, id) = (uid(&path.conversation_uid)?, run_id(&path.run_id)?);
        let confirm = match input.body.0.decision.as_str() {
            "confirm" => true,
            "decline" => false,
            _ => {
                return Err(ApiError::invalid(
                    "decision",
                    "must be \"confirm\" or \"decline\"",
                ));
            }
        };
        let run = service::find(&ctx.db, caller, &uid, &id).await?;
        let waiting = RunOut::from(run.clone()).pending_action;
        let action = match waiting {
            Some(a) if run.status == AWAITING && a.action_id == path.action_id => a,
            _ => {
                return Err(ApiError::conflict(format!(
                    "run {id} is not waiting for action {:?} (status {})",
                    path.action_id, run.status
                )));
            }
        };
        let runner = runner(ctx)?;
        let Some(run) = runner.take_paused(ctx, &run.id).await? else {
            return Err(ApiError::conflict(format!(
                "run {id} is no longer waiting for action {:?}",
                path.action_id
            )));
        };
        let how = if confirm {
            Resume::Confirmed(action)
        } else {
            let text = format!("{} declined {}.", caller.user.name, action.operation);
            let data = serde_json::json!({ "actionId": action.action_id, "operation": action.operation, "by": caller.user.name });
            service::say(
                &ctx.db,
                &ctx.writes,
                &ctx.bus,
                &run,
                kind::ACTION_DECLINED,
                &text,
                Some(data),
            )
            .await?;
            let host_result = serde_json::json!({ "callId": action.action_id, "operation": action.operation, "ok": false,
                "result": { "declined": true, "by": caller.user.name, "error": { "code": "DECLINED", "message": format!("declined by {}", caller.user.name) } } });
            service::say(
                &ctx.db,
                &ctx.writes,
                &ctx.bus,
                &run,
                kind::TOOL_RESULT,
                &format!("{}: declined", action.operation),
                Some(host_result),
            )
            .await?;
            Resume::Declined
        };
        let out = RunOut::from(run.clone());
        runner.resume(ctx, run, how);
        Ok(RunEnvelope { run: out })
    }
}
