//! The web console over real HTTP: its static files and their headers, its
//! built-in OAuth client (authorization code with PKCE, no consent page),
//! the `create_api_key` operation behind its keys page, and `serve --demo`
//! printing where to sign in.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use actix_web::http::Method;
use actix_web::http::header::HeaderMap;
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use agentic_api::auth::oauth::console::{CALLBACK_PATH, CLIENT_ID};
use agentic_api::auth::tenancy;

use crate::helpers::*;

pub(crate) use crate::oauth::PASSWORD;
use crate::oauth::pkce;

/// A raw answer, redirects not followed.
pub(crate) struct Raw {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) text: String,
}

impl Raw {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    /// The value of the hidden form field `name`.
    fn field(&self, name: &str) -> String {
        let marker = format!("name=\"{name}\" value=\"");
        let start = self
            .text
            .find(&marker)
            .unwrap_or_else(|| panic!("no field {name} in {}", self.text))
            + marker.len();
        let len = self.text[start..].find('"').unwrap();
        self.text[start..start + len].to_string()
    }

    /// `name=value` of the authorization's browser cookie.
    fn authz_cookie(&self) -> String {
        self.headers
            .get_all("set-cookie")
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with("agentic_authz_"))
            .map(|c| c.split(';').next().unwrap().to_string())
            .expect("the authorization's cookie")
    }
}

fn http() -> awc::Client {
    awc::Client::builder()
        .disable_redirects()
        .timeout(Duration::from_secs(60))
        .finish()
}

pub(crate) async fn raw_get(url: &str, headers: &[(&str, &str)]) -> Raw {
    let mut req = http().get(url);
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let mut res = req.send().await.expect("request sent");
    let body = res.body().limit(4 << 20).await.expect("body");
    Raw {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        text: String::from_utf8_lossy(&body).into_owned(),
    }
}

async fn raw_form(url: &str, pairs: &[(&str, &str)], cookie: Option<&str>) -> Raw {
    let mut req = http()
        .post(url)
        .insert_header(("Content-Type", "application/x-www-form-urlencoded"));
    if let Some(c) = cookie {
        req = req.insert_header(("Cookie", c));
    }
    let mut res = req
        .send_body(serde_urlencoded::to_string(pairs).unwrap())
        .await
        .expect("request sent");
    let body = res.body().limit(1 << 20).await.expect("body");
    Raw {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        text: String::from_utf8_lossy(&body).into_owned(),
    }
}

fn authorize_url(base: &str, redirect_uri: &str, challenge: &str, state: &str) -> String {
    format!(
        "{base}/authorize?{}",
        serde_urlencoded::to_string([
            ("response_type", "code"),
            ("client_id", CLIENT_ID),
            ("redirect_uri", redirect_uri),
            ("scope", "openid profile email platform:write"),
            ("state", state),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
        ])
        .unwrap()
    )
}

/// What the console does to sign a person in, over HTTP: the login page,
/// the password, straight back to the callback (no consent page), then the
/// code for tokens with the PKCE verifier. Returns the token response.
pub(crate) async fn console_sign_in(base: &str, email: &str, password: &str) -> Value {
    let redirect_uri = format!("{base}{CALLBACK_PATH}");
    let (verifier, challenge) = pkce();
    let page = raw_get(&authorize_url(base, &redirect_uri, &challenge, "st-1"), &[]).await;
    assert_eq!(page.status, 200, "{}", page.text);
    assert!(page.text.contains("Agentic console"), "{}", page.text);
    let cookie = page.authz_cookie();
    let back = raw_form(
        &format!("{base}/auth/login"),
        &[
            ("request", &page.field("request")),
            ("csrf", &page.field("csrf")),
            ("email", email),
            ("password", password),
        ],
        Some(&cookie),
    )
    .await;
    assert_eq!(
        back.status, 303,
        "no consent page for the console: {}",
        back.text
    );
    let location = url::Url::parse(back.header("location").unwrap()).unwrap();
    assert!(location.as_str().starts_with(&redirect_uri), "{location}");
    let q: HashMap<String, String> = location.query_pairs().into_owned().collect();
    assert_eq!(q["state"], "st-1");
    assert_eq!(q["iss"], base);
    let tokens = raw_form(
        &format!("{base}/auth/token"),
        &[
            ("grant_type", "authorization_code"),
            ("code", &q["code"]),
            ("redirect_uri", &redirect_uri),
            ("client_id", CLIENT_ID),
            ("code_verifier", &verifier),
        ],
        None,
    )
    .await;
    assert_eq!(tokens.status, 200, "{}", tokens.text);
    tokens.json()
}

/// An access token of a registered agent host that `who` allowed
/// ("Allow read and change" on the consent page).
async fn agent_token(app: &TestApp, who: &Tenant) -> String {
    let client = crate::oauth::client(app, "Agent").await;
    let (verifier, challenge) = pkce();
    let code = crate::oauth::code_for(app, &client, &challenge, who).await;
    let tokens = crate::oauth::exchange(app, &client, &code, &verifier).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text);
    tokens.json["access_token"].as_str().unwrap().to_string()
}

/// A user of `account_id` who can sign in with `PASSWORD`, with an API key.
pub(crate) async fn person(app: &TestApp, account_id: &str, perms: &[&str]) -> Tenant {
    let t = app.user_in(account_id, "member", perms).await;
    tenancy::set_password(&app.db, t.user_id, PASSWORD)
        .await
        .unwrap();
    t
}

async fn live_keys(app: &TestApp, user_id: i64) -> u64 {
    entity::api_key::Entity::find()
        .filter(entity::api_key::Column::UserId.eq(user_id))
        .filter(entity::api_key::Column::Kind.eq("key"))
        .filter(entity::api_key::Column::RevokedAt.is_null())
        .count(&app.db)
        .await
        .unwrap()
}

// ------------------------------------------------------ static files

#[track_caller]
fn assert_console_headers(res: &Raw) {
    let csp = res
        .header("content-security-policy")
        .expect("a Content-Security-Policy");
    for directive in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ] {
        assert!(csp.contains(directive), "{directive} in {csp}");
    }
    assert!(!csp.contains("unsafe-inline"), "{csp}");
    assert!(!csp.contains("unsafe-eval"), "{csp}");
    assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
    assert_eq!(res.header("x-frame-options"), Some("DENY"));
    assert_eq!(res.header("referrer-policy"), Some("no-referrer"));
}

#[actix_web::test]
async fn the_console_page_is_served_at_the_root_and_its_callback_with_a_strict_policy() {
    let app = spawn_app().await;
    for path in ["/", CALLBACK_PATH, "/console/callback?code=x&state=y"] {
        let res = raw_get(&app.url(path), &[]).await;
        assert_eq!(res.status, 200, "{path}: {}", res.text);
        assert_eq!(
            res.header("content-type"),
            Some("text/html; charset=utf-8"),
            "{path}"
        );
        assert_console_headers(&res);
        assert!(
            res.text
                .contains(r#"<script type="module" src="/console/app.js"></script>"#),
            "{}",
            res.text
        );
        // Nothing inline for the policy to allow.
        assert!(!res.text.contains("<script>"), "{}", res.text);
        assert!(!res.text.contains("style="), "{}", res.text);
        assert!(!res.text.contains("<style"), "{}", res.text);
    }
}

/// The relative module paths a script imports (`from "./x.js"`,
/// `import("./x.js")`), resolved against `dir`.
fn imports_of(dir: &str, source: &str) -> Vec<String> {
    let mut out = Vec::new();
    for marker in ["from \"", "import(\""] {
        for (i, _) in source.match_indices(marker) {
            let rest = &source[i + marker.len()..];
            let Some(end) = rest.find('"') else { continue };
            let spec = &rest[..end];
            if !spec.starts_with('.') {
                continue;
            }
            let mut parts: Vec<&str> = dir.split('/').filter(|s| !s.is_empty()).collect();
            for seg in spec.split('/') {
                match seg {
                    "." => {}
                    ".." => {
                        parts.pop();
                    }
                    s => parts.push(s),
                }
            }
            out.push(format!("/{}", parts.join("/")));
        }
    }
    out
}

#[actix_web::test]
async fn every_console_file_is_served_with_its_type_and_every_import_resolves() {
    let app = spawn_app().await;
    // From the entry point, every module it imports, transitively.
    let mut todo = vec!["/console/app.js".to_string()];
    let mut seen = std::collections::BTreeSet::new();
    while let Some(path) = todo.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let res = raw_get(&app.url(&path), &[]).await;
        assert_eq!(res.status, 200, "{path} is imported but not served");
        assert_eq!(
            res.header("content-type"),
            Some("text/javascript; charset=utf-8"),
            "{path}"
        );
        assert_console_headers(&res);
        let dir = &path[..path.rfind('/').unwrap()];
        todo.extend(imports_of(dir, &res.text));
    }
    assert!(seen.len() >= 10, "{seen:?}");
    for (path, ctype) in [
        ("/console/style.css", "text/css; charset=utf-8"),
        ("/console/favicon.svg", "image/svg+xml"),
        ("/console/index.html", "text/html; charset=utf-8"),
    ] {
        let res = raw_get(&app.url(path), &[]).await;
        assert_eq!(res.status, 200, "{path}");
        assert_eq!(res.header("content-type"), Some(ctype), "{path}");
        assert_console_headers(&res);
    }
}

#[actix_web::test]
async fn a_reload_revalidates_with_the_etag_and_gets_304() {
    let app = spawn_app().await;
    let first = raw_get(&app.url("/console/app.js"), &[]).await;
    let etag = first.header("etag").expect("an ETag").to_string();
    assert_eq!(first.header("cache-control"), Some("no-cache"));
    let again = raw_get(&app.url("/console/app.js"), &[("If-None-Match", &etag)]).await;
    assert_eq!(again.status, 304);
    assert!(again.text.is_empty());
    assert_eq!(again.header("etag"), Some(etag.as_str()));
    let stale = raw_get(
        &app.url("/console/app.js"),
        &[("If-None-Match", "\"other\"")],
    )
    .await;
    assert_eq!(stale.status, 200);
    assert_eq!(stale.text, first.text);
}

#[actix_web::test]
async fn an_unknown_console_file_is_a_404_envelope_and_nothing_outside_is_reachable() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for path in [
        "/console/nope.js",
        "/console/",
        "/console/lib",
        "/console/lib/",
        "/console/../Cargo.toml",
        "/console/%2e%2e/Cargo.toml",
        "/console/..%2fCargo.toml",
        "/console/pages/../../src/main.rs",
        "/console/APP.JS",
        "/index.html",
    ] {
        let res = app.get(path, &t.key).await;
        res.assert_error(404, "NOT_FOUND");
    }
    // The console's pages answer GET only.
    let res = app
        .request(Method::POST, "/", Some(&t.key), Some(&json!({})))
        .await;
    assert_eq!(res.status.as_u16(), 404, "{}", res.body);
}

#[actix_web::test]
async fn the_console_settings_name_its_client_scope_and_callbacks() {
    let app = spawn_app().await;
    let res = raw_get(&app.url("/console/config.json"), &[]).await;
    assert_eq!(res.status, 200);
    assert_console_headers(&res);
    assert_eq!(res.header("cache-control"), Some("no-store"));
    let cfg = res.json();
    assert_eq!(cfg["clientId"], json!(CLIENT_ID));
    assert_eq!(cfg["scope"], json!("openid profile email platform:write"));
    assert_eq!(cfg["issuer"], json!(app.address));
    let uris: Vec<&str> = cfg["redirectUris"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(uris[0], format!("{}{CALLBACK_PATH}", app.address));
    assert!(uris.contains(&format!("http://localhost:{}{CALLBACK_PATH}", app.port).as_str()));
}

// ----------------------------------------------- the console's client

#[actix_web::test]
async fn the_console_signs_a_person_in_with_pkce_and_no_consent_page() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let pat = person(&app, &owner.account_id, &[]).await;
    let tokens = console_sign_in(&app.address, &pat.email, PASSWORD).await;
    assert_eq!(tokens["token_type"], json!("Bearer"));
    assert_eq!(
        tokens["scope"],
        json!("openid profile email platform:write")
    );
    let access = tokens["access_token"].as_str().unwrap();
    let me = app.get("/api/v2/me", access).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.data()["user"]["id"], json!(pat.user_id));
    assert_eq!(me.data()["permissions"], json!(["platform:write"]));

    // The refresh token works for the console as for any client.
    let refreshed = raw_form(
        &app.url("/auth/token"),
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", tokens["refresh_token"].as_str().unwrap()),
            ("client_id", CLIENT_ID),
        ],
        None,
    )
    .await;
    assert_eq!(refreshed.status, 200, "{}", refreshed.text);

    // The client's row is kept by pruning, even a long time later.
    let pruned = agentic_api::auth::oauth::prune::prune(
        &app.db,
        chrono::Utc::now() + chrono::Duration::days(400),
    )
    .await
    .unwrap();
    assert_eq!(pruned.clients, 0);
    assert!(
        entity::oauth_client::Entity::find_by_id(CLIENT_ID.to_string())
            .one(&app.db)
            .await
            .unwrap()
            .is_some()
    );
}

#[actix_web::test]
async fn the_console_signs_in_on_every_loopback_name_of_the_server() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let pat = person(&app, &owner.account_id, &[]).await;
    let (_, challenge) = pkce();
    for host in ["localhost", "127.0.0.1", "[::1]"] {
        let redirect = format!("http://{host}:{}{CALLBACK_PATH}", app.port);
        let page = raw_get(
            &authorize_url(&app.address, &redirect, &challenge, "s"),
            &[],
        )
        .await;
        assert_eq!(page.status, 200, "{redirect}: {}", page.text);
    }
    // A sign-in from the other name lands on that name's callback.
    let page = raw_get(
        &authorize_url(
            &app.address,
            &format!("http://localhost:{}{CALLBACK_PATH}", app.port),
            &challenge,
            "s",
        ),
        &[],
    )
    .await;
    let back = raw_form(
        &app.url("/auth/login"),
        &[
            ("request", &page.field("request")),
            ("csrf", &page.field("csrf")),
            ("email", &pat.email),
            ("password", PASSWORD),
        ],
        Some(&page.authz_cookie()),
    )
    .await;
    assert_eq!(back.status, 303, "{}", back.text);
    assert!(back.header("location").unwrap().starts_with(&format!(
        "http://localhost:{}{CALLBACK_PATH}?code=",
        app.port
    )));
}

#[actix_web::test]
async fn the_console_client_never_sends_a_code_anywhere_else() {
    let app = spawn_app().await;
    let (_, challenge) = pkce();
    for redirect in [
        "https://evil.example.com/console/callback".to_string(),
        format!("{}/console/callback/../x", app.address),
        format!("{}/console/callbacks", app.address),
        format!("{}/", app.address),
        format!("http://localhost:{}/console/callback", app.port + 1),
        format!("http://127.0.0.2:{}/console/callback", app.port),
    ] {
        let res = raw_get(
            &authorize_url(&app.address, &redirect, &challenge, "s"),
            &[],
        )
        .await;
        // An error page, never a redirect (RFC 6749 section 4.1.2.1).
        assert_eq!(res.status, 400, "{redirect}: {}", res.text);
        assert!(res.header("location").is_none(), "{redirect}");
        assert!(res.text.contains("redirect_uri"), "{}", res.text);
    }
}

#[actix_web::test]
async fn a_wrong_password_keeps_the_console_on_the_login_page() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let pat = person(&app, &owner.account_id, &[]).await;
    let (_, challenge) = pkce();
    let redirect = format!("{}{CALLBACK_PATH}", app.address);
    let page = raw_get(
        &authorize_url(&app.address, &redirect, &challenge, "s"),
        &[],
    )
    .await;
    let res = raw_form(
        &app.url("/auth/login"),
        &[
            ("request", &page.field("request")),
            ("csrf", &page.field("csrf")),
            ("email", &pat.email),
            ("password", "not the password"),
        ],
        Some(&page.authz_cookie()),
    )
    .await;
    assert_eq!(res.status, 200);
    assert!(res.text.contains("The email or password is incorrect."));
    assert!(res.header("location").is_none());
}

// ------------------------------------------------------ create_api_key

#[actix_web::test]
async fn a_person_creates_a_named_read_only_key_shown_once_that_reads_and_cannot_write() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .post(
            "/api/v2/api-keys",
            &t.key,
            &json!({"name": "  Reporting script  ", "access": "read"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let data = res.data();
    let key = data["key"].as_str().unwrap().to_string();
    assert!(key.starts_with("agk_"), "{key}");
    assert_eq!(data["apiKey"]["name"], json!("Reporting script"));
    assert_eq!(data["apiKey"]["permissions"], json!(["platform:read"]));
    assert!(data["apiKey"]["revokedAt"].is_null());
    let prefix = data["apiKey"]["prefix"].as_str().unwrap();
    assert!(key.starts_with(&format!("agk_{prefix}_")));

    // It is the caller's own user, in the caller's account, read-only.
    let me = app.get("/api/v2/me", &key).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.data()["user"]["id"], json!(t.user_id));
    assert_eq!(me.data()["account"]["id"], json!(t.account_id));
    assert_eq!(me.data()["permissions"], json!(["platform:read"]));
    app.patch("/api/v2/me", &key, &json!({"name": "x"}))
        .await
        .assert_error(403, "FORBIDDEN");

    // Listed with its name, never with the secret; stored only hashed.
    let list = app.get("/api/v2/api-keys", &t.key).await;
    assert_eq!(list.status, 200);
    assert_eq!(list.data()[0]["id"], data["apiKey"]["id"]);
    assert_eq!(list.data()[0]["name"], json!("Reporting script"));
    assert!(!String::from_utf8_lossy(&list.raw).contains(&key));
    let row = entity::api_key::Entity::find_by_id(data["apiKey"]["id"].as_i64().unwrap())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.key_hash, agentic_api::auth::keys::hash_hex(&key));

    // Revoked like any key.
    let id = data["apiKey"]["id"].as_i64().unwrap();
    let revoked = app.delete(&format!("/api/v2/api-keys/{id}"), &t.key).await;
    assert_eq!(revoked.status, 200, "{}", revoked.body);
    tokio::time::sleep(Duration::from_millis(50)).await;
    app.get("/api/v2/me", &key)
        .await
        .assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn a_write_key_needs_a_credential_that_can_write_with_platform_write() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app
        .post("/api/v2/api-keys", &t.key, &json!({"access": "write"}))
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    assert_eq!(
        res.data()["apiKey"]["permissions"],
        json!(["platform:write"])
    );
    assert!(res.data()["apiKey"]["name"].is_null());
    let key = res.data()["key"].as_str().unwrap();
    let me = app.get("/api/v2/me", key).await;
    assert_eq!(me.data()["permissions"], json!(["platform:write"]));

    // A key without permissions (its user's access, no phone lines) may
    // make a read key, never a platform:write one.
    let plain = app.user_in(&t.account_id, "member", &[]).await;
    let before = live_keys(&app, plain.user_id).await;
    app.post("/api/v2/api-keys", &plain.key, &json!({"access": "write"}))
        .await
        .assert_error(403, "FORBIDDEN");
    assert_eq!(live_keys(&app, plain.user_id).await, before);
    let read = app
        .post("/api/v2/api-keys", &plain.key, &json!({"access": "read"}))
        .await;
    assert_eq!(read.status, 201, "{}", read.body);
}

#[actix_web::test]
async fn creating_a_key_refuses_bad_input_missing_credentials_and_read_only_keys() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let before = live_keys(&app, t.user_id).await;
    for (body, field) in [
        (json!({"access": "admin"}), "access"),
        (json!({"access": "READ"}), "access"),
        (json!({"access": 1}), "access"),
        (json!({}), "access"),
        (json!({"access": null}), "access"),
        (json!({"access": "read", "name": ""}), "name"),
        (json!({"access": "read", "name": "   "}), "name"),
        (json!({"access": "read", "name": "n".repeat(101)}), "name"),
        (json!({"access": "read", "name": "a\u{7}b"}), "name"),
        (json!({"access": "read", "name": 5}), "name"),
        (json!({"access": "read", "userId": 1}), "userId"),
        (
            json!({"access": "read", "permissions": ["platform:write"]}),
            "permissions",
        ),
    ] {
        let res = app.post("/api/v2/api-keys", &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            res.body["error"]["field"],
            json!(field),
            "{body}: {}",
            res.body
        );
    }
    for raw in [&b"not json"[..], b"[]", b""] {
        let res = app
            .send_raw(
                Method::POST,
                "/api/v2/api-keys",
                Some(&t.key),
                Some("application/json"),
                raw.to_vec(),
            )
            .await;
        res.assert_error(400, "VALIDATION_ERROR");
    }
    // No credential, or a bad one.
    app.request(
        Method::POST,
        "/api/v2/api-keys",
        None,
        Some(&json!({"access": "read"})),
    )
    .await
    .assert_error(401, "UNAUTHORIZED");
    app.post(
        "/api/v2/api-keys",
        "agk_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        &json!({"access": "read"}),
    )
    .await
    .assert_error(401, "UNAUTHORIZED");
    // A read-only key creates nothing, not even a read-only key.
    let reader = app
        .user_in(&t.account_id, "admin", &["platform:read"])
        .await;
    let reader_before = live_keys(&app, reader.user_id).await;
    for access in ["read", "write"] {
        app.post("/api/v2/api-keys", &reader.key, &json!({"access": access}))
            .await
            .assert_error(403, "FORBIDDEN");
    }
    assert_eq!(live_keys(&app, reader.user_id).await, reader_before);
    assert_eq!(live_keys(&app, t.user_id).await, before);
}

#[actix_web::test]
async fn keys_are_made_for_the_callers_own_user_and_nobody_elses_list_shows_them() {
    let app = spawn_app().await;
    let a = app.tenant().await;
    let teammate = app
        .user_in(&a.account_id, "admin", &["platform:write"])
        .await;
    let other = app.tenant().await;
    let res = app
        .post(
            "/api/v2/api-keys",
            &a.key,
            &json!({"name": "mine", "access": "write"}),
        )
        .await;
    assert_eq!(res.status, 201);
    let id = res.data()["apiKey"]["id"].clone();
    for who in [&teammate, &other] {
        let list = app.get("/api/v2/api-keys?take=100", &who.key).await;
        assert!(
            list.data()
                .as_array()
                .unwrap()
                .iter()
                .all(|k| k["id"] != id),
            "{}",
            list.body
        );
        // Nor can they revoke it.
        app.delete(&format!("/api/v2/api-keys/{id}"), &who.key)
            .await
            .assert_error(404, "NOT_FOUND");
    }
}

#[actix_web::test]
async fn a_user_holds_at_most_a_hundred_live_keys() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    while live_keys(&app, t.user_id).await < 100 {
        tenancy::create_api_key(&app.db, t.user_id, &["platform:read".into()])
            .await
            .unwrap();
    }
    let res = app
        .post("/api/v2/api-keys", &t.key, &json!({"access": "read"}))
        .await;
    res.assert_error(409, "CONFLICT");
    let list = app.get("/api/v2/api-keys", &t.key).await;
    let victim = list.data()[0]["id"].as_i64().unwrap();
    app.delete(&format!("/api/v2/api-keys/{victim}"), &t.key)
        .await;
    let res = app
        .post("/api/v2/api-keys", &t.key, &json!({"access": "read"}))
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
}

#[actix_web::test]
async fn the_console_may_create_keys_and_another_applications_token_may_not() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let pat = person(&app, &owner.account_id, &[]).await;
    let console = console_sign_in(&app.address, &pat.email, PASSWORD).await;
    let access = console["access_token"].as_str().unwrap();
    let res = app
        .post(
            "/api/v2/api-keys",
            access,
            &json!({"name": "from the console", "access": "write"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let key = res.data()["key"].as_str().unwrap();
    assert_eq!(
        app.get("/api/v2/me", key).await.data()["user"]["id"],
        json!(pat.user_id)
    );

    // An agent host's grant, even with every right: a key would outlive
    // the grant's revocation, so no.
    let agent = agent_token(&app, &pat).await;
    let before = live_keys(&app, pat.user_id).await;
    app.post("/api/v2/api-keys", &agent, &json!({"access": "read"}))
        .await
        .assert_error(403, "FORBIDDEN");
    assert_eq!(live_keys(&app, pat.user_id).await, before);
}

#[actix_web::test]
async fn create_api_key_is_a_tool_and_is_described() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let def = agentic_api::app::OPERATIONS
        .find("create_api_key")
        .expect("registered");
    assert_eq!(def.access, agentic_api::ops::Access::Write);
    let mut s = crate::mcp::open(&app, &t.key).await;
    let result = s
        .call(
            &app,
            "create_api_key",
            json!({"body": {"name": "tool", "access": "read"}}),
        )
        .await;
    let made = &result["structuredContent"]["data"];
    assert!(
        made["key"].as_str().is_some_and(|k| k.starts_with("agk_")),
        "{result}"
    );
    assert_eq!(made["apiKey"]["name"], json!("tool"));
    let doc = app
        .request(Method::GET, "/api/v2/openapi.json", None, None)
        .await
        .body;
    let op = &doc["paths"]["/api/v2/api-keys"]["post"];
    assert_eq!(op["operationId"], json!("create_api_key"), "{op}");
    assert!(op["responses"]["201"].is_object(), "{op}");
    assert!(op["responses"]["403"].is_object(), "{op}");
    assert!(op["responses"]["409"].is_object(), "{op}");
}

// ------------------------------------------------------------- demo

#[actix_web::test]
async fn serve_demo_prints_the_console_and_a_login_that_signs_in() {
    let (db, _dir) = fresh_database().await;
    let mut served = serve_with(&db, &["--demo"], &[], Stdio::null());
    let base = served.base.clone();
    assert!(
        served
            .lines
            .iter()
            .any(|l| l.trim() == format!("console on {base}/")),
        "{:?}",
        served.lines
    );
    let login = served
        .lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("demo login (console, shown once): "))
        .unwrap_or_else(|| panic!("no login printed: {:?}", served.lines))
        .to_string();
    let (email, password) = login.split_once(" / ").unwrap();
    assert_eq!(email, agentic_api::demo::DEMO_EMAIL);
    assert!(password.len() >= 16, "{password}");
    let tokens = console_sign_in(&base, email, password).await;
    let mut res = awc::Client::default()
        .get(format!("{base}/api/v2/me"))
        .insert_header((
            "Authorization",
            format!("Bearer {}", tokens["access_token"].as_str().unwrap()),
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let me: Value = res.json().await.unwrap();
    assert_eq!(me["data"]["user"]["email"], json!(email));
    // The console page is there too.
    let page = raw_get(&format!("{base}/"), &[]).await;
    assert_eq!(page.status, 200);
    assert!(sigterm_and_wait(&mut served.child).success());

    // A new start prints a new password; the old one no longer works.
    let mut again = serve_with(&db, &["--demo"], &[], Stdio::null());
    let second = again
        .lines
        .iter()
        .find_map(|l| l.trim().strip_prefix("demo login (console, shown once): "))
        .unwrap()
        .to_string();
    assert_ne!(second, login);
    let conn = agentic_api::db::connect(&db).await.unwrap();
    let user = entity::user::Entity::find()
        .filter(entity::user::Column::Email.eq(email))
        .one(&conn)
        .await
        .unwrap()
        .unwrap();
    assert!(user.password_hash.is_some());
    assert!(sigterm_and_wait(&mut again.child).success());
}
