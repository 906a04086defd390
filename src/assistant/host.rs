//! What a run does for the agent: shows its answer growing (`message.delta`),
//! keeps what it says as room messages, and runs its tool calls through the
//! operation dispatcher as the user who directed the turn. Writes wait for
//! a participant's confirmation unless the account lets them through.

use std::collections::HashSet;
use std::sync::Arc;

use futures_util::future::BoxFuture;
use parking_lot::Mutex;
use serde_json::{Value, json};

use entity::assistant_run;

use super::model::{ProposedAction, kind};
use super::service;
use crate::agent::{Host, ToolCall, ToolOutcome, Usage};
use crate::caller::CallerInfo;
use crate::conversations::events;
use crate::error::ApiError;
use crate::ops::Ctx;

/// Characters of a tool result kept (and shown to the model).
const RESULT_CHARS: usize = 16_000;

pub struct RunHost {
    pub ctx: Ctx,
    pub run: assistant_run::Model,
    /// Tools offered to this run, and which of them write.
    pub offered: HashSet<&'static str>,
    pub writes: HashSet<&'static str>,
    pub confirm_writes: bool,
    /// The write the run paused on.
    pub paused: Mutex<Option<ProposedAction>>,
}

impl RunHost {
    async fn record(&self, kind: &'static str, content: &str, data: Value) -> Result<(), String> {
        let ctx = &self.ctx;
        service::say(
            &ctx.db,
            &ctx.writes,
            &ctx.bus,
            &self.run,
            kind,
            content,
            Some(data),
        )
        .await
        .map(|_| ())
        .map_err(|e| e.to_string())
    }

    async fn call_tool(&self, call: ToolCall) -> Result<ToolOutcome, String> {
        let arguments: Value = match serde_json::from_str::<Value>(&call.arguments) {
            Ok(v @ Value::Object(_)) => v,
            Ok(Value::Null) | Err(_) if call.arguments.trim().is_empty() => json!({}),
            _ => {
                let error = error_value("VALIDATION_ERROR", "the arguments are not a JSON object");
                return Ok(ToolOutcome::Done(error.to_string()));
            }
        };
        if !self.offered.contains(call.name.as_str()) {
            let error = error_value(
                "NOT_FOUND",
                &format!("no tool named {:?} is available", call.name),
            );
            return Ok(ToolOutcome::Done(error.to_string()));
        }
        if self.writes.contains(call.name.as_str()) && self.confirm_writes {
            let action = ProposedAction {
                action_id: call.id.clone(),
                operation: call.name.clone(),
                arguments,
            };
            let data = serde_json::to_value(&action).map_err(|e| e.to_string())?;
            self.record(
                kind::ACTION_PROPOSED,
                &format!(
                    "Proposed action: {}. A participant can confirm or decline it.",
                    call.name
                ),
                data,
            )
            .await?;
            *self.paused.lock() = Some(action);
            return Ok(ToolOutcome::Paused);
        }
        self.record(
            kind::TOOL_CALL,
            &format!("Calling {}", call.name),
            json!({ "callId": call.id, "operation": call.name, "arguments": arguments }),
        )
        .await?;
        let result = run_tool(&self.ctx, &self.run, &call.name, &arguments).await;
        service::count(&self.ctx.db, &self.run.id, 0, 0, 1)
            .await
            .map_err(|e| e.to_string())?;
        self.result(&call.id, &call.name, result).await
    }

    /// Records a tool's result; what the model is told.
    pub async fn result(
        &self,
        call_id: &str,
        operation: &str,
        result: Result<Value, Value>,
    ) -> Result<ToolOutcome, String> {
        let (ok, value) = match result {
            Ok(v) => (true, v),
            Err(e) => (false, e),
        };
        let value = bounded(value);
        let summary = if ok {
            format!("{operation}: done")
        } else {
            let message = value
                .pointer("/error/message")
                .and_then(Value::as_str)
                .unwrap_or("failed");
            format!("{operation}: {message}")
        };
        let text = value.to_string();
        self.record(
            kind::TOOL_RESULT,
            &summary,
            json!({ "callId": call_id, "operation": operation, "ok": ok, "result": value }),
        )
        .await?;
        Ok(ToolOutcome::Done(text))
    }
}

/// A result the model and the room can take: whole when small, else its
/// beginning as text.
fn bounded(value: Value) -> Value {
    let text = value.to_string();
    if text.len() <= RESULT_CHARS {
        return value;
    }
    json!({ "truncated": true, "text": service::clip(&text, RESULT_CHARS) })
}

fn error_value(code: &str, message: &str) -> Value {
    json!({ "error": { "code": code, "message": message } })
}

/// The caller who directed the run, as now: `None` once the credential is
/// revoked or its user is gone.
pub async fn directing_caller(
    ctx: &Ctx,
    run: &assistant_run::Model,
) -> Result<Option<Arc<CallerInfo>>, ApiError> {
    let auth = ctx.get::<crate::auth::AuthService>()?;
    Ok(auth
        .authenticate_api_key(run.api_key_id)
        .await?
        .filter(|c| c.account_id() == run.account_id))
}

/// Runs one operation through the dispatcher as the run's directing caller
/// (re-read each time: a revoked key's run can do nothing more). `Ok`: the
/// REST envelope's `{data, meta?}`; `Err`: `{error: {code, message}}`.
pub async fn run_tool(
    ctx: &Ctx,
    run: &assistant_run::Model,
    operation: &str,
    arguments: &Value,
) -> Result<Value, Value> {
    let caller = match directing_caller(ctx, run).await {
        Ok(Some(c)) => c,
        Ok(None) => {
            return Err(error_value(
                "UNAUTHORIZED",
                "the credential that directed this turn is no longer valid",
            ));
        }
        Err(e) => return Err(api_error_value(&e)),
    };
    let args = arguments.as_object().cloned().unwrap_or_default();
    crate::ops::run_tool(ctx, caller, operation, &args).await
}

fn api_error_value(e: &ApiError) -> Value {
    json!({ "error": e.body() })
}

impl Host for RunHost {
    fn delta(&self, index: u64, text: &str) -> BoxFuture<'_, ()> {
        let event = events::delta(
            &self.run.account_id,
            &self.run.conversation_uid,
            &self.run.id,
            index,
            text,
        );
        Box::pin(async move { self.ctx.bus.publish(event).await })
    }

    fn said(&self, text: String) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let ctx = &self.ctx;
            service::say(
                &ctx.db,
                &ctx.writes,
                &ctx.bus,
                &self.run,
                kind::ANSWER,
                &text,
                None,
            )
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
        })
    }

    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutcome, String>> {
        Box::pin(self.call_tool(call))
    }

    fn used(&self, usage: Usage) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
            service::count(
                &self.ctx.db,
                &self.run.id,
                n(usage.prompt_tokens),
                n(usage.completion_tokens),
                0,
            )
            .await
            .map_err(|e| e.to_string())
        })
    }
}
