use actix_web::http::Method;
use serde_json::json;

use crate::helpers::*;

#[actix_web::test]
async fn me_returns_the_caller_behind_the_key() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app.get("/api/v2/me", &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body["error"].is_null());
    assert_eq!(res.data()["account"]["id"], json!(t.account_id));
    assert_eq!(res.data()["account"]["assistantEnabled"], json!(true));
    assert_eq!(res.data()["user"]["id"], json!(t.user_id));
    assert_eq!(res.data()["user"]["email"], json!(t.email));
    assert_eq!(res.data()["user"]["role"], json!("admin"));
    assert_eq!(res.data()["permissions"], json!(["platform:write"]));
}

#[actix_web::test]
async fn a_member_key_without_permissions_reports_exactly_that() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let member = app.user_in(&admin.account_id, "member", &[]).await;
    let res = app.get("/api/v2/me", &member.key).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.data()["user"]["role"], json!("member"));
    assert_eq!(res.data()["permissions"], json!([]));
    assert_eq!(res.data()["account"]["id"], json!(admin.account_id));
}

#[actix_web::test]
async fn missing_malformed_or_unknown_tokens_are_401_envelopes() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let no_header = app.request(Method::GET, "/api/v2/me", None, None).await;
    no_header.assert_error(401, "UNAUTHORIZED");
    assert_eq!(no_header.header("www-authenticate"), Some("Bearer"));

    // The key with its last character changed (to one it is not).
    let last = if t.key.ends_with('x') { 'y' } else { 'x' };
    let forged = format!("{}{last}", &t.key[..t.key.len() - 1]);
    for header in [
        "Basic dXNlcjpwYXNz".to_string(),
        "Bearer".to_string(),
        "Bearer ".to_string(),
        format!("Token {}", t.key),
        "Bearer not-a-key".to_string(),
        format!("Bearer {forged}"),
        format!("Bearer {}", t.key.replace("agk_", "agx_")),
        "Bearer agk_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".to_string(),
    ] {
        let res = app
            .client
            .get(app.url("/api/v2/me"))
            .insert_header(("Authorization", header.clone()))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 401, "header {header:?}");
    }
    // The real key still works: the bad attempts did not poison the cache.
    assert_eq!(app.get("/api/v2/me", &t.key).await.status, 200);
}

#[actix_web::test]
async fn a_key_in_the_wrong_case_scheme_still_authenticates() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .client
        .get(app.url("/api/v2/me"))
        .insert_header(("Authorization", format!("bearer {}", t.key)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
}

#[actix_web::test]
async fn revoking_a_key_takes_effect_immediately_despite_the_cache() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    assert_eq!(app.get("/api/v2/me", &t.key).await.status, 200); // now cached
    let keys = app.get("/api/v2/api-keys", &t.key).await;
    let id = keys.data()[0]["id"].as_i64().unwrap();
    let res = app.delete(&format!("/api/v2/api-keys/{id}"), &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.data()["apiKey"]["revokedAt"].is_string());
    app.get("/api/v2/me", &t.key)
        .await
        .assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn api_keys_list_is_paginated_and_never_shows_secrets() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let extra1 = app.user_in(&t.account_id, "member", &[]).await; // other user's key: not listed
    for _ in 0..2 {
        agentic_api::auth::tenancy::create_api_key(&app.db, t.user_id, &[])
            .await
            .unwrap();
    }
    let page1 = app.get("/api/v2/api-keys?take=2", &t.key).await;
    assert_eq!(page1.status, 200, "{}", page1.body);
    assert_eq!(
        page1.body["meta"]["pagination"],
        json!({"skip": 0, "take": 2, "total": 3, "hasMore": true})
    );
    assert_eq!(page1.data().as_array().unwrap().len(), 2);
    let page2 = app.get("/api/v2/api-keys?take=2&skip=2", &t.key).await;
    assert_eq!(
        page2.body["meta"]["pagination"],
        json!({"skip": 2, "take": 2, "total": 3, "hasMore": false})
    );
    assert_eq!(page2.data().as_array().unwrap().len(), 1);
    // Newest first: ids strictly decrease across the pages.
    let ids: Vec<i64> = page1
        .data()
        .as_array()
        .unwrap()
        .iter()
        .chain(page2.data().as_array().unwrap())
        .map(|k| k["id"].as_i64().unwrap())
        .collect();
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "{ids:?}");
    assert!(
        !page1
            .raw
            .windows(extra1.key.len())
            .any(|w| w == extra1.key.as_bytes())
    );
    let text = String::from_utf8_lossy(&page1.raw);
    assert!(
        !text.contains(&t.key[t.key.len() - 40..]),
        "secret leaked: {text}"
    );
    assert!(!text.contains("keyHash"));
}

#[actix_web::test]
async fn pagination_rejects_out_of_range_values_with_the_field_named() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for (qs, field) in [
        ("take=0", "take"),
        ("take=101", "take"),
        ("take=abc", "take"),
        ("take=-1", "take"),
        ("skip=-1", "skip"),
        ("skip=1.5", "skip"),
        ("skip=99999999999999999999999", "skip"),
    ] {
        let res = app.get(&format!("/api/v2/api-keys?{qs}"), &t.key).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{qs}");
        assert_eq!(
            res.body["error"]["details"]["issues"][0]["path"],
            json!(field)
        );
    }
    let ok = app.get("/api/v2/api-keys?take=100&skip=0", &t.key).await;
    assert_eq!(ok.status, 200);
}

#[actix_web::test]
async fn a_key_of_another_user_cannot_be_revoked() {
    let app = spawn_app().await;
    let a = app.tenant().await;
    let b = app.tenant().await;
    let b_keys = app.get("/api/v2/api-keys", &b.key).await;
    let b_id = b_keys.data()[0]["id"].as_i64().unwrap();
    app.delete(&format!("/api/v2/api-keys/{b_id}"), &a.key)
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(app.get("/api/v2/me", &b.key).await.status, 200);
    let bad = app.delete("/api/v2/api-keys/not-a-number", &a.key).await;
    bad.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(bad.body["error"]["field"], json!("keyId"));
}

#[actix_web::test]
async fn renaming_yourself_is_visible_on_the_next_request() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    assert_eq!(app.get("/api/v2/me", &t.key).await.status, 200);
    let res = app
        .patch("/api/v2/me", &t.key, &json!({"name": "  Ada Lovelace "}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["user"]["name"], json!("Ada Lovelace"));
    let me = app.get("/api/v2/me", &t.key).await;
    assert_eq!(me.data()["user"]["name"], json!("Ada Lovelace"));
    let blank = app
        .patch("/api/v2/me", &t.key, &json!({"name": "   "}))
        .await;
    blank.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(blank.body["error"]["field"], json!("name"));
    assert_eq!(
        app.get("/api/v2/me", &t.key).await.data()["user"]["name"],
        json!("Ada Lovelace")
    );
}
