//! The operator contract, driven through the real binary.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use clap::Parser;
use migration::{Migrator, MigratorTrait};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DbBackend, EntityTrait, PaginatorTrait, QueryFilter, Statement,
};
use serde_json::Value;

use agentic_api::auth::tenancy::{self, NewAccount};

use crate::helpers::*;

fn json_out(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.trim().lines().count(),
        1,
        "exactly one JSON object: {stdout}"
    );
    serde_json::from_str(stdout.trim()).unwrap()
}

async fn counts(app: &TestApp) -> (u64, u64, u64, u64, u64, u64) {
    let db = &app.db;
    (
        entity::account::Entity::find().count(db).await.unwrap(),
        entity::user::Entity::find().count(db).await.unwrap(),
        entity::api_key::Entity::find().count(db).await.unwrap(),
        entity::phone_line::Entity::find().count(db).await.unwrap(),
        entity::storefront::Entity::find().count(db).await.unwrap(),
        entity::brand::Entity::find().count(db).await.unwrap(),
    )
}

#[actix_web::test]
async fn admin_commands_provision_a_tenant_whose_key_works() {
    let app = spawn_app().await;
    let db = &app.database_url;
    let acct = json_out(&cli(
        db,
        &["admin", "create-account", "--name", "Acme", "--phone-lines"],
    ));
    let account = acct["accountId"].as_str().unwrap().to_string();
    let user = json_out(&cli(
        db,
        &[
            "admin",
            "create-user",
            "--account",
            &account,
            "--email",
            "Ops@Acme.example",
            "--name",
            "Ops",
        ],
    ));
    let user_id = user["userId"].as_i64().unwrap();
    let key = json_out(&cli(
        db,
        &[
            "admin",
            "create-api-key",
            "--user",
            &user_id.to_string(),
            "--permission",
            "platform:write",
        ],
    ));
    let key = key["apiKey"].as_str().unwrap().to_string();
    let me = app.get("/api/v2/me", &key).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.data()["account"]["id"], Value::from(account.clone()));
    assert_eq!(me.data()["account"]["phoneLinesEnabled"], Value::from(true));
    assert_eq!(
        me.data()["user"]["role"],
        Value::from("member"),
        "role defaults to member"
    );
    assert_eq!(me.data()["user"]["email"], Value::from("ops@acme.example"));
    assert_eq!(
        me.data()["permissions"],
        serde_json::json!(["platform:write"])
    );

    let line = json_out(&cli(
        db,
        &[
            "admin",
            "provision-line",
            "--account",
            &account,
            "--number",
            "+14155550123",
            "--kind",
            "sms",
            "--rcs-agent-verified",
            "--messaging-profile",
            "p1",
        ],
    ));
    assert!(
        line["endpointId"].as_str().unwrap().parse::<i64>().is_ok(),
        "numeric string: {line}"
    );
    let fax = json_out(&cli(
        db,
        &[
            "admin",
            "provision-line",
            "--account",
            &account,
            "--number",
            "+14155550124",
            "--kind",
            "fax",
            "--inactive",
        ],
    ));
    assert_ne!(fax["endpointId"], line["endpointId"]);
    let sf = json_out(&cli(
        db,
        &[
            "admin",
            "register-storefront",
            "--name",
            "Seller",
            "--url",
            "https://seller.example.com/mcp",
        ],
    ));
    assert!(sf["storefrontId"].is_i64(), "{sf}");

    let flags = json_out(&cli(
        db,
        &[
            "admin",
            "create-account",
            "--name",
            "Quiet",
            "--no-assistant",
            "--no-shared-conversations",
        ],
    ));
    let quiet = flags["accountId"].as_str().unwrap();
    let u = json_out(&cli(
        db,
        &[
            "admin",
            "create-user",
            "--account",
            quiet,
            "--email",
            "q@quiet.example",
            "--name",
            "Q",
            "--role",
            "super-admin",
            "--password",
            "correct horse",
        ],
    ));
    let k = json_out(&cli(
        db,
        &[
            "admin",
            "create-api-key",
            "--user",
            &u["userId"].to_string(),
        ],
    ));
    let me = app.get("/api/v2/me", k["apiKey"].as_str().unwrap()).await;
    assert_eq!(me.data()["account"]["assistantEnabled"], Value::from(false));
    assert_eq!(
        me.data()["account"]["sharedConversationsEnabled"],
        Value::from(false)
    );
    assert_eq!(
        me.data()["account"]["phoneLinesEnabled"],
        Value::from(false)
    );
    assert_eq!(me.data()["user"]["role"], Value::from("super-admin"));
}

#[actix_web::test]
async fn admin_commands_reject_bad_input_and_write_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    // Storefront names are unique whatever their case.
    json_out(&cli(
        &app.database_url,
        &[
            "admin",
            "register-storefront",
            "--name",
            "Seller",
            "--url",
            "https://seller.example.com/mcp",
        ],
    ));
    // A number already provisioned is not claimed by another account.
    json_out(&cli(
        &app.database_url,
        &[
            "admin",
            "provision-line",
            "--account",
            &t.account_id,
            "--number",
            "+14155550123",
            "--kind",
            "sms",
        ],
    ));
    let (acct, uid) = (t.account_id.as_str(), t.user_id.to_string());
    let line = |account: &str, number: &str, kind: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            "provision-line",
            "--account",
            account,
            "--number",
            number,
            "--kind",
            kind,
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect()
    };
    let user = |account: &str, email: &str, extra: &[&str]| -> Vec<String> {
        let mut v = vec![
            "create-user",
            "--account",
            account,
            "--email",
            email,
            "--name",
            "A",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect()
    };
    let args = |a: &[&str]| -> Vec<String> { a.iter().map(|s| s.to_string()).collect() };
    // (arguments after `admin`, fragment the message on stderr must contain)
    let table: Vec<(Vec<String>, &str)> = vec![
        (args(&["create-account"]), "--name"),
        (args(&["create-account", "--name", "  "]), "name"),
        (user("nope", "a@b.example", &[]), "unknown account"),
        (user(acct, "not-an-email", &[]), "invalid email"),
        (
            user(acct, "a@b.example", &["--role", "owner"]),
            "unknown role",
        ),
        (user(acct, &t.email, &[]), "already exists"),
        (
            user(acct, "c@b.example", &["--password", "short"]),
            "password",
        ),
        (
            args(&["create-api-key", "--user", "999999"]),
            "unknown user",
        ),
        (args(&["create-api-key", "--user", "abc"]), "unknown user"),
        (
            args(&[
                "create-api-key",
                "--user",
                &uid,
                "--permission",
                "platform:root",
            ]),
            "unknown permission",
        ),
        (line(acct, "4155550123", "sms", &[]), "E.164"),
        (line(acct, "+1555", "sms", &[]), "E.164"),
        (line(acct, "+14155550199", "mms", &[]), "kind"),
        (line("nope", "+14155550199", "sms", &[]), "unknown account"),
        (
            line(acct, "+14155550199", "fax", &["--rcs-agent-verified"]),
            "sms",
        ),
        (
            line(&other.account_id, "+14155550123", "sms", &[]),
            "already provisioned",
        ),
        (
            args(&[
                "register-storefront",
                "--name",
                "S",
                "--url",
                "http://seller.example.com/mcp",
            ]),
            "https",
        ),
        (
            args(&[
                "register-storefront",
                "--name",
                "S",
                "--url",
                "https://127.0.0.1/mcp",
            ]),
            "public",
        ),
        (
            args(&[
                "register-storefront",
                "--name",
                "S",
                "--url",
                "https://user:pw@seller.example.com/",
            ]),
            "credentials",
        ),
        (
            args(&["register-storefront", "--name", "S", "--url", "not a url"]),
            "invalid URL",
        ),
        (
            args(&[
                "register-storefront",
                "--name",
                "seller",
                "--url",
                "https://other.example.com/mcp",
            ]),
            "already exists",
        ),
        (
            args(&[
                "register-storefront",
                "--name",
                "S2",
                "--url",
                "https://seller2.example.com/mcp",
                "--auth-token",
                "has space",
            ]),
            "auth token",
        ),
        (
            args(&[
                "register-brand",
                "--domain",
                "acme.com",
                "--name",
                "Acme",
                "--manifest",
                "[1]",
            ]),
            "--manifest must be a JSON object",
        ),
        (
            args(&["revoke-api-key", "--key", "agk_nope"]),
            "no live API key",
        ),
    ];
    let before = counts(&app).await;
    for (argv, needle) in &table {
        let mut full = vec!["admin"];
        full.extend(argv.iter().map(String::as_str));
        let out = cli(&app.database_url, &full);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{full:?} should fail; stderr {err}");
        assert!(out.stdout.is_empty(), "{full:?}: nothing on stdout");
        assert!(
            err.contains(needle),
            "{full:?}: stderr {err:?} lacks {needle:?}"
        );
        assert_eq!(counts(&app).await, before, "{full:?} wrote something");
    }
}

#[actix_web::test]
async fn a_key_revoked_by_the_operator_stops_working() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let prefix = t.key.split('_').nth(1).unwrap();
    json_out(&cli(
        &app.database_url,
        &["admin", "revoke-api-key", "--key", prefix],
    ));
    // A fresh instance has no cache: the revocation is in the database.
    let second = spawn_on(&app.database_url, |_| {}).await;
    second
        .get("/api/v2/me", &t.key)
        .await
        .assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn insecure_storefront_urls_need_the_explicit_opt_in() {
    let app = spawn_app().await;
    let out = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .args([
            "admin",
            "register-storefront",
            "--name",
            "Local",
            "--url",
            "http://127.0.0.1:9999/mcp",
        ])
        .env("AGENTIC_DATABASE_URL", &app.database_url)
        .env("AGENTIC_ALLOW_INSECURE_URLS", "true")
        .output()
        .unwrap();
    assert!(json_out(&out)["storefrontId"].is_i64());
}

#[actix_web::test]
async fn serve_prints_the_real_port_and_stops_gracefully_on_sigterm() {
    let (db, _dir) = fresh_database().await;
    let mut served = serve(&db, &[], Stdio::null());
    let base = served.base.clone();
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    assert_ne!(port, 0);
    let client = awc::Client::default();
    let res = client.get(format!("{base}/healthz")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(sigterm_and_wait(&mut served.child).success());
}

#[actix_web::test]
async fn serve_demo_seeds_idempotently_and_prints_a_working_key() {
    let (db, _dir) = fresh_database().await;
    let mut keys = Vec::new();
    for _ in 0..2 {
        let mut served = serve_with(&db, &["--demo"], &[], Stdio::null());
        let base = served.base.clone();
        let key = served
            .lines
            .iter()
            .find_map(|l| l.split_whitespace().find(|w| w.starts_with("agk_")))
            .unwrap_or_else(|| panic!("no key printed: {:?}", served.lines))
            .to_string();
        let client = awc::Client::default();
        let mut res = client
            .get(format!("{base}/api/v2/me"))
            .insert_header(("Authorization", format!("Bearer {key}")))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200);
        let me: Value = res.json().await.unwrap();
        assert_eq!(
            me["data"]["permissions"],
            serde_json::json!(["platform:write"])
        );
        assert_eq!(me["data"]["user"]["role"], Value::from("admin"));
        assert_eq!(
            me["data"]["account"]["phoneLinesEnabled"],
            Value::from(true)
        );
        keys.push((key, me["data"]["account"]["id"].clone()));
        assert!(sigterm_and_wait(&mut served.child).success());
    }
    assert_eq!(keys[0].1, keys[1].1, "same demo account both times");
    assert_ne!(keys[0].0, keys[1].0, "a fresh key each start");
    let conn = agentic_api::db::connect(&db).await.unwrap();
    assert_eq!(
        entity::account::Entity::find().count(&conn).await.unwrap(),
        1
    );
    assert_eq!(entity::user::Entity::find().count(&conn).await.unwrap(), 1);
    assert_eq!(
        entity::phone_line::Entity::find()
            .count(&conn)
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        entity::storefront::Entity::find()
            .count(&conn)
            .await
            .unwrap(),
        agentic_api::discovery::demo_sellers::STOREFRONTS.len() as u64
    );
}

#[actix_web::test]
async fn migrate_applies_the_schema_and_is_repeatable() {
    let (db, _dir) = fresh_database().await;
    for _ in 0..2 {
        let out = cli(&db, &["migrate"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let conn = agentic_api::db::connect(&db).await.unwrap();
    assert_eq!(
        entity::account::Entity::find().count(&conn).await.unwrap(),
        0
    );
}

#[actix_web::test]
async fn sigterm_closes_open_room_streams_with_an_error_event_then_exits() {
    let (db, _dir) = fresh_database().await;
    let mut served = serve_with(&db, &["--demo"], &[], Stdio::null());
    let base = served.base.clone();
    let key = served
        .lines
        .iter()
        .find_map(|l| l.split_whitespace().find(|w| w.starts_with("agk_")))
        .expect("demo key printed")
        .to_string();
    let client = awc::Client::default();
    let mut res = client
        .post(format!("{base}/api/v2/assistant/conversations"))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .send_json(&serde_json::json!({}))
        .await
        .unwrap();
    let created: Value = res.json().await.unwrap();
    let uid = created["data"]["conversation"]["conversationUid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut stream = client
        .get(format!(
            "{base}/api/v2/assistant/conversations/{uid}/events"
        ))
        .insert_header(("Authorization", format!("Bearer {key}")))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let reader = actix_rt::spawn(async move {
        let mut text = String::new();
        while let Some(Ok(chunk)) = futures_util::StreamExt::next(&mut stream).await {
            text.push_str(&String::from_utf8_lossy(&chunk));
        }
        text
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert!(sigterm_and_wait(&mut served.child).success());
    let text = tokio::time::timeout(std::time::Duration::from_secs(10), reader)
        .await
        .expect("stream ended")
        .unwrap();
    assert!(text.contains("event: ready"), "{text}");
    let tail = &text[text
        .find("event: error")
        .expect("error event before the end")..];
    assert!(tail.contains("shutting down"), "{tail}");
}

#[actix_web::test]
async fn sqlite_is_durable_by_default_and_normal_is_an_opt_in() {
    // A SQLite setting: checked on a SQLite file whatever the test backend.
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/sync.db?mode=rwc", dir.path().display());
    let cases: [(&[&str], i32); 3] = [
        (&[], 2),
        (&["--sqlite-synchronous", "normal"], 1),
        (&["--sqlite-synchronous", "full"], 2),
    ];
    for (flags, want) in cases {
        let mut argv = vec![
            "agentic-api",
            "--database-url",
            &url,
            "--bind",
            "127.0.0.1:0",
            "--metrics-bind",
            "127.0.0.1:0",
        ];
        argv.extend_from_slice(flags);
        argv.push("serve");
        let parsed = agentic_api::cli::Cli::try_parse_from(&argv).unwrap();
        let app = agentic_api::Application::build(parsed.config)
            .await
            .unwrap();
        // The pool's connections all share the setting; any one answers.
        let row = app
            .state()
            .db
            .query_one_raw(Statement::from_string(
                DbBackend::Sqlite,
                "PRAGMA synchronous",
            ))
            .await
            .unwrap()
            .unwrap();
        let level: i32 = row.try_get_by_index(0).unwrap();
        assert_eq!(level, want, "PRAGMA synchronous with {flags:?}");
    }

    // Anything else is refused before the database is opened.
    let path = dir.path().join("refused.db");
    let out = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .arg("migrate")
        .env(
            "AGENTIC_DATABASE_URL",
            format!("sqlite://{}?mode=rwc", path.display()),
        )
        .env("AGENTIC_SQLITE_SYNCHRONOUS", "off")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "stderr: {err}");
    assert!(
        err.contains("'off'") && err.contains("full, normal"),
        "{err}"
    );
    assert!(!path.exists(), "nothing opened");
}

#[test]
fn a_sqlite_file_that_does_not_exist_is_refused_with_the_fix_named() {
    // A SQLite URL: checked on a SQLite file whatever the test backend.
    let dir = tempfile::tempdir().unwrap();
    let run = |url: String, command: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
            .arg(command)
            .env("AGENTIC_DATABASE_URL", url)
            .env("AGENTIC_BIND", "127.0.0.1:0")
            .env("AGENTIC_METRICS_BIND", "")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let file = dir.path().join("typo.db");
    for command in ["migrate", "serve"] {
        let err = run(format!("sqlite://{}", file.display()), command);
        assert!(
            err.contains("does not exist") && err.contains("?mode=rwc"),
            "{command}: {err}"
        );
        assert!(!file.exists(), "nothing created");
    }
    let err = run(format!("sqlite://{}?mode=ro", file.display()), "migrate");
    assert!(
        err.contains("does not exist") && err.contains("read-only"),
        "{err}"
    );
    let nested = dir.path().join("no-such-dir").join("a.db");
    let err = run(format!("sqlite://{}?mode=rwc", nested.display()), "migrate");
    assert!(
        err.contains(&format!(
            "{} does not exist",
            nested.parent().unwrap().display()
        )),
        "{err}"
    );
    // As the message says, `?mode=rwc` creates it.
    let out = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .arg("migrate")
        .env(
            "AGENTIC_DATABASE_URL",
            format!("sqlite://{}?mode=rwc", file.display()),
        )
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(file.exists());
}

#[actix_web::test]
async fn an_admin_write_waits_for_a_concurrent_writer_instead_of_failing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    // Another writer (as the server would be) holds the write lock.
    let holder = agentic_api::db::connect(&app.database_url).await.unwrap();
    let txn = agentic_api::db::begin_write(&holder).await.unwrap();
    tenancy::create_account(&txn, NewAccount::named("Held"))
        .await
        .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .args([
            "admin",
            "provision-line",
            "--account",
            &t.account_id,
            "--number",
            "+14155550188",
            "--kind",
            "sms",
        ])
        .env("AGENTIC_DATABASE_URL", &app.database_url)
        .env("AGENTIC_LOG", "agentic_api=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Once the CLI is about to begin its write, keep the lock ~1 s longer so
    // its transaction runs into it.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    while !seen.contains("beginning a write transaction") {
        if stderr.read_line(&mut seen).unwrap() == 0 {
            break;
        }
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    txn.commit().await.unwrap();
    let rest = std::thread::spawn(move || {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut s).ok();
        s
    });
    let out = child.wait_with_output().unwrap();
    let stderr = seen + &rest.join().unwrap();
    assert!(out.status.success(), "stderr: {stderr}");
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(line["endpointId"].is_string(), "{line}");
    assert_eq!(
        entity::phone_line::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        1
    );
    assert!(
        entity::account::Entity::find()
            .filter(entity::account::Column::Name.eq("Held"))
            .one(&app.db)
            .await
            .unwrap()
            .is_some(),
        "the holder's write is kept too"
    );
}

async fn pending_migrations(conn: &sea_orm::DatabaseConnection) -> usize {
    Migrator::get_pending_migrations_read_only(conn)
        .await
        .unwrap()
        .len()
}

#[actix_web::test]
async fn instances_migrating_one_fresh_database_together_all_succeed() {
    let (url, _dir) = fresh_database().await;
    let mut conns = Vec::new();
    for _ in 0..4 {
        conns.push(agentic_api::db::connect(&url).await.unwrap());
    }
    let results = futures_util::future::join_all(conns.iter().map(agentic_api::db::migrate)).await;
    for r in results {
        r.unwrap();
    }
    let conn = &conns[0];
    assert_eq!(pending_migrations(conn).await, 0);
    let recorded = conn
        .query_one_raw(Statement::from_string(
            conn.get_database_backend(),
            "SELECT COUNT(*) FROM seaql_migrations",
        ))
        .await
        .unwrap()
        .unwrap()
        .try_get_by_index::<i64>(0)
        .unwrap();
    assert_eq!(
        recorded as usize,
        Migrator::migrations().len(),
        "each migration applied once"
    );
    // Tables of the first and the last migration are there.
    entity::account::Entity::find().count(conn).await.unwrap();
    assert!(entity::brand::Entity::find().count(conn).await.unwrap() > 0);
}

#[actix_web::test]
async fn admin_migrates_a_fresh_database_but_not_a_partly_migrated_one() {
    // Fresh: nothing applied, so no server can be using it.
    let (fresh, _d1) = fresh_database().await;
    json_out(&cli(
        &fresh,
        &["admin", "create-account", "--name", "First"],
    ));
    let conn = agentic_api::db::connect(&fresh).await.unwrap();
    assert_eq!(pending_migrations(&conn).await, 0);
    assert_eq!(
        entity::account::Entity::find().count(&conn).await.unwrap(),
        1
    );

    // Partly migrated: a server of another version may be running on it.
    let (db, _d2) = fresh_database().await;
    let conn = agentic_api::db::connect(&db).await.unwrap();
    let total = Migrator::migrations().len();
    Migrator::up(&conn, Some(total as u32 - 1)).await.unwrap();
    let out = cli(&db, &["admin", "create-account", "--name", "Acme"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "stderr: {err}");
    assert!(out.stdout.is_empty());
    assert!(
        err.contains("agentic-api migrate") && err.contains("--migrate"),
        "{err}"
    );
    assert_eq!(pending_migrations(&conn).await, 1, "nothing migrated");
    assert_eq!(
        entity::account::Entity::find().count(&conn).await.unwrap(),
        0,
        "nothing written"
    );

    // Asked to, it migrates, then acts; the flag goes on either side.
    json_out(&cli(
        &db,
        &["admin", "--migrate", "create-account", "--name", "Acme"],
    ));
    assert_eq!(pending_migrations(&conn).await, 0);
    json_out(&cli(
        &db,
        &["admin", "create-account", "--name", "Beta", "--migrate"],
    ));
    assert_eq!(
        entity::account::Entity::find().count(&conn).await.unwrap(),
        2
    );
}

#[test]
fn timeouts_and_bounds_out_of_range_are_refused_at_start() {
    let cases = [
        (
            "AGENTIC_DISCOVERY_TIMEOUT",
            "discovery-timeout",
            ["0", "301", "soon"],
        ),
        (
            "AGENTIC_CATALOG_FEED_TIMEOUT",
            "catalog-feed-timeout",
            ["0", "301", "soon"],
        ),
        (
            "AGENTIC_CATALOG_FEED_MAX_MB",
            "catalog-feed-max-mb",
            ["0", "257", "big"],
        ),
    ];
    for (var, flag, values) in cases {
        for bad in values {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("t.db");
            let out = Command::new(env!("CARGO_BIN_EXE_agentic-api"))
                .arg("migrate")
                .env(
                    "AGENTIC_DATABASE_URL",
                    format!("sqlite://{}?mode=rwc", path.display()),
                )
                .env(var, bad)
                .output()
                .unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success(), "{var}={bad}: {err}");
            assert!(err.contains(flag), "{var}={bad}: {err}");
            assert!(!path.exists(), "nothing opened");
        }
    }
}
