//! `/mcp/v3`: the typed agent tools of the spec's v3 surface, for the
//! domains that exist now. Each is a thin adapter that builds an operation
//! call and runs it through the same dispatcher as REST and `/mcp/buyer`,
//! so permissions, tenancy, validation and errors are the operations' own;
//! `save_campaign`, whose steps must happen together, checks each step's
//! declared access and parses the body as the operations do, then runs
//! the campaign service's steps in one transaction.
//!
//! - `get_status`: who is calling and what the account has (counts).
//! - `search`: a page of one kind of record (`advertiser`, `storefront`,
//!   `webhook_subscription`, `conversation`, `audit_log`, `campaign`,
//!   `material`, `library_request`, `rfp`); archived advertisers only with
//!   `includeArchived: true`; the library's kinds filter by `status` and
//!   `advertiserId`.
//! - `get`: one record by id (`advertiser`, `campaign`, a `discovery`
//!   snapshot, `material`, `rfp`, or `rfp_turn` with id `{rfpId}:{turn}`).
//! - The library's tools and the Page capability bridge: [`super::library`].
//! - `save_advertiser`: creates an advertiser, or updates the one named by
//!   `advertiserId` with the fields given; `isArchived` archives or
//!   restores it, with those fields, in one transaction.
//! - `save_campaign`: creates or updates a campaign, then applies
//!   `isArchived` and `isPaused` (archive, restore, pause, resume), all in
//!   one transaction; pause and resume then reach the sellers; with
//!   `desiredPhase: "active"` it then launches (`execute_campaign`).
//! - `save_media_buy`: `create_media_buys` (stage or execute a cart).
//! - `get_delivery`: `get_media_buy_status` of a campaign: each buy's
//!   status and its seller's latest delivery report, and under `metrics`
//!   `get_reporting_metrics` of the campaign (`groupBy`, `startDate`,
//!   `endDate` passed on; day by default).
//!
//! Each tool's `outputSchema` is that of the operations behind it.

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, Implementation, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use super::tools::{answer, caller_of, capabilities, error_result, read_widget, run, tool};
use crate::buyer::advertisers::model::AdvertiserUpdate;
use crate::buyer::advertisers::service as advertisers;
use crate::buyer::campaigns::model::CampaignIn;
use crate::buyer::campaigns::service::{self as campaigns, Save};
use crate::caller::{AccountInfo, CallerInfo, UserInfo};
use crate::error::ApiError;
use crate::ops::{self, Ctx, OperationCall, Registry, schema};
use crate::types::Permission;
use crate::widgets::{self, Widget};

const TOOL_NAMES: &[&str] = &[
    "get_status",
    "search",
    "get",
    "save_advertiser",
    "save_campaign",
    "save_media_buy",
    "save_connection",
    "get_delivery",
    "open_notifications",
];

/// `search` kinds and the list operation behind each.
const SEARCHES: &[(&str, &str)] = &[
    ("advertiser", "list_advertisers"),
    ("storefront", "list_storefronts"),
    ("webhook_subscription", "list_webhook_subscriptions"),
    ("conversation", "list_conversations"),
    ("audit_log", "list_audit_logs"),
    ("campaign", "list_campaigns"),
    ("material", "list_materials"),
    ("library_request", "list_library_requests"),
    ("rfp", "list_rfps"),
];

/// `search` kinds that take `status` and `advertiserId` filters.
const FILTERED: &[&str] = &["material", "library_request", "rfp"];

/// `get` kinds: the operation and the path parameter the id fills.
const GETS: &[(&str, &str, &str)] = &[
    ("advertiser", "get_advertiser", "advertiserId"),
    ("campaign", "get_campaign", "campaignId"),
    ("discovery", "browse_discovery", "discoveryId"),
    ("material", "get_material", "materialId"),
    ("rfp", "get_rfp", "rfpId"),
    // The id is `{rfpId}:{turn}`.
    ("rfp_turn", "get_rfp_turn", "rfpId"),
];

/// The widget showing a v3 tool's result: by tool, or for `get` by the
/// kind of record asked for.
fn widget_of(name: &str, args: &Map<String, Value>) -> Option<&'static Widget> {
    if name == "get" {
        return match args.get("type").and_then(Value::as_str) {
            Some("advertiser") => widgets::find("advertiser-card"),
            Some("campaign") => widgets::find("campaign-summary"),
            Some("discovery") => widgets::find("discovery-results"),
            _ => None,
        };
    }
    widgets::for_v3_tool(name)
}

/// The operations `save_campaign` may run.
const CAMPAIGN_STEPS: &[&str] = &[
    "create_campaign",
    "restore_campaign",
    "update_campaign",
    "pause_campaign",
    "resume_campaign",
    "archive_campaign",
    "get_campaign",
];

#[derive(Clone)]
pub struct V3Tools {
    ctx: Ctx,
    /// [`tools`] of the ctx's registry, shared by every session.
    tools: Arc<Vec<Tool>>,
}

impl V3Tools {
    pub fn new(ctx: Ctx, tools: Arc<Vec<Tool>>) -> Self {
        V3Tools { ctx, tools }
    }
}

/// `get_status`'s data.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    account: AccountRef,
    user: UserRef,
    permissions: Vec<Permission>,
    counts: Counts,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct AccountRef {
    id: String,
    name: String,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UserRef {
    id: i64,
    email: String,
    role: crate::types::Role,
}

/// How many of each the account has.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    advertisers: u64,
    storefronts: u64,
    webhook_subscriptions: u64,
    campaigns: u64,
}

impl AccountRef {
    fn of(a: &AccountInfo) -> Self {
        AccountRef {
            id: a.id.clone(),
            name: a.name.clone(),
        }
    }
}

impl UserRef {
    fn of(u: &UserInfo) -> Self {
        UserRef {
            id: u.id,
            email: u.email.clone(),
            role: u.role,
        }
    }
}

/// The output schema of `operations`' data: any of theirs.
pub(super) fn outputs<'a>(
    registry: Registry,
    operations: impl IntoIterator<Item = &'a str>,
) -> Value {
    schema::any_of(
        operations
            .into_iter()
            .filter_map(|name| registry.find(name))
            .map(|d| (d.output_schema)()),
    )
}

/// What get_delivery answers: the media-buy status, with `metrics` (the
/// rows of get_reporting_metrics).
fn delivery_schema(registry: Registry) -> Value {
    let mut status = outputs(registry, ["get_media_buy_status"]);
    let mut metrics = outputs(registry, ["get_reporting_metrics"]);
    let mut defs = Map::new();
    schema::hoist(&mut status, &mut defs);
    schema::hoist(&mut metrics, &mut defs);
    if let Some(props) = status.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert("metrics".into(), metrics);
    }
    schema::with_defs(status, defs)
}

/// The body schema of `operation`, standing alone.
pub(super) fn body_of(registry: Registry, operation: &str) -> Value {
    registry
        .find(operation)
        .and_then(|d| schema::part(&(d.input_schema)(), "/properties/body"))
        .unwrap_or_else(|| json!({"type": "object"}))
}

/// The v3 tools with their input and output schemas, from the operations
/// behind them (built once per app, see `crate::mcp::Endpoints`).
pub fn tools(registry: Registry) -> Vec<Tool> {
    let kinds = |list: Vec<&str>| json!({"type": "string", "enum": list});
    // save_advertiser takes create_advertiser's body, plus the id to update.
    let mut body = body_of(registry, "create_advertiser");
    if let Some(props) = body.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "advertiserId".into(),
            json!({"type": "string", "description": "update this advertiser instead of creating one"}),
        );
        props.insert(
            "isArchived".into(),
            json!({"type": "boolean", "description": "true archives (hidden from lists, no new campaigns), false restores; with advertiserId"}),
        );
    }
    if let Some(o) = body.as_object_mut() {
        o.remove("required");
    }
    let mut list = vec![
        tool(
            "get_status",
            "Who is calling (account, user, permissions) and what the account has.",
            json!({"type": "object", "properties": {}, "additionalProperties": false}),
            schema::of::<Status>(),
        ),
        tool(
            "search",
            "A page of one kind of record, newest first.",
            json!({
                "type": "object",
                "properties": {
                    "type": kinds(SEARCHES.iter().map(|s| s.0).collect()),
                    "take": {"type": "integer", "minimum": 1, "maximum": 100},
                    "skip": {"type": "integer", "minimum": 0},
                    "includeArchived": {"type": "boolean",
                        "description": "advertiser only: true includes archived advertisers"},
                },
                "required": ["type"],
                "additionalProperties": false,
            }),
            outputs(registry, SEARCHES.iter().map(|s| s.1)),
        ),
        tool(
            "get",
            "One record by id: an advertiser, a campaign, a discovery session's snapshot, a material, an RFP, or one turn of an RFP (id {rfpId}:{turn}).",
            json!({
                "type": "object",
                "properties": {
                    "type": kinds(GETS.iter().map(|g| g.0).collect()),
                    "id": {"type": "string", "minLength": 1},
                },
                "required": ["type", "id"],
                "additionalProperties": false,
            }),
            outputs(registry, GETS.iter().map(|g| g.1)),
        ),
        tool(
            "save_advertiser",
            "Create an advertiser, or update the one named by advertiserId with the fields given; isArchived true archives it, false restores it. All of it happens, or none.",
            body,
            outputs(registry, ["create_advertiser", "update_advertiser"]),
        ),
        tool(
            "save_campaign",
            "Create a DRAFT campaign, or update the one named by campaignId with the fields given; isArchived and isPaused archive, restore, pause or resume it. All of it happens, or none.",
            save_campaign_schema(registry),
            outputs(registry, CAMPAIGN_STEPS.iter().copied()),
        ),
        tool(
            "save_media_buy",
            "Put products of a discovery session into a campaign's cart as media buys (create_media_buys): mode stage writes DRAFT buys; mode execute, once the buyer confirmed the purchase, sends them to their sellers.",
            body_of(registry, "create_media_buys"),
            outputs(registry, ["create_media_buys"]),
        ),
        tool(
            "save_connection",
            "Manage a seller connection at a storefront's account source: with secret, register a credential (or, with credentialId, rotate its secret); with advertiserId and accountId, bind that seller account to the advertiser (refreshing the accounts the credential can see first, for sources that need credentials); with delete true, delete credentialId. Steps run in that order, each committed before the next.",
            json!({
                "type": "object",
                "properties": {
                    "storefrontId": {"type": "integer"},
                    "sourceId": {"type": "string", "minLength": 1, "description": "default agent (the storefront's own)"},
                    "credentialId": {"type": "string", "minLength": 1},
                    "secret": {"type": "string", "minLength": 1, "writeOnly": true, "description": "the bearer token the source takes; never returned"},
                    "label": {"type": "string"},
                    "advertiserId": {"type": "string"},
                    "accountId": {"type": "string", "description": "the seller account to bind (list_available_accounts, or an accepted synced account)"},
                    "delete": {"type": "boolean"},
                },
                "required": ["storefrontId"],
                "additionalProperties": false,
            }),
            connection_schema(registry),
        ),
        tool(
            "get_delivery",
            "A campaign's media buys at their sellers: each buy's internal and seller status, what it was before and when it changed, and its seller's latest delivery report (impressions, spend, per package; get_media_buy_status); `metrics`: the campaign's stored delivery as get_reporting_metrics answers it (groupBy day by default; startDate, endDate in the advertiser's time zone).",
            json!({
                "type": "object",
                "properties": {
                    "campaignId": {"type": "string", "minLength": 1},
                    "groupBy": {"type": "string", "enum": crate::reporting::metrics::GROUPS},
                    "startDate": {"type": "string", "format": "date"},
                    "endDate": {"type": "string", "format": "date"},
                },
                "required": ["campaignId"],
                "additionalProperties": false,
            }),
            delivery_schema(registry),
        ),
        tool(
            "open_notifications",
            "The caller's notifications, newest first (unread only unless unread is false; take/skip; topic), after acknowledging those in acknowledge (ids) or all of them (acknowledgeAll true). Acknowledging is idempotent.",
            json!({
                "type": "object",
                "properties": {
                    "unread": {"type": "boolean", "default": true,
                        "description": "false lists read ones too"},
                    "topic": {"type": "string", "enum": crate::notifications::topics::names()},
                    "take": {"type": "integer", "minimum": 1, "maximum": 100},
                    "skip": {"type": "integer", "minimum": 0},
                    "acknowledge": {"type": "array", "items": {"type": "string"},
                        "minItems": 1, "maxItems": crate::notifications::operations::MAX_ACKNOWLEDGE},
                    "acknowledgeAll": {"type": "boolean"},
                },
                "additionalProperties": false,
            }),
            open_notifications_schema(registry),
        ),
    ];
    let find = |name: &str| list.iter().find(|t| t.name == name).cloned();
    if let (Some(search), Some(get)) = (find("search"), find("get")) {
        list.extend(super::library::tools(registry, &search, &get));
    }
    widgets::resources::declare(&mut list, widgets::for_v3_tool);
    list
}

/// What open_notifications answers: the acknowledgement (or null), the
/// list and its position.
fn open_notifications_schema(registry: Registry) -> Value {
    let mut defs = Map::new();
    let mut of = |op: &str| {
        let mut s = registry
            .find(op)
            .map(|d| (d.output_schema)())
            .unwrap_or_else(|| json!({}));
        schema::hoist(&mut s, &mut defs);
        s
    };
    let acknowledged = of("acknowledge_notifications");
    let notifications = of("list_notifications");
    schema::with_defs(
        json!({
            "type": "object",
            "properties": {
                "acknowledged": {"anyOf": [acknowledged, {"type": "null"}]},
                "notifications": notifications,
                "pagination": {"type": "object"},
            },
            "required": ["acknowledged", "notifications"],
        }),
        defs,
    )
}

/// What save_connection answers: each step's result, when it ran.
fn connection_schema(registry: Registry) -> Value {
    let of = |op: &str| {
        registry
            .find(op)
            .map(|d| (d.output_schema)())
            .unwrap_or_else(|| json!({"type": "object"}))
    };
    schema::object([
        ("credential", of("create_source_credential"), false),
        ("available", of("list_available_accounts"), false),
        ("advertiser", of("update_advertiser"), false),
        ("deleted", of("delete_source_credential"), false),
    ])
}

/// create_campaign's body, plus the id to update and the v3 state flags.
fn save_campaign_schema(registry: Registry) -> Value {
    let mut body = body_of(registry, "create_campaign");
    if let Some(props) = body.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "campaignId".into(),
            json!({"type": "string", "description": "update this campaign instead of creating one"}),
        );
        props.insert(
            "desiredPhase".into(),
            json!({"type": "string", "enum": ["draft", "active"],
                   "description": "active launches the campaign (execute_campaign: its DRAFT media buys go to their sellers)"}),
        );
        props.insert(
            "isPaused".into(),
            json!({"type": "boolean", "description": "true pauses, false reactivates"}),
        );
        props.insert(
            "isArchived".into(),
            json!({"type": "boolean", "description": "true archives, false restores"}),
        );
    }
    body
}

/// The state changes `save_campaign`'s flags ask for, in the order they
/// run: a restore before the update (an archived campaign is frozen), an
/// archive last.
struct Flags {
    restore: bool,
    archive: bool,
    pause: Option<bool>,
    /// `desiredPhase: "active"`: `execute_campaign` once saved.
    launch: bool,
}

fn flags(args: &mut Map<String, Value>) -> Result<Flags, ApiError> {
    let mut flag = |name: &str| match args.remove(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(_) => Err(ApiError::invalid(name, "must be a boolean")),
    };
    let archived = flag("isArchived")?;
    let paused = flag("isPaused")?;
    let mut launch = false;
    match args.remove("desiredPhase") {
        None | Some(Value::Null) => {}
        Some(Value::String(p)) if p == "draft" => {}
        Some(Value::String(p)) if p == "active" => launch = true,
        Some(_) => {
            return Err(ApiError::invalid(
                "desiredPhase",
                "must be \"draft\" or \"active\"",
            ));
        }
    }
    Ok(Flags {
        restore: archived == Some(false),
        archive: archived == Some(true),
        pause: paused,
        launch,
    })
}

pub(super) fn call(
    operation: &str,
    path: Value,
    params: Value,
    body: Value,
) -> Result<OperationCall, ApiError> {
    serde_json::from_value(json!({
        "operation": operation, "pathParams": path, "params": params, "body": body,
    }))
    .map_err(|e| ApiError::invalid("arguments", e.to_string()))
}

fn string_arg<'a>(args: &'a Map<String, Value>, name: &str) -> Result<&'a str, ApiError> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::invalid(name, "required string"))
}

pub(super) fn only(args: &Map<String, Value>, allowed: &[&str]) -> Result<(), ApiError> {
    match args.keys().find(|k| !allowed.contains(&k.as_str())) {
        Some(extra) => Err(ApiError::invalid(extra, "unknown argument")),
        None => Ok(()),
    }
}

impl V3Tools {
    pub(super) fn ctx(&self) -> &Ctx {
        &self.ctx
    }

    pub(super) async fn dispatch(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
        call: OperationCall,
    ) -> Result<ops::OperationOutput, ApiError> {
        run(&self.ctx, context, caller.clone(), call).await
    }

    async fn total(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
        operation: &str,
    ) -> Result<u64, ApiError> {
        let out = self
            .dispatch(
                context,
                caller,
                call(operation, json!({}), json!({"take": 1}), Value::Null)?,
            )
            .await?;
        out.meta
            .and_then(|m| m["pagination"]["total"].as_u64())
            .ok_or_else(|| ApiError::internal(format!("{operation} gave no total")))
    }

    pub(super) async fn handle(
        &self,
        name: &str,
        mut args: Map<String, Value>,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
    ) -> Result<ops::OperationOutput, ApiError> {
        match name {
            "get_status" => {
                only(&args, &[])?;
                let status = Status {
                    account: AccountRef::of(&caller.account),
                    user: UserRef::of(&caller.user),
                    permissions: caller.permissions.clone(),
                    counts: Counts {
                        advertisers: self.total(context, caller, "list_advertisers").await?,
                        storefronts: self.total(context, caller, "list_storefronts").await?,
                        webhook_subscriptions: self
                            .total(context, caller, "list_webhook_subscriptions")
                            .await?,
                        campaigns: self.total(context, caller, "list_campaigns").await?,
                    },
                };
                let data = serde_json::to_value(status).map_err(ApiError::internal)?;
                Ok(ops::OperationOutput { data, meta: None })
            }
            "search" => {
                only(
                    &args,
                    &[
                        "type",
                        "take",
                        "skip",
                        "includeArchived",
                        "status",
                        "advertiserId",
                    ],
                )?;
                let kind = string_arg(&args, "type")?;
                let Some((_, op)) = SEARCHES.iter().find(|s| s.0 == kind) else {
                    return Err(ApiError::invalid(
                        "type",
                        format!(
                            "one of {:?}",
                            SEARCHES.iter().map(|s| s.0).collect::<Vec<_>>()
                        ),
                    ));
                };
                if kind != "advertiser" && args.contains_key("includeArchived") {
                    return Err(ApiError::invalid(
                        "includeArchived",
                        "only for type advertiser",
                    ));
                }
                if !FILTERED.contains(&kind)
                    && let Some(f) = ["status", "advertiserId"]
                        .into_iter()
                        .find(|f| args.contains_key(*f))
                {
                    return Err(ApiError::invalid(
                        f,
                        "only for type material, library_request or rfp",
                    ));
                }
                let mut params = Map::new();
                for k in ["take", "skip", "includeArchived", "status", "advertiserId"] {
                    if let Some(v) = args.get(k) {
                        params.insert(k.into(), v.clone());
                    }
                }
                self.dispatch(
                    context,
                    caller,
                    call(op, json!({}), Value::Object(params), Value::Null)?,
                )
                .await
            }
            "get" => {
                only(&args, &["type", "id"])?;
                let kind = string_arg(&args, "type")?;
                let id = string_arg(&args, "id")?;
                let Some((_, op, param)) = GETS.iter().find(|g| g.0 == kind) else {
                    return Err(ApiError::invalid(
                        "type",
                        format!("one of {:?}", GETS.iter().map(|g| g.0).collect::<Vec<_>>()),
                    ));
                };
                let path = if kind == "rfp_turn" {
                    let Some((rfp, turn)) = id.rsplit_once(':') else {
                        return Err(ApiError::invalid("id", "an rfp_turn id is {rfpId}:{turn}"));
                    };
                    json!({ *param: rfp, "turn": turn })
                } else {
                    json!({ *param: id })
                };
                self.dispatch(context, caller, call(op, path, json!({}), Value::Null)?)
                    .await
            }
            "save_advertiser" => self.save_advertiser(context, caller, args).await,
            "save_campaign" => self.save_campaign(context, caller, args).await,
            "save_media_buy" => {
                let body = Value::Object(args);
                self.dispatch(
                    context,
                    caller,
                    call("create_media_buys", json!({}), json!({}), body)?,
                )
                .await
            }
            "save_connection" => self.save_connection(context, caller, args).await,
            "get_delivery" => {
                let id = match args.remove("campaignId") {
                    Some(Value::String(id)) => id,
                    _ => return Err(ApiError::invalid("campaignId", "is required (a string)")),
                };
                // The report's own filters, as get_reporting_metrics takes them.
                let mut params = Map::new();
                params.insert("campaignId".into(), json!(id));
                params.insert("take".into(), json!(200));
                for key in ["groupBy", "startDate", "endDate"] {
                    if let Some(v) = args.remove(key) {
                        params.insert(key.into(), v);
                    }
                }
                let path = json!({ "campaignId": id });
                let mut out = self
                    .dispatch(
                        context,
                        caller,
                        call("get_media_buy_status", path, json!({}), Value::Null)?,
                    )
                    .await?;
                let metrics = self
                    .dispatch(
                        context,
                        caller,
                        call(
                            "get_reporting_metrics",
                            json!({}),
                            Value::Object(params),
                            Value::Null,
                        )?,
                    )
                    .await?;
                if let Value::Object(data) = &mut out.data {
                    data.insert("metrics".into(), metrics.data);
                }
                Ok(out)
            }
            "open_notifications" => self.open_notifications(context, caller, args).await,
            _ => Err(ApiError::invalid("name", "unknown tool")),
        }
    }

    /// Acknowledges (when asked), then lists: each through its operation.
    async fn open_notifications(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
        args: Map<String, Value>,
    ) -> Result<ops::OperationOutput, ApiError> {
        only(
            &args,
            &[
                "unread",
                "topic",
                "take",
                "skip",
                "acknowledge",
                "acknowledgeAll",
            ],
        )?;
        let ack = match (args.get("acknowledge"), args.get("acknowledgeAll")) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid(
                    "acknowledgeAll",
                    "send acknowledge or acknowledgeAll, not both",
                ));
            }
            (Some(ids), None) => Some(json!({ "ids": ids })),
            (None, Some(Value::Bool(true))) => Some(json!({ "all": true })),
            (None, Some(Value::Bool(false))) => None,
            (None, Some(_)) => {
                return Err(ApiError::invalid("acknowledgeAll", "must be a boolean"));
            }
            (None, None) => None,
        };
        let acknowledged = match ack {
            Some(body) => {
                let call = call("acknowledge_notifications", json!({}), json!({}), body)?;
                Some(self.dispatch(context, caller, call).await?.data)
            }
            None => None,
        };
        let mut params = Map::new();
        match args.get("unread") {
            None | Some(Value::Bool(true)) => {
                params.insert("unread".into(), json!(true));
            }
            Some(Value::Bool(false)) => {}
            Some(_) => return Err(ApiError::invalid("unread", "must be a boolean")),
        }
        for k in ["topic", "take", "skip"] {
            if let Some(v) = args.get(k) {
                params.insert(k.into(), v.clone());
            }
        }
        let list = self
            .dispatch(
                context,
                caller,
                call(
                    "list_notifications",
                    json!({}),
                    Value::Object(params),
                    Value::Null,
                )?,
            )
            .await?;
        let mut data = json!({
            "acknowledged": acknowledged,
            "notifications": list.data,
        });
        if let Some(p) = list.meta.as_ref().and_then(|m| m.get("pagination")) {
            data["pagination"] = p.clone();
        }
        Ok(ops::OperationOutput {
            data,
            meta: list.meta,
        })
    }
}

impl V3Tools {
    /// A seller connection's steps, each through its operation (so each has
    /// its REST permission and admin rule): credential, binding, deletion.
    async fn save_connection(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
        args: Map<String, Value>,
    ) -> Result<ops::OperationOutput, ApiError> {
        only(
            &args,
            &[
                "storefrontId",
                "sourceId",
                "credentialId",
                "secret",
                "label",
                "advertiserId",
                "accountId",
                "delete",
            ],
        )?;
        let storefront = args
            .get("storefrontId")
            .and_then(Value::as_i64)
            .ok_or_else(|| ApiError::invalid("storefrontId", "is required (an integer)"))?;
        let text = |name: &str| -> Result<Option<String>, ApiError> {
            match args.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(_) => Err(ApiError::invalid(name, "must be a string")),
            }
        };
        let source = text("sourceId")?.unwrap_or_else(|| "agent".into());
        let mut credential = text("credentialId")?;
        let (secret, label) = (text("secret")?, text("label")?);
        let (advertiser, account) = (text("advertiserId")?, text("accountId")?);
        let delete = match args.get("delete") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => return Err(ApiError::invalid("delete", "must be a boolean")),
        };
        if advertiser.is_some() != account.is_some() {
            return Err(ApiError::invalid(
                "accountId",
                "advertiserId and accountId go together",
            ));
        }
        if delete && (secret.is_some() || advertiser.is_some() || credential.is_none()) {
            return Err(ApiError::invalid("delete", "takes credentialId alone"));
        }
        if secret.is_none() && advertiser.is_none() && !delete {
            return Err(ApiError::invalid(
                "secret",
                "nothing to do: give secret, advertiserId with accountId, or delete",
            ));
        }
        let mut out = Map::new();
        if delete {
            let id = credential.unwrap_or_default();
            let done = self
                .dispatch(
                    context,
                    caller,
                    call(
                        "delete_source_credential",
                        json!({"credentialId": id}),
                        json!({}),
                        Value::Null,
                    )?,
                )
                .await?;
            out.insert("deleted".into(), done.data);
            return Ok(ops::OperationOutput {
                data: Value::Object(out),
                meta: None,
            });
        }
        if let Some(secret) = secret {
            let done = match &credential {
                Some(id) => {
                    self.dispatch(
                        context,
                        caller,
                        call(
                            "rotate_source_credential",
                            json!({"credentialId": id}),
                            json!({}),
                            json!({"secret": secret}),
                        )?,
                    )
                    .await?
                }
                None => {
                    let mut body =
                        json!({"storefrontId": storefront, "sourceId": source, "secret": secret});
                    if let Some(l) = label {
                        body["label"] = json!(l);
                    }
                    self.dispatch(
                        context,
                        caller,
                        call("create_source_credential", json!({}), json!({}), body)?,
                    )
                    .await?
                }
            };
            credential = done.data["credentialId"].as_str().map(str::to_string);
            out.insert("credential".into(), done.data);
        }
        if let (Some(advertiser), Some(account)) = (advertiser, account) {
            if credential.is_some() || source != "agent" {
                let mut params = json!({"storefrontId": storefront, "sourceId": source});
                if let Some(id) = &credential {
                    params["credentialId"] = json!(id);
                }
                let seen = self
                    .dispatch(
                        context,
                        caller,
                        call(
                            "list_available_accounts",
                            json!({"advertiserId": advertiser}),
                            params,
                            Value::Null,
                        )?,
                    )
                    .await?;
                out.insert("available".into(), seen.data);
            }
            let body = json!({"linkedAccounts": [{"storefrontId": storefront, "sourceId": source, "accountId": account}]});
            let done = self
                .dispatch(
                    context,
                    caller,
                    call(
                        "update_advertiser",
                        json!({"advertiserId": advertiser}),
                        json!({}),
                        body,
                    )?,
                )
                .await?;
            out.insert("advertiser".into(), done.data);
        }
        Ok(ops::OperationOutput {
            data: Value::Object(out),
            meta: None,
        })
    }

    /// Creates or updates through the operations; with `isArchived`, the
    /// archive or restore and the fields given happen in one transaction
    /// ([`advertisers::save_advertiser`]): all of it, or none.
    async fn save_advertiser(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
        mut args: Map<String, Value>,
    ) -> Result<ops::OperationOutput, ApiError> {
        let archived = match args.remove("isArchived") {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(b),
            Some(_) => return Err(ApiError::invalid("isArchived", "must be a boolean")),
        };
        let id = match args.remove("advertiserId") {
            None => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => return Err(ApiError::invalid("advertiserId", "must be a string")),
        };
        let body = Value::Object(args);
        let (id, archived) = match (id, archived) {
            (Some(id), Some(archived)) => (id, archived),
            (Some(id), None) => {
                let path = json!({ "advertiserId": id });
                return self
                    .dispatch(
                        context,
                        caller,
                        call("update_advertiser", path, json!({}), body)?,
                    )
                    .await;
            }
            (None, Some(true)) => {
                return Err(ApiError::invalid(
                    "isArchived",
                    "a new advertiser is active: archive it once created, with its advertiserId",
                ));
            }
            // A new advertiser is active: `isArchived: false` asks for nothing more.
            (None, _) => {
                return self
                    .dispatch(
                        context,
                        caller,
                        call("create_advertiser", json!({}), json!({}), body)?,
                    )
                    .await;
            }
        };
        // Archiving and restoring change the advertiser: update_advertiser's access.
        let def = self
            .ctx
            .operations
            .find("update_advertiser")
            .ok_or_else(|| ApiError::internal("update_advertiser is not registered"))?;
        ops::authorize(caller, def.access)?;
        let fields = match body {
            Value::Object(fields) if fields.is_empty() => None,
            fields => Some(parse_json::<AdvertiserUpdate>(fields)?),
        };
        let save = advertisers::Save {
            fields,
            archived: Some(archived),
        };
        let saved = advertisers::save_advertiser(&self.ctx, caller, &id, save).await?;
        let data = serde_json::to_value(saved).map_err(ApiError::internal)?;
        Ok(ops::OperationOutput { data, meta: None })
    }

    /// Runs the steps the arguments ask for in one transaction
    /// ([`campaigns::save`]): all of them, or none.
    async fn save_campaign(
        &self,
        context: &RequestContext<RoleServer>,
        caller: &Arc<CallerInfo>,
        mut args: Map<String, Value>,
    ) -> Result<ops::OperationOutput, ApiError> {
        let flags = flags(&mut args)?;
        let id = match args.remove("campaignId") {
            None => None,
            Some(Value::String(id)) => Some(id),
            Some(_) => return Err(ApiError::invalid("campaignId", "must be a string")),
        };
        let created = id.is_none();
        if created && flags.launch {
            return Err(ApiError::Conflict {
                message: "a new campaign has no media buys to launch: stage them with create_media_buys, then save it with desiredPhase active".into(),
                details: Some(json!({"reason": "empty_cart"})),
            });
        }
        if created && flags.pause == Some(true) {
            return Err(ApiError::invalid(
                "isPaused",
                "a new campaign is a DRAFT: it can be paused once launched",
            ));
        }
        let save = Save {
            restore: flags.restore && !created,
            // A new campaign is a DRAFT, which is neither paused nor running.
            pause: flags.pause.filter(|_| !created),
            archive: flags.archive,
            fields: if created || !args.is_empty() {
                Some(parse_body(args)?)
            } else {
                None
            },
            campaign_id: id,
        };
        let steps = [
            (save.campaign_id.is_none(), "create_campaign"),
            (save.restore, "restore_campaign"),
            (
                save.campaign_id.is_some() && save.fields.is_some(),
                "update_campaign",
            ),
            (save.pause == Some(true), "pause_campaign"),
            (save.pause == Some(false), "resume_campaign"),
            (save.archive, "archive_campaign"),
        ];
        let steps: Vec<&str> = steps.iter().filter(|s| s.0).map(|s| s.1).collect();
        if let (Some(id), true) = (&save.campaign_id, steps.is_empty() && !flags.launch) {
            // Nothing to change: the campaign as it is.
            let path = json!({ "campaignId": id });
            return self
                .dispatch(
                    context,
                    caller,
                    call("get_campaign", path, json!({}), Value::Null)?,
                )
                .await;
        }
        // Each step with the access its operation declares.
        for def in steps.iter().filter_map(|s| self.ctx.operations.find(s)) {
            ops::authorize(caller, def.access)?;
        }
        if flags.launch
            && let Some(def) = self.ctx.operations.find("execute_campaign")
        {
            ops::authorize(caller, def.access)?;
        }
        let pause = save.pause;
        let saved = campaigns::save(&self.ctx, caller, save).await?;
        let id = saved.campaign.campaign_id.clone();
        // The sellers hear of a pause or resume once it is committed.
        if let Some(paused) = pause {
            crate::media_buys::operations::set_paused(&self.ctx, caller.account_id(), &id, paused)
                .await?;
        }
        let data = if flags.launch {
            let launched = crate::media_buys::operations::launch(&self.ctx, caller, &id).await?;
            serde_json::to_value(launched).map_err(ApiError::internal)?
        } else {
            serde_json::to_value(saved).map_err(ApiError::internal)?
        };
        Ok(ops::OperationOutput { data, meta: None })
    }
}

/// The campaign fields, parsed as `create_campaign` and `update_campaign`
/// parse their body.
fn parse_body(args: Map<String, Value>) -> Result<CampaignIn, ApiError> {
    parse_json(Value::Object(args))
}

/// A JSON body, parsed as the operations parse theirs (the same errors).
fn parse_json<T>(body: Value) -> Result<T, ApiError>
where
    T: serde::de::DeserializeOwned + ToSchema + Send,
{
    use ops::input::BodyPart;
    let bytes = serde_json::to_vec(&body).map_err(ApiError::internal)?;
    ops::Json::<T>::from_body(Some(&bytes.into())).map(|body| body.0)
}

impl ServerHandler for V3Tools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(capabilities(true))
            .with_server_info(Implementation::new("agentic-api-v3", env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Typed buyer tools: get_status, search, get, save_advertiser, save_campaign, save_media_buy, save_connection, get_delivery, and the library's save_material, save_library_request, save_rfp, open_proposal_pass and open_page.",
            )
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
            widgets::resources::list(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        read_widget(&request.uri)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !TOOL_NAMES.contains(&name.as_str()) && !super::library::is_tool(&name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            ));
        }
        let Some(caller) = caller_of(&context) else {
            return Ok(error_result(&ApiError::Unauthorized("no caller".into())).into());
        };
        let args = request.arguments.unwrap_or_default();
        if let Some(result) = self.library(&name, args.clone(), &context, &caller).await {
            return Ok(result.into());
        }
        let widget = widget_of(&name, &args);
        let out = self.handle(&name, args, &context, &caller).await;
        Ok(answer(&name, out, widget).into())
    }
}
