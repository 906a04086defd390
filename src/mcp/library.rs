//! `/mcp/v3`'s library tools and the Page capability bridge.
//!
//! Public tools (thin adapters onto the library's operations):
//! - `save_material`: with `materialId`, `update_material` (fields and a
//!   lifecycle move); without, `create_material_upload` when `contentType`
//!   or `sizeBytes` is given (a file's reservation), else `create_material`
//!   (a note).
//! - `save_library_request`: `update_library_request` with `requestId`,
//!   else `create_library_request`.
//! - `save_rfp`: `update_rfp` with `rfpId`, else `create_rfp`.
//! - `open_proposal_pass`: `open_proposal_pass` of `rfpId`.
//! - `open_page`: a Page capability for the Teach or Library page, in the
//!   result's `_meta` only ([`crate::library::page`]).
//!
//! Host-only aliases (`teach_*`, `library_*`, hidden from the model with
//! `_meta.ui.visibility: ["app"]`): each checks the capability, then its
//! allowlist, then runs the one public tool it maps onto.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{CallToolResult, MetaObject, Tool};
use rmcp::service::RequestContext;
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::tools::{error_result, success_result, tool};
use super::v3::{V3Tools, body_of, call, only, outputs};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::library::{materials, page};
use crate::ops::{self, Registry, schema};

/// The public library tools.
pub const PUBLIC: [&str; 5] = [
    "save_material",
    "save_library_request",
    "save_rfp",
    "open_proposal_pass",
    "open_page",
];

/// Is `name` one of this module's tools?
pub fn is_tool(name: &str) -> bool {
    PUBLIC.contains(&name) || page::find(name).is_some()
}

/// What `open_page` and the renewals answer (the token is only in `_meta`).
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageOut {
    /// `teach` or `library`.
    pub page: String,
    pub resource_id: Option<String>,
    pub expires_at: chrono::DateTime<chrono::Utc>,
}

fn save_material_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "materialId": {"type": "string", "description": "change this material instead of creating one"},
            "title": {"type": "string", "minLength": 1, "maxLength": 255},
            "description": {"type": "string", "maxLength": 20000},
            "status": {"type": "string", "enum": ["draft", "candidate", "accepted", "rejected", "archived"],
                "description": "a lifecycle move (with materialId): draft finalises an upload; candidate proposes; accepted (the owner only) or rejected (anyone else, with rejectionReason) decides a candidate; archived"},
            "rejectionReason": {"type": "string", "minLength": 1, "maxLength": 1000},
            "advertiserId": {"type": "string"},
            "destination": {"type": "object", "properties": {
                "type": {"type": "string", "enum": ["library", "advertiser"]},
                "id": {"type": "string"}}, "required": ["type"]},
            "fileName": {"type": "string", "description": "a new file: its name, for people"},
            "contentType": {"type": "string", "description": "a new file: its type (PDF, .pptx, .xlsx, CSV, PNG, JPEG, GIF, WebP); answers an upload URL"},
            "sizeBytes": {"type": "integer", "minimum": 1, "maximum": crate::library::uploads::MAX_BYTES},
        },
        "additionalProperties": false,
    })
}

/// `create_*`'s body with the id that switches to `update_*`, nothing required.
fn save_schema(registry: Registry, create: &str, id: &str) -> Value {
    let mut body = body_of(registry, create);
    if let Some(props) = body.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            id.into(),
            json!({"type": "string", "description": "change this one instead of creating one"}),
        );
    }
    if let Some(o) = body.as_object_mut() {
        o.remove("required");
    }
    body
}

fn public_input(registry: Registry, name: &str) -> Value {
    match name {
        "save_material" => save_material_schema(),
        "save_library_request" => save_schema(registry, "create_library_request", "requestId"),
        "save_rfp" => save_schema(registry, "create_rfp", "rfpId"),
        "open_proposal_pass" => json!({
            "type": "object",
            "properties": {
                "rfpId": {"type": "string", "minLength": 1},
                "discoveryId": {"type": "string"},
            },
            "required": ["rfpId"],
            "additionalProperties": false,
        }),
        _ => json!({"type": "object"}),
    }
}

fn public_output(registry: Registry, name: &str) -> Value {
    match name {
        "save_material" => outputs(
            registry,
            [
                "create_material",
                "update_material",
                "create_material_upload",
            ],
        ),
        "save_library_request" => outputs(
            registry,
            ["create_library_request", "update_library_request"],
        ),
        "save_rfp" => outputs(registry, ["create_rfp", "update_rfp"]),
        "open_proposal_pass" => outputs(registry, ["open_proposal_pass"]),
        _ => schema::of::<PageOut>(),
    }
}

/// The library tools of `/mcp/v3`; `search` and `get` (whose tables list
/// the library's kinds) give the aliases of theirs their schemas.
pub fn tools(registry: Registry, search: &Tool, get: &Tool) -> Vec<Tool> {
    let mut out = vec![
        tool(
            "save_material",
            "Save a material: without materialId, reserve a file (contentType and sizeBytes: answers a single-use upload URL for a PUT) or write a note; with materialId, change its title or description and move it through its lifecycle (status draft finalises an upload, candidate proposes it; the owner accepts; anyone else rejects with rejectionReason).",
            save_material_schema(),
            public_output(registry, "save_material"),
        ),
        tool(
            "save_library_request",
            "Create a library request (an ask for materials), or change the one named by requestId (status closed closes it).",
            public_input(registry, "save_library_request"),
            public_output(registry, "save_library_request"),
        ),
        tool(
            "save_rfp",
            "Create an RFP (request for proposals) about an advertiser, or change the one named by rfpId: fields, status forward (draft, open, closed), appendTurn {role: buyer|seller, text} adds a turn.",
            public_input(registry, "save_rfp"),
            public_output(registry, "save_rfp"),
        ),
        tool(
            "open_proposal_pass",
            "Open a proposal pass over an RFP (optionally drawing on a discovery session); while one is open, answers that one.",
            public_input(registry, "open_proposal_pass"),
            public_output(registry, "open_proposal_pass"),
        ),
        tool(
            "open_page",
            "Open the Teach or Library page: answers the page and when its access expires; the host receives the page's capability out of band.",
            json!({
                "type": "object",
                "properties": {
                    "page": {"type": "string", "enum": page::PAGES},
                    "resourceId": {"type": "string", "description": "bind the page to one material, RFP or library request"},
                },
                "required": ["page"],
                "additionalProperties": false,
            }),
            schema::of::<PageOut>(),
        ),
    ];
    for alias in page::ALIASES.iter() {
        // search and get: their own output schema, whole.
        let (input, output, whole) = match alias.tool {
            None => (
                json!({"type": "object", "properties": {}}),
                schema::of::<PageOut>(),
                None,
            ),
            Some("search") => (
                Value::Object(search.input_schema.as_ref().clone()),
                Value::Null,
                search.output_schema.clone(),
            ),
            Some("get") => (
                Value::Object(get.input_schema.as_ref().clone()),
                Value::Null,
                get.output_schema.clone(),
            ),
            Some(t) => (public_input(registry, t), public_output(registry, t), None),
        };
        let mut props = Map::new();
        props.insert(
            "capability".into(),
            json!({"type": "string", "description": "the Page capability from open_page's _meta"}),
        );
        for f in alias.fields {
            props.insert(
                (*f).into(),
                input["properties"].get(*f).cloned().unwrap_or(json!({})),
            );
        }
        let mut schema = json!({
            "type": "object",
            "properties": props,
            "required": ["capability"],
            "additionalProperties": false,
        });
        if let Some(defs) = input.get("$defs") {
            schema["$defs"] = defs.clone();
        }
        let input = schema;
        let mut meta = Map::new();
        meta.insert("ui".into(), json!({"visibility": ["app"]}));
        let description = "Host-only: a Page's call, through its capability.";
        let t = match whole {
            Some(schema) => Tool::new(alias.name, description, Arc::new(as_object(input)))
                .with_raw_output_schema(schema),
            None => tool(alias.name, description, input, output),
        };
        out.push(t.with_meta(MetaObject(meta)));
    }
    out
}

fn as_object(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn text(args: &Map<String, Value>, name: &str) -> Result<Option<String>, ApiError> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::invalid(name, "must be a string")),
    }
}

/// The MCP session a request names.
fn session_of(context: &RequestContext<RoleServer>) -> Option<String> {
    context
        .extensions
        .get::<http::request::Parts>()
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn with_capability(name: &str, issued: &page::Issued) -> CallToolResult {
    let data = json!({
        "page": issued.page,
        "resourceId": issued.resource_id,
        "expiresAt": issued.expires_at,
    });
    let mut result = success_result(name, data, None);
    let mut meta = Map::new();
    meta.insert(page::META_KEY.into(), issued.meta());
    result.meta = Some(MetaObject(meta));
    result
}

impl V3Tools {
    /// Runs a library tool or alias (`None` for any other name).
    pub(super) async fn library(
        &self,
        name: &str,
        args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
    ) -> Option<CallToolResult> {
        if !is_tool(name) {
            return None;
        }
        let result = match name {
            "open_page" => self.open_page(args, context, caller).await,
            _ => match page::find(name) {
                Some(alias) => self.alias(alias, args, context, caller).await,
                None => self
                    .public(name, args, context, caller)
                    .await
                    .map(|out| success_result(name, out.data, out.meta)),
            },
        };
        Some(result.unwrap_or_else(|e| error_result(&e)))
    }

    /// A public library tool, through its operations.
    pub(super) async fn public(
        &self,
        name: &str,
        mut args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
    ) -> Result<ops::OperationOutput, ApiError> {
        let run = |op: &str, path: Value, body: Value| call(op, path, json!({}), body);
        let c = match name {
            "save_material" => {
                only(
                    &args,
                    &[
                        "materialId",
                        "title",
                        "description",
                        "status",
                        "rejectionReason",
                        "advertiserId",
                        "destination",
                        "fileName",
                        "contentType",
                        "sizeBytes",
                    ],
                )?;
                match text(&args, "materialId")? {
                    Some(id) => {
                        args.remove("materialId");
                        if let Some(f) = ["fileName", "contentType", "sizeBytes"]
                            .into_iter()
                            .find(|f| args.contains_key(*f))
                        {
                            return Err(ApiError::invalid(
                                f,
                                "only for a new file (without materialId)",
                            ));
                        }
                        run(
                            "update_material",
                            json!({"materialId": id}),
                            Value::Object(args),
                        )?
                    }
                    None => {
                        if let Some(f) = ["status", "rejectionReason"]
                            .into_iter()
                            .find(|f| args.contains_key(*f))
                        {
                            return Err(ApiError::invalid(
                                f,
                                "a new material starts its lifecycle (a file reserved, a note draft): move it once saved, with its materialId",
                            ));
                        }
                        if args.contains_key("contentType") || args.contains_key("sizeBytes") {
                            run("create_material_upload", json!({}), Value::Object(args))?
                        } else {
                            run("create_material", json!({}), Value::Object(args))?
                        }
                    }
                }
            }
            "save_library_request" => match text(&args, "requestId")? {
                Some(id) => {
                    args.remove("requestId");
                    run(
                        "update_library_request",
                        json!({"requestId": id}),
                        Value::Object(args),
                    )?
                }
                None => run("create_library_request", json!({}), Value::Object(args))?,
            },
            "save_rfp" => match text(&args, "rfpId")? {
                Some(id) => {
                    args.remove("rfpId");
                    run("update_rfp", json!({"rfpId": id}), Value::Object(args))?
                }
                None => run("create_rfp", json!({}), Value::Object(args))?,
            },
            "open_proposal_pass" => {
                only(&args, &["rfpId", "discoveryId"])?;
                let id = text(&args, "rfpId")?
                    .ok_or_else(|| ApiError::invalid("rfpId", "is required (a string)"))?;
                let mut body = Map::new();
                if let Some(d) = text(&args, "discoveryId")? {
                    body.insert("discoveryId".into(), json!(d));
                }
                run(
                    "open_proposal_pass",
                    json!({"rfpId": id}),
                    Value::Object(body),
                )?
            }
            _ => return Err(ApiError::invalid("name", "unknown tool")),
        };
        self.dispatch(context, caller, c).await
    }

    async fn open_page(
        &self,
        args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
    ) -> Result<CallToolResult, ApiError> {
        only(&args, &["page", "resourceId"])?;
        let p = text(&args, "page")?.unwrap_or_default();
        if !page::PAGES.contains(&p.as_str()) {
            return Err(ApiError::invalid("page", "must be teach or library"));
        }
        let resource = text(&args, "resourceId")?;
        let db = &self.ctx().db;
        if let Some(r) = &resource
            && !page::resource_exists(db, caller, r).await?
        {
            return Err(ApiError::not_found("resource"));
        }
        let session = session_of(context)
            .ok_or_else(|| ApiError::invalid("Mcp-Session-Id", "open_page needs an MCP session"))?;
        let ttl = self.ctx().config.page_capability_ttl;
        let issued = page::issue(db, caller, &session, &p, resource, ttl).await?;
        Ok(with_capability("open_page", &issued))
    }

    async fn alias(
        &self,
        alias: &'static page::Alias,
        mut args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
    ) -> Result<CallToolResult, ApiError> {
        let token = args.remove("capability");
        let db = &self.ctx().db;
        let session = session_of(context);
        let cap = page::check(db, caller, session.as_deref(), token.as_ref(), alias.page).await?;
        let Some(tool) = alias.tool else {
            page::admit(alias, &cap, &args)?;
            let ttl = self.ctx().config.page_capability_ttl;
            let issued = page::renew(db, &cap, caller, ttl).await?;
            return Ok(with_capability(alias.name, &issued));
        };
        page::admit(alias, &cap, &args)?;
        if alias.refuse_destination_candidate
            && let Some(id) = args.get("materialId").and_then(Value::as_str)
            && let Ok(m) = materials::owned(db, caller, id).await
            && materials::destination_owned_candidate(&m, caller)
        {
            return Err(page::denied(
                "destination_candidate",
                "a candidate proposed to your side is decided with save_material, not on this page",
            ));
        }
        if let Some(kind) = alias.kind {
            args.insert("type".into(), json!(kind));
        }
        let out = match tool {
            "search" | "get" => self.handle(tool, args, context, caller).await,
            _ => self.public(tool, args, context, caller).await,
        }?;
        Ok(success_result(alias.name, out.data, out.meta))
    }
}
