//! The registry's MCP servers: each registered operation of a surface is a
//! tool of the same name, its input schema the registry's (`{pathParams,
//! params, body}`) and its output schema the operation's output type, run
//! through the operation dispatcher with the caller the HTTP adapter
//! authenticated, so permissions and tenancy are the REST ones. No tool is
//! written here: an operation added to the registry is a tool of the
//! surface its path belongs to.
//!
//! - `/mcp/buyer`, the buying agent: every operation but the storefront
//!   operator's.
//! - `/mcp/storefront`, the storefront operator's agent: the operations
//!   under `/storefront/`.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ProgressNotificationParam, ReadResourceRequestParams, ReadResourceResponse, ServerCapabilities,
    ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::{Value, json};
use utoipa::ToSchema;

use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{self, Ctx, OperationCall, OperationDef, Pagination, schema};
use crate::widgets::{self, Widget};

/// Which operations an MCP server offers, and how it introduces itself.
#[derive(Debug)]
pub struct Surface {
    pub server_name: &'static str,
    pub instructions: &'static str,
    pub includes: fn(&OperationDef) -> bool,
    /// The widget showing a tool's results (MCP Apps); a surface with
    /// widgets also serves them as resources.
    pub widget_of: fn(&str) -> Option<&'static Widget>,
    pub has_widgets: bool,
}

fn is_storefront(def: &OperationDef) -> bool {
    def.path.starts_with("/storefront/")
}

/// `/mcp/buyer`.
pub static BUYER: Surface = Surface {
    server_name: "agentic-api-buyer",
    instructions: "Buyer operations of agentic-api: advertisers, product discovery, campaigns, \
                   media buys, seller accounts, webhooks. Each tool takes {pathParams, params, \
                   body} as its REST route does.",
    includes: |def| !is_storefront(def),
    widget_of: widgets::for_operation,
    has_widgets: true,
};

/// `/mcp/storefront`.
pub static STOREFRONT: Surface = Surface {
    server_name: "agentic-api-storefront",
    instructions: "Storefront operator operations of agentic-api: review buyers' account-mapping \
                   intakes (accept, reject, readmit) and see the media buys placed at the \
                   storefronts your account operates. \
                   Each tool takes {pathParams, params, body} as its REST route does.",
    includes: is_storefront,
    widget_of: |_| None,
    has_widgets: false,
};

/// One MCP session's server (rmcp makes one per session).
#[derive(Clone)]
pub struct RegistryTools {
    ctx: Ctx,
    surface: &'static Surface,
    /// [`tools`] of the surface, shared by every session.
    tools: Arc<Vec<Tool>>,
}

impl RegistryTools {
    pub fn new(ctx: Ctx, surface: &'static Surface, tools: Arc<Vec<Tool>>) -> Self {
        RegistryTools {
            ctx,
            surface,
            tools,
        }
    }
}

/// The surface's operations as MCP tools (built once per app, see
/// `crate::mcp::Endpoints`).
pub fn tools(operations: ops::Registry, surface: &Surface) -> Vec<Tool> {
    let mut tools: Vec<Tool> = operations
        .iter()
        .filter(|def| (surface.includes)(def))
        .map(|def| {
            tool(
                def.name,
                def.description,
                (def.input_schema)(),
                (def.output_schema)(),
            )
        })
        .collect();
    widgets::resources::declare(&mut tools, surface.widget_of);
    tools
}

/// A tool taking `input` and answering `data` as [`output_schema`] says.
pub(crate) fn tool(
    name: &'static str,
    description: &'static str,
    input: Value,
    data: Value,
) -> Tool {
    Tool::new(name, description, object(input)).with_raw_output_schema(object(output_schema(data)))
}

fn object(schema: Value) -> Arc<JsonObject> {
    match schema {
        Value::Object(m) => Arc::new(m),
        _ => Arc::default(),
    }
}

/// A tool's `outputSchema`: its `structuredContent` is `{data, meta?}` on
/// success (`data` as REST's envelope has it, `meta.pagination` on lists)
/// and a [`ToolError`] on failure. The error is a branch of the schema
/// too, since some clients (the TypeScript SDK's) check `isError` results
/// against it as well. The root is an object, as MCP asks.
pub(crate) fn output_schema(data: Value) -> Value {
    let meta = schema::object([("pagination", schema::of::<Pagination>(), true)]);
    let success = schema::object([("data", data, true), ("meta", meta, false)]);
    let mut out = schema::any_of([success, schema::of::<ToolError>()]);
    if let Some(map) = out.as_object_mut() {
        map.insert("type".into(), "object".into());
    }
    out
}

/// A failed call's `structuredContent` (AdCP-style).
#[derive(Debug, Serialize, ToSchema)]
pub struct ToolError {
    /// The REST error code (`VALIDATION_ERROR`, `NOT_FOUND`, ...).
    code: String,
    message: String,
    recovery: Recovery,
    /// The input field at fault, when one is.
    #[serde(skip_serializing_if = "Option::is_none")]
    field: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    details: Option<Value>,
}

/// What a caller can do about an error.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// Try again later.
    Transient,
    /// Fix the input and try again.
    Correctable,
    /// Trying again will not help.
    Terminal,
}

/// An AdCP-style error as a tool result: `isError`, and `{code, message,
/// field?, recovery}` in `structuredContent`.
pub fn error_result(err: &ApiError) -> CallToolResult {
    let status = actix_web::ResponseError::status_code(err).as_u16();
    let e = err.body();
    let recovery = match status {
        429 | 500..=599 => Recovery::Transient,
        400 | 409 | 422 => Recovery::Correctable,
        _ => Recovery::Terminal,
    };
    let code = e["code"].as_str().unwrap_or("ERROR").to_string();
    let message = e["message"].as_str().unwrap_or_default().to_string();
    let text = format!("{code}: {message}");
    let out = ToolError {
        code,
        message,
        recovery,
        field: e.get("field").and_then(Value::as_str).map(String::from),
        details: e.get("details").filter(|d| !d.is_null()).cloned(),
    };
    let mut result =
        CallToolResult::structured_error(serde_json::to_value(out).unwrap_or_default());
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

/// A surface's capabilities: tools, and resources where it has widgets.
pub(crate) fn capabilities(has_widgets: bool) -> ServerCapabilities {
    if has_widgets {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .build()
    } else {
        ServerCapabilities::builder().enable_tools().build()
    }
}

/// `resources/read` of a widget.
pub(crate) fn read_widget(uri: &str) -> Result<ReadResourceResponse, ErrorData> {
    widgets::resources::read(uri)
        .map(Into::into)
        .ok_or_else(|| ErrorData::resource_not_found(format!("no resource {uri:?}"), None))
}

/// A tool's answer: a widget's result where one shows it.
pub(crate) fn answer(
    name: &str,
    out: Result<ops::OperationOutput, ApiError>,
    widget: Option<&Widget>,
) -> CallToolResult {
    match out {
        Ok(out) => {
            let mut result = success_result(name, out.data, out.meta);
            if let Some(w) = widget {
                widgets::resources::show(&mut result, name, w);
            }
            result
        }
        Err(err) => error_result(&err),
    }
}

impl ServerHandler for RegistryTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities(self.surface.has_widgets))
            .with_server_info(Implementation::new(
                self.surface.server_name,
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(self.surface.instructions)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.as_ref().clone()))
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(ListResourcesResult::with_all_items(
            if self.surface.has_widgets {
                widgets::resources::list()
            } else {
                Vec::new()
            },
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if !self.surface.has_widgets {
            return Err(ErrorData::resource_not_found(
                format!("no resource {:?}", request.uri),
                None,
            ));
        }
        read_widget(&request.uri)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self
            .ctx
            .operations
            .find(&name)
            .is_some_and(|d| (self.surface.includes)(d))
        {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            ));
        }
        let Some(caller) = caller_of(&context) else {
            return Ok(error_result(&ApiError::Unauthorized("no caller".into())).into());
        };
        let args = request.arguments.unwrap_or_default();
        let call = match OperationCall::from_tool_arguments(&name, &args) {
            Ok(c) => c,
            Err(e) => return Ok(error_result(&e).into()),
        };
        let out = run(&self.ctx, &context, caller, call).await;
        Ok(answer(&name, out, (self.surface.widget_of)(&name)).into())
    }
}
