//! The buyer agent's MCP server: every registered operation is a tool of
//! the same name, its input schema the registry's (`{pathParams, params,
//! body}`), run through the operation dispatcher with the caller the HTTP
//! adapter authenticated, so permissions and tenancy are the REST ones. No
//! tool is written here: an operation added to the registry is a tool.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, PaginatedRequestParams, ProgressNotificationParam, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

use crate::auth::CallerInfo;
use crate::error::ApiError;
use crate::ops::{self, Ctx, OperationCall};

/// One MCP session's server (rmcp makes one per session).
#[derive(Clone)]
pub struct BuyerTools {
    ctx: Ctx,
}

impl BuyerTools {
    pub fn new(ctx: Ctx) -> Self {
        BuyerTools { ctx }
    }
}

/// The registry as MCP tools.
pub fn tools() -> Vec<Tool> {
    ops::registry()
        .map(|def| {
            let schema = match (def.input_schema)() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            Tool::new(def.name, def.description, Arc::new(schema))
        })
        .collect()
}

/// An AdCP-style error as a tool result: `isError`, and `{code, message,
/// field?, recovery}` in `structuredContent`.
pub fn error_result(err: &ApiError) -> CallToolResult {
    let status = actix_web::ResponseError::status_code(err).as_u16();
    let e = err.body();
    let recovery = match status {
        429 | 500..=599 => "transient",
        400 | 409 | 422 => "correctable",
        _ => "terminal",
    };
    let mut out = json!({
        "code": e["code"],
        "message": e["message"],
        "recovery": recovery,
    });
    if let Some(field) = e.get("field").filter(|f| !f.is_null()) {
        out["field"] = field.clone();
    }
    if let Some(details) = e.get("details").filter(|d| !d.is_null()) {
        out["details"] = details.clone();
    }
    let text = format!(
        "{}: {}",
        e["code"].as_str().unwrap_or("ERROR"),
        e["message"].as_str().unwrap_or("")
    );
    let mut result = CallToolResult::structured_error(out);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// A successful call: the REST response's `data` (and `meta`) as
/// `structuredContent`, and a one-line summary as text.
pub(crate) fn success_result(name: &str, data: Value, meta: Option<Value>) -> CallToolResult {
    let summary = match (&data, &meta) {
        (Value::Array(items), Some(m)) => format!(
            "{name}: {} item(s) of {}",
            items.len(),
            m["pagination"]["total"]
        ),
        (Value::Array(items), None) => format!("{name}: {} item(s)", items.len()),
        _ => format!("{name}: done"),
    };
    let mut structured = json!({ "data": data });
    if let Some(meta) = meta {
        structured["meta"] = meta;
    }
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(summary)];
    result
}

/// Runs an operation call for a tool: on the actix worker that took the HTTP
/// request (operations start actors; rmcp runs handlers as plain tokio
/// tasks), with progress reports forwarded as `notifications/progress` when
/// the call carries a progress token.
pub async fn run(
    ctx: &Ctx,
    context: &RequestContext<RoleServer>,
    caller: Arc<CallerInfo>,
    call: OperationCall,
) -> Result<ops::OperationOutput, ApiError> {
    let Some(arbiter) = arbiter_of(context) else {
        return Err(ApiError::internal("no worker for the call"));
    };
    let ctx = ctx.clone();
    let (done, result) = tokio::sync::oneshot::channel();
    match context.meta.get_progress_token() {
        Some(token) => {
            // Reports go out in order, all before the result.
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ProgressNotificationParam>();
            let peer = context.peer.clone();
            let forward = tokio::spawn(async move {
                while let Some(p) = rx.recv().await {
                    let _ = peer.notify_progress(p).await;
                }
            });
            let sink: ops::progress::Sink = Arc::new(move |progress, total, message| {
                let mut p = ProgressNotificationParam::new(token.clone(), progress);
                p.total = total;
                p.message = message;
                let _ = tx.send(p);
            });
            arbiter.spawn(async move {
                let out = ops::progress::scope(sink, ops::dispatch(&ctx, caller, call)).await;
                let _ = done.send(out);
            });
            let out = result.await;
            let _ = forward.await;
            out
        }
        None => {
            arbiter.spawn(async move {
                let _ = done.send(ops::dispatch(&ctx, caller, call).await);
            });
            result.await
        }
    }
    .unwrap_or_else(|_| {
        Err(ApiError::ServiceUnavailable(
            "the server is stopping".into(),
        ))
    })
}

fn arbiter_of(context: &RequestContext<RoleServer>) -> Option<actix_rt::ArbiterHandle> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<actix_rt::ArbiterHandle>())
        .cloned()
}

pub(crate) fn caller_of(context: &RequestContext<RoleServer>) -> Option<Arc<CallerInfo>> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<Arc<CallerInfo>>())
        .cloned()
}

impl ServerHandler for BuyerTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "agentic-api-buyer",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(
                "Buyer operations of agentic-api: advertisers, product discovery, webhooks. \
                 Each tool takes {pathParams, params, body} as its REST route does.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if ops::find(&name).is_none() {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            ));
        }
        let Some(caller) = caller_of(&context) else {
            return Ok(error_result(&ApiError::Unauthorized("no caller".into())).into());
        };
        let args = request.arguments.unwrap_or_default();
        let call: Result<OperationCall, _> = serde_json::from_value(json!({
            "operation": name,
            "pathParams": args.get("pathParams").cloned().unwrap_or(json!({})),
            "params": args.get("params").cloned().unwrap_or(json!({})),
            "body": args.get("body").cloned().unwrap_or(Value::Null),
        }));
        let call = match call {
            Ok(c) => c,
            Err(e) => {
                return Ok(error_result(&ApiError::invalid("arguments", e.to_string())).into());
            }
        };
        if let Some(extra) = args
            .keys()
            .find(|k| !["pathParams", "params", "body"].contains(&k.as_str()))
        {
            return Ok(error_result(&ApiError::invalid(
                extra,
                "unknown argument; a tool takes pathParams, params and body",
            ))
            .into());
        }
        let out = run(&self.ctx, &context, caller, call).await;
        Ok(match out {
            Ok(out) => success_result(&name, out.data, out.meta),
            Err(err) => error_result(&err),
        }
        .into())
    }
}
