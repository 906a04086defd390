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
/// its own name, so the REST surface and the registry cannot drift apart.
#[actix_web::test]
async fn every_registered_operation_is_documented_under_its_name() {
    let doc = agentic_api::app::openapi_document();
    let doc = serde_json::to_value(&doc).unwrap();
    let mut seen = 0;
    for def in agentic_api::ops::registry() {
        let path = format!("/api/v2{}", def.path);
        let op = &doc["paths"][&path][def.verb.as_str().to_ascii_lowercase()];
        assert!(
            op.is_object(),
            "{} {path} not documented",
            def.verb.as_str()
        );
        assert_eq!(op["operationId"], def.name, "{path}");
        let schema = (def.input_schema)();
        assert_eq!(schema["type"], "object", "{}", def.name);
        seen += 1;
    }
    assert!(seen >= 12, "only {seen} operations registered");
}
