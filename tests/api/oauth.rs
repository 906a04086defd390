//! The OAuth authorization server over real HTTP: registration, the
//! browser flow (login and consent forms with their CSRF token and cookie),
//! the token endpoint with PKCE, refresh rotation, revocation, metadata,
//! and access tokens used on the API like API keys.

use std::time::Duration;

use actix_web::http::header::HeaderMap;
use base64::Engine;
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use agentic_api::auth::tenancy::{self, NewAccount, NewUser};

use crate::helpers::*;

const REDIRECT: &str = "http://127.0.0.1:9/callback";
pub(crate) const PASSWORD: &str = "correct horse battery";

/// Form fields.
type Pairs<'a> = Vec<(&'a str, &'a str)>;

/// A raw answer: status, headers, body as text (pages) and JSON (the rest).
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) text: String,
    pub(crate) json: Value,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    fn location(&self) -> url::Url {
        url::Url::parse(self.header("location").expect("a Location header")).unwrap()
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

    /// `name=value` of the first `Set-Cookie` whose name starts with `prefix`.
    fn cookie(&self, prefix: &str) -> Option<(String, String)> {
        self.headers
            .get_all("set-cookie")
            .filter_map(|v| v.to_str().ok())
            .find(|c| c.starts_with(prefix))
            .map(str::to_string)
            .map(|c| {
                let pair = c.split(';').next().unwrap().to_string();
                (pair, c)
            })
    }

    /// Asserts an RFC 6749/7591 JSON error with `no-store`.
    #[track_caller]
    fn assert_oauth_error(&self, status: u16, error: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert_eq!(self.json["error"], json!(error), "{}", self.text);
        assert!(self.json["error_description"].is_string(), "{}", self.text);
        assert_eq!(self.header("cache-control"), Some("no-store"));
    }

    /// Asserts an HTML page with the anti-framing headers.
    #[track_caller]
    fn assert_page(&self, status: u16, contains: &str) {
        assert_eq!(self.status, status, "{}", self.text);
        assert!(
            self.header("content-type")
                .unwrap()
                .starts_with("text/html"),
            "{:?}",
            self.headers
        );
        assert!(
            self.text.contains(contains),
            "{contains:?} in {}",
            self.text
        );
        assert_eq!(self.header("x-frame-options"), Some("DENY"));
        assert!(
            self.header("content-security-policy")
                .unwrap()
                .contains("frame-ancestors 'none'")
        );
        assert!(self.header("location").is_none(), "a page never redirects");
    }
}

/// A client that does not follow redirects: the tests look at them.
fn http() -> awc::Client {
    awc::Client::builder()
        .disable_redirects()
        .timeout(Duration::from_secs(60))
        .finish()
}

async fn answer<S>(mut res: awc::ClientResponse<S>) -> Answer
where
    S: futures_util::Stream<Item = Result<bytes::Bytes, awc::error::PayloadError>> + Unpin,
{
    let raw = res.body().limit(1 << 20).await.unwrap();
    Answer {
        status: res.status().as_u16(),
        headers: res.headers().clone(),
        text: String::from_utf8_lossy(&raw).into_owned(),
        json: serde_json::from_slice(&raw).unwrap_or(Value::Null),
    }
}

async fn get(app: &TestApp, path: &str) -> Answer {
    answer(http().get(app.url(path)).send().await.unwrap()).await
}

/// A form POST; `cookie` is sent as the `Cookie` header.
pub(crate) async fn form(
    app: &TestApp,
    path: &str,
    pairs: &[(&str, &str)],
    cookie: Option<&str>,
) -> Answer {
    let body = serde_urlencoded::to_string(pairs).unwrap();
    let mut req = http()
        .post(app.url(path))
        .insert_header(("Content-Type", "application/x-www-form-urlencoded"));
    if let Some(c) = cookie {
        req = req.insert_header(("Cookie", c));
    }
    answer(req.send_body(body).await.unwrap()).await
}

async fn register(app: &TestApp, body: Value) -> Answer {
    answer(
        http()
            .post(app.url("/auth/register"))
            .send_json(&body)
            .await
            .unwrap(),
    )
    .await
}

/// A registered client; returns its id.
pub(crate) async fn client(app: &TestApp, name: &str) -> String {
    let res = register(
        app,
        json!({"client_name": name, "redirect_uris": [REDIRECT]}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text);
    res.json["client_id"].as_str().unwrap().to_string()
}

/// A PKCE pair: a random verifier and its S256 challenge.
pub(crate) fn pkce() -> (String, String) {
    let verifier = format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    );
    let challenge = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

/// A user who can sign in with `PASSWORD`, with an API key too.
pub(crate) async fn person(app: &TestApp, account_id: &str, role: &str) -> Tenant {
    let email = format!("p{}@example.com", uuid::Uuid::new_v4().simple());
    let user_id = tenancy::create_user(
        &app.db,
        NewUser {
            account_id: account_id.into(),
            email: email.clone(),
            name: "Pat Buyer".into(),
            role: role.into(),
            password: Some(PASSWORD.into()),
        },
    )
    .await
    .unwrap();
    let key = tenancy::create_api_key(&app.db, user_id, &[])
        .await
        .unwrap();
    Tenant {
        account_id: account_id.into(),
        user_id,
        email,
        key,
    }
}

pub(crate) async fn account(app: &TestApp, name: &str) -> String {
    tenancy::create_account(&app.db, NewAccount::named(name))
        .await
        .unwrap()
}

fn authorize_path(client_id: &str, challenge: &str, extra: &[(&str, &str)]) -> String {
    let mut pairs = vec![
        ("response_type", "code"),
        ("client_id", client_id),
        ("redirect_uri", REDIRECT),
        ("state", "st-42 &<>"),
        ("code_challenge", challenge),
        ("code_challenge_method", "S256"),
        ("scope", "openid profile email"),
    ];
    for (k, v) in extra {
        pairs.retain(|(name, _)| name != k);
        if !v.is_empty() {
            pairs.push((k, v));
        }
    }
    format!(
        "/authorize?{}",
        serde_urlencoded::to_string(&pairs).unwrap()
    )
}

/// The login page of a fresh authorization: its request id, CSRF token and
/// the cookie to send back.
struct Login {
    request: String,
    csrf: String,
    cookie: String,
}

async fn login_page(app: &TestApp, client_id: &str, challenge: &str) -> Login {
    login_page_with(app, client_id, challenge, &[]).await
}

async fn login_page_with(
    app: &TestApp,
    client_id: &str,
    challenge: &str,
    extra: &[(&str, &str)],
) -> Login {
    let page = get(app, &authorize_path(client_id, challenge, extra)).await;
    page.assert_page(200, "Sign in");
    let (cookie, _) = page.cookie("agentic_authz_").expect("the browser cookie");
    Login {
        request: page.field("request"),
        csrf: page.field("csrf"),
        cookie,
    }
}

async fn sign_in(app: &TestApp, login: &Login, email: &str, password: &str) -> Answer {
    form(
        app,
        "/auth/login",
        &[
            ("request", &login.request),
            ("csrf", &login.csrf),
            ("email", email),
            ("password", password),
        ],
        Some(&login.cookie),
    )
    .await
}

async fn decide(app: &TestApp, login: &Login, decision: &str) -> Answer {
    form(
        app,
        "/auth/consent",
        &[
            ("request", &login.request),
            ("csrf", &login.csrf),
            ("decision", decision),
        ],
        Some(&login.cookie),
    )
    .await
}

/// Login and consent: the code the browser is sent back with.
pub(crate) async fn code_for(
    app: &TestApp,
    client_id: &str,
    challenge: &str,
    who: &Tenant,
) -> String {
    code_for_with(app, client_id, challenge, who, &[]).await
}

async fn code_for_with(
    app: &TestApp,
    client_id: &str,
    challenge: &str,
    who: &Tenant,
    extra: &[(&str, &str)],
) -> String {
    let login = login_page_with(app, client_id, challenge, extra).await;
    sign_in(app, &login, &who.email, PASSWORD)
        .await
        .assert_page(200, "Allow");
    let back = decide(app, &login, "allow").await;
    assert_eq!(back.status, 303, "{}", back.text);
    let url = back.location();
    url.query_pairs()
        .find(|(k, _)| k == "code")
        .expect("a code")
        .1
        .into_owned()
}

pub(crate) async fn exchange(app: &TestApp, client_id: &str, code: &str, verifier: &str) -> Answer {
    form(
        app,
        "/auth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", REDIRECT),
            ("client_id", client_id),
            ("code_verifier", verifier),
        ],
        None,
    )
    .await
}

async fn refresh(app: &TestApp, client_id: &str, token: &str) -> Answer {
    form(
        app,
        "/auth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", token),
            ("client_id", client_id),
        ],
        None,
    )
    .await
}

/// A whole flow for `who`: the token response.
pub(crate) async fn tokens_for(app: &TestApp, client_id: &str, who: &Tenant) -> Value {
    let (verifier, challenge) = pkce();
    let code = code_for(app, client_id, &challenge, who).await;
    let res = exchange(app, client_id, &code, &verifier).await;
    assert_eq!(res.status, 200, "{}", res.text);
    res.json
}

pub(crate) fn bearer(tokens: &Value) -> &str {
    tokens["access_token"].as_str().unwrap()
}

/// The caller `token` acts as, or the status it was refused with.
pub(crate) async fn me(app: &TestApp, token: &str) -> Resp {
    app.get("/api/v2/me", token).await
}

// ---------------------------------------------------------------- the flow

#[actix_web::test]
async fn the_full_flow_with_pkce_reaches_the_api_as_the_user_and_refresh_rotates() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "admin").await;

    let reg = register(
        &app,
        json!({"client_name": "Claude <Agent>", "redirect_uris": [REDIRECT],
               "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"],
               "response_types": ["code"], "logo_uri": "https://x.example/logo.png"}),
    )
    .await;
    assert_eq!(reg.status, 201, "{}", reg.text);
    let client_id = reg.json["client_id"].as_str().unwrap().to_string();
    assert!(client_id.starts_with("cli_"));
    assert_eq!(reg.json["client_name"], json!("Claude <Agent>"));
    assert_eq!(reg.json["redirect_uris"], json!([REDIRECT]));
    assert_eq!(reg.json["token_endpoint_auth_method"], json!("none"));
    assert_eq!(
        reg.json["grant_types"],
        json!(["authorization_code", "refresh_token"])
    );
    assert_eq!(reg.json["response_types"], json!(["code"]));
    assert!(reg.json["client_id_issued_at"].as_i64().unwrap() > 1_700_000_000);
    assert!(reg.json.get("client_secret").is_none());

    let (verifier, challenge) = pkce();
    let resource = format!("{}/mcp/buyer", app.address);
    let page = get(
        &app,
        &authorize_path(&client_id, &challenge, &[("resource", &resource)]),
    )
    .await;
    page.assert_page(200, "Sign in");
    // Everything echoed is escaped; the page needs no script.
    assert!(
        page.text.contains("Claude &#60;Agent&#62;"),
        "{}",
        page.text
    );
    assert!(!page.text.contains("<Agent>"));
    assert!(!page.text.contains("<script"));
    assert!(page.text.contains("127.0.0.1:9"));
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("default-src 'none'"), "{csp}");
    assert_eq!(page.header("cache-control"), Some("no-store"));
    let (cookie, attributes) = page.cookie("agentic_authz_").unwrap();
    for attr in ["HttpOnly", "SameSite=Strict", "Path=/auth/"] {
        assert!(attributes.contains(attr), "{attr} in {attributes}");
    }
    let login = Login {
        request: page.field("request"),
        csrf: page.field("csrf"),
        cookie,
    };

    let consent = sign_in(&app, &login, &pat.email.to_uppercase(), PASSWORD).await;
    consent.assert_page(200, "Allow Claude &#60;Agent&#62;?");
    assert!(consent.text.contains("Pat Buyer"));
    assert!(consent.text.contains("Acme"));
    assert!(
        consent
            .header("content-security-policy")
            .unwrap()
            .contains("form-action 'self' http://127.0.0.1:9")
    );

    let back = decide(&app, &login, "allow").await;
    assert_eq!(back.status, 303, "{}", back.text);
    let url = back.location();
    assert_eq!(&url[..url::Position::AfterPath], REDIRECT);
    let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
    assert_eq!(q["state"], "st-42 &<>");
    assert_eq!(q["iss"], app.address);
    let code = &q["code"];
    assert!(code.starts_with("oac_"));
    // The browser's cookie is cleared.
    assert!(
        back.cookie("agentic_authz_")
            .unwrap()
            .1
            .contains("Max-Age=0")
    );

    let res = exchange(&app, &client_id, code, &verifier).await;
    assert_eq!(res.status, 200, "{}", res.text);
    assert_eq!(res.header("cache-control"), Some("no-store"));
    let tokens = res.json;
    assert!(bearer(&tokens).starts_with("oat_"));
    assert!(
        tokens["refresh_token"]
            .as_str()
            .unwrap()
            .starts_with("ort_")
    );
    assert_eq!(tokens["token_type"], json!("Bearer"));
    assert_eq!(tokens["expires_in"], json!(3600));
    assert_eq!(tokens["scope"], json!("openid profile email"));

    // The token acts as its user, in the user's account.
    let who = me(&app, bearer(&tokens)).await;
    assert_eq!(who.status, 200, "{}", who.body);
    assert_eq!(who.data()["user"]["id"], json!(pat.user_id));
    assert_eq!(who.data()["account"]["id"], json!(acc));
    assert_eq!(who.data()["permissions"], json!([]));
    let adv = advertiser(&app, &pat).await;
    let created = app
        .post(
            "/api/v2/buyer/advertisers",
            bearer(&tokens),
            &json!({"name": "Via OAuth", "brand": "oauth.example", "primaryCurrency": "EUR"}),
        )
        .await;
    assert_eq!(created.status, 201, "{}", created.body);
    let list = app.get("/api/v2/buyer/advertisers", bearer(&tokens)).await;
    assert_eq!(list.status, 200);
    let ids: Vec<&str> = list
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert!(ids.contains(&adv.as_str()), "{ids:?}");
    // The audit log names the grant's credential as the actor's key.
    let audit = app.get("/api/v2/buyer/audit-logs", &pat.key).await;
    assert_eq!(audit.data()[0]["actor"]["userId"], json!(pat.user_id));
    assert!(audit.data()[0]["actor"]["apiKeyId"].is_i64());

    // Refresh rotates: new tokens work, the old refresh token is spent.
    let old_refresh = tokens["refresh_token"].as_str().unwrap();
    let rotated = refresh(&app, &client_id, old_refresh).await;
    assert_eq!(rotated.status, 200, "{}", rotated.text);
    assert_eq!(rotated.header("cache-control"), Some("no-store"));
    let new = rotated.json;
    assert_ne!(new["refresh_token"], tokens["refresh_token"]);
    assert_ne!(new["access_token"], tokens["access_token"]);
    assert_eq!(new["scope"], json!("openid profile email"));
    assert_eq!(me(&app, bearer(&new)).await.status, 200);

    // The rotated token comes back (stolen?): refused, and the family ends.
    refresh(&app, &client_id, old_refresh)
        .await
        .assert_oauth_error(400, "invalid_grant");
    me(&app, bearer(&new))
        .await
        .assert_error(401, "UNAUTHORIZED");
    me(&app, bearer(&tokens))
        .await
        .assert_error(401, "UNAUTHORIZED");
    refresh(&app, &client_id, new["refresh_token"].as_str().unwrap())
        .await
        .assert_oauth_error(400, "invalid_grant");
    // The user's API key is untouched.
    assert_eq!(me(&app, &pat.key).await.status, 200);
}

#[actix_web::test]
async fn revoking_a_token_ends_its_grant_at_once_and_closes_its_streams() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;

    // Revoking the refresh token ends the access token too.
    let tokens = tokens_for(&app, &client_id, &pat).await;
    let as_token = Tenant {
        key: bearer(&tokens).to_string(),
        ..pat.clone()
    };
    let uid = app.conversation(&as_token, false).await;
    let mut stream = app.room(&as_token, &uid, "", None).await;
    stream.expect("ready").await;
    let revoked = form(
        &app,
        "/auth/revoke",
        &[
            ("token", tokens["refresh_token"].as_str().unwrap()),
            ("token_type_hint", "refresh_token"),
            ("client_id", &client_id),
        ],
        None,
    )
    .await;
    assert_eq!(revoked.status, 200, "{}", revoked.text);
    assert_eq!(revoked.header("cache-control"), Some("no-store"));
    me(&app, bearer(&tokens))
        .await
        .assert_error(401, "UNAUTHORIZED");
    let closed = stream.expect("error").await;
    assert_eq!(closed.data["code"], json!("UNAUTHORIZED"));
    refresh(&app, &client_id, tokens["refresh_token"].as_str().unwrap())
        .await
        .assert_oauth_error(400, "invalid_grant");

    // Revoking an access token (no client_id needed) ends its refresh token.
    let tokens = tokens_for(&app, &client_id, &pat).await;
    assert_eq!(me(&app, bearer(&tokens)).await.status, 200);
    let revoked = form(&app, "/auth/revoke", &[("token", bearer(&tokens))], None).await;
    assert_eq!(revoked.status, 200);
    me(&app, bearer(&tokens))
        .await
        .assert_error(401, "UNAUTHORIZED");
    refresh(&app, &client_id, tokens["refresh_token"].as_str().unwrap())
        .await
        .assert_oauth_error(400, "invalid_grant");

    // Unknown tokens, revoked ones and API keys: 200, nothing happens.
    for token in [
        "nonsense",
        "oat_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
        bearer(&tokens),
        &pat.key,
    ] {
        let res = form(&app, "/auth/revoke", &[("token", token)], None).await;
        assert_eq!(res.status, 200, "{token}: {}", res.text);
    }
    assert_eq!(me(&app, &pat.key).await.status, 200);

    // Another client cannot revoke this client's token.
    let tokens = tokens_for(&app, &client_id, &pat).await;
    let other = client(&app, "Other").await;
    form(
        &app,
        "/auth/revoke",
        &[("token", bearer(&tokens)), ("client_id", &other)],
        None,
    )
    .await
    .assert_oauth_error(401, "invalid_client");
    form(
        &app,
        "/auth/revoke",
        &[("token", bearer(&tokens)), ("client_id", "cli_unknown")],
        None,
    )
    .await
    .assert_oauth_error(401, "invalid_client");
    assert_eq!(me(&app, bearer(&tokens)).await.status, 200);
    form(
        &app,
        "/auth/revoke",
        &[("token_type_hint", "access_token")],
        None,
    )
    .await
    .assert_oauth_error(400, "invalid_request");
}

#[actix_web::test]
async fn deny_sends_the_browser_back_with_access_denied_and_no_code() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    let login = login_page(&app, &client_id, &challenge).await;
    sign_in(&app, &login, &pat.email, PASSWORD)
        .await
        .assert_page(200, "Deny");
    let back = decide(&app, &login, "deny").await;
    assert_eq!(back.status, 303);
    let q: std::collections::HashMap<String, String> =
        back.location().query_pairs().into_owned().collect();
    assert_eq!(q["error"], "access_denied");
    assert_eq!(q["state"], "st-42 &<>");
    assert!(!q.contains_key("code"));
    // The request is finished: the form cannot be sent again.
    decide(&app, &login, "allow")
        .await
        .assert_page(400, "expired or was already completed");
}

// ------------------------------------------------------- authorization errors

#[actix_web::test]
async fn an_unknown_client_or_a_wrong_redirect_uri_shows_a_page_and_never_redirects() {
    let app = spawn_app().await;
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    for (path, says) in [
        (
            authorize_path("cli_nobody", &challenge, &[]),
            "unknown client_id",
        ),
        (
            authorize_path("", &challenge, &[("client_id", "")]),
            "client_id is missing",
        ),
        (
            authorize_path(
                &client_id,
                &challenge,
                &[("redirect_uri", "http://127.0.0.1:9/elsewhere")],
            ),
            "not one of the addresses",
        ),
        (
            authorize_path(
                &client_id,
                &challenge,
                &[("redirect_uri", "http://127.0.0.1:9/callback/")],
            ),
            "not one of the addresses",
        ),
        (
            authorize_path(&client_id, &challenge, &[("redirect_uri", "")]),
            "redirect_uri is missing",
        ),
        (
            format!(
                "{}&client_id={client_id}",
                authorize_path(&client_id, &challenge, &[])
            ),
            "repeated",
        ),
    ] {
        let page = get(&app, &path).await;
        page.assert_page(400, says);
        assert!(page.cookie("agentic_authz_").is_none());
    }
}

#[actix_web::test]
async fn other_authorization_errors_go_back_to_the_client_with_state_and_iss() {
    let app = spawn_app().await;
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    for (extra, error) in [
        (vec![("code_challenge_method", "plain")], "invalid_request"),
        (vec![("code_challenge_method", "")], "invalid_request"),
        (vec![("code_challenge", "")], "invalid_request"),
        (vec![("code_challenge", "too-short")], "invalid_request"),
        (
            vec![("response_type", "token")],
            "unsupported_response_type",
        ),
        (vec![("response_type", "")], "invalid_request"),
        (vec![("scope", "openid admin")], "invalid_scope"),
        (
            vec![("resource", "https://elsewhere.example.com/mcp")],
            "invalid_target",
        ),
    ] {
        let res = get(&app, &authorize_path(&client_id, &challenge, &extra)).await;
        assert_eq!(res.status, 302, "{extra:?}: {}", res.text);
        let url = res.location();
        assert_eq!(&url[..url::Position::AfterPath], REDIRECT);
        let q: std::collections::HashMap<String, String> = url.query_pairs().into_owned().collect();
        assert_eq!(q["error"], error, "{extra:?}");
        assert!(q.contains_key("error_description"));
        assert_eq!(q["state"], "st-42 &<>", "{extra:?}");
        assert_eq!(q["iss"], app.address);
        assert!(!q.contains_key("code"));
    }
    // A state too long to keep is not echoed.
    let long = "s".repeat(2049);
    let res = get(
        &app,
        &authorize_path(&client_id, &challenge, &[("state", &long)]),
    )
    .await;
    assert_eq!(res.status, 302);
    let q: std::collections::HashMap<String, String> =
        res.location().query_pairs().into_owned().collect();
    assert_eq!(q["error"], "invalid_request");
    assert!(!q.contains_key("state"));
    // A repeated parameter, once the redirect URI is known good.
    let res = get(
        &app,
        &format!(
            "{}&scope=email",
            authorize_path(&client_id, &challenge, &[])
        ),
    )
    .await;
    assert_eq!(res.status, 302);
    let q: std::collections::HashMap<String, String> =
        res.location().query_pairs().into_owned().collect();
    assert_eq!(q["error"], "invalid_request");
    assert!(q["error_description"].contains("scope"), "{q:?}");
    assert_eq!(q["state"], "st-42 &<>");
    // No scope at all means all three; a subset is kept as asked.
    let page = get(
        &app,
        &authorize_path(&client_id, &challenge, &[("scope", "")]),
    )
    .await;
    page.assert_page(200, "Sign in");
}

// ----------------------------------------------------------- token endpoint

#[actix_web::test]
async fn the_token_endpoint_checks_the_verifier_the_redirect_uri_and_the_client() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let other = client(&app, "Other").await;
    let (verifier, challenge) = pkce();
    let code = code_for(&app, &client_id, &challenge, &pat).await;

    let (wrong_verifier, _) = pkce();
    exchange(&app, &client_id, &code, &wrong_verifier)
        .await
        .assert_oauth_error(400, "invalid_grant");
    exchange(&app, &client_id, &code, "short")
        .await
        .assert_oauth_error(400, "invalid_grant");
    exchange(&app, &other, &code, &verifier)
        .await
        .assert_oauth_error(400, "invalid_grant");
    exchange(&app, "cli_unknown", &code, &verifier)
        .await
        .assert_oauth_error(401, "invalid_client");
    form(
        &app,
        "/auth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", "http://127.0.0.1:9/other"),
            ("client_id", &client_id),
            ("code_verifier", &verifier),
        ],
        None,
    )
    .await
    .assert_oauth_error(400, "invalid_grant");
    form(
        &app,
        "/auth/token",
        &[
            ("grant_type", "authorization_code"),
            ("code", &code),
            ("redirect_uri", REDIRECT),
            ("client_id", &client_id),
            ("code_verifier", &verifier),
            ("resource", "https://elsewhere.example.com/"),
        ],
        None,
    )
    .await
    .assert_oauth_error(400, "invalid_target");
    exchange(&app, &client_id, "oac_nothing", &verifier)
        .await
        .assert_oauth_error(400, "invalid_grant");
    // Failed attempts do not spend the code.
    let res = exchange(&app, &client_id, &code, &verifier).await;
    assert_eq!(res.status, 200, "{}", res.text);
}

#[actix_web::test]
async fn a_code_works_once_and_its_second_use_revokes_what_the_first_issued() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let (verifier, challenge) = pkce();
    let code = code_for(&app, &client_id, &challenge, &pat).await;
    let first = exchange(&app, &client_id, &code, &verifier).await;
    assert_eq!(first.status, 200);
    assert_eq!(me(&app, bearer(&first.json)).await.status, 200);
    exchange(&app, &client_id, &code, &verifier)
        .await
        .assert_oauth_error(400, "invalid_grant");
    me(&app, bearer(&first.json))
        .await
        .assert_error(401, "UNAUTHORIZED");
    refresh(
        &app,
        &client_id,
        first.json["refresh_token"].as_str().unwrap(),
    )
    .await
    .assert_oauth_error(400, "invalid_grant");
}

#[actix_web::test]
async fn expired_codes_access_tokens_and_refresh_tokens_are_refused() {
    // Lifetimes of zero: everything is expired the moment it is issued.
    let app = spawn_app_with(|c| c.oauth.code_ttl = Duration::ZERO).await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let (verifier, challenge) = pkce();
    let code = code_for(&app, &client_id, &challenge, &pat).await;
    exchange(&app, &client_id, &code, &verifier)
        .await
        .assert_oauth_error(400, "invalid_grant");

    let app = spawn_app_with(|c| {
        c.oauth.access_ttl = Duration::ZERO;
        c.oauth.refresh_ttl = Duration::ZERO;
    })
    .await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let tokens = tokens_for(&app, &client_id, &pat).await;
    assert_eq!(tokens["expires_in"], json!(0));
    me(&app, bearer(&tokens))
        .await
        .assert_error(401, "UNAUTHORIZED");
    refresh(&app, &client_id, tokens["refresh_token"].as_str().unwrap())
        .await
        .assert_oauth_error(400, "invalid_grant");

    // An authorization left open too long cannot be continued.
    let app = spawn_app_with(|c| c.oauth.request_ttl = Duration::ZERO).await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let login = login_page(&app, &client_id, &challenge).await;
    sign_in(&app, &login, &pat.email, PASSWORD)
        .await
        .assert_page(400, "expired or was already completed");
}

#[actix_web::test]
async fn token_endpoint_errors_are_rfc_6749_json_without_caching() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let tokens = tokens_for(&app, &client_id, &pat).await;
    let rt = tokens["refresh_token"].as_str().unwrap();
    for (pairs, status, error) in [
        (vec![], 400, "invalid_request"),
        (
            vec![("grant_type", "password")],
            400,
            "unsupported_grant_type",
        ),
        (
            vec![("grant_type", "client_credentials")],
            400,
            "unsupported_grant_type",
        ),
        (
            vec![("grant_type", "authorization_code")],
            400,
            "invalid_request",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
            ],
            400,
            "invalid_request",
        ),
        (
            vec![("grant_type", "refresh_token")],
            400,
            "invalid_request",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", "ort_nope"),
            ],
            400,
            "invalid_grant",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
                ("scope", "openid admin"),
            ],
            400,
            "invalid_scope",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
                ("client_id", "cli_unknown"),
            ],
            401,
            "invalid_client",
        ),
        (
            vec![
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
                ("resource", "https://elsewhere.example.com/"),
            ],
            400,
            "invalid_target",
        ),
    ] {
        form(&app, "/auth/token", &pairs, None)
            .await
            .assert_oauth_error(status, error);
    }
    // Another client's refresh token.
    let other = client(&app, "Other").await;
    refresh(&app, &other, rt)
        .await
        .assert_oauth_error(400, "invalid_grant");
    // JSON instead of a form.
    let res = answer(
        http()
            .post(app.url("/auth/token"))
            .send_json(&json!({"grant_type": "refresh_token", "refresh_token": rt}))
            .await
            .unwrap(),
    )
    .await;
    res.assert_oauth_error(400, "invalid_request");
    // A body over the limit.
    let big = "x".repeat(20_000);
    form(&app, "/auth/token", &[("grant_type", &big)], None)
        .await
        .assert_oauth_error(400, "invalid_request");
    // Revocation reads forms the same way.
    let res = answer(
        http()
            .post(app.url("/auth/revoke"))
            .send_json(&json!({"token": rt}))
            .await
            .unwrap(),
    )
    .await;
    res.assert_oauth_error(400, "invalid_request");
    // None of that spent the refresh token; a narrower scope is granted as asked.
    let res = form(
        &app,
        "/auth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", rt),
            ("scope", "email"),
        ],
        None,
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text);
    assert_eq!(res.json["scope"], json!("email"));
    // Wrong methods are 405 with Allow.
    let res = get(&app, "/auth/token").await;
    assert_eq!(res.status, 405);
    assert_eq!(res.header("allow"), Some("POST"));
}

// ------------------------------------------------------------ registration

#[actix_web::test]
async fn registration_validates_redirect_uris_and_metadata_per_rfc_7591() {
    let app = spawn_app().await;
    for (body, error) in [
        (json!({"client_name": "A"}), "invalid_redirect_uri"),
        (json!({"redirect_uris": []}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": "https://a.example/cb"}),
            "invalid_redirect_uri",
        ),
        (json!({"redirect_uris": [42]}), "invalid_redirect_uri"),
        (
            json!({"redirect_uris": ["http://agent.example.com/cb"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["https://agent.example.com/cb#x"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["/relative"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb", "javascript:alert(1)"]}),
            "invalid_redirect_uri",
        ),
        (
            json!({"redirect_uris": (0..11).map(|i| format!("https://a.example/{i}")).collect::<Vec<_>>()}),
            "invalid_redirect_uri",
        ),
        (json!([1, 2]), "invalid_client_metadata"),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "client_name": 7}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "client_name": "  "}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "grant_types": ["implicit"]}),
            "invalid_client_metadata",
        ),
        (
            json!({"redirect_uris": ["https://a.example/cb"], "response_types": ["token"]}),
            "invalid_client_metadata",
        ),
    ] {
        let res = register(&app, body.clone()).await;
        res.assert_oauth_error(400, error);
        assert!(res.json["error_description"].is_string(), "{body}");
    }
    for (content_type, body) in [
        ("application/json", "{not json"),
        (
            "application/x-www-form-urlencoded",
            "redirect_uris=https://a.example/cb",
        ),
    ] {
        let res = answer(
            http()
                .post(app.url("/auth/register"))
                .insert_header(("Content-Type", content_type))
                .send_body(body)
                .await
                .unwrap(),
        )
        .await;
        res.assert_oauth_error(400, "invalid_client_metadata");
    }
    let huge =
        json!({"redirect_uris": ["https://a.example/cb"], "client_name": "n".repeat(70_000)});
    register(&app, huge)
        .await
        .assert_oauth_error(400, "invalid_client_metadata");
    // Nothing was stored by any of them.
    assert_eq!(
        entity::oauth_client::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
    // Unknown metadata is ignored, a secret-based method is replaced by
    // `none`, a name is optional; loopback http and https are accepted.
    let res = register(
        &app,
        json!({"redirect_uris": ["https://a.example/cb?x=1", "http://[::1]:8123/cb", "http://localhost/cb"],
               "token_endpoint_auth_method": "client_secret_basic", "software_id": "x"}),
    )
    .await;
    assert_eq!(res.status, 201, "{}", res.text);
    assert_eq!(res.json["token_endpoint_auth_method"], json!("none"));
    assert!(res.json.get("client_name").is_none());
    assert!(res.json.get("client_secret").is_none());
    assert_eq!(res.header("cache-control"), Some("no-store"));
    // The consent page names an unnamed client by its id.
    let id = res.json["client_id"].as_str().unwrap();
    let (_, challenge) = pkce();
    let page = get(
        &app,
        &authorize_path(id, &challenge, &[("redirect_uri", "http://[::1]:8123/cb")]),
    )
    .await;
    page.assert_page(200, &format!("Unnamed application ({id})"));
}

// ------------------------------------------------------------ login, CSRF

#[actix_web::test]
async fn a_wrong_password_an_unknown_email_or_a_passwordless_user_does_not_sign_in() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let keys_only = app.user_in(&acc, "member", &[]).await;
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    let login = login_page(&app, &client_id, &challenge).await;
    for (email, password) in [
        (pat.email.as_str(), "wrong password"),
        ("nobody@example.com", PASSWORD),
        (keys_only.email.as_str(), PASSWORD),
        ("not an email", PASSWORD),
        (pat.email.as_str(), ""),
    ] {
        let page = sign_in(&app, &login, email, password).await;
        page.assert_page(200, "The email or password is incorrect.");
        assert!(!page.text.contains("Allow"), "{email}");
        // The form is shown again, with the same request and token.
        assert_eq!(page.field("request"), login.request);
        assert_eq!(page.field("csrf"), login.csrf);
        // Consent is not possible without a sign-in.
        decide(&app, &login, "allow")
            .await
            .assert_page(400, "Sign in before allowing access.");
    }
    // The right password still works on the same request.
    sign_in(&app, &login, &pat.email, PASSWORD)
        .await
        .assert_page(200, "Allow");
    assert_eq!(decide(&app, &login, "allow").await.status, 303);
}

#[actix_web::test]
async fn forms_without_their_csrf_token_or_browser_cookie_are_refused() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    let login = login_page(&app, &client_id, &challenge).await;
    let other = login_page(&app, &client_id, &challenge).await;
    let email = pat.email.as_str();
    let (req, csrf, cookie) = (
        login.request.as_str(),
        login.csrf.as_str(),
        login.cookie.as_str(),
    );
    let swapped = format!(
        "agentic_authz_{req}={}",
        other.cookie.split_once('=').unwrap().1
    );
    let forged: [(Pairs, Option<&str>); 5] = [
        // No CSRF token.
        (
            vec![("request", req), ("email", email), ("password", PASSWORD)],
            Some(cookie),
        ),
        // A wrong one.
        (
            vec![
                ("request", req),
                ("csrf", "x"),
                ("email", email),
                ("password", PASSWORD),
            ],
            Some(cookie),
        ),
        // Another request's token.
        (
            vec![
                ("request", req),
                ("csrf", other.csrf.as_str()),
                ("email", email),
                ("password", PASSWORD),
            ],
            Some(cookie),
        ),
        // The right token without the browser's cookie (a cross-site post).
        (
            vec![
                ("request", req),
                ("csrf", csrf),
                ("email", email),
                ("password", PASSWORD),
            ],
            None,
        ),
        // The right token with another request's cookie.
        (
            vec![
                ("request", req),
                ("csrf", csrf),
                ("email", email),
                ("password", PASSWORD),
            ],
            Some(swapped.as_str()),
        ),
    ];
    for (pairs, cookie) in &forged {
        form(&app, "/auth/login", pairs, *cookie)
            .await
            .assert_page(403, "security token");
    }
    // The request was never signed in by any of them.
    decide(&app, &login, "allow")
        .await
        .assert_page(400, "Sign in before allowing access.");
    // The consent form checks the same.
    sign_in(&app, &login, email, PASSWORD)
        .await
        .assert_page(200, "Allow");
    form(
        &app,
        "/auth/consent",
        &[("request", req), ("decision", "allow")],
        Some(cookie),
    )
    .await
    .assert_page(403, "security token");
    form(
        &app,
        "/auth/consent",
        &[("request", req), ("csrf", csrf), ("decision", "allow")],
        None,
    )
    .await
    .assert_page(403, "security token");
    // Other malformed forms.
    let malformed: [(&str, Pairs, &str); 4] = [
        (
            "/auth/consent",
            vec![("request", req), ("csrf", csrf), ("decision", "maybe")],
            "Choose Allow or Deny.",
        ),
        (
            "/auth/consent",
            vec![("csrf", csrf), ("decision", "allow")],
            "does not say which request",
        ),
        (
            "/auth/login",
            vec![("request", "unknown"), ("csrf", csrf)],
            "expired or was already completed",
        ),
        (
            "/auth/login",
            vec![("request", req), ("request", req)],
            "repeated",
        ),
    ];
    for (path, pairs, says) in &malformed {
        form(&app, path, pairs, Some(cookie))
            .await
            .assert_page(400, says);
    }
    let res = answer(
        http()
            .post(app.url("/auth/login"))
            .insert_header(("Cookie", login.cookie.as_str()))
            .send_json(&json!({"request": login.request}))
            .await
            .unwrap(),
    )
    .await;
    res.assert_page(400, "application/x-www-form-urlencoded");
    let big = "x".repeat(20_000);
    form(
        &app,
        "/auth/login",
        &[("request", req), ("csrf", csrf), ("email", &big)],
        Some(cookie),
    )
    .await
    .assert_page(400, "exceeds");
    // After all that, the genuine form still completes.
    assert_eq!(decide(&app, &login, "allow").await.status, 303);
}

// ------------------------------------------------------------ tenancy

#[actix_web::test]
async fn a_token_sees_only_its_users_account_and_carries_the_users_role() {
    let app = spawn_app().await;
    let first = account(&app, "First").await;
    let second = account(&app, "Second").await;
    let ann = person(&app, &first, "admin").await;
    let bob = person(&app, &second, "member").await;
    let client_id = client(&app, "Shared agent").await;
    let adv = advertiser(&app, &ann).await;
    let ann_tokens = tokens_for(&app, &client_id, &ann).await;
    let bob_tokens = tokens_for(&app, &client_id, &bob).await;

    assert_eq!(
        app.get(
            &format!("/api/v2/buyer/advertisers/{adv}"),
            bearer(&ann_tokens)
        )
        .await
        .status,
        200
    );
    app.get(
        &format!("/api/v2/buyer/advertisers/{adv}"),
        bearer(&bob_tokens),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    let list = app
        .get("/api/v2/buyer/advertisers", bearer(&bob_tokens))
        .await;
    assert_eq!(list.data(), &json!([]));
    assert_eq!(
        me(&app, bearer(&bob_tokens)).await.data()["account"]["id"],
        json!(second)
    );
    // The role decides admin operations, as with a key.
    let settings = json!({"defaultSharingEnabled": false});
    assert_eq!(
        app.patch(
            "/api/v2/assistant/conversation-settings",
            bearer(&ann_tokens),
            &settings
        )
        .await
        .status,
        200
    );
    app.patch(
        "/api/v2/assistant/conversation-settings",
        bearer(&bob_tokens),
        &settings,
    )
    .await
    .assert_error(403, "FORBIDDEN");
}

#[actix_web::test]
async fn grants_are_not_api_keys_and_api_keys_are_not_oauth_tokens() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let tokens = tokens_for(&app, &client_id, &pat).await;
    // The key list shows the user's one API key, not the grant.
    let keys = app.get("/api/v2/api-keys", bearer(&tokens)).await;
    assert_eq!(keys.data().as_array().unwrap().len(), 1, "{}", keys.body);
    let audit_key = {
        app.post(
            "/api/v2/buyer/advertisers",
            bearer(&tokens),
            &json!({"name": "A", "brand": "a.example", "primaryCurrency": "USD"}),
        )
        .await;
        let audit = app.get("/api/v2/buyer/audit-logs", &pat.key).await;
        audit.data()[0]["actor"]["apiKeyId"].as_i64().unwrap()
    };
    app.delete(&format!("/api/v2/api-keys/{audit_key}"), &pat.key)
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(me(&app, bearer(&tokens)).await.status, 200);
    // A refresh token is not a bearer credential; an access token is not a refresh token.
    me(&app, tokens["refresh_token"].as_str().unwrap())
        .await
        .assert_error(401, "UNAUTHORIZED");
    refresh(&app, &client_id, bearer(&tokens))
        .await
        .assert_oauth_error(400, "invalid_grant");
    // A stream token minted with an access token opens its stream.
    let as_token = Tenant {
        key: bearer(&tokens).to_string(),
        ..pat.clone()
    };
    let uid = app.conversation(&as_token, false).await;
    let stream = format!("/api/v2/assistant/conversations/{uid}/events");
    let minted = app
        .post(
            "/api/v2/auth/stream-tokens",
            bearer(&tokens),
            &json!({"stream": stream}),
        )
        .await;
    assert_eq!(minted.status, 201, "{}", minted.body);
}

// ------------------------------------------------------------ metadata

#[actix_web::test]
async fn metadata_documents_describe_the_server_at_its_public_url() {
    let public = "https://agentic.example.com";
    let app = spawn_app_with(|c| c.public_url = Some(format!("{public}/"))).await;
    let meta = get(&app, "/.well-known/oauth-authorization-server").await;
    assert_eq!(meta.status, 200);
    assert_eq!(
        meta.json,
        json!({
            "issuer": public,
            "authorization_endpoint": format!("{public}/authorize"),
            "token_endpoint": format!("{public}/auth/token"),
            "registration_endpoint": format!("{public}/auth/register"),
            "revocation_endpoint": format!("{public}/auth/revoke"),
            "scopes_supported": ["openid", "profile", "email", "platform:read", "platform:write"],
            "response_types_supported": ["code"],
            "response_modes_supported": ["query"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_methods_supported": ["none"],
            "revocation_endpoint_auth_methods_supported": ["none"],
            "code_challenge_methods_supported": ["S256"],
            "authorization_response_iss_parameter_supported": true,
        })
    );
    let root = get(&app, "/.well-known/oauth-protected-resource").await;
    assert_eq!(root.json["resource"], json!(public));
    let mcp = get(&app, "/.well-known/oauth-protected-resource/mcp/buyer").await;
    assert_eq!(
        mcp.json,
        json!({
            "resource": format!("{public}/mcp/buyer"),
            "authorization_servers": [public],
            "scopes_supported": ["openid", "profile", "email"],
            "bearer_methods_supported": ["header"],
        })
    );
    let v3 = get(&app, "/.well-known/oauth-protected-resource/mcp/v3").await;
    assert_eq!(v3.json["resource"], json!(format!("{public}/mcp/v3")));
    let unknown = get(&app, "/.well-known/oauth-protected-resource/nothing").await;
    assert_eq!(unknown.status, 404);
    // Without AGENTIC_PUBLIC_URL the issuer is the listen URL.
    let plain = spawn_app().await;
    let meta = get(&plain, "/.well-known/oauth-authorization-server").await;
    assert_eq!(meta.json["issuer"], json!(plain.address));
    // A resource under the public URL is accepted at /authorize.
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    get(
        &app,
        &authorize_path(
            &client_id,
            &challenge,
            &[("resource", &format!("{public}/mcp/buyer"))],
        ),
    )
    .await
    .assert_page(200, "Sign in");
    assert_eq!(
        agentic_api::auth::oauth::www_authenticate_for(public, "/mcp/buyer"),
        format!(
            "Bearer resource_metadata=\"{public}/.well-known/oauth-protected-resource/mcp/buyer\""
        )
    );
}

// ------------------------------------------------------------ rate limit

#[actix_web::test]
async fn every_auth_endpoint_draws_from_the_auth_bucket_and_the_41st_request_is_limited() {
    let app = spawn_app_with(|c| {
        c.auth_rate_limit = 40;
        c.rate_limit_per_minute = 1000;
    })
    .await;
    // The page that only shows the login form is in the general bucket.
    let (_, challenge) = pkce();
    let res = get(&app, &authorize_path("cli_x", &challenge, &[])).await;
    assert_eq!(res.header("ratelimit-limit"), Some("1000"));
    let paths = [
        "/auth/register",
        "/auth/token",
        "/auth/revoke",
        "/auth/login",
        "/auth/consent",
    ];
    for i in 0..40 {
        let path = paths[i % paths.len()];
        let res = form(&app, path, &[("x", "y")], None).await;
        assert_ne!(res.status, 429, "request {} to {path}", i + 1);
        assert_eq!(res.header("ratelimit-limit"), Some("40"), "{path}");
        assert_eq!(
            res.header("ratelimit-remaining"),
            Some((39 - i).to_string().as_str())
        );
    }
    for path in paths {
        let res = form(&app, path, &[("x", "y")], None).await;
        assert_eq!(res.status, 429, "{path}");
        assert_eq!(res.json["error"]["code"], json!("RATE_LIMITED"));
        assert!(res.json["data"].is_null());
        let retry: u64 = res.header("retry-after").unwrap().parse().unwrap();
        assert!(retry > 1, "{retry}");
        assert_eq!(res.header("ratelimit-limit"), Some("40"));
        assert_eq!(res.header("ratelimit-remaining"), Some("0"));
        assert!(res.header("ratelimit-reset").is_some());
    }
    // The general bucket is untouched.
    let res = get(&app, "/.well-known/oauth-authorization-server").await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("ratelimit-limit"), Some("1000"));
}

#[actix_web::test]
async fn a_grant_keeps_the_scope_and_resource_it_was_given() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;
    let mcp = format!("{}/mcp/buyer", app.address);
    let (verifier, challenge) = pkce();
    let extra = [("scope", "email"), ("resource", mcp.as_str())];
    let code = code_for_with(&app, &client_id, &challenge, &pat, &extra).await;
    let exchange_with = |resource: String| {
        let (app, client_id, code, verifier) = (&app, &client_id, &code, &verifier);
        async move {
            form(
                app,
                "/auth/token",
                &[
                    ("grant_type", "authorization_code"),
                    ("code", code),
                    ("redirect_uri", REDIRECT),
                    ("client_id", client_id),
                    ("code_verifier", verifier),
                    ("resource", &resource),
                ],
                None,
            )
            .await
        }
    };
    // Another resource of this server than the one authorized.
    exchange_with(app.address.clone())
        .await
        .assert_oauth_error(400, "invalid_target");
    let tokens = exchange_with(mcp.clone()).await;
    assert_eq!(tokens.status, 200, "{}", tokens.text);
    assert_eq!(tokens.json["scope"], json!("email"));
    let rt = tokens.json["refresh_token"].as_str().unwrap();
    for (extra, error) in [
        (("scope", "email openid"), "invalid_scope"),
        (("resource", app.address.as_str()), "invalid_target"),
    ] {
        form(
            &app,
            "/auth/token",
            &[
                ("grant_type", "refresh_token"),
                ("refresh_token", rt),
                ("client_id", &client_id),
                extra,
            ],
            None,
        )
        .await
        .assert_oauth_error(400, error);
    }
    let res = refresh(&app, &client_id, rt).await;
    assert_eq!(res.status, 200, "{}", res.text);
    assert_eq!(res.json["scope"], json!("email"));
}

// ------------------------------------------------------------ MCP

/// An agent host's whole path: a 401 from `/mcp/buyer` points at the
/// resource metadata, which names this authorization server; after the
/// flow, the access token opens an MCP session and calls a tool.
#[actix_web::test]
async fn an_agent_host_finds_the_server_from_the_mcp_challenge_and_calls_a_tool() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let mcp = |token: Option<String>, body: Value| {
        let req = http()
            .post(app.url("/mcp/buyer"))
            .insert_header(("Accept", "application/json, text/event-stream"))
            .insert_header(("MCP-Protocol-Version", "2025-06-18"));
        let req = match token {
            Some(t) => req.insert_header(("Authorization", format!("Bearer {t}"))),
            None => req,
        };
        async move { answer(req.send_json(&body).await.unwrap()).await }
    };
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "oauth-tests", "version": "1"}}});

    let refused = mcp(None, init.clone()).await;
    assert_eq!(refused.status, 401);
    let challenge = refused.header("www-authenticate").unwrap().to_string();
    assert_eq!(
        challenge,
        agentic_api::auth::oauth::www_authenticate_for(&app.address, "/mcp/buyer")
    );
    let metadata_url = challenge
        .split_once("resource_metadata=\"")
        .unwrap()
        .1
        .trim_end_matches('"');
    let path = metadata_url.strip_prefix(&app.address).unwrap();
    let resource = get(&app, path).await;
    assert_eq!(
        resource.json["resource"],
        json!(format!("{}/mcp/buyer", app.address))
    );
    let issuer = resource.json["authorization_servers"][0].as_str().unwrap();
    let server = get(&app, "/.well-known/oauth-authorization-server").await;
    assert_eq!(server.json["issuer"], json!(issuer));

    // Every MCP endpoint's challenge points at a document that exists.
    let v3 = answer(
        http()
            .post(app.url("/mcp/v3"))
            .insert_header(("Accept", "application/json, text/event-stream"))
            .send_json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(v3.status, 401);
    let v3_challenge = v3.header("www-authenticate").unwrap();
    let v3_metadata = v3_challenge
        .split_once("resource_metadata=\"")
        .unwrap()
        .1
        .trim_end_matches('"')
        .strip_prefix(&app.address)
        .unwrap()
        .to_string();
    let doc = get(&app, &v3_metadata).await;
    assert_eq!(doc.status, 200, "{v3_metadata}");
    assert_eq!(
        doc.json["resource"],
        json!(format!("{}/mcp/v3", app.address))
    );

    let client_id = client(&app, "MCP agent").await;
    let (verifier, challenge) = pkce();
    let mcp_resource = format!("{}/mcp/buyer", app.address);
    let code = code_for_with(
        &app,
        &client_id,
        &challenge,
        &pat,
        &[("resource", mcp_resource.as_str())],
    )
    .await;
    let tokens = exchange(&app, &client_id, &code, &verifier).await.json;
    let token = bearer(&tokens).to_string();
    let opened = mcp(Some(token.clone()), init).await;
    assert_eq!(opened.status, 200, "{}", opened.text);
    let session = opened.header("mcp-session-id").unwrap().to_string();
    let call = http()
        .post(app.url("/mcp/buyer"))
        .insert_header(("Accept", "application/json, text/event-stream"))
        .insert_header(("MCP-Protocol-Version", "2025-06-18"))
        .insert_header(("Authorization", format!("Bearer {token}")))
        .insert_header(("Mcp-Session-Id", session.as_str()))
        .send_json(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "create_advertiser",
            "arguments": {"body": {"name": "From MCP", "brand": "mcp.example", "primaryCurrency": "USD"}}}}))
        .await
        .unwrap();
    let called = answer(call).await;
    assert_eq!(called.status, 200, "{}", called.text);
    assert!(called.text.contains("From MCP"), "{}", called.text);
    // The advertiser is the user's account's.
    let list = app.get("/api/v2/buyer/advertisers", &pat.key).await;
    assert_eq!(list.data()[0]["name"], json!("From MCP"));

    // A revoked token is refused with `invalid_token`.
    form(&app, "/auth/revoke", &[("token", &token)], None).await;
    let refused = mcp(
        Some(token),
        json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}),
    )
    .await;
    assert_eq!(refused.status, 401);
    assert_eq!(
        refused.header("www-authenticate"),
        Some(
            agentic_api::auth::oauth::www_authenticate_invalid_token(&app.address, "/mcp/buyer")
                .as_str()
        )
    );
}

// ------------------------------------------------ access: scopes and consent

/// Login, then the consent `decision` for a request with `scope`: the
/// consent page and the token response.
async fn tokens_deciding(
    app: &TestApp,
    client_id: &str,
    who: &Tenant,
    scope: &str,
    decision: &str,
) -> (Answer, Value) {
    let (verifier, challenge) = pkce();
    let login = login_page_with(app, client_id, &challenge, &[("scope", scope)]).await;
    let consent = sign_in(app, &login, &who.email, PASSWORD).await;
    consent.assert_page(200, "Allow");
    let back = decide(app, &login, decision).await;
    assert_eq!(back.status, 303, "{}", back.text);
    let code = back
        .location()
        .query_pairs()
        .find(|(k, _)| k == "code")
        .expect("a code")
        .1
        .into_owned();
    let res = exchange(app, client_id, &code, &verifier).await;
    assert_eq!(res.status, 200, "{}", res.text);
    (consent, res.json)
}

/// (status of a read, status of a write) with `token`.
async fn read_and_write(app: &TestApp, token: &str) -> (u16, u16) {
    let read = app.get("/api/v2/buyer/advertisers", token).await;
    let write = app
        .post(
            "/api/v2/buyer/advertisers",
            token,
            &json!({"name": "W", "brand": "w.example", "primaryCurrency": "USD"}),
        )
        .await;
    if write.status == 403 {
        write.assert_error(403, "FORBIDDEN");
    }
    (read.status.as_u16(), write.status.as_u16())
}

#[actix_web::test]
async fn a_read_only_grant_reads_but_is_refused_every_write_and_keeps_it_on_refresh() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Agent").await;

    // No platform scope asked: read-only is offered first, writing second.
    let (consent, tokens) =
        tokens_deciding(&app, &client_id, &pat, "openid profile email", "read").await;
    let read_at = consent.text.find("value=\"read\"").unwrap();
    let write_at = consent.text.find("value=\"allow\"").unwrap();
    assert!(read_at < write_at, "{}", consent.text);
    assert_eq!(tokens["scope"], json!("openid profile email platform:read"));
    let token = bearer(&tokens);
    assert_eq!(
        me(&app, token).await.data()["permissions"],
        json!(["platform:read"])
    );
    assert_eq!(read_and_write(&app, token).await, (200, 403));

    // A refresh keeps it read-only, also when the client names only the
    // identity scopes (as Authlib does with its session's scope).
    let rt = tokens["refresh_token"].as_str().unwrap();
    let res = form(
        &app,
        "/auth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", rt),
            ("client_id", &client_id),
            ("scope", "openid profile email"),
        ],
        None,
    )
    .await;
    assert_eq!(res.status, 200, "{}", res.text);
    assert_eq!(
        res.json["scope"],
        json!("openid profile email platform:read")
    );
    assert_eq!(read_and_write(&app, bearer(&res.json)).await, (200, 403));
    // Asking for more than was granted is refused.
    form(
        &app,
        "/auth/token",
        &[
            ("grant_type", "refresh_token"),
            ("refresh_token", res.json["refresh_token"].as_str().unwrap()),
            ("client_id", &client_id),
            ("scope", "openid platform:write"),
        ],
        None,
    )
    .await
    .assert_oauth_error(400, "invalid_scope");

    // Allow, for the same request, acts as the user (the spec's clients).
    let (_, tokens) =
        tokens_deciding(&app, &client_id, &pat, "openid profile email", "allow").await;
    assert_eq!(tokens["scope"], json!("openid profile email"));
    assert_eq!(
        me(&app, bearer(&tokens)).await.data()["permissions"],
        json!([])
    );
    assert_eq!(read_and_write(&app, bearer(&tokens)).await, (200, 201));
}

#[actix_web::test]
async fn a_client_asking_for_platform_read_can_only_be_granted_read_only_access() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Reader").await;
    for decision in ["read", "allow"] {
        let (consent, tokens) =
            tokens_deciding(&app, &client_id, &pat, "openid platform:read", decision).await;
        // The page offers no way to write.
        assert!(
            !consent.text.contains("value=\"allow\""),
            "{}",
            consent.text
        );
        assert!(consent.text.contains("value=\"read\""), "{}", consent.text);
        assert_eq!(tokens["scope"], json!("openid platform:read"), "{decision}");
        assert_eq!(read_and_write(&app, bearer(&tokens)).await, (200, 403));
    }
    // Anything else the form might say is refused, and the request stays
    // open for a genuine answer.
    let (_, challenge) = pkce();
    let login = login_page_with(&app, &client_id, &challenge, &[("scope", "platform:read")]).await;
    sign_in(&app, &login, &pat.email, PASSWORD)
        .await
        .assert_page(200, "Allow read only");
    for forged in ["write", "platform:write", ""] {
        decide(&app, &login, forged)
            .await
            .assert_page(400, "Choose Allow or Deny");
    }
    assert_eq!(decide(&app, &login, "read").await.status, 303);
}

#[actix_web::test]
async fn a_client_asking_for_platform_write_gets_it_unless_the_user_downgrades() {
    let app = spawn_app().await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let client_id = client(&app, "Writer").await;

    let (consent, tokens) =
        tokens_deciding(&app, &client_id, &pat, "openid platform:write", "allow").await;
    // What was asked comes first; read-only is still offered.
    let write_at = consent.text.find("value=\"allow\"").unwrap();
    let read_at = consent.text.find("value=\"read\"").unwrap();
    assert!(write_at < read_at, "{}", consent.text);
    assert!(consent.text.contains("phone lines"), "{}", consent.text);
    assert_eq!(tokens["scope"], json!("openid platform:write"));
    assert_eq!(
        me(&app, bearer(&tokens)).await.data()["permissions"],
        json!(["platform:write"])
    );
    assert_eq!(read_and_write(&app, bearer(&tokens)).await, (200, 201));
    let res = refresh(&app, &client_id, tokens["refresh_token"].as_str().unwrap()).await;
    assert_eq!(res.json["scope"], json!("openid platform:write"));

    let (_, tokens) = tokens_deciding(
        &app,
        &client_id,
        &pat,
        "openid platform:read platform:write",
        "read",
    )
    .await;
    assert_eq!(tokens["scope"], json!("openid platform:read"));
    assert_eq!(read_and_write(&app, bearer(&tokens)).await, (200, 403));
}

#[actix_web::test]
async fn an_unknown_scope_is_invalid_scope_and_the_metadata_lists_the_platform_scopes() {
    let app = spawn_app().await;
    let client_id = client(&app, "Agent").await;
    let (_, challenge) = pkce();
    for scope in ["openid platform:admin", "platform:*", "PLATFORM:READ"] {
        let res = get(
            &app,
            &authorize_path(&client_id, &challenge, &[("scope", scope)]),
        )
        .await;
        assert_eq!(res.status, 302, "{scope}: {}", res.text);
        let q: std::collections::HashMap<String, String> =
            res.location().query_pairs().into_owned().collect();
        assert_eq!(q["error"], "invalid_scope", "{scope}");
        assert!(
            q["error_description"].contains("platform:read platform:write"),
            "{q:?}"
        );
    }
    let meta = get(&app, "/.well-known/oauth-authorization-server").await;
    assert_eq!(
        meta.json["scopes_supported"],
        json!([
            "openid",
            "profile",
            "email",
            "platform:read",
            "platform:write"
        ])
    );
    // MCP hosts ask for every scope the resource lists: the spec's.
    let resource = get(&app, "/.well-known/oauth-protected-resource/mcp/buyer").await;
    assert_eq!(
        resource.json["scopes_supported"],
        json!(["openid", "profile", "email"])
    );
}

// ------------------------------------------------------------ pruning

/// Moves a client's registration `ago` into the past.
async fn registered_ago(app: &TestApp, client_id: &str, ago: chrono::Duration) {
    use sea_orm::{ColumnTrait, QueryFilter};
    entity::oauth_client::Entity::update_many()
        .col_expr(
            entity::oauth_client::Column::CreatedAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - ago),
        )
        .filter(entity::oauth_client::Column::Id.eq(client_id))
        .exec(&app.db)
        .await
        .unwrap();
}

async fn client_exists(app: &TestApp, client_id: &str) -> bool {
    entity::oauth_client::Entity::find_by_id(client_id.to_string())
        .one(&app.db)
        .await
        .unwrap()
        .is_some()
}

#[actix_web::test]
async fn pruning_removes_expired_rows_and_unused_clients_and_keeps_live_ones() {
    use agentic_api::auth::oauth::prune::{Pruned, prune};
    use sea_orm::{ColumnTrait, QueryFilter};
    // The scheduled job stays out of the way: this test runs it by hand.
    let app = spawn_app_with(|c| c.oauth.prune_every = Duration::from_secs(86_400)).await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let two_days = chrono::Duration::days(2);

    // Registered two days ago and never used: goes.
    let stale = client(&app, "Stale").await;
    registered_ago(&app, &stale, two_days).await;
    // Registered an hour ago: stays.
    let fresh = client(&app, "Fresh").await;
    registered_ago(&app, &fresh, chrono::Duration::hours(1)).await;
    // Old and never used, but a user is signing in with it now: stays.
    let pending = client(&app, "Pending").await;
    let (_, challenge) = pkce();
    let signing_in = login_page(&app, &pending, &challenge).await;
    registered_ago(&app, &pending, two_days).await;
    // Old and used: stays with its live grant.
    let used = client(&app, "Used").await;
    let live = tokens_for(&app, &used, &pat).await;
    registered_ago(&app, &used, two_days).await;
    // A grant whose tokens all expired two days ago: goes with its tokens.
    let dead = tokens_for(&app, &used, &pat).await;
    // Its grant is the newest one.
    let dead_grant = entity::oauth_grant::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .map(|g| g.api_key_id)
        .max()
        .unwrap();
    entity::oauth_token::Entity::update_many()
        .col_expr(
            entity::oauth_token::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - two_days),
        )
        .filter(entity::oauth_token::Column::GrantId.eq(dead_grant))
        .exec(&app.db)
        .await
        .unwrap();
    // An authorization request past its expiry, and a code expired two days ago.
    let (_, challenge) = pkce();
    let abandoned = login_page(&app, &fresh, &challenge).await;
    entity::oauth_request::Entity::update_many()
        .col_expr(
            entity::oauth_request::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - chrono::Duration::minutes(1)),
        )
        .filter(entity::oauth_request::Column::Id.eq(abandoned.request.as_str()))
        .exec(&app.db)
        .await
        .unwrap();
    let (_, challenge) = pkce();
    code_for(&app, &used, &challenge, &pat).await;
    entity::oauth_code::Entity::update_many()
        .col_expr(
            entity::oauth_code::Column::ExpiresAt,
            sea_orm::sea_query::Expr::value(chrono::Utc::now() - two_days),
        )
        .filter(entity::oauth_code::Column::UsedAt.is_null())
        .exec(&app.db)
        .await
        .unwrap();
    let codes_before = entity::oauth_code::Entity::find()
        .count(&app.db)
        .await
        .unwrap();

    let pruned = prune(&app.db, chrono::Utc::now()).await.unwrap();
    assert_eq!(
        pruned,
        Pruned {
            requests: 1,
            codes: 1,
            tokens: 2,
            grants: 1,
            clients: 1,
        }
    );
    assert!(!client_exists(&app, &stale).await);
    for kept in [&fresh, &pending, &used] {
        assert!(client_exists(&app, kept).await, "{kept}");
    }
    assert_eq!(
        entity::oauth_code::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        codes_before - 1
    );
    // The dead grant and its credential row are gone; the live one works.
    assert!(
        entity::oauth_grant::Entity::find_by_id(dead_grant)
            .one(&app.db)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        entity::api_key::Entity::find_by_id(dead_grant)
            .one(&app.db)
            .await
            .unwrap()
            .is_none()
    );
    refresh(&app, &used, dead["refresh_token"].as_str().unwrap())
        .await
        .assert_oauth_error(400, "invalid_grant");
    assert_eq!(me(&app, bearer(&live)).await.status, 200);
    let res = refresh(&app, &used, live["refresh_token"].as_str().unwrap()).await;
    assert_eq!(res.status, 200, "{}", res.text);
    // The user goes on signing in with the pending client.
    sign_in(&app, &signing_in, &pat.email, PASSWORD)
        .await
        .assert_page(200, "Allow");
    assert_eq!(decide(&app, &signing_in, "allow").await.status, 303);
    // A second pass finds nothing: deletes are idempotent.
    assert_eq!(
        prune(&app.db, chrono::Utc::now()).await.unwrap(),
        Pruned::default()
    );
    // The used client stays however old it gets.
    let later = prune(&app.db, chrono::Utc::now() + chrono::Duration::days(400))
        .await
        .unwrap();
    assert!(later.grants >= 1, "{later:?}");
    assert!(client_exists(&app, &used).await);
}

#[actix_web::test]
async fn the_pruning_job_runs_on_its_interval() {
    let app = spawn_app_with(|c| c.oauth.prune_every = Duration::from_millis(100)).await;
    let stale = client(&app, "Stale").await;
    let fresh = client(&app, "Fresh").await;
    registered_ago(&app, &stale, chrono::Duration::days(2)).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while client_exists(&app, &stale).await {
        assert!(
            std::time::Instant::now() < deadline,
            "the job did not prune the stale client"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(client_exists(&app, &fresh).await);
}
