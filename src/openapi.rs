//! The OpenAPI 3.1 document, derived from the operation registry.
//!
//! Each registered operation ([`crate::ops::OperationDef`]) becomes the
//! operation at its verb and path: its name is the `operationId`, its
//! description the description, its domain the tag; its parameters are the
//! properties of its path and query parts' schemas, its request body its
//! body part's schema, its success response the envelope around its output
//! (with `meta` when it takes a page), and its error responses follow from
//! its shape (input, access, path parameters, body) plus the statuses it
//! declares itself ([`crate::ops::Operation::ERRORS`]). The named types the
//! schemas reach are the document's `#/components/schemas`.
//!
//! The few routes that are not operations (probes, this document, the two
//! event streams) are described here, next to one another.

use actix_web::{HttpResponse, web};
use serde_json::{Map, Value, json};
use utoipa::openapi::path::ParameterIn;
use utoipa::{IntoParams, OpenApi};

use crate::error::Issue;
use crate::http::envelope::{
    ErrorBody, ErrorEnvelope, ListMeta, PaginationMeta, ValidationDetails,
};
use crate::ops::{Access, BodyKind, OperationDef, Registry, schema};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "agentic-api",
        description = "Self-hostable server for AI-assisted advertising buyers. Every /api/v2 \
                       response is an envelope: `{data, error: null}` on success (`meta` on \
                       lists), `{data: null, error: {code, message, field?, details?}}` on failure."
    ),
    components(schemas(
        ErrorEnvelope,
        ErrorBody,
        Issue,
        ValidationDetails,
        PaginationMeta,
        ListMeta
    ))
)]
pub struct ApiDoc;

/// Every REST path is under this prefix.
pub use crate::ops::streams::PREFIX;

use crate::ops::schema::COMPONENTS;

/// The document: the registry's operations, the other routes, the common
/// error responses and the security schemes.
pub fn document(operations: Registry) -> Value {
    let mut doc = serde_json::to_value(ApiDoc::openapi()).unwrap_or_else(|_| json!({}));
    doc["openapi"] = json!("3.1.0");
    let mut components = Map::new();
    let mut paths = Map::new();
    for def in operations.iter() {
        let item = paths
            .entry(format!("{PREFIX}{}", def.path))
            .or_insert_with(|| json!({}));
        item[def.verb.as_str().to_ascii_lowercase()] = operation(def, &mut components);
    }
    for (path, verb, op) in routes() {
        paths.entry(path).or_insert_with(|| json!({}))[verb] = op;
    }
    doc["paths"] = Value::Object(paths);
    let schemas = &mut doc["components"]["schemas"];
    if !schemas.is_object() {
        *schemas = json!({});
    }
    if let Some(schemas) = schemas.as_object_mut() {
        for (name, def) in components {
            schemas.entry(name).or_insert(def);
        }
    }
    doc["components"]["securitySchemes"] = json!({
        "bearer": {
            "type": "http",
            "scheme": "bearer",
            "description": "API key (`agk_...`) or OAuth access token",
        }
    });
    add_common_responses(&mut doc);
    stream_token_scheme(&mut doc);
    doc
}

/// `schema` as the document has it: refs into its `$defs` point at
/// `#/components/schemas`, where its `$defs` go.
fn place(mut schema: Value, components: &mut Map<String, Value>) -> Value {
    let mut defs = Map::new();
    schema::hoist(&mut schema, &mut defs);
    for (name, mut def) in defs {
        retarget(&mut def);
        components.entry(name).or_insert(def);
    }
    retarget(&mut schema);
    schema
}

fn retarget(schema: &mut Value) {
    schema::repoint(schema, schema::DEFS, schema::COMPONENTS);
}

fn error_envelope(description: &str) -> Value {
    json!({
        "description": description,
        "content": {"application/json": {"schema": {"$ref": format!("{COMPONENTS}ErrorEnvelope")}}},
    })
}

/// One parameter per property of a part's object schema.
fn parameters(part: Option<Value>, place_in: &str, order: &[&str]) -> Vec<(String, Value)> {
    let Some(part) = part else {
        return Vec::new();
    };
    let required: Vec<&str> = part["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<(String, Value)> = part["properties"]
        .as_object()
        .map(|props| {
            props
                .iter()
                .map(|(name, prop)| {
                    let mut prop = prop.clone();
                    let description = prop.as_object_mut().and_then(|p| p.remove("description"));
                    // An absent parameter is the `null` of an optional field.
                    if let Some(types) = prop["type"].as_array_mut() {
                        types.retain(|t| t != "null");
                        if let [one] = types.as_slice() {
                            prop["type"] = one.clone();
                        }
                    }
                    let mut param = json!({
                        "name": name,
                        "in": place_in,
                        "required": place_in == "path" || required.contains(&name.as_str()),
                        "schema": prop,
                    });
                    if let Some(d) = description {
                        param["description"] = d;
                    }
                    (name.clone(), param)
                })
                .collect()
        })
        .unwrap_or_default();
    params.sort_by_key(|(name, _)| order.iter().position(|o| o == name));
    params
}

/// The names of `path`'s `{parameters}`, in order.
fn template_params(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|seg| seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')))
        .collect()
}

/// The OpenAPI operation of `def`.
fn operation(def: &OperationDef, components: &mut Map<String, Value>) -> Value {
    let input = place((def.input_schema)(), components);
    let path_part = input.pointer("/properties/pathParams").cloned();
    let query_part = input.pointer("/properties/params").cloned();
    let order = template_params(def.path);
    let mut params: Vec<Value> = parameters(path_part, "path", &order)
        .into_iter()
        .map(|(_, p)| p)
        .collect();
    params.extend(
        parameters(query_part, "query", &[])
            .into_iter()
            .map(|(_, p)| p),
    );

    let data = place((def.output_doc)(), components);
    let mut envelope = json!({
        "type": "object",
        "required": ["data", "error"],
        "properties": {
            "data": data,
            "error": {"type": "null", "description": "Always `null` on success."},
        },
    });
    if def.paginated {
        envelope["properties"]["meta"] = json!({"$ref": format!("{COMPONENTS}ListMeta")});
        envelope["required"] = json!(["data", "error", "meta"]);
    }
    let mut responses = Map::new();
    responses.insert(
        def.status.to_string(),
        json!({
            "description": reason(def.status),
            "content": {"application/json": {"schema": envelope}},
        }),
    );
    let has_input = !params.is_empty() || def.body != BodyKind::None;
    let mut errors: Vec<(u16, String)> = Vec::new();
    if has_input {
        errors.push((400, "VALIDATION_ERROR".into()));
    }
    errors.push((
        401,
        "UNAUTHORIZED: missing, invalid, expired or revoked credential".into(),
    ));
    match def.access {
        Access::Read => {}
        Access::Write => errors.push((403, "FORBIDDEN: a read-only key".into())),
        Access::Requires(p) => errors.push((
            403,
            format!("FORBIDDEN: the credential lacks {}", p.as_str()),
        )),
    }
    if !order.is_empty() {
        errors.push((404, "NOT_FOUND".into()));
    }
    for (status, description) in def.errors {
        match errors.iter_mut().find(|(s, _)| s == status) {
            Some(e) => e.1 = (*description).to_string(),
            None => errors.push((*status, (*description).to_string())),
        }
    }
    for (status, description) in errors {
        responses.insert(status.to_string(), error_envelope(&description));
    }

    let mut op = json!({
        "operationId": def.name,
        "description": def.description,
        "tags": [(def.domain)()],
        "security": [{"bearer": []}],
        "responses": responses,
    });
    if !params.is_empty() {
        op["parameters"] = Value::Array(params);
    }
    if let Some(body) = (def.body_doc)() {
        let mut request = json!({
            "required": def.body == BodyKind::Required,
            "content": {"application/json": {"schema": place(body, components)}},
        });
        if def.body == BodyKind::Optional {
            request["description"] = json!("Optional: without a body, the defaults apply.");
        }
        op["requestBody"] = request;
    }
    op
}

fn reason(status: u16) -> &'static str {
    actix_web::http::StatusCode::from_u16(status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("Success")
}

/// The routes that are not operations: (path, verb, operation).
fn routes() -> Vec<(String, &'static str, Value)> {
    let public = |id: &str, tag: &str, description: &str, responses: Value| {
        json!({
            "operationId": id,
            "tags": [tag],
            "description": description,
            "security": [],
            "responses": responses,
        })
    };
    let probe = |description: &str| {
        json!({"description": description, "content": {"application/json": {"schema": {
            "type": "object",
            "required": ["data", "error"],
            "properties": {"data": {"type": "object"}, "error": {"type": "null"}},
        }}}})
    };
    vec![
        (
            "/healthz".into(),
            "get",
            public(
                "healthz",
                "health",
                "The process is up.",
                json!({"200": probe("alive")}),
            ),
        ),
        (
            "/readyz".into(),
            "get",
            public(
                "readyz",
                "health",
                "The database answers and, with several instances, the event bus works.",
                json!({
                    "200": probe("ready"),
                    "503": error_envelope("SERVICE_UNAVAILABLE: database or event bus unreachable"),
                }),
            ),
        ),
        (
            format!("{PREFIX}/openapi.json"),
            "get",
            public(
                "openapi",
                "meta",
                "This document.",
                json!({"200": {"description": "OpenAPI 3.1 document",
                    "content": {"application/json": {"schema": {"type": "object"}}}}}),
            ),
        ),
        (
            format!("{PREFIX}{}", crate::conversations::routes::STREAM.template),
            "get",
            stream(
                "conversation_events",
                "conversations",
                "The room's event stream (`text/event-stream`): `ready`, `message.created` \
                 (with `id:` = sequence), `presence.changed`, `error`; while the assistant \
                 answers, `message.delta` and `run.updated` (no id, not replayed); `: ka` \
                 keep-alives.",
                Some(("conversationUid", "The conversation's id (a UUID).")),
                crate::conversations::routes::EventsQuery::into_params(|| Some(ParameterIn::Query)),
                "Resume after this sequence",
            ),
        ),
        (
            format!("{PREFIX}{}", crate::discovery::routes::STREAM.template),
            "get",
            stream(
                "discovery_events",
                "discovery",
                "A discovery session's event stream (`text/event-stream`): `ready`, `revision` \
                 (with `id:` = revision; only the groups landed since the previous one), \
                 `complete` then the end, `error` then the end, `: ka` keep-alives. The \
                 session must exist and be active.",
                Some(("discoveryId", "The discovery session's id.")),
                Vec::new(),
                "Resume after this revision",
            ),
        ),
        (
            format!("{PREFIX}{}", crate::notifications::inbox::STREAM.template),
            "get",
            stream(
                "notification_events",
                "notifications",
                "The caller's notification stream (`text/event-stream`): `ready`, \
                 `notification.created` (with `id:` = the notification's sequence; the \
                 notification as get_notification answers it), `error` then the end, `: ka` \
                 keep-alives. Only the caller's own notifications whose console channel is on.",
                None,
                crate::notifications::inbox::EventsQuery::into_params(|| Some(ParameterIn::Query)),
                "Resume after this notification sequence",
            ),
        ),
        (
            format!("{PREFIX}{}", crate::widgets::routes::PATH),
            "get",
            widget_html(),
        ),
    ]
}

/// `GET /mcp-apps/{view}/mcp-app.html`: HTML for an iframe host.
fn widget_html() -> Value {
    use crate::widgets::routes::{CACHE_CONTROL, CONTENT_SECURITY_POLICY};
    let header = |description: &str, example: &str| json!({"description": description, "schema": {"type": "string", "example": example}});
    let headers = json!({
        "Cache-Control": header("always", CACHE_CONTROL),
        "ETag": header("the built file's version; send it back in If-None-Match", "\"9f86d081884c7d65\""),
    });
    let mut full = headers.clone();
    if let Some(map) = full.as_object_mut() {
        map.insert(
            "Content-Security-Policy".into(),
            header("always", CONTENT_SECURITY_POLICY),
        );
        map.insert("X-Content-Type-Options".into(), header("always", "nosniff"));
    }
    json!({
        "operationId": "get_widget_html",
        "tags": ["widgets"],
        "description": "A built MCP-App widget's single-file HTML, to pass to a sandboxed iframe as \
            srcdoc. `view` is a widget slug (the part between `ui://agentic-api/` and \
            `/mcp-app.html` of a widget resource URI) or a compatibility alias; treat it as opaque.",
        "security": [{"bearer": []}],
        "parameters": [
            {"name": "view", "in": "path", "required": true,
             "description": "lowercase letters, digits and hyphens",
             "schema": {"type": "string", "pattern": "^[a-z0-9-]+$"}},
            {"name": "If-None-Match", "in": "header", "required": false,
             "description": "an ETag received earlier: 304 while it is current",
             "schema": {"type": "string"}},
        ],
        "responses": {
            "200": {"description": "the widget", "headers": full,
                "content": {crate::widgets::MIME_TYPE: {"schema": {"type": "string"}}}},
            "304": {"description": "not modified (If-None-Match names the current ETag)", "headers": headers},
            "400": error_envelope("VALIDATION_ERROR: the view contains unsupported characters"),
            "401": error_envelope("UNAUTHORIZED: missing or invalid bearer token"),
            "404": error_envelope("NOT_FOUND: no built widget for the view"),
        },
    })
}

/// An event stream's operation: a bearer credential or a stream token.
fn stream(
    id: &str,
    tag: &str,
    description: &str,
    param: Option<(&str, &str)>,
    query: Vec<utoipa::openapi::path::Parameter>,
    resume: &str,
) -> Value {
    let mut params: Vec<Value> = param
        .into_iter()
        .map(|(name, description)| {
            json!({
                "name": name, "in": "path", "required": true,
                "description": description, "schema": {"type": "string"},
            })
        })
        .collect();
    params.extend(
        query
            .into_iter()
            .filter_map(|p| serde_json::to_value(p).ok()),
    );
    params.push(json!({
        "name": "Last-Event-ID", "in": "header", "required": false,
        "description": resume, "schema": {"type": "string"},
    }));
    json!({
        "operationId": id,
        "tags": [tag],
        "description": description,
        "security": [{"bearer": []}, {"streamToken": []}],
        "parameters": params,
        "responses": {
            "200": {"description": "the stream", "content": {"text/event-stream": {"schema": {"type": "string"}}}},
            "400": error_envelope("VALIDATION_ERROR (a bad cursor, or an inactive session)"),
            "401": error_envelope("UNAUTHORIZED: no credential, or a stream token that is invalid, expired or minted for another stream"),
            "404": error_envelope("NOT_FOUND: not visible to the caller"),
        },
    })
}

/// Documents the errors every route can return (rate limit, internal error,
/// and for operations with a body: validation, size and media type), so the
/// document lists every status the server can actually produce.
pub fn add_common_responses(doc: &mut Value) {
    let Some(paths) = doc["paths"].as_object_mut() else {
        return;
    };
    for (path, item) in paths.iter_mut() {
        let public = !path.starts_with(PREFIX) || path.ends_with("/openapi.json");
        let Some(item) = item.as_object_mut() else {
            continue;
        };
        for op in item.values_mut() {
            let has_body = op.get("requestBody").is_some();
            let Some(responses) = op["responses"].as_object_mut() else {
                continue;
            };
            let mut add = |status: &str, description: &str| {
                responses
                    .entry(status)
                    .or_insert_with(|| error_envelope(description));
            };
            if !public {
                add(
                    "429",
                    "RATE_LIMITED; see Retry-After and RateLimit-* headers",
                );
            }
            add("500", "INTERNAL_ERROR; safe to retry once");
            if has_body {
                add("400", "VALIDATION_ERROR");
                add("413", "PAYLOAD_TOO_LARGE");
                add("415", "UNSUPPORTED_MEDIA_TYPE");
            }
        }
    }
}

/// The rendered document, computed once at start-up.
pub struct OpenApiJson(pub Vec<u8>);

/// This document.
pub async fn openapi_json(doc: web::Data<OpenApiJson>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(doc.0.clone())
}

/// Describes the stream-token alternative to the bearer credential (the
/// stream routes' own descriptions list it as their second scheme).
fn stream_token_scheme(doc: &mut Value) {
    doc["components"]["securitySchemes"]["streamToken"] = json!({
        "type": "apiKey",
        "in": "query",
        "name": crate::http::auth::STREAM_TOKEN_PARAM,
        "description": "A stream token from POST /api/v2/auth/stream-tokens, for clients that \
            cannot send headers (a browser's EventSource). Valid for the one stream path it \
            was minted for (a conversation's or a discovery session's events, or the caller's \
            notifications), until it \
            expires (reconnects may reuse it). A token minted with an OAuth access token \
            expires no later than that access token, and a stream it opened ends when the \
            access token expires. A bearer credential, if sent, wins.",
    });
}
