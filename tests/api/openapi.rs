use actix_web::http::Method;
use serde_json::Value;

use crate::helpers::*;

#[actix_web::test]
async fn the_openapi_document_is_generated_and_covers_the_routes() {
    let app = spawn_app().await;
    let res = app
        .request(Method::GET, "/api/v2/openapi.json", None, None)
        .await;
    assert_eq!(res.status, 200);
    let doc = &res.body;
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    let paths = doc["paths"].as_object().unwrap();
    for (path, method) in [
        ("/api/v2/me", "get"),
        ("/api/v2/me", "patch"),
        ("/api/v2/api-keys", "get"),
        ("/api/v2/api-keys/{keyId}", "delete"),
        ("/healthz", "get"),
        ("/readyz", "get"),
        ("/api/v2/assistant/conversations", "get"),
        ("/api/v2/assistant/conversations", "post"),
        (
            "/api/v2/assistant/conversations/{conversationUid}/title",
            "patch",
        ),
        (
            "/api/v2/assistant/conversations/{conversationUid}/sharing",
            "patch",
        ),
        (
            "/api/v2/assistant/conversations/{conversationUid}/messages",
            "post",
        ),
        (
            "/api/v2/assistant/conversations/{conversationUid}/events",
            "get",
        ),
        ("/api/v2/assistant/conversation-settings", "get"),
        ("/api/v2/assistant/conversation-settings", "patch"),
        ("/api/v2/buyer/advertisers", "get"),
        ("/api/v2/buyer/advertisers", "post"),
        ("/api/v2/buyer/advertisers/{advertiserId}", "get"),
        ("/api/v2/buyer/advertisers/{advertiserId}", "put"),
        ("/api/v2/buyer/audit-logs", "get"),
        ("/api/v2/auth/stream-tokens", "post"),
        ("/api/v2/buyer/discovery/{discoveryId}/events", "get"),
    ] {
        assert!(
            paths.get(path).and_then(|p| p.get(method)).is_some(),
            "{method} {path} missing"
        );
    }
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for s in [
        "ErrorEnvelope",
        "ErrorBody",
        "Issue",
        "PaginationMeta",
        "ConversationOut",
        "MessageOut",
        "Participant",
        "ConversationList",
        "SettingsOut",
        "AdvertiserOut",
        "AdvertiserCreate",
        "AdvertiserUpdate",
        "LinkedBrand",
        "FrequencyCapIn",
        "UtmParam",
        "AuditEntry",
    ] {
        assert!(schemas.contains_key(s), "schema {s} missing");
    }
    assert_eq!(
        doc["components"]["securitySchemes"]["bearer"]["scheme"],
        Value::from("bearer")
    );
}

/// Every documented route is actually served: nothing is documented that
/// the router would answer 404 or 405 to.
#[actix_web::test]
async fn every_documented_operation_is_routed() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .request(Method::GET, "/api/v2/openapi.json", None, None)
        .await;
    for (path, item) in res.body["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let Ok(m) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            let concrete = path
                .split('/')
                .map(|seg| {
                    if seg.starts_with('{') {
                        "00000000-0000-4000-8000-000000000000"
                    } else {
                        seg
                    }
                })
                .collect::<Vec<_>>()
                .join("/");
            if concrete.ends_with("/events") {
                continue; // streams are covered by their own tests
            }
            let r = app
                .request(
                    m.clone(),
                    &concrete,
                    Some(&t.key),
                    Some(&serde_json::json!({})),
                )
                .await;
            assert!(
                r.status != 405,
                "{m} {path} is documented but not routed: {}",
                r.body
            );
            if r.status == 404 {
                assert_ne!(
                    r.body["error"]["message"]
                        .as_str()
                        .unwrap_or("")
                        .split(' ')
                        .next(),
                    Some("no"),
                    "{m} {path} is documented but not routed"
                );
            }
            assert!(r.status.as_u16() < 500, "{m} {path} -> {}", r.status);
        }
    }
}

/// Every registered operation is documented at its own verb and path, under
/// its own name, with its path parameters, its body and its success
/// status, so the REST surface and the registry cannot drift apart.
#[actix_web::test]
async fn every_registered_operation_is_documented_under_its_name() {
    let doc = agentic_api::app::openapi_document();
    let doc = serde_json::to_value(&doc).unwrap();
    let mut seen = 0;
    for def in agentic_api::app::OPERATIONS.iter() {
        let path = format!("/api/v2{}", def.path);
        let op = &doc["paths"][&path][def.verb.as_str().to_ascii_lowercase()];
        assert!(
            op.is_object(),
            "{} {path} not documented",
            def.verb.as_str()
        );
        assert_eq!(op["operationId"], def.name, "{path}");
        assert_eq!(op["description"], def.description, "{}", def.name);
        assert_eq!(
            op["security"],
            serde_json::json!([{"bearer": []}]),
            "{}",
            def.name
        );
        let schema = (def.input_schema)();
        assert_eq!(schema["type"], "object", "{}", def.name);
        // Each `{parameter}` of the path is a required path parameter.
        let params = op["parameters"].as_array().cloned().unwrap_or_default();
        for name in def.path.split('/').filter_map(|s| s.strip_prefix('{')) {
            let name = name.trim_end_matches('}');
            assert!(
                params
                    .iter()
                    .any(|p| p["name"] == name && p["in"] == "path" && p["required"] == true),
                "{}: path parameter {name} not documented",
                def.name
            );
        }
        // A body is documented as the operation takes it.
        match def.body {
            agentic_api::ops::BodyKind::None => {
                assert!(op.get("requestBody").is_none(), "{}", def.name)
            }
            kind => assert_eq!(
                op["requestBody"]["required"],
                kind == agentic_api::ops::BodyKind::Required,
                "{}",
                def.name
            ),
        }
        // The success response is the envelope around the output.
        let ok = &op["responses"][def.status.to_string()];
        let envelope = &ok["content"]["application/json"]["schema"];
        assert!(envelope["properties"]["data"].is_object(), "{}", def.name);
        assert_eq!(
            envelope["properties"].get("meta").is_some(),
            def.paginated,
            "{}",
            def.name
        );
        assert!(op["responses"]["401"].is_object(), "{}", def.name);
        if def.access.is_write() {
            assert!(op["responses"]["403"].is_object(), "{}", def.name);
        }
        for (status, description) in def.errors {
            assert_eq!(
                op["responses"][status.to_string()]["description"],
                *description,
                "{}",
                def.name
            );
        }
        seen += 1;
    }
    assert!(seen >= 12, "only {seen} operations registered");
}

/// Every `$ref` in the document names a schema it holds.
#[actix_web::test]
async fn no_reference_dangles() {
    fn refs<'a>(v: &'a Value, out: &mut Vec<&'a str>) {
        match v {
            Value::Object(map) => {
                if let Some(r) = map.get("$ref").and_then(Value::as_str) {
                    out.push(r);
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }
    let doc = agentic_api::app::openapi_document();
    let mut found = Vec::new();
    refs(&doc, &mut found);
    assert!(!found.is_empty());
    for r in found {
        let name = r
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("{r} does not point at a component"));
        assert!(
            doc["components"]["schemas"].get(name).is_some(),
            "{r} dangles"
        );
    }
}

/// The routes that are not operations are described too: the probes, this
/// document and both event streams (which take a stream token too).
#[actix_web::test]
async fn the_other_routes_are_described() {
    let doc = agentic_api::app::openapi_document();
    for path in ["/healthz", "/readyz", "/api/v2/openapi.json"] {
        assert!(doc["paths"][path]["get"].is_object(), "{path}");
    }
    for (path, param) in [
        (
            "/api/v2/assistant/conversations/{conversationUid}/events",
            "conversationUid",
        ),
        (
            "/api/v2/buyer/discovery/{discoveryId}/events",
            "discoveryId",
        ),
    ] {
        let op = &doc["paths"][path]["get"];
        assert_eq!(
            op["security"],
            serde_json::json!([{"bearer": []}, {"streamToken": []}]),
            "{path}"
        );
        assert!(
            op["responses"]["200"]["content"]["text/event-stream"].is_object(),
            "{path}"
        );
        assert!(
            op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == param && p["in"] == "path"),
            "{path}"
        );
    }
    let scheme = &doc["components"]["securitySchemes"]["streamToken"];
    assert_eq!(scheme["name"], "streamToken");
    assert!(
        scheme["description"]
            .as_str()
            .unwrap()
            .contains("expires no later than that access token"),
        "{scheme}"
    );
}
