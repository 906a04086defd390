//! The agent interface: given a conversation's context (as chat messages),
//! the tools the caller may use and a [`Host`] that runs them and keeps what
//! is said, produce a reply, streamed. One interface for every agent of the
//! server (the room's assistant; the fax pipeline's storefront agent); the
//! model behind it is a [`Backend`]:
//!
//! - [`openai::OpenAi`]: any OpenAI-compatible chat-completions endpoint,
//!   with tool calling and streaming, over the guarded outbound client;
//! - [`offline::Offline`]: a built-in deterministic assistant for servers
//!   without a model (and `serve --demo`), which calls the same tools.
//!
//! The loop ([`reply`]) alternates model turns and tool calls until the
//! model answers without calling a tool, a tool pauses the reply (a write
//! awaiting a person's confirmation) or a limit is reached. Timeouts and
//! cancellation belong to the caller: dropping the future stops everything.

pub mod offline;
pub mod openai;

use std::sync::Arc;

use futures_util::future::BoxFuture;
use serde_json::Value;

/// Who a chat message is from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

/// Where a user message came from: the person directing the reply, or
/// someone else in the conversation (context, never instructions), or an
/// outside document the agent answers (a received fax: untrusted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    Turn,
    Room,
    Document,
}

#[derive(Debug, Clone)]
pub struct ChatMessage {
    pub role: Role,
    pub content: String,
    /// A user message's author, for the model (`name`).
    pub name: Option<String>,
    /// User messages: a directed turn or a room message.
    pub origin: Option<Origin>,
    /// Assistant messages: the tools it called.
    pub tool_calls: Vec<ToolCall>,
    /// Tool messages: the call answered.
    pub tool_call_id: Option<String>,
}

impl ChatMessage {
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content.into())
    }

    pub fn user(origin: Origin, name: Option<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            name,
            origin: Some(origin),
            ..Self::new(Role::User, content.into())
        }
    }

    pub fn assistant(content: impl Into<String>, tool_calls: Vec<ToolCall>) -> Self {
        ChatMessage {
            tool_calls,
            ..Self::new(Role::Assistant, content.into())
        }
    }

    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        ChatMessage {
            tool_call_id: Some(call_id.into()),
            ..Self::new(Role::Tool, content.into())
        }
    }

    fn new(role: Role, content: String) -> Self {
        ChatMessage {
            role,
            content,
            name: None,
            origin: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
        }
    }
}

/// A tool the model asked for: `arguments` is the JSON text it wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// A tool the model may call.
#[derive(Debug, Clone)]
pub struct ToolSpec {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments (an object).
    pub parameters: Value,
}

/// Tokens a model turn used, as the backend reports them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// One model turn's input.
pub struct Request<'a> {
    pub messages: &'a [ChatMessage],
    pub tools: &'a [ToolSpec],
    /// Most tokens the turn may produce.
    pub max_tokens: u32,
}

/// One model turn's output: text, tool calls, or both.
#[derive(Debug, Clone, Default)]
pub struct Turn {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// Why a backend could not produce a turn. Messages name no secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AgentError {
    #[error("the assistant's model could not be reached: {0}")]
    Unreachable(String),
    #[error("the assistant's model answered HTTP {status}: {message}")]
    Status { status: u16, message: String },
    #[error("the assistant's model sent an answer that could not be read: {0}")]
    Protocol(String),
}

impl AgentError {
    /// A stable, short name for records and clients.
    pub fn code(&self) -> &'static str {
        match self {
            AgentError::Unreachable(_) => "backend_unreachable",
            AgentError::Status { .. } => "backend_error",
            AgentError::Protocol(_) => "backend_protocol",
        }
    }
}

/// Text pieces of a turn, sent as they arrive.
pub type Deltas = tokio::sync::mpsc::UnboundedSender<String>;

/// A model.
pub trait Backend: Send + Sync {
    /// What it is, for logs and records (never a secret).
    fn describe(&self) -> String;

    /// One model turn. Text is sent to `deltas` piece by piece as it is
    /// produced, and the whole turn is returned at its end.
    fn turn<'a>(
        &'a self,
        request: Request<'a>,
        deltas: Deltas,
    ) -> BoxFuture<'a, Result<Turn, AgentError>>;
}

/// What a tool call came to.
#[derive(Debug, Clone)]
pub enum ToolOutcome {
    /// The result (or error) for the model, as text (JSON).
    Done(String),
    /// The reply stops here (the call waits for a person); it is resumed
    /// later from the host's records.
    Paused,
}

/// What the reply's owner does for it: keep what is said, show it growing,
/// run tools. Host errors (a database gone) end the reply.
pub trait Host: Send + Sync {
    /// Part of the answer being produced (shown, not kept); `index` counts
    /// the pieces of the reply from 0.
    fn delta(&self, index: u64, text: &str) -> BoxFuture<'_, ()>;
    /// A finished piece of the answer, to keep.
    fn said(&self, text: String) -> BoxFuture<'_, Result<(), String>>;
    /// Runs one tool call (recording it as the host sees fit).
    fn call(&self, call: ToolCall) -> BoxFuture<'_, Result<ToolOutcome, String>>;
    /// Tokens used by a model turn.
    fn used(&self, usage: Usage) -> BoxFuture<'_, Result<(), String>>;
}

/// Per-reply bounds (the time bound is the caller's).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_tool_calls: u32,
    /// Tokens the model may produce over the whole reply.
    pub max_tokens: u32,
}

/// How a reply ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The model answered without calling a tool.
    Answered,
    /// A tool call waits for a person.
    Paused,
    /// The model wanted more tool calls than allowed.
    ToolLimit,
    /// The model produced as many tokens as allowed.
    TokenLimit,
}

/// Why a reply failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReplyError {
    #[error(transparent)]
    Backend(#[from] AgentError),
    #[error("{0}")]
    Host(String),
}

/// Runs model turns and tool calls until the reply ends. `messages` is the
/// context (system prompt first); the reply's own turns are appended.
pub async fn reply(
    backend: &dyn Backend,
    mut messages: Vec<ChatMessage>,
    tools: &[ToolSpec],
    host: &dyn Host,
    limits: Limits,
) -> Result<Ended, ReplyError> {
    let mut calls = 0u32;
    let mut produced = 0u64;
    let mut index = 0u64;
    loop {
        let left = u64::from(limits.max_tokens).saturating_sub(produced);
        if left == 0 {
            return Ok(Ended::TokenLimit);
        }
        let request = Request {
            messages: &messages,
            tools,
            max_tokens: u32::try_from(left).unwrap_or(u32::MAX),
        };
        let turn = stream_turn(backend, request, host, &mut index).await?;
        produced += turn.usage.completion_tokens;
        host.used(turn.usage).await.map_err(ReplyError::Host)?;
        if !turn.text.trim().is_empty() {
            host.said(turn.text.clone())
                .await
                .map_err(ReplyError::Host)?;
        }
        if turn.tool_calls.is_empty() {
            return Ok(Ended::Answered);
        }
        messages.push(ChatMessage::assistant(
            turn.text.clone(),
            turn.tool_calls.clone(),
        ));
        for call in turn.tool_calls {
            if calls >= limits.max_tool_calls {
                return Ok(Ended::ToolLimit);
            }
            calls += 1;
            let id = call.id.clone();
            match host.call(call).await.map_err(ReplyError::Host)? {
                ToolOutcome::Done(result) => messages.push(ChatMessage::tool(id, result)),
                ToolOutcome::Paused => return Ok(Ended::Paused),
            }
        }
    }
}

/// One model turn, its text pieces passed to the host as they come.
async fn stream_turn(
    backend: &dyn Backend,
    request: Request<'_>,
    host: &dyn Host,
    index: &mut u64,
) -> Result<Turn, ReplyError> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let turn = backend.turn(request, tx);
    tokio::pin!(turn);
    let result = loop {
        tokio::select! {
            biased;
            Some(piece) = rx.recv() => {
                host.delta(*index, &piece).await;
                *index += 1;
            }
            result = &mut turn => break result,
        }
    };
    while let Ok(piece) = rx.try_recv() {
        host.delta(*index, &piece).await;
        *index += 1;
    }
    Ok(result?)
}

/// The model a server's agents use, made once at start: the configured
/// endpoint (with its own guarded client), else the offline assistant.
pub fn from_config(config: &crate::config::Config) -> Arc<dyn Backend> {
    let Some(url) = &config.assistant_url else {
        return Arc::new(offline::Offline);
    };
    let options = crate::net::OutboundOptions {
        // A model may think a while before its first byte.
        request_timeout: std::time::Duration::from_secs(config.assistant_run_seconds),
        ..Default::default()
    };
    match crate::net::Outbound::start(config.url_policy(), options) {
        Ok(outbound) => Arc::new(openai::OpenAi::new(
            url.clone(),
            config.assistant_model.clone(),
            config.assistant_api_key.clone(),
            outbound,
        )),
        Err(e) => {
            tracing::error!(error = %e, "cannot start the model's client; using the offline assistant");
            Arc::new(offline::Offline)
        }
    }
}
