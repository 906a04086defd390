//! Browser clients: CORS for operator-listed origins, stream tokens for the
//! native `EventSource` (which cannot send headers), and a real headless
//! Chromium reconnecting by itself across a server restart.

use std::time::Duration;

use actix_web::http::{Method, StatusCode, header::HeaderMap};
use futures_util::StreamExt;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use agentic_api::http::cors::AllowedOrigins;

use crate::helpers::*;

const APP_ORIGIN: &str = "https://app.example.com";

fn events_path(uid: &str) -> String {
    format!("/api/v2/assistant/conversations/{uid}/events")
}

fn allow(origin: &str) -> impl FnOnce(&mut agentic_api::Config) + use<> {
    let origins = AllowedOrigins::parse(origin).unwrap();
    move |c| c.cors_origins = origins
}

struct Raw {
    status: StatusCode,
    headers: HeaderMap,
    body: Value,
}

impl Raw {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn cors_headers(&self) -> Vec<String> {
        self.headers
            .keys()
            .map(|k| k.as_str().to_string())
            .filter(|k| k.starts_with("access-control-"))
            .collect()
    }
}

/// Any request with extra headers; reads the whole (non-stream) body.
async fn raw(
    app: &TestApp,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> Raw {
    let mut req = app.client.request(method, app.url(path));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let mut res = match body {
        Some(b) => req.send_json(&b).await,
        None => req.send().await,
    }
    .expect("request sent");
    let bytes = res.body().await.expect("body");
    Raw {
        status: res.status(),
        headers: res.headers().clone(),
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

/// Opens a stream (no `Authorization` unless given in `headers`); on 200,
/// returns the headers and the `ready` event's data; else the error response.
async fn open_stream(
    base: &str,
    path_and_query: &str,
    headers: &[(&str, &str)],
) -> Result<(HeaderMap, Value), Raw> {
    let mut req = awc::Client::builder()
        .disable_timeout()
        .finish()
        .get(format!("{base}{path_and_query}"))
        .insert_header(("Accept", "text/event-stream"));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let mut res = req.send().await.expect("request sent");
    if res.status() != StatusCode::OK {
        let bytes = res.body().await.expect("body");
        return Err(Raw {
            status: res.status(),
            headers: res.headers().clone(),
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        });
    }
    let headers = res.headers().clone();
    let mut buf = String::new();
    loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), res.next())
            .await
            .expect("ready within 10 s")
            .expect("stream open")
            .expect("chunk");
        buf.push_str(&String::from_utf8_lossy(&chunk));
        if let Some(start) = buf.find("event: ready\ndata: ") {
            let rest = &buf[start + "event: ready\ndata: ".len()..];
            if let Some(end) = rest.find('\n') {
                return Ok((headers, serde_json::from_str(&rest[..end]).unwrap()));
            }
        }
    }
}

/// `POST /api/v2/auth/stream-tokens {stream}` with `key`.
pub(crate) async fn mint(app: &TestApp, key: &str, stream: &str) -> Resp {
    app.post(
        "/api/v2/auth/stream-tokens",
        key,
        &json!({ "stream": stream }),
    )
    .await
}

async fn token_for(app: &TestApp, t: &Tenant, uid: &str) -> String {
    let res = mint(app, &t.key, &events_path(uid)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["token"].as_str().unwrap().to_string()
}

fn with_token(uid: &str, token: &str) -> String {
    format!("{}?streamToken={token}", events_path(uid))
}

// ---------------------------------------------------------------- CORS

#[actix_web::test]
async fn a_preflight_from_an_allowed_origin_is_answered_with_methods_and_headers() {
    let app = spawn_app_with(allow(APP_ORIGIN)).await;
    let preflight = [
        ("Origin", APP_ORIGIN),
        ("Access-Control-Request-Method", "POST"),
        (
            "Access-Control-Request-Headers",
            "authorization,content-type,last-event-id",
        ),
    ];
    let res = raw(
        &app,
        Method::OPTIONS,
        "/api/v2/auth/stream-tokens",
        &preflight,
        None,
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("access-control-allow-origin"), Some(APP_ORIGIN));
    let methods = res
        .header("access-control-allow-methods")
        .unwrap()
        .to_ascii_uppercase();
    for m in ["GET", "POST", "PUT", "PATCH", "DELETE"] {
        assert!(methods.contains(m), "{methods}");
    }
    let headers = res
        .header("access-control-allow-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in ["authorization", "content-type", "last-event-id"] {
        assert!(headers.contains(h), "{headers}");
    }
    assert!(res.header("access-control-max-age").is_some());
    assert!(res.header("vary").unwrap().contains("Origin"));
    assert!(res.header("access-control-allow-credentials").is_none());

    // Without CORS configured the same preflight gets no CORS headers.
    let closed = spawn_app().await;
    let res = raw(
        &closed,
        Method::OPTIONS,
        "/api/v2/auth/stream-tokens",
        &preflight,
        None,
    )
    .await;
    assert!(!res.status.is_success(), "{}", res.status);
    assert_eq!(res.cors_headers(), Vec::<String>::new());
}

#[actix_web::test]
async fn responses_to_an_allowed_origin_carry_cors_and_exposed_headers() {
    let app = spawn_app_with(allow(&format!("https://other.example.com,{APP_ORIGIN}"))).await;
    let t = app.tenant().await;
    let auth = format!("Bearer {}", t.key);
    let res = raw(
        &app,
        Method::GET,
        "/api/v2/me",
        &[("Origin", APP_ORIGIN), ("Authorization", &auth)],
        None,
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("access-control-allow-origin"), Some(APP_ORIGIN));
    assert!(res.header("vary").unwrap().contains("Origin"));
    let exposed = res
        .header("access-control-expose-headers")
        .unwrap()
        .to_ascii_lowercase();
    for h in [
        "x-request-id",
        "ratelimit-limit",
        "ratelimit-remaining",
        "ratelimit-reset",
        "retry-after",
    ] {
        assert!(exposed.contains(h), "{exposed}");
    }
    assert!(res.header("x-request-id").is_some());

    // Errors too: a page must be able to read a 401 envelope.
    let res = raw(
        &app,
        Method::GET,
        "/api/v2/me",
        &[("Origin", APP_ORIGIN)],
        None,
    )
    .await;
    assert_eq!(res.status, 401);
    assert_eq!(res.body["error"]["code"], json!("UNAUTHORIZED"));
    assert_eq!(res.header("access-control-allow-origin"), Some(APP_ORIGIN));
}

#[actix_web::test]
async fn a_disallowed_origin_gets_no_cors_headers() {
    let app = spawn_app_with(allow(APP_ORIGIN)).await;
    let t = app.tenant().await;
    let auth = format!("Bearer {}", t.key);
    for origin in ["https://evil.example.com", "https://app.example.com:8443"] {
        // Served (a non-browser client may send any Origin), but unreadable
        // by a page: no Access-Control-* header at all.
        let res = raw(
            &app,
            Method::GET,
            "/api/v2/me",
            &[("Origin", origin), ("Authorization", &auth)],
            None,
        )
        .await;
        assert_eq!(res.status, 200);
        assert_eq!(res.cors_headers(), Vec::<String>::new(), "{origin}");

        let res = raw(
            &app,
            Method::OPTIONS,
            "/api/v2/me",
            &[
                ("Origin", origin),
                ("Access-Control-Request-Method", "GET"),
                ("Access-Control-Request-Headers", "authorization"),
            ],
            None,
        )
        .await;
        assert_eq!(res.status, 400, "{origin}");
        assert!(res.body["error"]["code"].is_string(), "{}", res.body);
        assert_eq!(res.cors_headers(), Vec::<String>::new(), "{origin}");
    }
    // No Origin at all: an ordinary response.
    let res = raw(
        &app,
        Method::GET,
        "/api/v2/me",
        &[("Authorization", &auth)],
        None,
    )
    .await;
    assert_eq!(res.status, 200);
    assert_eq!(res.cors_headers(), Vec::<String>::new());
}

#[actix_web::test]
async fn the_event_stream_carries_allow_origin() {
    let app = spawn_app_with(allow(APP_ORIGIN)).await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let token = token_for(&app, &t, &uid).await;
    let (headers, ready) = open_stream(
        &app.address,
        &with_token(&uid, &token),
        &[("Origin", APP_ORIGIN)],
    )
    .await
    .unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    assert_eq!(
        headers
            .get("access-control-allow-origin")
            .and_then(|v| v.to_str().ok()),
        Some(APP_ORIGIN)
    );
    assert_eq!(ready["conversationUid"], json!(uid));
}

#[test]
fn a_malformed_origin_stops_the_server_at_start_up_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/t.db?mode=rwc", dir.path().display());
    for bad in ["https://app.example.com/", "*", "app.example.com"] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
            .arg("serve")
            .env("AGENTIC_DATABASE_URL", &url)
            .env("AGENTIC_BIND", "127.0.0.1:0")
            .env(
                "AGENTIC_CORS_ORIGINS",
                format!("https://ok.example.com,{bad}"),
            )
            .env("AGENTIC_LOG", "warn")
            .output()
            .unwrap();
        assert!(!out.status.success(), "{bad}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("invalid CORS origin") && stderr.contains(bad),
            "{bad}: {stderr}"
        );
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
    }
}

// ---------------------------------------------------------- stream tokens

#[actix_web::test]
async fn a_token_is_minted_for_a_readable_stream_and_opens_it_without_a_header() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    app.say(&t, &uid, "hello").await;
    // A non-canonical spelling of the path is accepted and canonicalised.
    let res = mint(&app, &t.key, &events_path(&uid.to_uppercase())).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let data = res.data();
    assert_eq!(data["stream"], json!(events_path(&uid)));
    let token = data["token"].as_str().unwrap();
    assert!(token.starts_with("sst_"), "{token}");
    let expires: chrono::DateTime<chrono::Utc> =
        data["expiresAt"].as_str().unwrap().parse().unwrap();
    let left = expires - chrono::Utc::now();
    assert!(
        left > chrono::Duration::minutes(4) && left <= chrono::Duration::minutes(5),
        "{left}"
    );
    // Stored hashed: the token itself is nowhere in the table.
    let rows = entity::stream_token::Entity::find()
        .all(&app.db)
        .await
        .unwrap();
    assert_eq!(rows.len(), 1);
    assert!(!format!("{rows:?}").contains(token.rsplit('_').next().unwrap()));

    // Opens the stream, as many times as an EventSource reconnects.
    for _ in 0..3 {
        let (_, ready) = open_stream(
            &app.address,
            &format!("{}&after=0", with_token(&uid, token)),
            &[],
        )
        .await
        .unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
        assert_eq!(ready, json!({"conversationUid": uid, "after": 0}));
    }
    // Last-Event-ID still wins over the URL's cursor.
    let (_, ready) = open_stream(
        &app.address,
        &format!("{}&after=0", with_token(&uid, token)),
        &[("Last-Event-ID", "1")],
    )
    .await
    .unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    assert_eq!(ready["after"], json!(1));
}

#[actix_web::test]
async fn minting_checks_the_stream_path_and_the_callers_access() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let mate = app.user_in(&owner.account_id, "member", &[]).await;
    let stranger = app.tenant().await;
    let private = app.conversation(&owner, false).await;
    let shared = app.conversation(&owner, true).await;

    for bad in [
        "/api/v2/me",
        "/api/v2/assistant/conversations/not-a-uuid/events",
        &format!("/api/v2/assistant/conversations/{private}/messages"),
        &format!("https://evil.example.com{}", events_path(&private)),
        &format!("{}?after=0", events_path(&private)),
        "",
    ] {
        let res = mint(&app, &owner.key, bad).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!("stream"), "{bad}");
    }
    let res = app
        .post(
            "/api/v2/auth/stream-tokens",
            &owner.key,
            &json!({"stream": events_path(&private), "ttl": 3600}),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");

    let unknown = uuid::Uuid::new_v4().to_string();
    mint(&app, &owner.key, &events_path(&unknown))
        .await
        .assert_error(404, "NOT_FOUND");
    mint(&app, &mate.key, &events_path(&private))
        .await
        .assert_error(404, "NOT_FOUND");
    mint(&app, &stranger.key, &events_path(&shared))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(
        mint(&app, &mate.key, &events_path(&shared)).await.status,
        201
    );

    let res = app
        .request(
            Method::POST,
            "/api/v2/auth/stream-tokens",
            None,
            Some(&json!({"stream": events_path(&private)})),
        )
        .await;
    res.assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn a_token_opens_only_its_own_stream_and_nothing_else() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = app.conversation(&t, false).await;
    let b = app.conversation(&t, false).await;
    let token = token_for(&app, &t, &a).await;

    // Another stream, even one the same user can read: 401.
    let res = open_stream(&app.address, &with_token(&b, &token), &[])
        .await
        .unwrap_err();
    assert_eq!(res.status, 401);
    assert_eq!(res.body["error"]["code"], json!("UNAUTHORIZED"));
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("another stream"),
        "{}",
        res.body
    );

    // Neither bearer nor token: 401. A tampered token: 401.
    let res = open_stream(&app.address, &events_path(&a), &[])
        .await
        .unwrap_err();
    assert_eq!(res.status, 401);
    let mut tampered = token.clone();
    let last = tampered.pop().unwrap();
    tampered.push(if last == 'a' { 'b' } else { 'a' });
    for bad in [tampered.as_str(), "", "agk_x", &t.key] {
        let res = open_stream(&app.address, &with_token(&a, bad), &[])
            .await
            .unwrap_err();
        assert_eq!(res.status, 401, "{bad}");
    }

    // Not a bearer credential, and not accepted on any other route.
    let res = app.get("/api/v2/me", &token).await;
    res.assert_error(401, "UNAUTHORIZED");
    let res = app
        .request(
            Method::GET,
            &format!("/api/v2/me?streamToken={token}"),
            None,
            None,
        )
        .await;
    res.assert_error(401, "UNAUTHORIZED");
    // It cannot mint more tokens either.
    mint(&app, &token, &events_path(&a))
        .await
        .assert_error(401, "UNAUTHORIZED");

    // The stream with its own token still opens.
    assert!(
        open_stream(&app.address, &with_token(&a, &token), &[])
            .await
            .is_ok()
    );
}

#[actix_web::test]
async fn an_expired_token_is_refused_and_pruned() {
    // Tokens that expire as soon as they are minted.
    let app = spawn_app_with(|c| c.stream_token_ttl = Duration::ZERO).await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let token = token_for(&app, &t, &uid).await;
    let res = open_stream(&app.address, &with_token(&uid, &token), &[])
        .await
        .unwrap_err();
    assert_eq!(res.status, 401);
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{}",
        res.body
    );
    let count = || async {
        entity::stream_token::Entity::find()
            .count(&app.db)
            .await
            .unwrap()
    };
    assert_eq!(count().await, 1);
    // Minting again prunes the expired row.
    token_for(&app, &t, &uid).await;
    assert_eq!(count().await, 1);
    let prefix = token.split('_').nth(1).unwrap();
    assert_eq!(
        entity::stream_token::Entity::find()
            .filter(entity::stream_token::Column::Prefix.eq(prefix))
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
}

#[actix_web::test]
async fn a_token_stops_working_when_its_expiry_passes() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let token = token_for(&app, &t, &uid).await;
    assert!(
        open_stream(&app.address, &with_token(&uid, &token), &[])
            .await
            .is_ok()
    );
    // Move its expiry into the past, as time would.
    entity::stream_token::Entity::update_many()
        .col_expr(
            entity::stream_token::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .exec(&app.db)
        .await
        .unwrap();
    let res = open_stream(&app.address, &with_token(&uid, &token), &[])
        .await
        .unwrap_err();
    assert_eq!(res.status, 401);
}

#[actix_web::test]
async fn a_token_of_a_revoked_key_or_a_lost_access_is_refused() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let mate = app.user_in(&owner.account_id, "member", &[]).await;
    let uid = app.conversation(&owner, true).await;
    let owner_token = token_for(&app, &owner, &uid).await;
    let mate_token = token_for(&app, &mate, &uid).await;
    assert!(
        open_stream(&app.address, &with_token(&uid, &owner_token), &[])
            .await
            .is_ok()
    );
    assert!(
        open_stream(&app.address, &with_token(&uid, &mate_token), &[])
            .await
            .is_ok()
    );

    // The mate loses access (sharing off): the normal visibility check, 404.
    let res = app
        .patch(
            &format!("/api/v2/assistant/conversations/{uid}/sharing"),
            &owner.key,
            &json!({"sharingEnabled": false}),
        )
        .await;
    assert_eq!(res.status, 200);
    let res = open_stream(&app.address, &with_token(&uid, &mate_token), &[])
        .await
        .unwrap_err();
    assert_eq!(res.status, 404);

    // The owner's key is revoked: its token is refused at once.
    let keys = app.get("/api/v2/api-keys", &owner.key).await;
    let key_id = keys.data()[0]["id"].as_i64().unwrap();
    let res = app
        .delete(&format!("/api/v2/api-keys/{key_id}"), &owner.key)
        .await;
    assert_eq!(res.status, 200);
    let res = open_stream(&app.address, &with_token(&uid, &owner_token), &[])
        .await
        .unwrap_err();
    assert_eq!(res.status, 401);
    assert_eq!(res.body["error"]["code"], json!("UNAUTHORIZED"));
}

#[actix_web::test]
async fn a_token_minted_on_one_instance_opens_the_stream_on_another() {
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let t = a.tenant().await;
    let uid = a.conversation(&t, false).await;
    let token = token_for(&a, &t, &uid).await;
    let (_, ready) = open_stream(
        &b.address,
        &format!("{}&after=0", with_token(&uid, &token)),
        &[],
    )
    .await
    .unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
    assert_eq!(ready["conversationUid"], json!(uid));
}

#[actix_web::test]
async fn the_token_never_reaches_the_logs() {
    // The real binary at debug level: every request's span (with its URI)
    // prefixes the database statements logged while it runs.
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let token = token_for(&app, &t, &uid).await;
    app.handle.stop(true).await;

    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .arg("serve")
        .env("AGENTIC_DATABASE_URL", &app.database_url)
        .env("AGENTIC_BIND", "127.0.0.1:0")
        .env("AGENTIC_METRICS_BIND", "127.0.0.1:0")
        .env("AGENTIC_LOG", "debug")
        .env("NO_COLOR", "1")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut { stderr }, &mut s).unwrap();
        s
    });
    let base = {
        let mut lines = std::io::BufRead::lines(std::io::BufReader::new(stdout));
        loop {
            let line = lines.next().expect("listening line").unwrap();
            if let Some(url) = line.strip_prefix("listening on ") {
                break url.to_string();
            }
        }
    };
    let opened = open_stream(&base, &format!("{}&after=0", with_token(&uid, &token)), &[]).await;
    // A refusal is always logged (at warn), with the request's URI.
    let other = uuid::Uuid::new_v4().to_string();
    let refused = open_stream(&base, &with_token(&other, &token), &[]).await;
    // SIGTERM: the binary drains and exits, closing stderr.
    std::process::Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    let log = log.join().unwrap();
    assert!(opened.is_ok());
    assert_eq!(refused.unwrap_err().status, 401);
    assert!(status.success(), "{log}");
    let secret = token.rsplit('_').next().unwrap();
    assert!(!log.contains(secret), "the token was logged:\n{log}");
    assert!(
        log.contains(&format!("{}?streamToken=redacted", events_path(&other))),
        "the request is still logged, token redacted:\n{log}"
    );
}

// ------------------------------------------------------- a real browser

/// The page a browser client would be served from, on its own origin.
const PAGE: &str = include_str!("../browser/page.html");
const DRIVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/browser/driver.py");

pub(crate) fn chromium_path() -> String {
    std::env::var("AGENTIC_CHROMIUM").unwrap_or_else(|_| "/usr/lib/chromium/chromium".into())
}

pub(crate) fn browser_python() -> String {
    std::env::var("AGENTIC_BROWSER_PYTHON").unwrap_or_else(|_| {
        let venv = std::env::var("AGENTIC_BROWSER_VENV")
            .unwrap_or_else(|_| "/opt/agentic-api/browser-venv".into());
        format!("{venv}/bin/python")
    })
}

/// `None` when the browser tests may run; else why not. Missing pieces
/// fail the test unless `AGENTIC_SKIP_BROWSER_TESTS=1`: never a silent pass.
fn browser_missing() -> Option<String> {
    let mut missing = Vec::new();
    if !std::path::Path::new(&chromium_path()).exists() {
        missing.push(format!(
            "Chromium at {} (apt-get install -y --no-install-recommends chromium)",
            chromium_path()
        ));
    }
    let python = browser_python();
    let playwright = std::process::Command::new(&python)
        .args(["-c", "import playwright"])
        .output();
    if !playwright.is_ok_and(|o| o.status.success()) {
        missing.push(format!(
            "Python with playwright at {python} (python3 -m venv /opt/agentic-api/browser-venv && /opt/agentic-api/browser-venv/bin/pip install playwright)"
        ));
    }
    if missing.is_empty() {
        None
    } else {
        Some(missing.join("; "))
    }
}

/// A static server for the page, on another port of 127.0.0.1 (so another origin).
async fn serve_page() -> (String, actix_web::dev::ServerHandle) {
    let server = actix_web::HttpServer::new(|| {
        actix_web::App::new().default_service(actix_web::web::to(|| async {
            actix_web::HttpResponse::Ok()
                .content_type("text/html; charset=utf-8")
                .body(PAGE)
        }))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (format!("http://127.0.0.1:{port}"), handle)
}

/// A Playwright driver process (tests/browser/driver.py, or another driver
/// of the same line protocol: one JSON command in, one JSON reply out).
pub(crate) struct Browser {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
}

impl Browser {
    async fn launch() -> Browser {
        Self::launch_with(true).await
    }

    async fn launch_with(javascript: bool) -> Browser {
        Self::spawn(
            DRIVER,
            &[(
                "AGENTIC_BROWSER_JAVASCRIPT",
                if javascript { "on" } else { "off" },
            )],
        )
        .await
    }

    /// Starts `driver` with Chromium's path and `envs`; waits for its hello.
    pub(crate) async fn spawn(driver: &str, envs: &[(&str, &str)]) -> Browser {
        use tokio::io::AsyncBufReadExt;
        let mut child = tokio::process::Command::new(browser_python())
            .arg(driver)
            .env("AGENTIC_CHROMIUM", chromium_path())
            .envs(envs.iter().copied())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the browser driver starts");
        let stdin = child.stdin.take().unwrap();
        let stdout = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut browser = Browser {
            child,
            stdin,
            stdout,
        };
        let hello = browser.read().await;
        assert_eq!(hello["ok"], json!(true), "browser did not start: {hello}");
        browser
    }

    async fn read(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(60), self.stdout.next_line())
            .await
            .expect("the driver answers within 60 s")
            .unwrap()
            .expect("the driver is still running (see its stderr above)");
        serde_json::from_str(&line).unwrap()
    }

    pub(crate) async fn send(&mut self, cmd: Value) -> Value {
        use tokio::io::AsyncWriteExt;
        self.stdin
            .write_all(format!("{cmd}\n").as_bytes())
            .await
            .unwrap();
        self.read().await
    }

    async fn goto(&mut self, url: &str) {
        let res = self.send(json!({"cmd": "goto", "url": url})).await;
        assert_eq!(res["ok"], json!(true), "{res}");
    }

    async fn eval(&mut self, js: &str) -> Value {
        let res = self.send(json!({"cmd": "eval", "js": js})).await;
        assert_eq!(res["ok"], json!(true), "{js}: {res}");
        res["value"].clone()
    }

    /// Waits until `js` is truthy in the page; fails with what the page saw.
    async fn wait(&mut self, what: &str, js: &str) {
        let res = self
            .send(json!({"cmd": "wait", "js": js, "timeoutMs": 20_000}))
            .await;
        if res["ok"] != json!(true) {
            let seen = self.eval("window.seen").await;
            panic!(
                "browser: {what} did not happen ({}); the page saw {seen:#}",
                res["error"]
            );
        }
    }

    async fn fill(&mut self, selector: &str, value: &str) {
        let res = self
            .send(json!({"cmd": "fill", "selector": selector, "value": value}))
            .await;
        assert_eq!(res["ok"], json!(true), "fill {selector}: {res}");
    }

    /// Clicks and waits for the navigation the click starts.
    async fn click(&mut self, selector: &str) {
        let res = self
            .send(json!({"cmd": "click", "selector": selector}))
            .await;
        assert_eq!(res["ok"], json!(true), "click {selector}: {res}");
    }

    /// The current URL and HTML.
    async fn page(&mut self) -> (String, String) {
        let res = self.send(json!({"cmd": "page"})).await;
        assert_eq!(res["ok"], json!(true), "{res}");
        (
            res["url"].as_str().unwrap().to_string(),
            res["html"].as_str().unwrap().to_string(),
        )
    }

    pub(crate) async fn quit(mut self) {
        self.send(json!({"cmd": "quit"})).await;
        let _ = self.child.wait().await;
    }
}

/// JS: the entries the page recorded from EventSource `src` with `kind`.
fn seen(src: &str, kind: &str) -> String {
    format!("window.seen.filter(e => e.src === '{src}' && e.kind === '{kind}')")
}

fn messages_seen(src: &str) -> String {
    format!(
        "{}.filter(e => e.type === 'message.created')",
        seen(src, "event")
    )
}

/// `false` when the browser tests are skipped knowingly; panics when
/// something they need is missing otherwise.
pub(crate) fn browser_available() -> bool {
    if let Some(missing) = browser_missing() {
        if std::env::var("AGENTIC_SKIP_BROWSER_TESTS").as_deref() == Ok("1") {
            eprintln!("SKIPPED (AGENTIC_SKIP_BROWSER_TESTS=1): missing {missing}");
            return false;
        }
        panic!(
            "the browser test needs {missing}. `.ci/run` installs both; set AGENTIC_SKIP_BROWSER_TESTS=1 to skip it knowingly"
        );
    }
    true
}

#[actix_web::test]
async fn a_browser_event_source_streams_cross_origin_and_resumes_by_itself_after_a_restart() {
    if !browser_available() {
        return;
    }
    let (page_origin, page_server) = serve_page().await;
    let a = spawn_app_with(allow(&page_origin)).await;
    let t = a.tenant().await;
    let uid = a.conversation(&t, false).await;
    a.say(&t, &uid, "m1").await;

    let mut browser = Browser::launch().await;
    browser.goto(&format!("{page_origin}/")).await;
    assert_eq!(browser.eval("location.origin").await, json!(page_origin));

    // The page mints its token itself, cross-origin, with the bearer key.
    let minted = browser
        .eval(&format!(
            "mintToken({}, {}, {})",
            json!(a.address),
            json!(t.key),
            json!(events_path(&uid))
        ))
        .await;
    assert_eq!(minted["ok"], json!(true), "{minted}");
    assert_eq!(minted["status"], json!(201), "{minted}");
    // Exposed headers are readable by the page.
    assert!(minted["requestId"].is_string(), "{minted}");
    assert!(minted["rateLimitRemaining"].is_string(), "{minted}");
    let token = minted["body"]["data"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let url = format!(
        "{}{}?streamToken={token}&after=0",
        a.address,
        minted["body"]["data"]["stream"].as_str().unwrap()
    );

    // The native EventSource opens cross-origin: ready, the replay, then live.
    browser
        .eval(&format!("openStream('main', {})", json!(url)))
        .await;
    browser
        .wait(
            "ready and m1",
            &format!("{}.length >= 1", messages_seen("main")),
        )
        .await;
    a.say(&t, &uid, "m2").await;
    browser
        .wait("live m2", &format!("{}.length >= 2", messages_seen("main")))
        .await;

    // Drop the connection: the server shuts down (streams end with an error
    // event, as on SIGTERM) and its port closes.
    a.state.shutdown.cancel();
    a.handle.stop(true).await;
    browser
        .wait(
            "the drop noticed",
            &format!("{}.length >= 1", seen("main", "error")),
        )
        .await;

    // Meanwhile, messages are posted through another instance, which does
    // not list the page's origin.
    let b = spawn_on(&a.database_url, |_| {}).await;
    b.say(&t, &uid, "m3").await;
    b.say(&t, &uid, "m4").await;

    // A new instance on the same database and the SAME port: the browser
    // reconnects by itself and resumes after m2 with nothing lost.
    let port = a.port;
    let origin = page_origin.clone();
    let c = spawn_on(&a.database_url, move |cfg| {
        cfg.bind = format!("127.0.0.1:{port}");
        allow(&origin)(cfg);
    })
    .await;
    browser
        .wait(
            "the reconnect",
            &format!("{}.length >= 4", messages_seen("main")),
        )
        .await;
    c.say(&t, &uid, "m5").await;
    browser
        .wait(
            "live m5 after the reconnect",
            &format!("{}.length >= 5", messages_seen("main")),
        )
        .await;

    let messages = browser.eval(&messages_seen("main")).await;
    let ids: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["lastEventId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1", "2", "3", "4", "5"], "no gap, no duplicate");
    let contents: Vec<&str> = messages
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["data"]["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, ["m1", "m2", "m3", "m4", "m5"]);
    // Two connections: the first from the URL's after=0, the second from
    // the Last-Event-ID the browser sent (it wins over the URL).
    let readies = browser
        .eval(&format!(
            "{}.filter(e => e.type === 'ready').map(e => e.data.after)",
            seen("main", "event")
        ))
        .await;
    assert_eq!(readies, json!([0, 2]));
    assert_eq!(
        browser
            .eval(&format!("{}.length", seen("main", "open")))
            .await,
        json!(2)
    );
    // Each attempt was the SAME URL (same token); the one that resumed sent
    // Last-Event-ID: 2 and no Authorization.
    let requests = browser.send(json!({"cmd": "requests"})).await["value"].clone();
    let requests = requests.as_array().unwrap();
    assert!(requests.len() >= 2, "{requests:?}");
    for r in requests {
        assert_eq!(r["url"], json!(url), "{r}");
        assert!(r["headers"].get("authorization").is_none(), "{r}");
    }
    assert_eq!(requests[0]["headers"].get("last-event-id"), None);
    let last = requests.last().unwrap();
    assert_eq!(last["headers"]["last-event-id"], json!("2"), "{last}");
    assert_eq!(last["headers"]["origin"], json!(page_origin), "{last}");

    // Without the page's origin listed, the browser refuses the page both
    // the fetch and the stream, although the server itself would serve them.
    let denied = browser
        .eval(&format!(
            "mintToken({}, {}, {})",
            json!(b.address),
            json!(t.key),
            json!(events_path(&uid))
        ))
        .await;
    assert_eq!(denied["ok"], json!(false), "{denied}");
    let b_token = token_for(&b, &t, &uid).await;
    let b_url = format!("{}{}&after=0", b.address, with_token(&uid, &b_token));
    assert!(
        open_stream(&b.address, &with_token(&uid, &b_token), &[])
            .await
            .is_ok()
    );
    browser
        .eval(&format!("openStream('denied', {})", json!(b_url)))
        .await;
    browser
        .wait(
            "the stream refused by the browser",
            &format!("{}.some(e => e.readyState === 2)", seen("denied", "error")),
        )
        .await;
    assert_eq!(
        browser
            .eval(&format!("{}.length", seen("denied", "event")))
            .await,
        json!(0)
    );

    browser.quit().await;
    page_server.stop(true).await;
}

/// A discovery stream opened by the browser's own EventSource with a
/// token the page minted: its `ready` and first `revision` arrive.
#[actix_web::test]
async fn a_browser_event_source_opens_a_discovery_stream_with_a_token() {
    if !browser_available() {
        return;
    }
    let (page_origin, page_server) = serve_page().await;
    let app = spawn_app_with(allow(&page_origin)).await;
    let t = app.tenant().await;
    let _hangs = crate::fake_seller::hanging(&app).await;
    let id = crate::fake_seller::progressive_session(&app, &t).await;

    let mut browser = Browser::launch().await;
    browser.goto(&format!("{page_origin}/")).await;
    let minted = browser
        .eval(&format!(
            "mintToken({}, {}, {})",
            json!(app.address),
            json!(t.key),
            json!(format!("/api/v2/buyer/discovery/{id}/events"))
        ))
        .await;
    assert_eq!(minted["status"], json!(201), "{minted}");
    let url = format!(
        "{}{}?streamToken={}",
        app.address,
        minted["body"]["data"]["stream"].as_str().unwrap(),
        minted["body"]["data"]["token"].as_str().unwrap()
    );
    browser
        .eval(&format!("openStream('discovery', {})", json!(url)))
        .await;
    let events = seen("discovery", "event");
    browser
        .wait(
            "ready and a revision",
            &format!(
                "{events}.some(e => e.type === 'ready') && {events}.some(e => e.type === 'revision')"
            ),
        )
        .await;
    let ready = browser
        .eval(&format!("{events}.find(e => e.type === 'ready').data"))
        .await;
    assert_eq!(ready, json!({"discoveryId": id}));
    browser.quit().await;
    page_server.stop(true).await;
}

#[actix_web::test]
async fn the_openapi_document_describes_stream_tokens() {
    let app = spawn_app().await;
    let res = app
        .request(Method::GET, "/api/v2/openapi.json", None, None)
        .await;
    let doc = &res.body;
    assert!(
        doc["paths"]["/api/v2/auth/stream-tokens"]["post"].is_object(),
        "{doc}"
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["streamToken"]["in"],
        json!("query")
    );
    assert_eq!(
        doc["paths"]["/api/v2/assistant/conversations/{conversationUid}/events"]["get"]["security"],
        json!([{ "bearer": [] }, { "streamToken": [] }])
    );
}

// ------------------------------------------------ OAuth login in a browser

/// A local redirect receiver, as an agent host runs one: records every
/// request's path and query, and answers a small page.
async fn redirect_receiver() -> (
    String,
    std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    actix_web::dev::ServerHandle,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let server = actix_web::HttpServer::new(move || {
        let log = log.clone();
        actix_web::App::new().default_service(actix_web::web::to(
            move |req: actix_web::HttpRequest| {
                log.lock().unwrap().push(req.uri().to_string());
                async {
                    actix_web::HttpResponse::Ok()
                        .content_type("text/html; charset=utf-8")
                        .body(
                            "<!doctype html><title>Connected</title><p>You can close this tab.</p>",
                        )
                }
            },
        ))
    })
    .workers(1)
    .bind("127.0.0.1:0")
    .unwrap();
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    (format!("http://127.0.0.1:{port}/callback"), seen, handle)
}

#[actix_web::test]
async fn a_person_signs_in_and_allows_an_agent_in_chromium_without_javascript() {
    use base64::Engine;
    use sha2::Digest;
    if !browser_available() {
        return;
    }
    let app = spawn_app().await;
    let acc = crate::oauth::account(&app, "Acme").await;
    let pat = crate::oauth::person(&app, &acc, "member").await;
    let (redirect_uri, received, receiver) = redirect_receiver().await;
    let reg = app
        .request(
            Method::POST,
            "/auth/register",
            None,
            Some(&json!({"client_name": "Browser Agent", "redirect_uris": [redirect_uri]})),
        )
        .await;
    assert_eq!(reg.status, 201, "{}", reg.body);
    let client_id = reg.body["client_id"].as_str().unwrap().to_string();
    let verifier = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(sha2::Sha256::digest(verifier.as_bytes()));
    let authorize = format!(
        "{}/authorize?{}",
        app.address,
        serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", client_id.as_str()),
            ("redirect_uri", redirect_uri.as_str()),
            ("state", "browser-state"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("scope", "openid profile email"),
        ])
        .unwrap()
    );

    let mut browser = Browser::launch_with(false).await;
    browser.goto(&authorize).await;
    let (_, html) = browser.page().await;
    assert!(html.contains("Browser Agent"), "{html}");
    browser.fill("#email", &pat.email).await;
    browser.fill("#password", "wrong password").await;
    browser.click("button[type=submit]").await;
    let (url, html) = browser.page().await;
    assert!(url.ends_with("/auth/login"), "{url}");
    assert!(
        html.contains("The email or password is incorrect."),
        "{html}"
    );
    browser.fill("#password", "correct horse battery").await;
    browser.click("button[type=submit]").await;
    let (_, html) = browser.page().await;
    assert!(html.contains("Allow Browser Agent?"), "{html}");
    // The consent form redirects to the agent's own origin (CSP form-action allows it).
    browser.click("button[value=allow]").await;
    let (url, html) = browser.page().await;
    assert!(url.starts_with(&redirect_uri), "{url}");
    assert!(html.contains("You can close this tab."), "{html}");
    browser.quit().await;
    receiver.stop(true).await;

    // The receiver's favicon aside, one request: the redirect.
    let hits: Vec<String> = received
        .lock()
        .unwrap()
        .iter()
        .filter(|p| p.starts_with("/callback"))
        .cloned()
        .collect();
    assert_eq!(hits.len(), 1, "{hits:?}");
    let landed = url::Url::parse(&format!("http://x{}", hits[0])).unwrap();
    let q: std::collections::HashMap<String, String> = landed.query_pairs().into_owned().collect();
    assert_eq!(q["state"], "browser-state");
    let code = &q["code"];
    // The code the browser delivered is good for tokens.
    let tokens = crate::oauth::form(
        &app,
        "/auth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", &redirect_uri),
            ("client_id", &client_id),
            ("code_verifier", &verifier),
        ],
        None,
    )
    .await;
    assert_eq!(tokens.status, 200, "{}", tokens.text);
    let me = crate::oauth::me(&app, crate::oauth::bearer(&tokens.json)).await;
    assert_eq!(me.data()["user"]["id"], json!(pat.user_id));
}

/// A material upload the way a host page sends it: the page, on another
/// origin (listed in `AGENTIC_CORS_ORIGINS`), PUTs the file's bytes to the
/// write URL with `fetch` (a CORS preflight first, since the type is not a
/// simple one); the URL works once.
#[actix_web::test]
async fn a_browser_puts_an_upload_cross_origin_and_only_once() {
    if !browser_available() {
        return;
    }
    let (page_origin, page_server) = serve_page().await;
    let dir = tempfile::tempdir().unwrap();
    let storage = dir.path().to_path_buf();
    let origin = page_origin.clone();
    let a = spawn_app_with(move |c| {
        allow(&origin)(c);
        c.upload_storage_dir = storage;
    })
    .await;
    let t = a.tenant().await;
    let png: Vec<u8> = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\0\x01\0\0\0\x01".to_vec();
    let reserved = a
        .post(
            "/api/v2/buyer/materials/uploads",
            &t.key,
            &json!({"title": "Logo", "contentType": "image/png", "sizeBytes": png.len()}),
        )
        .await;
    assert_eq!(reserved.status, 201, "{}", reserved.body);
    let url = reserved.data()["upload"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    let id = reserved.data()["material"]["id"]
        .as_str()
        .unwrap()
        .to_string();

    let mut browser = Browser::launch().await;
    browser.goto(&format!("{page_origin}/")).await;
    let put = format!(
        "fetch({}, {{method: 'PUT', headers: {{'Content-Type': 'image/png'}}, body: new Uint8Array({})}})\
         .then(async r => ({{status: r.status, body: await r.json().catch(() => null)}}))\
         .catch(e => ({{status: 0, error: String(e)}}))",
        json!(url),
        json!(png)
    );
    let first = browser.eval(&put).await;
    assert_eq!(first["status"], json!(200), "{first}");
    let again = browser.eval(&put).await;
    assert_eq!(again["status"], json!(409), "a replay: {again}");
    assert_eq!(again["body"]["error"]["code"], json!("CONFLICT"), "{again}");

    let m = a
        .get(&format!("/api/v2/buyer/materials/{id}"), &t.key)
        .await;
    assert_eq!(m.data()["status"], "uploaded", "{}", m.body);
    assert_eq!(m.data()["sizeBytes"], json!(png.len()));
    assert!(dir.path().join(&t.account_id).join(&id).exists());
    browser.quit().await;
    page_server.stop(true).await;
}
