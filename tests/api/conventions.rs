//! v2 conventions: every failure is an envelope with the right status and code.

use actix_web::http::Method;
use serde_json::json;

use crate::helpers::*;

#[actix_web::test]
async fn unknown_routes_are_404_envelopes() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for path in [
        "/api/v2/nope",
        "/api/v3/me",
        "/console/nope",
        "/api/v2/me/extra",
        "/%FF%FE",
    ] {
        let res = app.get(path, &t.key).await;
        res.assert_error(404, "NOT_FOUND");
    }
}

#[actix_web::test]
async fn a_wrong_method_is_405_with_allow() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .request(Method::POST, "/api/v2/me", Some(&t.key), Some(&json!({})))
        .await;
    res.assert_error(405, "METHOD_NOT_ALLOWED");
    let allow = res.header("allow").unwrap();
    assert!(allow.contains("GET") && allow.contains("PATCH"), "{allow}");
    let res = app
        .request(
            Method::PUT,
            "/api/v2/api-keys/1",
            Some(&t.key),
            Some(&json!({})),
        )
        .await;
    res.assert_error(405, "METHOD_NOT_ALLOWED");
    assert_eq!(res.header("allow"), Some("DELETE"));
}

#[actix_web::test]
async fn malformed_json_is_a_validation_error_and_changes_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let bodies: Vec<&[u8]> = vec![
        b"{",
        b"{\"name\": }",
        b"not json",
        b"{\"name\": \"x\"} trailing",
        b"\xff\xfe\xfd",
        b"{\"name\": \"\xc3\x28\"}",
        b"",
        b"null",
        b"[]",
        b"\"name\"",
    ];
    for body in bodies {
        let res = app
            .send_raw(
                Method::PATCH,
                "/api/v2/me",
                Some(&t.key),
                Some("application/json"),
                body.to_vec(),
            )
            .await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert!(
            res.body["error"]["details"]["issues"].is_array(),
            "{}",
            res.body
        );
    }
    let me = app.get("/api/v2/me", &t.key).await;
    assert!(
        me.data()["user"]["name"]
            .as_str()
            .unwrap()
            .starts_with("User ")
    );
}

#[actix_web::test]
async fn wrong_types_missing_and_unknown_fields_name_the_field() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for (body, field) in [
        (json!({"name": 42}), "name"),
        (json!({}), "name"),
        (json!({"name": "ok", "role": "super-admin"}), "role"),
        (json!({"name": ["a"]}), "name"),
    ] {
        let res = app.patch("/api/v2/me", &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{body}");
        assert_eq!(
            res.body["error"]["details"]["issues"][0]["path"],
            json!(field)
        );
    }
    // An unknown field never escalates privileges.
    assert_eq!(
        app.get("/api/v2/me", &t.key).await.data()["user"]["role"],
        json!("admin")
    );
}

#[actix_web::test]
async fn a_wrong_content_type_is_415() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for ct in [
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("application/jsonx"),
    ] {
        let res = app
            .send_raw(
                Method::PATCH,
                "/api/v2/me",
                Some(&t.key),
                ct,
                br#"{"name":"x"}"#.to_vec(),
            )
            .await;
        res.assert_error(415, "UNSUPPORTED_MEDIA_TYPE");
    }
    let res = app
        .send_raw(
            Method::PATCH,
            "/api/v2/me",
            Some(&t.key),
            Some("application/json; charset=utf-8"),
            br#"{"name":"Charset OK"}"#.to_vec(),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
}

#[actix_web::test]
async fn an_oversized_body_is_413_and_changes_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let huge = format!("{{\"name\": \"{}\"}}", "a".repeat(300 * 1024));
    let res = app
        .send_raw(
            Method::PATCH,
            "/api/v2/me",
            Some(&t.key),
            Some("application/json"),
            huge.into_bytes(),
        )
        .await;
    res.assert_error(413, "PAYLOAD_TOO_LARGE");
    assert!(res.body["error"]["details"]["limitBytes"].is_number());
    assert!(
        app.get("/api/v2/me", &t.key).await.data()["user"]["name"]
            .as_str()
            .unwrap()
            .starts_with("User ")
    );
}

#[actix_web::test]
async fn unauthenticated_requests_with_bad_bodies_are_still_401() {
    let app = spawn_app().await;
    let res = app
        .send_raw(
            Method::PATCH,
            "/api/v2/me",
            None,
            Some("application/json"),
            b"{".to_vec(),
        )
        .await;
    assert!(res.status == 401 || res.status == 400, "{}", res.status);
    assert!(res.body["data"].is_null() && res.body["error"]["code"].is_string());
}

#[actix_web::test]
async fn every_response_carries_a_unique_request_id() {
    let app = spawn_app().await;
    let a = app.request(Method::GET, "/healthz", None, None).await;
    let b = app.request(Method::GET, "/api/v2/nope", None, None).await;
    let (ia, ib) = (
        a.header("x-request-id").unwrap(),
        b.header("x-request-id").unwrap(),
    );
    assert_eq!(ia.len(), 36);
    assert_ne!(ia, ib);
}

#[actix_web::test]
async fn health_and_readiness_probes_answer() {
    let app = spawn_app().await;
    let h = app.request(Method::GET, "/healthz", None, None).await;
    assert_eq!(h.status, 200);
    assert_eq!(h.data()["status"], json!("ok"));
    let r = app.request(Method::GET, "/readyz", None, None).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["status"], json!("ready"));
}

#[actix_web::test]
async fn readiness_fails_when_the_database_is_gone() {
    let app = spawn_app().await;
    app.db.clone().close().await.unwrap();
    let r = app.request(Method::GET, "/readyz", None, None).await;
    r.assert_error(503, "SERVICE_UNAVAILABLE");
    // Liveness does not depend on the database.
    assert_eq!(
        app.request(Method::GET, "/healthz", None, None)
            .await
            .status,
        200
    );
}

#[actix_web::test]
async fn internal_errors_are_500_envelopes_without_internals() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    assert_eq!(app.get("/api/v2/me", &t.key).await.status, 200);
    // Break the database under a request that needs it.
    app.db.clone().close().await.unwrap();
    let res = app.get("/api/v2/api-keys", &t.key).await;
    res.assert_error(500, "INTERNAL_ERROR");
    let text = String::from_utf8_lossy(&res.raw).to_lowercase();
    for leak in ["sqlx", "pool", "sqlite", "postgres", "connection", "select"] {
        assert!(!text.contains(leak), "leaked '{leak}': {text}");
    }
}

/// A small deterministic fuzzer: odd methods, paths, headers and bodies never
/// produce a 500, a dropped connection or a non-envelope body.
#[actix_web::test]
async fn fuzzed_requests_never_yield_500_or_non_envelope_bodies() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let paths = [
        "/api/v2/me",
        "/api/v2/api-keys",
        "/api/v2/api-keys/1",
        "/api/v2/api-keys/%00",
        "/api/v2/api-keys/00000000-0000-0000-0000-000000000000",
        "/api/v2/api-keys/99999999999999999999",
        "/api/v2/me?take=%FF",
        "/api/v2/api-keys?take=1&take=2",
        "/api/v2/api-keys?skip=%20",
        "/api/v2/%2e%2e/me",
        "/api/v2//me",
        "/api/v2/openapi.json",
        "/api/v2/assistant/conversations",
        "/api/v2/assistant/conversations/not-a-uuid/messages",
        "/api/v2/assistant/conversations/00000000-0000-4000-8000-000000000000/title",
        "/api/v2/assistant/conversations/00000000-0000-4000-8000-000000000000/sharing",
        "/api/v2/assistant/conversations/%ZZ/events",
        "/api/v2/assistant/conversation-settings",
        "/api/v2/buyer/advertisers",
        "/api/v2/buyer/advertisers/not-a-uuid",
    ];
    let methods = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::OPTIONS,
    ];
    let cts = [
        Some("application/json"),
        Some("text/plain"),
        None,
        Some("application/json; charset=latin1"),
        Some("\u{7f}"),
    ];
    for i in 0..300 {
        let path = paths[(next() % paths.len() as u64) as usize];
        let method = methods[(next() % methods.len() as u64) as usize].clone();
        let ct = cts[(next() % cts.len() as u64) as usize];
        let len = (next() % 200) as usize;
        let body: Vec<u8> = match i % 4 {
            0 => (0..len).map(|_| next() as u8).collect(),
            1 => br#"{"name": 1, "title": null, "take": "x", "sharingEnabled": "yes"}"#.to_vec(),
            2 => format!("{{\"name\": \"{}\"}}", "\u{0}é\u{202e}".repeat(len)).into_bytes(),
            _ => b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
                .to_vec(),
        };
        let key = if i % 5 == 0 {
            None
        } else {
            Some(t.key.as_str())
        };
        let ct = ct.filter(|c| c.is_ascii() && !c.contains('\u{7f}'));
        let res = app.send_raw(method.clone(), path, key, ct, body).await;
        assert!(
            res.status.as_u16() < 500,
            "{method} {path} -> {} {}",
            res.status,
            res.body
        );
        if !(res.status.is_success() && path.ends_with("openapi.json")) {
            assert!(
                res.body["data"].is_null() == res.body["error"].is_object()
                    || res.body["error"].is_null(),
                "{method} {path}: {}",
                String::from_utf8_lossy(&res.raw)
            );
            assert!(
                res.body.get("data").is_some() && res.body.get("error").is_some(),
                "{method} {path} -> {}: not an envelope: {}",
                res.status,
                String::from_utf8_lossy(&res.raw)
            );
        }
    }
    // The server is still healthy (the fuzzer may legitimately revoke its own key).
    let fresh = app.tenant().await;
    assert_eq!(app.get("/api/v2/me", &fresh.key).await.status, 200);
}

#[actix_web::test]
async fn operation_replies_are_whole_envelopes_with_their_length() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let id = advertiser(&app, &t).await;
    let created = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &json!({"name": "Second", "brand": "second.example", "primaryCurrency": "EUR"}),
        )
        .await;
    let one = app
        .get(&format!("/api/v2/buyer/advertisers/{id}"), &t.key)
        .await;
    let page = app.get("/api/v2/buyer/advertisers?take=1", &t.key).await;
    for (res, status) in [(&created, 201), (&one, 200), (&page, 200)] {
        assert_eq!(res.status.as_u16(), status, "{}", res.body);
        // Sent in pieces, announced whole: a length, never chunked.
        assert_eq!(
            res.header("content-length"),
            Some(res.raw.len().to_string().as_str())
        );
        assert_eq!(res.header("transfer-encoding"), None);
        assert_eq!(res.header("content-type"), Some("application/json"));
        assert!(res.body["error"].is_null(), "{}", res.body);
        assert!(
            res.data().is_object() || res.data().is_array(),
            "{}",
            res.body
        );
    }
    assert_eq!(one.data()["id"], json!(id));
    assert_eq!(page.data().as_array().map(Vec::len), Some(1));
    assert_eq!(page.body["meta"]["pagination"]["total"], json!(2));
    assert!(
        page.raw.ends_with(b"}}}"),
        "{}",
        String::from_utf8_lossy(&page.raw)
    );
}
