//! Test harness: spawn the app on port 0 with a fresh database, tenant
//! factories built on the admin CLI's code, a JSON client and an SSE client.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::http::{Method, StatusCode, header::HeaderMap};
use eventsource_stream::Eventsource;
use futures_util::StreamExt;
use sea_orm::{ConnectionTrait, DatabaseConnection};
use serde_json::Value;

use agentic_api::auth::tenancy::{self, NewAccount, NewUser};
use agentic_api::{Application, Config};

pub struct TestApp {
    /// `http://127.0.0.1:PORT`
    pub address: String,
    pub port: u16,
    /// The metrics listener's port (`None` when metrics are off).
    pub metrics_port: Option<u16>,
    pub db: DatabaseConnection,
    pub database_url: String,
    pub config: Config,
    pub client: awc::Client,
    pub handle: ServerHandle,
    /// The server's own state, for calling domain operations directly.
    pub state: agentic_api::http::AppState,
    _dir: Option<tempfile::TempDir>,
}

impl Drop for TestApp {
    /// Ends the app's background work (sweeps, the bus listener, outbox
    /// lanes on their own arbiters): it would outlive the test's runtime and
    /// keep its database connections, and on a shared PostgreSQL server the
    /// suite would run out of them.
    fn drop(&mut self) {
        self.state.shutdown.cancel();
    }
}

/// A fresh database: a temp SQLite file, or a new PostgreSQL database when
/// `AGENTIC_TEST_DATABASE_URL` is set.
pub async fn fresh_database() -> (String, Option<tempfile::TempDir>) {
    match std::env::var("AGENTIC_TEST_DATABASE_URL") {
        Ok(admin_url) if !admin_url.is_empty() => {
            let name = format!("agentic_t_{}", uuid::Uuid::new_v4().simple());
            let admin = sea_orm::Database::connect(&admin_url)
                .await
                .expect("AGENTIC_TEST_DATABASE_URL must be reachable");
            admin
                .execute_unprepared(&format!("CREATE DATABASE \"{name}\""))
                .await
                .expect("create test database");
            admin.close().await.ok();
            let mut url = url::Url::parse(&admin_url).expect("valid database URL");
            url.set_path(&format!("/{name}"));
            (url.to_string(), None)
        }
        _ => {
            let dir = tempfile::tempdir().expect("temp dir");
            let url = format!("sqlite://{}/test.db?mode=rwc", dir.path().display());
            (url, Some(dir))
        }
    }
}

/// A fresh database with every migration applied, for an app to start on.
/// On PostgreSQL it is a copy of a template migrated once per test process
/// (`CREATE DATABASE … TEMPLATE`): a file copy instead of some hundred DDL
/// statements, each waiting on the server's fsync. SQLite migrates a new file
/// faster than it could be copied, so there it is [`fresh_database`].
pub async fn migrated_database() -> (String, Option<tempfile::TempDir>) {
    static TEMPLATE: tokio::sync::OnceCell<String> = tokio::sync::OnceCell::const_new();
    let admin_url = match std::env::var("AGENTIC_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => url,
        _ => return fresh_database().await,
    };
    let with_name = |name: &str| {
        let mut url = url::Url::parse(&admin_url).expect("valid database URL");
        url.set_path(&format!("/{name}"));
        url.to_string()
    };
    let template = TEMPLATE
        .get_or_init(|| async {
            use migration::MigratorTrait;
            let (url, _) = fresh_database().await;
            let db = sea_orm::Database::connect(&url)
                .await
                .expect("template database");
            migration::Migrator::up(&db, None)
                .await
                .expect("template migrations");
            // A template cannot be copied while anyone is connected to it.
            db.close().await.ok();
            url::Url::parse(&url)
                .expect("valid URL")
                .path()
                .trim_start_matches('/')
                .to_string()
        })
        .await;
    let name = format!("agentic_t_{}", uuid::Uuid::new_v4().simple());
    let admin = sea_orm::Database::connect(&admin_url)
        .await
        .expect("AGENTIC_TEST_DATABASE_URL must be reachable");
    admin
        .execute_unprepared(&format!(
            "CREATE DATABASE \"{name}\" TEMPLATE \"{template}\""
        ))
        .await
        .expect("copy the migrated template");
    admin.close().await.ok();
    (with_name(&name), None)
}

pub fn test_config(database_url: &str) -> Config {
    let mut config = Config::with_database(database_url);
    config.rate_limit_per_minute = 1_000_000;
    config.auth_rate_limit = 1_000_000;
    config.allow_insecure_urls = true;
    config
}

pub async fn spawn_app() -> TestApp {
    spawn_app_with(|_| {}).await
}

pub async fn spawn_app_with(tweak: impl FnOnce(&mut Config)) -> TestApp {
    let (url, dir) = migrated_database().await;
    let mut app = spawn_on(&url, tweak).await;
    app._dir = dir;
    app
}

/// Another instance on an existing database (multi-instance tests).
pub async fn spawn_on(database_url: &str, tweak: impl FnOnce(&mut Config)) -> TestApp {
    let mut config = test_config(database_url);
    tweak(&mut config);
    let application = Application::build(config.clone())
        .await
        .expect("app builds");
    let port = application.port();
    let metrics_port = application.metrics_port();
    let db = application.state().db.clone();
    let state = application.state().clone();
    let handle = application.handle();
    actix_rt::spawn(application.run_until_stopped());
    TestApp {
        address: format!("http://127.0.0.1:{port}"),
        port,
        metrics_port,
        db,
        database_url: database_url.to_string(),
        config,
        // Pooled connections are retired before the server's 5 s keep-alive
        // closes them, so a slow test never picks a dead one.
        client: awc::Client::builder()
            .connector(awc::Connector::new().conn_keep_alive(Duration::from_secs(2)))
            .timeout(Duration::from_secs(30))
            .finish(),
        handle,
        state,
        _dir: None,
    }
}

/// A caller: account, user and API key.
#[derive(Clone, Debug)]
pub struct Tenant {
    pub account_id: String,
    pub user_id: i64,
    pub email: String,
    pub key: String,
}

pub struct Resp {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Value,
    pub raw: bytes::Bytes,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// `error.code` of an envelope.
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }

    pub fn data(&self) -> &Value {
        &self.body["data"]
    }

    /// Asserts the status and that the body is a failure envelope.
    #[track_caller]
    pub fn assert_error(&self, status: u16, code: &str) {
        assert_eq!(self.status.as_u16(), status, "body: {}", self.body);
        assert_eq!(self.code(), code, "body: {}", self.body);
        assert!(
            self.body["data"].is_null(),
            "data must be null: {}",
            self.body
        );
        assert!(self.body["error"]["message"].is_string(), "{}", self.body);
    }
}

impl TestApp {
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.address, path)
    }

    /// Any request; `body` is sent as-is with `content_type`.
    pub async fn send_raw(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        content_type: Option<&str>,
        body: Vec<u8>,
    ) -> Resp {
        let mut req = self.client.request(method.clone(), self.url(path));
        if let Some(k) = key {
            req = req.insert_header(("Authorization", format!("Bearer {k}")));
        }
        if let Some(ct) = content_type {
            req = req.insert_header(("Content-Type", ct));
        }
        let mut res = req.send_body(body).await.expect("request sent");
        let raw = res.body().limit(64 * 1024 * 1024).await.expect("body read");
        let resp = Resp {
            status: res.status(),
            headers: res.headers().clone(),
            body: serde_json::from_slice(&raw).unwrap_or(Value::Null),
            raw,
        };
        crate::outputs::assert_described(&method, path, &resp);
        resp
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
    ) -> Resp {
        match body {
            Some(b) => {
                self.send_raw(
                    method,
                    path,
                    key,
                    Some("application/json"),
                    serde_json::to_vec(b).unwrap(),
                )
                .await
            }
            None => self.send_raw(method, path, key, None, Vec::new()).await,
        }
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        self.request(Method::GET, path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.request(Method::POST, path, Some(key), Some(body))
            .await
    }

    pub async fn put(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.request(Method::PUT, path, Some(key), Some(body)).await
    }

    pub async fn patch(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.request(Method::PATCH, path, Some(key), Some(body))
            .await
    }

    pub async fn delete(&self, path: &str, key: &str) -> Resp {
        self.request(Method::DELETE, path, Some(key), None).await
    }

    /// A new account with an admin user holding `platform:write`.
    pub async fn tenant(&self) -> Tenant {
        self.tenant_with(NewAccount::named("Acme"), "admin", &["platform:write"])
            .await
    }

    pub async fn tenant_with(&self, account: NewAccount, role: &str, perms: &[&str]) -> Tenant {
        let account_id = tenancy::create_account(&self.db, account).await.unwrap();
        self.user_in(&account_id, role, perms).await
    }

    /// Another user (with its own key) in an existing account.
    pub async fn user_in(&self, account_id: &str, role: &str, perms: &[&str]) -> Tenant {
        user_on(&self.db, account_id, role, perms).await
    }

    /// Opens an SSE stream; `last_event_id` sets the `Last-Event-ID` header.
    pub async fn sse(
        &self,
        path: &str,
        key: &str,
        last_event_id: Option<&str>,
    ) -> Result<SseStream, Resp> {
        let mut req = self
            .sse_request(path)
            .insert_header(("Authorization", format!("Bearer {key}")));
        if let Some(id) = last_event_id {
            req = req.insert_header(("Last-Event-ID", id));
        }
        open_sse(req).await
    }

    /// Opens an SSE stream without an `Authorization` header (the path
    /// carries a `streamToken`), as a browser's `EventSource` does.
    pub async fn sse_with_token(&self, path_and_query: &str) -> Result<SseStream, Resp> {
        open_sse(self.sse_request(path_and_query)).await
    }

    fn sse_request(&self, path: &str) -> awc::ClientRequest {
        // A stream holds its connection for its whole life: its own client.
        awc::Client::builder()
            .disable_timeout()
            .finish()
            .get(self.url(path))
            .insert_header(("Accept", "text/event-stream"))
    }
}

async fn open_sse(req: awc::ClientRequest) -> Result<SseStream, Resp> {
    let mut res = req.send().await.expect("request sent");
    if res.status() != StatusCode::OK {
        let raw = res.body().await.expect("body");
        return Err(Resp {
            status: res.status(),
            headers: res.headers().clone(),
            body: serde_json::from_slice(&raw).unwrap_or(Value::Null),
            raw,
        });
    }
    let content_type = res
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    assert!(
        content_type.starts_with("text/event-stream"),
        "content-type {content_type}"
    );
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let task = actix_rt::spawn(async move {
        // eventsource-stream drops comments, which the keep-alive tests
        // look for: complete lines starting with ':' are passed on as the
        // bytes go by (ahead of any event in the same chunk).
        let comments = tx.clone();
        let mut partial = String::new();
        let bytes = res.map(move |chunk| {
            if let Ok(bytes) = &chunk {
                partial.push_str(&String::from_utf8_lossy(bytes));
                while let Some(end) = partial.find('\n') {
                    let line: String = partial.drain(..=end).collect();
                    if let Some(c) = line.trim_end().strip_prefix(':') {
                        let _ = comments.send(SseEvent::comment(c.trim()));
                    }
                }
            }
            chunk
        });
        let mut events = std::pin::pin!(bytes.eventsource());
        while let Some(Ok(ev)) = events.next().await {
            if tx.send(SseEvent::from(ev)).is_err() {
                return;
            }
        }
    });
    Ok(SseStream { rx, task })
}

/// One server-sent event (or a comment, with `event == ":"`).
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub event: String,
    /// The stream's last event id as of this event (SSE `lastEventId`).
    pub id: Option<String>,
    pub data: Value,
    pub raw_data: String,
}

impl SseEvent {
    fn comment(text: &str) -> SseEvent {
        SseEvent {
            event: ":".into(),
            id: None,
            data: Value::Null,
            raw_data: text.to_string(),
        }
    }
}

impl From<eventsource_stream::Event> for SseEvent {
    fn from(ev: eventsource_stream::Event) -> Self {
        SseEvent {
            data: serde_json::from_str(&ev.data).unwrap_or(Value::Null),
            id: (!ev.id.is_empty()).then_some(ev.id),
            event: ev.event,
            raw_data: ev.data,
        }
    }
}

pub struct SseStream {
    rx: tokio::sync::mpsc::UnboundedReceiver<SseEvent>,
    task: actix_rt::task::JoinHandle<()>,
}

/// Dropping the stream closes its connection, like closing a browser tab.
impl Drop for SseStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl SseStream {
    /// Next event (comments skipped), or `None` if the stream ended or
    /// nothing arrived within `wait`.
    pub async fn next_event(&mut self, wait: Duration) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(ev)) if ev.event == ":" => continue,
                Ok(other) => return other,
                Err(_) => return None,
            }
        }
    }

    /// Next event including comments.
    pub async fn next_raw(&mut self, wait: Duration) -> Option<SseEvent> {
        tokio::time::timeout(wait, self.rx.recv())
            .await
            .ok()
            .flatten()
    }

    /// True once the server has ended the stream (within `wait`).
    pub async fn ended(&mut self, wait: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            match tokio::time::timeout_at(deadline, self.rx.recv()).await {
                Ok(Some(_)) => continue,
                Ok(None) => return true,
                Err(_) => return false,
            }
        }
    }

    /// Waits for the next event named `name`, skipping others.
    pub async fn expect(&mut self, name: &str) -> SseEvent {
        loop {
            match self.next_event(Duration::from_secs(10)).await {
                Some(ev) if ev.event == name => return ev,
                Some(_) => continue,
                None => panic!("no '{name}' event within 10 s"),
            }
        }
    }
}

/// A user (with its own key) in an existing account of `db`, with no app
/// running (for a test that runs the binary on the database).
pub async fn user_on(
    db: &DatabaseConnection,
    account_id: &str,
    role: &str,
    perms: &[&str],
) -> Tenant {
    let email = format!("u{}@example.com", uuid::Uuid::new_v4().simple());
    let user_id = tenancy::create_user(
        db,
        NewUser {
            account_id: account_id.to_string(),
            email: email.clone(),
            name: format!("User {}", &email[1..7]),
            role: role.to_string(),
            password: None,
        },
    )
    .await
    .unwrap();
    let perms: Vec<String> = perms.iter().map(|p| p.to_string()).collect();
    let key = tenancy::create_api_key(db, user_id, &perms).await.unwrap();
    Tenant {
        account_id: account_id.to_string(),
        user_id,
        email,
        key,
    }
}

/// An advertiser of `t`'s account; returns its id.
pub async fn advertiser(app: &TestApp, t: &Tenant) -> String {
    let res = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &serde_json::json!({"name": "Acme", "brand": "acme.example", "primaryCurrency": "USD"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["id"].as_str().unwrap().to_string()
}

/// Runs the real binary (`agentic-api ARGS...`) against `database_url`.
pub fn cli(database_url: &str, args: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .args(args)
        .env("AGENTIC_DATABASE_URL", database_url)
        .env("AGENTIC_LOG", "warn")
        .output()
        .expect("binary runs")
}

impl TestApp {
    /// A conversation owned by `t`; returns its uid.
    pub async fn conversation(&self, t: &Tenant, sharing: bool) -> String {
        let res = self
            .post(
                "/api/v2/assistant/conversations",
                &t.key,
                &serde_json::json!({ "sharingEnabled": sharing }),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.body);
        res.data()["conversation"]["conversationUid"]
            .as_str()
            .unwrap()
            .to_string()
    }

    /// Posts a room message; returns its sequence.
    pub async fn say(&self, t: &Tenant, uid: &str, text: &str) -> i64 {
        let res = self
            .post(
                &format!("/api/v2/assistant/conversations/{uid}/messages"),
                &t.key,
                &serde_json::json!({ "audience": "room", "content": text }),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.body);
        res.data()["message"]["sequence"].as_i64().unwrap()
    }

    /// Opens a room stream, panicking on a non-200.
    pub async fn room(
        &self,
        t: &Tenant,
        uid: &str,
        query: &str,
        last_event_id: Option<&str>,
    ) -> SseStream {
        match self
            .sse(
                &format!("/api/v2/assistant/conversations/{uid}/events{query}"),
                &t.key,
                last_event_id,
            )
            .await
        {
            Ok(s) => s,
            Err(res) => panic!("stream refused: {} {}", res.status, res.body),
        }
    }
}

// Room stream assertions shared by the single- and multi-instance tests.

pub fn seq_of(ev: &SseEvent) -> i64 {
    ev.data["message"]["sequence"].as_i64().unwrap()
}

/// Reads `message.created` events until `n` arrived; skips presence.
pub async fn messages(stream: &mut SseStream, n: usize) -> Vec<SseEvent> {
    let mut got = Vec::new();
    while got.len() < n {
        let ev = stream
            .next_event(Duration::from_secs(10))
            .await
            .expect("event within 10 s");
        if ev.event == "message.created" {
            got.push(ev);
        } else {
            assert!(
                ev.event == "presence.changed" || ev.event == "ready",
                "unexpected {ev:?}"
            );
        }
    }
    got
}

pub fn participant_ids(ev: &SseEvent) -> Vec<i64> {
    ev.data["participants"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["userId"].as_i64().unwrap())
        .collect()
}

/// Waits for a presence event listing exactly `want`.
pub async fn presence_becomes(stream: &mut SseStream, want: &[i64]) -> SseEvent {
    let mut want = want.to_vec();
    want.sort();
    loop {
        let ev = stream
            .next_event(Duration::from_secs(10))
            .await
            .unwrap_or_else(|| panic!("no presence {want:?} within 10 s"));
        if ev.event == "presence.changed" && participant_ids(&ev) == want {
            return ev;
        }
    }
}

/// The real binary serving on its own; killed when dropped, so a test that
/// fails leaves no server behind.
pub struct Served {
    pub child: Child,
    pub base: String,
    /// What it printed before `listening on` (e.g. `serve --demo`'s key).
    pub lines: Vec<String>,
}

impl Served {
    /// `http://HOST:PORT` of the metrics listener, as the server printed it.
    pub fn metrics_base(&self) -> Option<String> {
        self.lines.iter().find_map(|l| {
            let at = l.find("metrics on ")? + "metrics on ".len();
            Some(l[at..].trim().trim_end_matches("/metrics").to_string())
        })
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.child.kill().ok();
            self.child.wait().ok();
        }
    }
}

/// Starts `agentic-api serve` on port 0 with `envs`; stderr goes to `stderr`.
pub fn serve(database_url: &str, envs: &[(&str, &str)], stderr: Stdio) -> Served {
    serve_with(database_url, &[], envs, stderr)
}

/// [`serve`] with `serve`'s own arguments (e.g. `--demo`).
pub fn serve_with(
    database_url: &str,
    args: &[&str],
    envs: &[(&str, &str)],
    stderr: Stdio,
) -> Served {
    let child = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .arg("serve")
        .args(args)
        .env("AGENTIC_DATABASE_URL", database_url)
        .env("AGENTIC_BIND", "127.0.0.1:0")
        // Tests run side by side: never the fixed default port.
        .env("AGENTIC_METRICS_BIND", "127.0.0.1:0")
        .env("AGENTIC_LOG", "warn")
        .envs(envs.iter().copied())
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .unwrap();
    // Owned by the guard at once, so a failed start is still reaped.
    let mut served = Served {
        child,
        base: String::new(),
        lines: Vec::new(),
    };
    let mut out = BufReader::new(served.child.stdout.take().unwrap());
    loop {
        let mut line = String::new();
        assert!(
            out.read_line(&mut line).unwrap() > 0,
            "server exited early: {:?}",
            served.lines
        );
        if let Some(i) = line.find("listening on ") {
            served.base = line[i + "listening on ".len()..].trim().to_string();
            // Keep reading, so the server never writes to a closed or full pipe.
            std::thread::spawn(move || for _ in out.lines() {});
            return served;
        }
        served.lines.push(line);
    }
}

/// Stops the server with SIGTERM and waits for it to exit: up to 40 s,
/// longer than any shutdown grace the tests give it (a loaded 2-core
/// machine can use most of a 10 s grace).
pub fn sigterm_and_wait(child: &mut std::process::Child) -> std::process::ExitStatus {
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    for _ in 0..800 {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill().ok();
    panic!("server did not stop on SIGTERM");
}

/// The text message `id` as stored.
pub async fn text_message(db: &DatabaseConnection, id: i64) -> entity::phone_message::Model {
    use sea_orm::EntityTrait;
    entity::phone_message::Entity::find_by_id(id)
        .one(db)
        .await
        .unwrap()
        .unwrap()
}

/// A text message's statuses as they change, polled every 10 ms until it is
/// `last` (5 s at most), and the message then.
pub async fn statuses_until(
    db: &DatabaseConnection,
    id: i64,
    last: &str,
) -> (Vec<String>, entity::phone_message::Model) {
    let mut seen: Vec<String> = Vec::new();
    for _ in 0..500 {
        let status = text_message(db, id).await.status;
        if seen.last() != Some(&status) {
            seen.push(status.clone());
        }
        if status == last {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (seen, text_message(db, id).await)
}

/// Serves files on 127.0.0.1 at `GET /f/{name}` (a PDF's temporary URL, as
/// carriers and senders host them); stopped when dropped.
pub struct FileServer {
    pub base: String,
    _handle: actix_web::dev::ServerHandle,
}

pub async fn file_server(files: Vec<(&'static str, Vec<u8>)>) -> FileServer {
    let files = std::sync::Arc::new(files);
    let server = actix_web::HttpServer::new(move || {
        let files = files.clone();
        actix_web::App::new().route(
            "/f/{name}",
            actix_web::web::get().to(move |name: actix_web::web::Path<String>| {
                let files = files.clone();
                async move {
                    match files.iter().find(|(n, _)| *n == name.as_str()) {
                        Some((_, b)) => actix_web::HttpResponse::Ok()
                            .content_type("application/pdf")
                            .body(b.clone()),
                        None => actix_web::HttpResponse::NotFound().finish(),
                    }
                }
            }),
        )
    })
    .workers(1)
    .disable_signals()
    .bind("127.0.0.1:0")
    .unwrap();
    let port = server.addrs()[0].port();
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    FileServer {
        base: format!("http://127.0.0.1:{port}/f"),
        _handle: handle,
    }
}

impl Drop for FileServer {
    fn drop(&mut self) {
        let handle = self._handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}
