//! `/mcp/buyer` over Streamable HTTP with raw JSON-RPC: the handshake and
//! session, tools derived from the operation registry, results and errors
//! as tool results, permissions and tenancy as REST's, progress reports of
//! a waiting discovery, the 401 challenge and the DNS-rebinding checks;
//! every tool schema a self-contained JSON Schema 2020-12, every result
//! checked against its tool's output schema; the body limit.
//! (The reference SDK's client drives it too, from `.ci/run`.)

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_seller::{Behaviour, seller};
use crate::helpers::*;

pub(crate) const MCP: &str = "/mcp/buyer";

pub(crate) struct Session {
    pub path: &'static str,
    pub id: String,
    pub key: String,
    pub next: i64,
    /// Each tool's `outputSchema`, listed at the first call.
    pub outputs: Option<HashMap<String, Value>>,
}

/// Every JSON-RPC message of an answer (JSON, or the data of SSE events).
fn messages(content_type: &str, raw: &[u8]) -> Vec<Value> {
    let text = String::from_utf8_lossy(raw);
    if content_type.starts_with("application/json") {
        return vec![serde_json::from_str(&text).unwrap()];
    }
    text.lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

pub(crate) async fn post(
    app: &TestApp,
    path: &str,
    key: &str,
    session: Option<&str>,
    body: &Value,
) -> (u16, awc::http::header::HeaderMap, Vec<Value>) {
    let mut req = app
        .client
        .post(app.url(path))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("MCP-Protocol-Version", "2025-06-18"));
    if let Some(s) = session {
        req = req.insert_header(("Mcp-Session-Id", s));
    }
    let mut res = req.send_json(body).await.unwrap();
    let raw = res.body().limit(16 * 1024 * 1024).await.unwrap();
    let ct = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    (
        res.status().as_u16(),
        res.headers().clone(),
        messages(&ct, &raw),
    )
}

pub(crate) async fn open(app: &TestApp, key: &str) -> Session {
    open_at(app, MCP, key).await
}

pub(crate) async fn open_at(app: &TestApp, path: &'static str, key: &str) -> Session {
    let (status, headers, msgs) = post(
        app,
        path,
        key,
        None,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "agentic-tests", "version": "1"}}}),
    )
    .await;
    assert_eq!(status, 200, "{msgs:?}");
    let init = msgs.iter().find(|m| m["id"] == 1).unwrap();
    assert!(
        init["result"]["capabilities"]["tools"].is_object(),
        "{init}"
    );
    assert!(
        init["result"]["serverInfo"]["name"]
            .as_str()
            .unwrap()
            .starts_with("agentic-api")
    );
    let id = headers
        .get("mcp-session-id")
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let (status, _, _) = post(
        app,
        path,
        key,
        Some(&id),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    assert_eq!(status, 202);
    Session {
        path,
        id,
        key: key.to_string(),
        next: 2,
        outputs: None,
    }
}

impl Session {
    /// A request's messages (notifications first, the response last).
    pub(crate) async fn request(
        &mut self,
        app: &TestApp,
        method: &str,
        params: Value,
    ) -> Vec<Value> {
        let id = self.next;
        self.next += 1;
        let (status, _, msgs) = post(
            app,
            self.path,
            &self.key,
            Some(&self.id),
            &json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}),
        )
        .await;
        assert_eq!(status, 200, "{msgs:?}");
        assert_eq!(msgs.last().unwrap()["id"], id, "{msgs:?}");
        msgs
    }

    /// A tool's result, whose `structuredContent` must match the tool's
    /// `outputSchema` (as a client that checks it would).
    pub(crate) async fn call(&mut self, app: &TestApp, tool: &str, args: Value) -> Value {
        if self.outputs.is_none() {
            let msgs = self.request(app, "tools/list", json!({})).await;
            let tools = msgs.last().unwrap()["result"]["tools"].as_array().unwrap();
            let outputs = tools
                .iter()
                .map(|t| {
                    (
                        t["name"].as_str().unwrap().to_string(),
                        t["outputSchema"].clone(),
                    )
                })
                .collect();
            self.outputs = Some(outputs);
        }
        let msgs = self
            .request(app, "tools/call", json!({"name": tool, "arguments": args}))
            .await;
        let result = msgs.last().unwrap()["result"].clone();
        if let Some(schema) = self.outputs.as_ref().and_then(|o| o.get(tool)) {
            let content = &result["structuredContent"];
            assert!(
                content.is_object(),
                "{tool}: no structuredContent: {result}"
            );
            assert_conforms(schema, content, tool);
        }
        result
    }
}

/// `instance` is valid under `schema` (JSON Schema 2020-12).
#[track_caller]
pub(crate) fn assert_conforms(schema: &Value, instance: &Value, what: &str) {
    let validator = jsonschema::draft202012::new(schema)
        .unwrap_or_else(|e| panic!("{what}: the schema does not compile: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}\n{instance}");
}

/// Every `$ref` in `schema` is local (`#...`) and leads somewhere in it.
fn assert_refs_resolve(schema: &Value, node: &Value, what: &str) {
    match node {
        Value::Object(map) => {
            if let Some(r) = map.get("$ref") {
                let r = r.as_str().unwrap();
                let pointer = r
                    .strip_prefix('#')
                    .unwrap_or_else(|| panic!("{what}: {r} is not local"));
                assert!(
                    schema.pointer(pointer).is_some(),
                    "{what}: {r} leads nowhere"
                );
            }
            map.values()
                .for_each(|v| assert_refs_resolve(schema, v, what));
        }
        Value::Array(items) => items
            .iter()
            .for_each(|v| assert_refs_resolve(schema, v, what)),
        _ => {}
    }
}

/// The tools of the endpoint at `path`, listed over HTTP.
async fn list_tools(app: &TestApp, path: &'static str, key: &str) -> Vec<Value> {
    let mut s = open_at(app, path, key).await;
    let msgs = s.request(app, "tools/list", json!({})).await;
    msgs.last().unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .clone()
}

#[actix_web::test]
async fn every_tool_schema_stands_alone_as_json_schema_2020_12() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut seen = 0;
    for path in [MCP, "/mcp/storefront", "/mcp/v3"] {
        let tools = list_tools(&app, path, &t.key).await;
        assert!(!tools.is_empty());
        for tool in &tools {
            let name = tool["name"].as_str().unwrap();
            for key in ["inputSchema", "outputSchema"] {
                let what = format!("{path} {name} {key}");
                let schema = &tool[key];
                assert_eq!(schema["type"], "object", "{what}: {schema}");
                if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
                    panic!("{what}: not a 2020-12 schema: {e}\n{schema}");
                }
                assert!(
                    !schema.to_string().contains("#/components/"),
                    "{what}: {schema}"
                );
                assert_refs_resolve(schema, schema, &what);
                jsonschema::draft202012::new(schema)
                    .unwrap_or_else(|e| panic!("{what}: does not compile: {e}"));
                seen += 1;
            }
        }
    }
    assert!(seen >= 2 * (42 + 5), "only {seen} schemas");

    // What a host could not see before: the fields behind the refs.
    let buyer = list_tools(&app, MCP, &t.key).await;
    let v3 = list_tools(&app, "/mcp/v3", &t.key).await;
    let tool =
        |tools: &[Value], name: &str| tools.iter().find(|t| t["name"] == name).unwrap().clone();
    let resolve = |schema: &Value, at: &Value| -> Value {
        match at["$ref"].as_str() {
            Some(r) => schema.pointer(&r[1..]).unwrap().clone(),
            None => at.clone(),
        }
    };
    let create = tool(&buyer, "create_campaign")["inputSchema"].clone();
    let budget = resolve(
        &create,
        &create["properties"]["body"]["properties"]["budget"],
    );
    let budget = budget
        .get("oneOf")
        .and_then(|o| {
            o.as_array()
                .unwrap()
                .iter()
                .find(|b| b.get("$ref").is_some())
        })
        .map(|b| resolve(&create, b))
        .unwrap_or(budget);
    assert!(budget["properties"]["total"].is_object(), "{create}");
    let save = tool(&v3, "save_campaign")["inputSchema"].clone();
    assert!(save["properties"]["flightDates"].is_object(), "{save}");
    assert_refs_resolve(&save, &save, "save_campaign");
    assert!(
        save["$defs"]["FlightDatesIn"]["properties"]["startDate"].is_object(),
        "{save}"
    );
    let validate = tool(&buyer, "validate_targeting")["inputSchema"].clone();
    assert!(
        validate["$defs"]["Constraints"]["properties"].is_object(),
        "{validate}"
    );
    let advertiser = tool(&v3, "save_advertiser")["inputSchema"].clone();
    assert!(
        advertiser["$defs"]["FrequencyCapIn"]["properties"].is_object(),
        "{advertiser}"
    );

    // Output schemas: the operation's data, and the error shape.
    let out = tool(&buyer, "list_advertisers")["outputSchema"].clone();
    assert_conforms(
        &out,
        &json!({"data": [], "meta": {"pagination":
        {"skip": 0, "take": 20, "total": 0, "hasMore": false}}}),
        "an empty page",
    );
    assert_conforms(
        &out,
        &json!({"code": "NOT_FOUND", "message": "x", "recovery": "terminal"}),
        "an error",
    );
    let bad = jsonschema::draft202012::new(&out).unwrap();
    assert!(!bad.is_valid(&json!({"data": {"not": "a list"}})), "{out}");
}

#[actix_web::test]
async fn every_operation_is_a_tool_with_the_registry_schema_and_rest_results() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut s = open(&app, &t.key).await;

    let msgs = s.request(&app, "ping", json!({})).await;
    assert!(msgs.last().unwrap()["result"].is_object());

    let msgs = s.request(&app, "tools/list", json!({})).await;
    let tools = msgs.last().unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .clone();
    let names: HashSet<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let registry: HashSet<&str> = agentic_api::app::OPERATIONS
        .iter()
        .filter(|d| !d.path.starts_with("/storefront/"))
        .map(|d| d.name)
        .collect();
    assert_eq!(
        names, registry,
        "one tool per operation (the storefront operator's are on /mcp/storefront), no other"
    );
    let create = tools
        .iter()
        .find(|t| t["name"] == "create_advertiser")
        .unwrap();
    let def = agentic_api::app::OPERATIONS
        .find("create_advertiser")
        .unwrap();
    assert_eq!(create["inputSchema"], (def.input_schema)());
    assert_eq!(create["description"], def.description);

    // A write: the same data REST returns, and a short text.
    let result = s
        .call(
            &app,
            "create_advertiser",
            json!({"body": {"name": "Acme", "brand": "acme.example", "primaryCurrency": "USD"}}),
        )
        .await;
    assert_ne!(result["isError"], true, "{result}");
    let adv = result["structuredContent"]["data"].clone();
    assert!(adv["id"].as_str().is_some(), "{result}");
    assert_eq!(result["content"][0]["type"], "text");
    let rest = app
        .get(
            &format!("/api/v2/buyer/advertisers/{}", adv["id"].as_str().unwrap()),
            &t.key,
        )
        .await;
    assert_eq!(rest.data(), &adv, "the tool's data is REST's");

    // A list carries its pagination.
    let result = s
        .call(&app, "list_advertisers", json!({"params": {"take": 1}}))
        .await;
    assert_eq!(
        result["structuredContent"]["meta"]["pagination"]["total"], 1,
        "{result}"
    );

    // Errors are tool results, AdCP-style, never transport failures.
    let result = s
        .call(&app, "create_advertiser", json!({"body": {"name": ""}}))
        .await;
    assert_eq!(result["isError"], true, "{result}");
    let e = &result["structuredContent"];
    assert_eq!(e["code"], "VALIDATION_ERROR", "{result}");
    assert_eq!(e["recovery"], "correctable");
    assert!(
        e["message"].is_string() && e["field"].is_string(),
        "{result}"
    );
    // What the conformance runner's `tools-call-error` checks of its own
    // test tool's error: `isError: true` and a text in `content[0]`.
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("VALIDATION_ERROR"), "{result}");
    // A well-formed id nobody has.
    let id = adv["id"].as_str().unwrap();
    let unknown = format!(
        "{}{}",
        &id[..id.len() - 1],
        if id.ends_with('0') { '1' } else { '0' }
    );
    let result = s
        .call(
            &app,
            "get_advertiser",
            json!({"pathParams": {"advertiserId": unknown}}),
        )
        .await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["code"], "NOT_FOUND");
    assert_eq!(result["structuredContent"]["recovery"], "terminal");
    let result = s
        .call(&app, "list_advertisers", json!({"surprise": 1}))
        .await;
    assert_eq!(result["isError"], true, "{result}");
    assert_eq!(result["structuredContent"]["code"], "VALIDATION_ERROR");
}

#[actix_web::test]
async fn tools_keep_the_callers_permissions_and_tenancy() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let reader = app.user_in(&owner.account_id, "member", &[]).await;
    let stranger = app.tenant().await;
    let adv = advertiser(&app, &owner).await;

    let mut s = open(&app, &reader.key).await;
    let denied = s
        .call(
            &app,
            "create_advertiser",
            json!({"body": {"name": "X", "brand": "x.example", "primaryCurrency": "USD"}}),
        )
        .await;
    // Whatever a key may not do over REST, it may not do as a tool.
    let rest = app
        .post(
            "/api/v2/buyer/advertisers",
            &reader.key,
            &json!({"name": "X", "brand": "x.example", "primaryCurrency": "USD"}),
        )
        .await;
    if rest.status == 201 {
        assert_ne!(denied["isError"], true, "{denied}");
    } else {
        assert_eq!(denied["isError"], true, "{denied}");
        assert_eq!(denied["structuredContent"]["code"], rest.code());
    }

    let mut other = open(&app, &stranger.key).await;
    let hidden = other
        .call(
            &app,
            "get_advertiser",
            json!({"pathParams": {"advertiserId": adv}}),
        )
        .await;
    assert_eq!(hidden["isError"], true);
    assert_eq!(hidden["structuredContent"]["code"], "NOT_FOUND");
    let list = other.call(&app, "list_advertisers", json!({})).await;
    assert_eq!(list["structuredContent"]["data"], json!([]));
}

#[actix_web::test]
async fn a_waiting_discovery_reports_progress_once_per_seller() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let mut sellers = Vec::new();
    for (i, ms) in [0u64, 200, 400].into_iter().enumerate() {
        let b = Behaviour {
            delay: Duration::from_millis(ms),
            ..Behaviour::default()
        };
        sellers.push(seller(&app, &format!("Seller {i}"), b).await);
    }
    let mut s = open(&app, &t.key).await;
    let msgs = s
        .request(
            &app,
            "tools/call",
            json!({"name": "discover_products",
                   "arguments": {"body": {"advertiserId": adv, "waitSeconds": 10}},
                   "_meta": {"progressToken": "disc-1"}}),
        )
        .await;
    let progress: Vec<(f64, f64)> = msgs
        .iter()
        .filter(|m| m["method"] == "notifications/progress")
        .map(|m| {
            assert_eq!(m["params"]["progressToken"], "disc-1");
            (
                m["params"]["progress"].as_f64().unwrap(),
                m["params"]["total"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        progress,
        vec![(1.0, 3.0), (2.0, 3.0), (3.0, 3.0)],
        "{msgs:?}"
    );
    let result = &msgs.last().unwrap()["result"];
    assert_eq!(
        result["structuredContent"]["data"]["resultsComplete"], true,
        "{result}"
    );

    // Without a token: the same answer, no notifications.
    let msgs = s
        .request(
            &app,
            "tools/call",
            json!({"name": "discover_products",
                   "arguments": {"body": {"advertiserId": adv, "waitSeconds": 10}}}),
        )
        .await;
    assert_eq!(msgs.len(), 1, "{msgs:?}");
}

#[actix_web::test]
async fn the_endpoint_challenges_strangers_and_refuses_rebinding() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "x", "version": "1"}}});
    for key in [None, Some("not-a-key")] {
        let mut req = app
            .client
            .post(app.url(MCP))
            .insert_header(("Accept", "application/json, text/event-stream"));
        if let Some(k) = key {
            req = req.insert_header(("Authorization", format!("Bearer {k}")));
        }
        let res = req.send_json(&init).await.unwrap();
        assert_eq!(res.status(), 401);
        let challenge = res
            .headers()
            .get("www-authenticate")
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        assert!(
            challenge.starts_with("Bearer resource_metadata=\"")
                && challenge.contains("/.well-known/oauth-protected-resource/mcp/buyer\""),
            "{challenge}"
        );
        assert_eq!(challenge.contains("invalid_token"), key.is_some());
    }

    // A page on another name (DNS rebinding) or another origin is refused.
    for (header, value) in [("Host", "evil.example"), ("Origin", "https://evil.example")] {
        let res = app
            .client
            .post(app.url(MCP))
            .insert_header(("Authorization", format!("Bearer {}", t.key)))
            .insert_header(("Accept", "application/json, text/event-stream"))
            .insert_header((header, value))
            .send_json(&init)
            .await
            .unwrap();
        assert_eq!(res.status(), 403, "{header}: {value}");
    }

    // A session ends with DELETE; its id is unknown afterwards.
    let s = open(&app, &t.key).await;
    let res = app
        .client
        .delete(app.url(MCP))
        .insert_header(("Authorization", format!("Bearer {}", t.key)))
        .insert_header(("Mcp-Session-Id", s.id.clone()))
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success(), "{}", res.status());
    let (status, _, _) = post(
        &app,
        MCP,
        &t.key,
        Some(&s.id),
        &json!({"jsonrpc": "2.0", "id": 9, "method": "ping"}),
    )
    .await;
    assert_eq!(status, 404);
    // Unknown paths under /mcp are plain 404s.
    let res = app.get("/mcp/seller", &t.key).await;
    assert_eq!(res.status, 404);
}

/// The raw bytes of one HTTP/1.1 answer read from `stream`: the head, then
/// whatever else arrives within `wait`.
async fn read_answer(stream: &mut tokio::net::TcpStream, wait: Duration) -> String {
    use tokio::io::AsyncReadExt;
    let mut raw = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !raw.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = tokio::time::timeout_at(deadline, stream.read(&mut buf))
            .await
            .expect("an answer within 10 s")
            .unwrap();
        assert!(
            n > 0,
            "connection closed: {}",
            String::from_utf8_lossy(&raw)
        );
        raw.extend_from_slice(&buf[..n]);
    }
    while let Ok(Ok(n)) = tokio::time::timeout(wait, stream.read(&mut buf)).await {
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    String::from_utf8_lossy(&raw).into_owned()
}

#[actix_web::test]
async fn ending_a_session_leaves_the_kept_alive_connection_usable() {
    // Found by the MCP SDK's OAuth client (scripts/mcp-oauth-check): after
    // its DELETE, the refresh request on the same connection read a stray
    // chunked terminator ("0") as its status line.
    use tokio::io::AsyncWriteExt;
    let app = spawn_app().await;
    let t = app.tenant().await;
    let s = open(&app, &t.key).await;
    let mut conn = tokio::net::TcpStream::connect(("127.0.0.1", app.port))
        .await
        .unwrap();
    let delete = format!(
        "DELETE {MCP} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {}\r\n\
         Mcp-Session-Id: {}\r\nMCP-Protocol-Version: 2025-06-18\r\n\r\n",
        app.port, t.key, s.id
    );
    conn.write_all(delete.as_bytes()).await.unwrap();
    let answer = read_answer(&mut conn, Duration::from_millis(300)).await;
    assert!(answer.starts_with("HTTP/1.1 204 "), "{answer}");
    let (head, rest) = answer.split_once("\r\n\r\n").unwrap();
    assert_eq!(rest, "", "a 204 has no body; after its head came {rest:?}");
    assert!(
        !head.to_ascii_lowercase().contains("transfer-encoding"),
        "{head}"
    );
    // The next request on the same connection gets its own answer.
    let health = format!(
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
        app.port
    );
    conn.write_all(health.as_bytes()).await.unwrap();
    let answer = read_answer(&mut conn, Duration::from_millis(100)).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

#[actix_web::test]
async fn the_v3_typed_tools_adapt_the_same_operations() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let reader = app.user_in(&t.account_id, "member", &[]).await;
    let mut s = open_at(&app, "/mcp/v3", &t.key).await;
    let msgs = s.request(&app, "tools/list", json!({})).await;
    let names: Vec<String> = msgs.last().unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "get_status",
            "search",
            "get",
            "save_advertiser",
            "save_campaign",
            "save_media_buy",
            "save_connection",
            "get_delivery",
            "open_notifications",
            "save_material",
            "save_library_request",
            "save_rfp",
            "open_proposal_pass",
            "open_page",
            "teach_search_materials",
            "teach_get_material",
            "teach_save_material",
            "teach_renew_capability",
            "library_search_materials",
            "library_get_material",
            "library_search_requests",
            "library_search_rfps",
            "library_get_rfp_turn",
            "library_open_proposal_pass",
            "library_save_material",
            "library_save_request",
            "library_save_rfp",
            "library_renew_capability",
        ]
    );

    let created = s
        .call(
            &app,
            "save_advertiser",
            json!({"name": "Acme", "brand": "acme.example", "primaryCurrency": "USD"}),
        )
        .await;
    assert_ne!(created["isError"], true, "{created}");
    let id = created["structuredContent"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let renamed = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": id, "name": "Acme Europe"}),
        )
        .await;
    assert_eq!(
        renamed["structuredContent"]["data"]["name"], "Acme Europe",
        "{renamed}"
    );
    let got = s
        .call(&app, "get", json!({"type": "advertiser", "id": id}))
        .await;
    let rest = app
        .get(&format!("/api/v2/buyer/advertisers/{id}"), &t.key)
        .await;
    assert_eq!(&got["structuredContent"]["data"], rest.data());
    let found = s
        .call(&app, "search", json!({"type": "advertiser", "take": 5}))
        .await;
    assert_eq!(
        found["structuredContent"]["meta"]["pagination"]["total"], 1,
        "{found}"
    );
    let status = s.call(&app, "get_status", json!({})).await;
    let d = &status["structuredContent"]["data"];
    assert_eq!(d["account"]["id"], t.account_id.as_str());
    assert_eq!(d["counts"]["advertisers"], 1, "{status}");

    // The operations' own errors and permissions.
    let bad = s.call(&app, "save_advertiser", json!({"name": ""})).await;
    assert_eq!(bad["isError"], true);
    assert_eq!(bad["structuredContent"]["code"], "VALIDATION_ERROR");
    let bad = s.call(&app, "search", json!({"type": "planets"})).await;
    assert_eq!(bad["structuredContent"]["field"], "type", "{bad}");
    let mut r = open_at(&app, "/mcp/v3", &reader.key).await;
    // A member updates as over REST (PUT), and a stranger cannot see it.
    let tool = r
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": id, "name": "X"}),
        )
        .await;
    let rest = app
        .put(
            &format!("/api/v2/buyer/advertisers/{id}"),
            &reader.key,
            &json!({"name": "Y"}),
        )
        .await;
    assert_eq!(
        tool["isError"] == true,
        rest.status.as_u16() >= 400,
        "{tool} / {}",
        rest.body
    );
    let stranger = app.tenant().await;
    let mut other = open_at(&app, "/mcp/v3", &stranger.key).await;
    let hidden = other
        .call(&app, "get", json!({"type": "advertiser", "id": id}))
        .await;
    assert_eq!(hidden["structuredContent"]["code"], "NOT_FOUND", "{hidden}");
    // A 401 names v3's own resource metadata.
    let res = app
        .client
        .post(app.url("/mcp/v3"))
        .send_json(&json!({}))
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    let challenge = res
        .headers()
        .get("www-authenticate")
        .unwrap()
        .to_str()
        .unwrap();
    assert!(
        challenge.contains("/.well-known/oauth-protected-resource/mcp/v3\""),
        "{challenge}"
    );
}

/// The status of a `method` request naming session `id`, sent with `key`:
/// a `ping` for POST, the server's stream for GET, the end for DELETE.
pub(crate) async fn session_status(
    app: &TestApp,
    path: &str,
    method: awc::http::Method,
    key: &str,
    id: &str,
) -> u16 {
    let req = app
        .client
        .request(method.clone(), app.url(path))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("MCP-Protocol-Version", "2025-06-18"))
        .insert_header(("Mcp-Session-Id", id));
    let res = if method == awc::http::Method::POST {
        req.send_json(&json!({"jsonrpc": "2.0", "id": 99, "method": "ping"}))
            .await
    } else {
        req.send().await
    }
    .unwrap();
    // A GET that is let in is the server's open stream: its status is enough.
    res.status().as_u16()
}

/// Rows of `mcp_sessions` with this id (0 or 1).
pub(crate) async fn stored_sessions(app: &TestApp, id: &str) -> u64 {
    use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
    entity::mcp_session::Entity::find()
        .filter(entity::mcp_session::Column::Id.eq(id))
        .count(&app.db)
        .await
        .unwrap()
}

#[actix_web::test]
async fn a_session_answers_only_the_user_and_account_that_opened_it() {
    use awc::http::Method;
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let teammate = app
        .user_in(&owner.account_id, "admin", &["platform:write"])
        .await;
    let stranger = app.tenant().await;
    let mut s = open(&app, &owner.key).await;
    assert_eq!(stored_sessions(&app, &s.id).await, 1);

    // Another user of the same account, or another account, presenting the
    // session id: unknown to them, whatever they try, and the session lives on.
    for other in [&teammate, &stranger] {
        for method in [Method::POST, Method::GET, Method::DELETE] {
            let status = session_status(&app, MCP, method.clone(), &other.key, &s.id).await;
            assert_eq!(status, 404, "{method} by another caller");
        }
        let (status, _, msgs) = post(
            &app,
            MCP,
            &other.key,
            Some(&s.id),
            &json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
                    "params": {"name": "list_advertisers", "arguments": {}}}),
        )
        .await;
        assert_eq!(status, 404, "{msgs:?}");
    }
    let list = s.call(&app, "list_advertisers", json!({})).await;
    assert_ne!(list["isError"], true, "{list}");

    // The same user's other credential continues it, and each request is
    // authorized as its own credential: a read-only key may read, not write.
    let reader_key = agentic_api::auth::tenancy::create_api_key(
        &app.db,
        owner.user_id,
        &["platform:read".into()],
    )
    .await
    .unwrap();
    let mut as_reader = Session {
        key: reader_key,
        id: s.id.clone(),
        path: MCP,
        next: 100,
        outputs: None,
    };
    let listed = as_reader.call(&app, "list_advertisers", json!({})).await;
    assert_ne!(listed["isError"], true, "{listed}");
    let denied = as_reader
        .call(
            &app,
            "create_advertiser",
            json!({"body": {"name": "X", "brand": "x.example", "primaryCurrency": "USD"}}),
        )
        .await;
    assert_eq!(denied["isError"], true, "{denied}");
    assert_eq!(denied["structuredContent"]["code"], "FORBIDDEN");

    // A session of /mcp/buyer is unknown at /mcp/v3.
    let status = session_status(&app, "/mcp/v3", Method::POST, &owner.key, &s.id).await;
    assert_eq!(status, 404);

    // The owner ends it: gone from the database, then unknown.
    let status = session_status(&app, MCP, Method::DELETE, &owner.key, &s.id).await;
    assert_eq!(status, 204);
    assert_eq!(stored_sessions(&app, &s.id).await, 0);
    let status = session_status(&app, MCP, Method::POST, &owner.key, &s.id).await;
    assert_eq!(status, 404);
}

#[actix_web::test]
async fn an_idle_session_expires_and_each_request_renews_it() {
    use awc::http::Method;
    let app = spawn_app_with(|c| c.mcp_session_ttl = Duration::from_secs(3)).await;
    let t = app.tenant().await;
    let s = open(&app, &t.key).await;
    // Used at 2 s and at 4 s (past the first expiry): renewed each time.
    for _ in 0..2 {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let status = session_status(&app, MCP, Method::POST, &t.key, &s.id).await;
        assert_eq!(status, 200);
    }
    // Then idle for longer than its lifetime: gone, though this instance
    // still held it in memory.
    tokio::time::sleep(Duration::from_millis(3500)).await;
    let status = session_status(&app, MCP, Method::POST, &t.key, &s.id).await;
    assert_eq!(status, 404);
    // The next session opened prunes the expired row.
    assert_eq!(stored_sessions(&app, &s.id).await, 1);
    let _fresh = open(&app, &t.key).await;
    assert_eq!(stored_sessions(&app, &s.id).await, 0);
}

/// The README's 1 MiB, enforced once the caller is known: a stranger's body
/// is not read at all (401 while it is still being sent); a caller's body
/// over 1 MiB is 413 `PAYLOAD_TOO_LARGE`, declared or streamed; one of
/// 600 KiB (over actix's 256 KiB default) is served.
#[actix_web::test]
async fn the_documented_1_mib_body_limit_applies_after_authentication() {
    use tokio::io::AsyncWriteExt;
    let app = spawn_app().await;
    let t = app.tenant().await;
    let head = |auth: &str, length: &str| {
        format!(
            "POST {MCP} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n{auth}\
             Accept: application/json, text/event-stream\r\n\
             Content-Type: application/json\r\n{length}\r\n",
            app.port
        )
    };
    let connect = || tokio::net::TcpStream::connect(("127.0.0.1", app.port));
    let bearer = format!("Authorization: Bearer {}\r\n", t.key);
    let envelope = |answer: &str| -> Value {
        let (_, body) = answer.split_once("\r\n\r\n").unwrap();
        serde_json::from_str(body).unwrap_or_else(|_| panic!("{answer}"))
    };

    // A stranger announcing 10 MiB and sending 1 KiB: answered at once.
    let mut conn = connect().await.unwrap();
    let req = head("", "Content-Length: 10485760\r\n");
    conn.write_all(req.as_bytes()).await.unwrap();
    conn.write_all(&[b' '; 1024]).await.unwrap();
    let answer = read_answer(&mut conn, Duration::from_millis(300)).await;
    assert!(answer.starts_with("HTTP/1.1 401 "), "{answer}");
    assert!(
        answer
            .to_ascii_lowercase()
            .contains("www-authenticate: bearer"),
        "{answer}"
    );

    // A caller announcing more than 1 MiB: 413 before any of it is sent.
    let mut conn = connect().await.unwrap();
    let req = head(&bearer, "Content-Length: 1048577\r\n");
    conn.write_all(req.as_bytes()).await.unwrap();
    let answer = read_answer(&mut conn, Duration::from_millis(300)).await;
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    let e = envelope(&answer);
    assert_eq!(e["error"]["code"], "PAYLOAD_TOO_LARGE", "{e}");
    assert_eq!(e["error"]["details"]["limitBytes"], 1048576, "{e}");

    // A caller streaming more than 1 MiB without a length: 413 too.
    let mut conn = connect().await.unwrap();
    let req = head(&bearer, "Transfer-Encoding: chunked\r\n");
    conn.write_all(req.as_bytes()).await.unwrap();
    let piece = vec![b' '; 64 * 1024];
    for _ in 0..17 {
        let chunk = format!("{:x}\r\n", piece.len());
        if conn.write_all(chunk.as_bytes()).await.is_err()
            || conn.write_all(&piece).await.is_err()
            || conn.write_all(b"\r\n").await.is_err()
        {
            break;
        }
    }
    let answer = read_answer(&mut conn, Duration::from_millis(300)).await;
    assert!(answer.starts_with("HTTP/1.1 413 "), "{answer}");
    assert_eq!(envelope(&answer)["error"]["code"], "PAYLOAD_TOO_LARGE");

    // 600 KiB from a caller: through to the tool (whose own rule refuses
    // so long a name).
    let mut s = open(&app, &t.key).await;
    let name = "n".repeat(600 * 1024);
    let result = s
        .call(
            &app,
            "create_advertiser",
            json!({"body": {"name": name, "brand": "acme.example", "primaryCurrency": "USD"}}),
        )
        .await;
    assert_eq!(
        result["isError"], true,
        "a tool result, not a transport error"
    );
    assert_eq!(result["structuredContent"]["field"], "name");
}
