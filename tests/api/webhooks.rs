//! Webhook subscriptions (issue 10, item 1): create, list, delete; the
//! spec's error table; the secret never leaves the server and is encrypted
//! at rest (a configured key, or on SQLite a key file made beside the
//! database); outbound URLs under the strict policy.

use std::io::Read;
use std::process::{Command, Stdio};

use actix_web::http::Method;
use sea_orm::EntityTrait;
use serde_json::{Value, json};

use agentic_api::webhooks::secret::SecretKey;
use agentic_api::webhooks::service::signing_secret;

use crate::helpers::*;

const PATH: &str = "/api/v2/buyer/webhook-subscriptions";
const SECRET: &str = "whsec-Sentinel-7f3a9c21-never-shown";

fn body(url: &str) -> Value {
    json!({"url": url, "secret": SECRET, "eventTypes": ["discovery.revision"]})
}

/// Asserts that the secret appears nowhere in a response.
#[track_caller]
fn no_secret(res: &Resp) {
    let raw = String::from_utf8_lossy(&res.raw);
    assert!(!raw.contains(SECRET), "secret in response: {raw}");
    assert!(
        !raw.contains("\"secret\":"),
        "secret field in response: {raw}"
    );
}

async fn create(app: &TestApp, t: &Tenant, url: &str) -> Value {
    let res = app.post(PATH, &t.key, &body(url)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    no_secret(&res);
    res.data()["subscription"].clone()
}

async fn total(app: &TestApp, t: &Tenant) -> u64 {
    let res = app.get(PATH, &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["meta"]["pagination"]["total"].as_u64().unwrap()
}

#[actix_web::test]
async fn subscriptions_are_created_listed_newest_first_and_deleted() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .post(
            PATH,
            &t.key,
            &json!({
                "url": "https://hooks.example.com/agentic",
                "secret": SECRET,
                "eventTypes": ["discovery.revision", "discovery.revision"],
            }),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    no_secret(&res);
    assert!(res.body["error"].is_null());
    let first = res.data()["subscription"].clone();
    let id = first["id"].as_str().unwrap().to_string();
    assert!(id.starts_with("wh_") && id.len() == 27, "{id}");
    assert!(id[3..].chars().all(|c| c.is_ascii_alphanumeric()), "{id}");
    assert_eq!(first["url"], "https://hooks.example.com/agentic");
    assert_eq!(first["eventTypes"], json!(["discovery.revision"]));
    assert_eq!(first["status"], "active");
    assert_eq!(first["failureCount"], 0);
    assert!(first["lastSuccess"].is_null() && first["lastFailure"].is_null());
    assert!(first["createdAt"].is_string() && first["updatedAt"].is_string());
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 9, "exactly the spec's fields: {keys:?}");

    let second = create(&app, &t, "https://hooks.example.com/second").await;
    let list = app.get(PATH, &t.key).await;
    assert_eq!(list.status, 200, "{}", list.body);
    no_secret(&list);
    let ids: Vec<&str> = list
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [second["id"].as_str().unwrap(), id.as_str()],
        "newest first"
    );
    assert_eq!(list.data()[1], first, "listed as created");
    // Without take or skip, the whole list.
    assert_eq!(
        list.body["meta"]["pagination"],
        json!({"skip": 0, "take": 2, "total": 2, "hasMore": false})
    );
    let page = app.get(&format!("{PATH}?take=1&skip=1"), &t.key).await;
    assert_eq!(page.data().as_array().unwrap().len(), 1);
    assert_eq!(page.data()[0]["id"], first["id"]);
    assert_eq!(page.body["meta"]["pagination"]["hasMore"], false);
    app.get(&format!("{PATH}?take=0"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");

    // Delete answers the subscription as it was; it is gone afterwards.
    let del = app.delete(&format!("{PATH}/{id}"), &t.key).await;
    assert_eq!(del.status, 200, "{}", del.body);
    no_secret(&del);
    assert_eq!(del.data()["subscription"], first);
    assert_eq!(total(&app, &t).await, 1);
    app.delete(&format!("{PATH}/{id}"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn the_spec_error_table() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    // 401: missing or invalid bearer token, on every route.
    for key in [None, Some("agk_nope_nope")] {
        for (method, path) in [
            (Method::POST, PATH.to_string()),
            (Method::GET, PATH.to_string()),
            (
                Method::DELETE,
                format!("{PATH}/wh_aaaaaaaaaaaaaaaaaaaaaaaa"),
            ),
        ] {
            app.request(method, &path, key, Some(&body("https://example.com/h")))
                .await
                .assert_error(401, "UNAUTHORIZED");
        }
    }
    // 400 VALIDATION_ERROR, with the field's path.
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"url": "not a url", "secret": SECRET, "eventTypes": ["discovery.revision"]}),
            "url",
        ),
        (
            json!({"url": "ftp://example.com/x", "secret": SECRET, "eventTypes": ["discovery.revision"]}),
            "url",
        ),
        (
            json!({"url": "https://example.com/h", "secret": "fifteen-chars!!", "eventTypes": ["discovery.revision"]}),
            "secret",
        ),
        (
            json!({"url": "https://example.com/h", "secret": "", "eventTypes": ["discovery.revision"]}),
            "secret",
        ),
        (
            json!({"url": "https://example.com/h", "secret": "x".repeat(257), "eventTypes": ["discovery.revision"]}),
            "secret",
        ),
        (
            json!({"url": "https://example.com/h", "secret": SECRET, "eventTypes": []}),
            "eventTypes",
        ),
        (
            json!({"url": "https://example.com/h", "secret": SECRET, "eventTypes": ["discovery.complete"]}),
            "eventTypes[0]",
        ),
        (
            json!({"url": "https://example.com/h", "secret": SECRET, "eventTypes": "discovery.revision"}),
            "eventTypes",
        ),
        (
            json!({"url": "https://example.com/h", "secret": SECRET}),
            "eventTypes",
        ),
        (
            json!({"url": "https://example.com/h", "secret": SECRET, "eventTypes": ["discovery.revision"], "active": true}),
            "active",
        ),
    ];
    for (input, field) in cases {
        let res = app.post(PATH, &t.key, &input).await;
        res.assert_error(400, "VALIDATION_ERROR");
        no_secret(&res);
        let issues = res.body["error"]["details"]["issues"].as_array().unwrap();
        assert!(
            issues.iter().any(|i| i["path"] == field),
            "{input}: wants an issue at {field:?}: {}",
            res.body
        );
    }
    // Exactly 16 and 256 characters are accepted (characters, not bytes).
    for secret in ["é".repeat(16), "x".repeat(256)] {
        let res = app
            .post(
                PATH,
                &t.key,
                &json!({"url": "https://example.com/h", "secret": secret, "eventTypes": ["discovery.revision"]}),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.body);
    }
    // Every problem at once, each with its path.
    let res = app
        .post(
            PATH,
            &t.key,
            &json!({"url": "http://", "secret": "short", "eventTypes": ["nope", "discovery.revision"]}),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    let paths: Vec<&str> = res.body["error"]["details"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["url", "secret", "eventTypes[0]"], "{}", res.body);
    assert_eq!(res.body["error"]["field"], "url");
    assert!(!res.raw.windows(5).any(|w| w == b"short"), "{}", res.body);
    // Nothing was written by any refused request.
    assert_eq!(total(&app, &t).await, 2);
    // 404: unknown id, and another account's subscription.
    app.delete(&format!("{PATH}/wh_unknownunknownunknown1234"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.delete(&format!("{PATH}/not-even-an-id"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    let mine = create(&app, &t, "https://example.com/mine").await;
    let other = app.tenant().await;
    app.delete(
        &format!("{PATH}/{}", mine["id"].as_str().unwrap()),
        &other.key,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    // Lists are per account.
    assert_eq!(total(&app, &other).await, 0);
    assert_eq!(total(&app, &t).await, 3);
}

#[actix_web::test]
async fn a_teammate_sees_and_deletes_the_accounts_subscriptions_and_a_read_only_key_lists() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mate = app.user_in(&t.account_id, "member", &[]).await;
    let reader = app
        .user_in(&t.account_id, "member", &["platform:read"])
        .await;
    let sub = create(&app, &t, "https://example.com/h").await;
    let id = sub["id"].as_str().unwrap();
    let listed = app.get(PATH, &reader.key).await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    assert_eq!(listed.data()[0]["id"], sub["id"]);
    app.post(PATH, &reader.key, &body("https://example.com/h"))
        .await
        .assert_error(403, "FORBIDDEN");
    app.delete(&format!("{PATH}/{id}"), &reader.key)
        .await
        .assert_error(403, "FORBIDDEN");
    let del = app.delete(&format!("{PATH}/{id}"), &mate.key).await;
    assert_eq!(del.status, 200, "{}", del.body);
}

#[actix_web::test]
async fn the_list_holds_every_subscription_unless_take_or_skip_asks_for_a_page() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for i in 0..25 {
        create(&app, &t, &format!("https://example.com/h{i}")).await;
    }
    let ids = |res: &Resp| -> Vec<String> {
        res.data()
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap().to_string())
            .collect()
    };
    let all = app.get(PATH, &t.key).await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(
        ids(&all).len(),
        25,
        "all of them, past the default page size"
    );
    assert_eq!(
        all.body["meta"]["pagination"],
        json!({"skip": 0, "take": 25, "total": 25, "hasMore": false})
    );
    // Newest first.
    assert_eq!(all.data()[0]["url"], "https://example.com/h24");

    let first = app.get(&format!("{PATH}?take=10"), &t.key).await;
    assert_eq!(
        first.body["meta"]["pagination"],
        json!({"skip": 0, "take": 10, "total": 25, "hasMore": true})
    );
    let rest = app.get(&format!("{PATH}?skip=10"), &t.key).await;
    assert_eq!(
        rest.body["meta"]["pagination"],
        json!({"skip": 10, "take": 20, "total": 25, "hasMore": false})
    );
    let paged: Vec<String> = ids(&first).into_iter().chain(ids(&rest)).collect();
    assert_eq!(paged, ids(&all));

    for bad in ["take=0", "take=101", "take=x", "skip=-1"] {
        let res = app.get(&format!("{PATH}?{bad}"), &t.key).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], bad.split('=').next().unwrap());
    }
}

#[actix_web::test]
async fn the_strict_url_policy_refuses_every_internal_or_insecure_url() {
    let app = spawn_app_with(|c| c.allow_insecure_urls = false).await;
    let t = app.tenant().await;
    for url in [
        "http://example.com/hook",
        "https://127.0.0.1/hook",
        "https://10.0.0.1/hook",
        "https://169.254.169.254/latest/meta-data",
        "https://[::1]/hook",
        "https://[::ffff:127.0.0.1]/hook",
        "https://user:pw@example.com/hook",
        "https://localhost/hook",
        "https://192.168.1.1/hook",
        "https://[fd00::1]/hook",
        "https://0.0.0.0/hook",
        "https://metadata.internal/hook",
        // IPv6 forms that carry a private IPv4 address, and Teredo.
        "https://[::127.0.0.1]/hook",
        "https://[::ffff:0:10.0.0.1]/hook",
        "https://[64:ff9b::169.254.169.254]/hook",
        "https://[64:ff9b::7f00:1]/hook",
        "https://[64:ff9b:1::a00:1]/hook",
        "https://[2002:a9fe:a9fe::1]/hook",
        "https://[2002:7f00:1::]/hook",
        "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
    ] {
        let res = app.post(PATH, &t.key, &body(url)).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], "url", "{url}: {}", res.body);
        assert!(!res.raw.windows(6).any(|w| w == b"user:p"), "{}", res.body);
        no_secret(&res);
    }
    assert_eq!(total(&app, &t).await, 0);
    // A public HTTPS host is fine, also by a NAT64 or 6to4 address.
    create(&app, &t, "https://hooks.example.com/ok").await;
    create(&app, &t, "https://[64:ff9b::808:808]/ok").await;
    create(&app, &t, "https://[2002:808:808::1]/ok").await;
}

#[actix_web::test]
async fn development_policy_allows_http_and_loopback() {
    let app = spawn_app().await; // tests allow insecure URLs
    let t = app.tenant().await;
    create(&app, &t, "http://127.0.0.1:9/hook").await;
    // Credentials are refused whatever the policy.
    app.post(PATH, &t.key, &body("https://user:pw@example.com/hook"))
        .await
        .assert_error(400, "VALIDATION_ERROR");
}

#[actix_web::test]
async fn the_secret_is_encrypted_at_rest_with_a_configured_key() {
    let key = SecretKey::from_bytes([42; 32]);
    let k = key.clone();
    let app = spawn_app_with(move |c| c.webhook_secret_key = Some(k)).await;
    let t = app.tenant().await;
    let sub = create(&app, &t, "https://example.com/h").await;
    let row = entity::webhook_subscription::Entity::find_by_id(sub["id"].as_str().unwrap())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert!(row.secret.starts_with("aesgcm1:"), "{}", row.secret);
    assert!(!row.secret.contains(SECRET));
    assert!(!format!("{row:?}").contains(&row.secret), "Debug hides it");
    assert_eq!(signing_secret(&row, Some(&key)).unwrap(), SECRET);
    assert!(signing_secret(&row, Some(&SecretKey::from_bytes([1; 32]))).is_err());
    assert!(signing_secret(&row, None).is_err());
}

async fn stored(app: &TestApp, id: &str) -> entity::webhook_subscription::Model {
    entity::webhook_subscription::Entity::find_by_id(id)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
}

/// The SQLite database file of a `sqlite://PATH?...` URL.
fn sqlite_file(url: &str) -> Option<std::path::PathBuf> {
    let rest = url.strip_prefix("sqlite://")?;
    Some(rest.split('?').next().unwrap_or(rest).into())
}

#[actix_web::test]
async fn without_a_key_sqlite_makes_a_key_file_beside_the_database_and_postgresql_stores_plain() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sub = create(&app, &t, "https://example.com/h").await;
    let id = sub["id"].as_str().unwrap();
    let row = stored(&app, id).await;
    let Some(db_file) = sqlite_file(&app.database_url) else {
        // PostgreSQL: instances must share a key only the operator can give.
        assert_eq!(row.secret, format!("plain1:{SECRET}"));
        assert_eq!(signing_secret(&row, None).unwrap(), SECRET);
        return;
    };
    let key_file = std::path::PathBuf::from(format!("{}.webhook-key", db_file.display()));
    let text = std::fs::read_to_string(&key_file).unwrap();
    let key = SecretKey::from_hex(&text).unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    }
    assert!(row.secret.starts_with("aesgcm1:"), "{}", row.secret);
    assert_eq!(signing_secret(&row, Some(&key)).unwrap(), SECRET);
    // Another start on the same database uses the same file, unchanged.
    let again = spawn_on(&app.database_url, |_| {}).await;
    assert_eq!(std::fs::read_to_string(&key_file).unwrap(), text);
    let sub = create(&again, &t, "https://example.com/h2").await;
    let row = stored(&again, sub["id"].as_str().unwrap()).await;
    assert_eq!(signing_secret(&row, Some(&key)).unwrap(), SECRET);
}

#[actix_web::test]
async fn plain_secrets_are_sealed_at_start_once_a_key_is_present() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let sub = create(&app, &t, &format!("https://example.com/h{i}")).await;
        ids.push(sub["id"].as_str().unwrap().to_string());
    }
    // As a server without a key (or an older version) left them.
    for id in &ids {
        let mut row: entity::webhook_subscription::ActiveModel = stored(&app, id).await.into();
        row.secret = sea_orm::Set(format!("plain1:{SECRET}"));
        entity::webhook_subscription::Entity::update(row)
            .exec(&app.db)
            .await
            .unwrap();
    }
    // Two instances start together with the key: each row is sealed once,
    // and every value opens with the key.
    let key = SecretKey::from_bytes([5; 32]);
    let url = app.database_url.clone();
    let (k1, k2) = (key.clone(), key.clone());
    let (a, _b) = futures_util::join!(
        spawn_on(&url, move |c| c.webhook_secret_key = Some(k1)),
        spawn_on(&url, move |c| c.webhook_secret_key = Some(k2)),
    );
    let mut sealed = Vec::new();
    for id in &ids {
        let row = stored(&a, id).await;
        assert!(row.secret.starts_with("aesgcm1:"), "{}", row.secret);
        assert_eq!(signing_secret(&row, Some(&key)).unwrap(), SECRET);
        sealed.push(row.secret);
    }
    // Idempotent: a later start leaves sealed rows as they are.
    let k3 = key.clone();
    let c = spawn_on(&url, move |c| c.webhook_secret_key = Some(k3)).await;
    for (id, before) in ids.iter().zip(&sealed) {
        assert_eq!(&stored(&c, id).await.secret, before);
    }
}

#[actix_web::test]
async fn starting_without_a_key_warns_on_postgresql_only() {
    let (db, _dir) = fresh_database().await;
    let read_stderr = |envs: &[(&str, &str)]| {
        let mut served = serve(&db, envs, Stdio::piped());
        let mut stderr = served.child.stderr.take().unwrap();
        sigterm_and_wait(&mut served.child);
        let mut text = String::new();
        stderr.read_to_string(&mut text).unwrap();
        text
    };
    let warned = |text: &str| {
        text.lines()
            .any(|l| l.contains("WARN") && l.contains("AGENTIC_WEBHOOK_SECRET_KEY is not set"))
    };
    let text = read_stderr(&[]);
    match sqlite_file(&db) {
        Some(file) => {
            assert!(!warned(&text), "{text}");
            assert!(std::path::Path::new(&format!("{}.webhook-key", file.display())).exists());
        }
        None => assert!(warned(&text), "{text}"),
    }
    let text = read_stderr(&[("AGENTIC_WEBHOOK_SECRET_KEY", &"ab".repeat(32))]);
    assert!(!warned(&text), "{text}");
}

#[actix_web::test]
async fn a_bad_secret_key_refuses_to_start_without_echoing_it() {
    let (db, _dir) = fresh_database().await;
    for bad in [
        "not-hex-at-all-SENTINELVALUE",
        &"ab".repeat(31),
        &"zz".repeat(32),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
            .arg("serve")
            .env("AGENTIC_DATABASE_URL", &db)
            .env("AGENTIC_BIND", "127.0.0.1:0")
            .env("AGENTIC_WEBHOOK_SECRET_KEY", bad)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad} accepted");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("AGENTIC_WEBHOOK_SECRET_KEY") && stderr.contains("64 hexadecimal"),
            "{stderr}"
        );
        assert!(!stderr.contains(bad), "the value is echoed: {stderr}");
    }
}

#[actix_web::test]
async fn the_secret_is_never_logged_even_at_debug() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let key_hex = "0f".repeat(32);
    let mut served = serve(
        &app.database_url,
        &[
            ("AGENTIC_LOG", "debug"),
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
            ("AGENTIC_WEBHOOK_SECRET_KEY", &key_hex),
        ],
        Stdio::piped(),
    );
    let client = awc::Client::default();
    let base = served.base.clone();
    for body in [
        body("https://example.com/h"),
        // Refused: short secret, bad URL, unknown field.
        json!({"url": "nope", "secret": "SENTINELshort", "eventTypes": []}),
        json!({"url": "https://example.com/h", "secret": SECRET, "eventTypes": ["discovery.revision"], "x": 1}),
    ] {
        let res = client
            .post(format!("{base}{PATH}"))
            .insert_header(("Authorization", format!("Bearer {}", t.key)))
            .send_json(&body)
            .await
            .unwrap();
        assert!(res.status().as_u16() == 201 || res.status().as_u16() == 400);
    }
    let mut stderr = served.child.stderr.take().unwrap();
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let mut text = String::new();
    stderr.read_to_string(&mut text).unwrap();
    assert!(
        text.contains("webhook-subscriptions"),
        "requests are logged: {text}"
    );
    assert!(!text.contains(SECRET), "secret in logs: {text}");
    assert!(!text.contains("SENTINELshort"), "secret in logs: {text}");
    assert!(!text.contains(&key_hex), "key in logs");
}
