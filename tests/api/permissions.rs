//! The permission matrix: a read-only key (`platform:read` alone) reads
//! everything its user can, and every write is 403 `FORBIDDEN`, checked
//! before the body is read or anything is looked up, and writing nothing.
//! The walk is driven by the OpenAPI document and the operation registry,
//! so a route added later is covered without editing this file.

use actix_web::http::Method;
use serde_json::{Value, json};

use agentic_api::app::OPERATIONS;
use agentic_api::ops::Access;

use crate::helpers::*;

/// Write-verb routes that only read, so read-only keys may use them. A
/// route missing here is expected to refuse read-only keys.
const READS_DESPITE_THE_VERB: &[(&str, &str)] = &[
    // A token to open a stream the key can already read.
    ("post", "/api/v2/auth/stream-tokens"),
    // Checks a constraints object and stores nothing.
    ("post", "/api/v2/buyer/targeting/validate"),
    // A read-only key may direct a turn (its run gets read tools only) and
    // stop a run.
    (
        "post",
        "/api/v2/assistant/conversations/{conversationUid}/turns",
    ),
    (
        "post",
        "/api/v2/assistant/conversations/{conversationUid}/runs/{runId}/cancel",
    ),
];

/// Each documented write route of `/api/v2`, with its path parameters
/// filled from `ids`.
fn write_routes(doc: &Value, ids: &[(&str, String)]) -> Vec<(Method, String)> {
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if !path.starts_with("/api/v2/") {
            continue;
        }
        for method in ["post", "put", "patch", "delete"] {
            if item.get(method).is_none()
                || READS_DESPITE_THE_VERB.contains(&(method, path.as_str()))
            {
                continue;
            }
            let mut concrete = path.clone();
            for (name, value) in ids {
                concrete = concrete.replace(&format!("{{{name}}}"), value);
            }
            assert!(!concrete.contains('{'), "no id for {path}");
            routes.push((
                Method::from_bytes(method.to_uppercase().as_bytes()).unwrap(),
                concrete,
            ));
        }
    }
    routes
}

#[actix_web::test]
async fn a_read_only_key_is_refused_every_write_and_writes_nothing() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let reader = app
        .user_in(&admin.account_id, "admin", &["platform:read"])
        .await;
    let conv = app
        .post(
            "/api/v2/assistant/conversations",
            &admin.key,
            &json!({"sharingEnabled": true}),
        )
        .await;
    assert_eq!(conv.status, 201, "{}", conv.body);
    let uid = conv.data()["conversation"]["conversationUid"]
        .as_str()
        .unwrap()
        .to_string();
    let adv = app
        .post(
            "/api/v2/buyer/advertisers",
            &admin.key,
            &json!({"name": "Acme", "brand": "acme.com", "primaryCurrency": "USD"}),
        )
        .await;
    assert_eq!(adv.status, 201, "{}", adv.body);
    let adv_id = adv.data()["id"].as_str().unwrap().to_string();
    // A discovery over no storefront: complete at once, nothing to ask.
    let disc = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &admin.key,
            &json!({"advertiserId": adv_id, "storefrontNames": ["no such seller"]}),
        )
        .await;
    assert_eq!(disc.status, 200, "{}", disc.body);
    let disc_id = disc.data()["discoveryId"].as_str().unwrap().to_string();
    let cmp = app
        .post(
            "/api/v2/buyer/campaigns",
            &admin.key,
            &json!({"advertiserId": adv_id, "name": "C",
                    "flightDates": {"startDate": "2027-01-01T00:00:00Z", "endDate": "2027-02-01T00:00:00Z"},
                    "budget": {"total": 100}}),
        )
        .await;
    assert_eq!(cmp.status, 201, "{}", cmp.body);
    let cmp_id = cmp.data()["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    let hook = app
        .post(
            "/api/v2/buyer/webhook-subscriptions",
            &admin.key,
            &json!({"url": "https://hooks.example.com/h", "secret": "0123456789abcdef",
                    "eventTypes": ["discovery.revision"]}),
        )
        .await;
    assert_eq!(hook.status, 201, "{}", hook.body);
    let hook_id = hook.data()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cat = app
        .post(
            &format!("/api/v2/buyer/advertisers/{adv_id}/catalogs/sync"),
            &admin.key,
            &json!({"catalogs": [{"name": "Feed", "items": [{"item_id": "a", "title": "A"}]}]}),
        )
        .await;
    assert_eq!(cat.status, 200, "{}", cat.body);
    let cat_id = cat.data()["catalogs"][0]["catalogId"]
        .as_str()
        .unwrap()
        .to_string();
    let doc = app
        .request(Method::GET, "/api/v2/openapi.json", None, None)
        .await
        .body;
    let ids = [
        ("conversationUid", uid.clone()),
        ("advertiserId", adv_id.clone()),
        ("keyId", "1".to_string()),
        ("discoveryId", disc_id.clone()),
        ("subscriptionId", hook_id.clone()),
        ("campaignId", cmp_id.clone()),
        ("catalogId", cat_id.clone()),
        ("runId", uuid::Uuid::new_v4().to_string()),
        ("actionId", "call_1".to_string()),
        ("credentialId", "cred_none".to_string()),
        ("intakeId", "int_none".to_string()),
        ("materialId", "material_none".to_string()),
        ("requestId", "request_none".to_string()),
        (
            "creativeId",
            format!("cr_{}", uuid::Uuid::new_v4().simple()),
        ),
        ("rfpId", "rfp_none".to_string()),
    ];
    let routes = write_routes(&doc, &ids);
    // Every registered write operation is among the documented routes.
    for def in OPERATIONS.iter().filter(|d| d.access.is_write()) {
        let documented = format!("/api/v2{}", def.path);
        assert!(
            doc["paths"][&documented]
                .get(def.verb.as_str().to_ascii_lowercase())
                .is_some(),
            "{} is not documented",
            def.name
        );
    }
    assert!(routes.len() >= 9, "only {} write routes", routes.len());
    let before = snapshot(&app, &admin.key, &uid, &adv_id, &disc_id).await;
    for (method, path) in &routes {
        // A body that would otherwise be valid for some routes and invalid
        // for others: the answer must be 403 either way.
        for body in [
            json!({}),
            json!({"title": "x", "content": "x", "audience": "room"}),
        ] {
            let res = app
                .request(method.clone(), path, Some(&reader.key), Some(&body))
                .await;
            assert_eq!(res.status, 403, "{method} {path}: {}", res.body);
            res.assert_error(403, "FORBIDDEN");
        }
        // Without a body (and without a content type) too.
        let res = app
            .request(method.clone(), path, Some(&reader.key), None)
            .await;
        res.assert_error(403, "FORBIDDEN");
    }
    assert_eq!(
        before,
        snapshot(&app, &admin.key, &uid, &adv_id, &disc_id).await
    );
    // The same key reads.
    for path in [
        "/api/v2/assistant/conversations".to_string(),
        "/api/v2/buyer/advertisers".to_string(),
        format!("/api/v2/buyer/advertisers/{adv_id}"),
        "/api/v2/buyer/audit-logs".to_string(),
        "/api/v2/assistant/conversation-settings".to_string(),
        "/api/v2/me".to_string(),
        "/api/v2/buyer/webhook-subscriptions".to_string(),
        "/api/v2/buyer/campaigns".to_string(),
    ] {
        let res = app.get(&path, &reader.key).await;
        assert_eq!(res.status, 200, "{path}: {}", res.body);
    }
}

/// Everything the write routes could have changed.
async fn snapshot(app: &TestApp, key: &str, uid: &str, adv_id: &str, disc: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for path in [
        format!("/api/v2/buyer/discovery/{disc}/discover-products"),
        format!("/api/v2/buyer/discovery/{disc}/products"),
        "/api/v2/assistant/conversations".to_string(),
        format!("/api/v2/buyer/advertisers/{adv_id}"),
        format!("/api/v2/buyer/advertisers/{adv_id}/catalogs"),
        "/api/v2/buyer/advertisers".to_string(),
        "/api/v2/buyer/audit-logs".to_string(),
        "/api/v2/assistant/conversation-settings".to_string(),
        "/api/v2/api-keys".to_string(),
        "/api/v2/me".to_string(),
        "/api/v2/buyer/webhook-subscriptions".to_string(),
        "/api/v2/buyer/campaigns".to_string(),
    ] {
        let res = app.get(&path, key).await;
        assert_eq!(res.status, 200, "{path}");
        let mut body = res.body;
        // Presence is not state a write could change.
        if let Some(data) = body["data"].as_object_mut() {
            data.remove("presenceByConversationUid");
        }
        out.push(body);
    }
    let _ = uid;
    out
}

#[actix_web::test]
async fn keys_with_write_or_no_permissions_write_and_the_role_still_decides_admin_operations() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    for perms in [
        &["platform:write"][..],
        &[],
        &["platform:read", "platform:write"],
    ] {
        let member = app.user_in(&admin.account_id, "member", perms).await;
        let res = app
            .post("/api/v2/assistant/conversations", &member.key, &json!({}))
            .await;
        assert_eq!(res.status, 201, "{perms:?}: {}", res.body);
        // A member is not an admin, whatever the key carries.
        app.patch(
            "/api/v2/assistant/conversation-settings",
            &member.key,
            &json!({"defaultSharingEnabled": true}),
        )
        .await
        .assert_error(403, "FORBIDDEN");
    }
}

#[actix_web::test]
async fn the_dispatcher_enforces_the_same_permission() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let reader = app
        .user_in(&admin.account_id, "admin", &["platform:read"])
        .await;
    let caller = app
        .state
        .auth
        .authenticate(&reader.key)
        .await
        .unwrap()
        .unwrap();
    for def in OPERATIONS.iter() {
        let call = serde_json::from_value(json!({"operation": def.name, "body": {}})).unwrap();
        let res = agentic_api::ops::dispatch(&app.state.ctx, caller.clone(), call).await;
        match def.access {
            Access::Read => {
                if let Err(e) = &res {
                    assert_ne!(e.code(), "FORBIDDEN", "{}: read refused", def.name);
                }
            }
            _ => {
                let err = res.err().unwrap_or_else(|| panic!("{} ran", def.name));
                assert_eq!(err.code(), "FORBIDDEN", "{}", def.name);
            }
        }
    }
}
