//! `/metrics`: Prometheus text with request series by route pattern, pool
//! usage and live gauges, on a listener of its own (not the API's).
//!
//! The recorder is per process and test apps share this one, so in-process
//! tests assert on series presence and increases; exact gauge values are
//! checked against the real binary, which has a process of its own.

use std::collections::HashMap;
use std::process::Stdio;
use std::time::Duration;

use actix_web::http::Method;
use futures_util::StreamExt;
use serde_json::json;

use agentic_api::auth::tenancy::{self, NewAccount, NewUser};

use crate::helpers::*;

/// Samples of `name` whose labels include all of `want`, summed; `None` when
/// no such series exists.
pub fn sample(text: &str, name: &str, want: &[(&str, &str)]) -> Option<f64> {
    let mut found = None;
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let Some((series, value)) = line.rsplit_once(' ') else {
            continue;
        };
        let (metric, labels) = match series.split_once('{') {
            Some((m, rest)) => (m, rest.trim_end_matches('}')),
            None => (series, ""),
        };
        if metric != name {
            continue;
        }
        let labels: HashMap<&str, &str> = labels
            .split(',')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k, v.trim_matches('"')))
            .collect();
        if want.iter().all(|(k, v)| labels.get(k) == Some(v)) {
            *found.get_or_insert(0.0) += value.parse::<f64>().unwrap();
        }
    }
    found
}

/// `GET /metrics` on the app's metrics listener.
async fn scrape(app: &TestApp) -> String {
    let port = app.metrics_port.expect("metrics are on");
    let mut res = app
        .client
        .get(format!("http://127.0.0.1:{port}/metrics"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let content_type = res.headers().get("content-type").unwrap().to_str().unwrap();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    assert!(res.headers().get("ratelimit-limit").is_none());
    String::from_utf8(res.body().await.unwrap().to_vec()).unwrap()
}

#[actix_web::test]
async fn requests_are_counted_by_route_pattern_method_and_status() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let route = "/api/v2/buyer/advertisers/{advertiserId}";
    let labels = [("route", route), ("method", "GET"), ("status", "404")];
    let unmatched = [("route", "unmatched"), ("method", "GET"), ("status", "404")];
    let before = scrape(&app).await;
    let count = |text: &str, l: &[(&str, &str)]| {
        sample(text, "agentic_http_requests_total", l).unwrap_or(0.0)
    };
    let timed = |text: &str, l: &[(&str, &str)]| {
        sample(text, "agentic_http_request_duration_seconds_count", l).unwrap_or(0.0)
    };

    let mut ids = Vec::new();
    for _ in 0..3 {
        let id = uuid::Uuid::new_v4().to_string();
        app.get(&format!("/api/v2/buyer/advertisers/{id}"), &t.key)
            .await
            .assert_error(404, "NOT_FOUND");
        ids.push(id);
    }
    let stray = format!("/api/v2/nothing/{}", uuid::Uuid::new_v4());
    app.request(Method::GET, &stray, None, None)
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(app.get("/api/v2/me", &t.key).await.status, 200);

    let after = scrape(&app).await;
    // Other tests share the recorder, so counts rise by at least ours.
    assert!(
        count(&after, &labels) >= count(&before, &labels) + 3.0,
        "{after}"
    );
    assert!(
        timed(&after, &labels) >= timed(&before, &labels) + 3.0,
        "{after}"
    );
    assert!(count(&after, &unmatched) >= count(&before, &unmatched) + 1.0);
    assert!(
        count(
            &after,
            &[
                ("route", "/api/v2/me"),
                ("method", "GET"),
                ("status", "200")
            ]
        ) >= 1.0
    );
    // Patterns, never raw paths: ids do not become label values.
    for id in &ids {
        assert!(!after.contains(id.as_str()), "raw path leaked: {id}");
    }
    assert!(!after.contains("/api/v2/nothing"));
    assert!(after.contains("agentic_http_request_duration_seconds_bucket{"));
}

#[actix_web::test]
async fn pool_usage_is_read_at_scrape_time() {
    let app = spawn_app().await;
    let text = scrape(&app).await;
    let size = sample(&text, "agentic_db_pool_connections", &[]).expect("pool size series");
    let idle = sample(&text, "agentic_db_pool_idle_connections", &[]).expect("idle series");
    let max = sample(&text, "agentic_db_pool_max_connections", &[]).expect("max series");
    assert!(size >= 1.0, "the app has used its pool: {size}");
    assert!(
        idle <= size && size <= max,
        "idle {idle} size {size} max {max}"
    );
}

#[actix_web::test]
async fn metrics_are_served_on_their_own_listener_only_unlimited_and_can_be_turned_off() {
    let app = spawn_app_with(|c| c.rate_limit_per_minute = 1).await;
    let port = app.metrics_port.unwrap();
    assert_ne!(port, app.port);
    for _ in 0..3 {
        assert!(scrape(&app).await.contains("agentic_db_pool_connections"));
    }
    // Nothing else on that listener...
    let res = app
        .client
        .get(format!("http://127.0.0.1:{port}/api/v2/me"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    // ...and no metrics on the API's.
    app.request(Method::GET, "/metrics", None, None)
        .await
        .assert_error(404, "NOT_FOUND");

    for off in [
        spawn_app_with(|c| c.metrics = false).await,
        spawn_app_with(|c| c.metrics_bind = String::new()).await,
    ] {
        assert_eq!(off.metrics_port, None);
        off.request(Method::GET, "/metrics", None, None)
            .await
            .assert_error(404, "NOT_FOUND");
    }
}

#[actix_web::test]
async fn the_binary_prints_the_metrics_address_and_refuses_a_taken_one() {
    let (db, _dir) = fresh_database().await;
    let served = serve(&db, &[], Stdio::null());
    let base = served.metrics_base().expect("metrics address printed");
    assert_ne!(base, served.base);
    let client = awc::Client::default();
    assert!(process_scrape(&client, &base).await.contains("# TYPE"));
    drop(served);

    let off = serve(&db, &[("AGENTIC_METRICS_BIND", "")], Stdio::null());
    assert_eq!(off.metrics_base(), None);
    drop(off);

    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .arg("serve")
        .env("AGENTIC_DATABASE_URL", &db)
        .env("AGENTIC_BIND", "127.0.0.1:0")
        .env("AGENTIC_METRICS_BIND", &addr)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&addr) && err.contains("AGENTIC_METRICS_BIND"),
        "{err}"
    );
}

async fn process_scrape(client: &awc::Client, base: &str) -> String {
    let mut res = client.get(format!("{base}/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    String::from_utf8(res.body().await.unwrap().to_vec()).unwrap()
}

#[actix_web::test]
async fn stream_and_room_gauges_follow_an_open_stream() {
    let (db, _dir) = fresh_database().await;
    let conn = agentic_api::db::connect(&db).await.unwrap();
    agentic_api::db::migrate(&conn).await.unwrap();
    let account = tenancy::create_account(&conn, NewAccount::named("Acme"))
        .await
        .unwrap();
    let mut keys = Vec::new();
    for (i, role) in ["admin", "member"].iter().enumerate() {
        let user = tenancy::create_user(
            &conn,
            NewUser {
                account_id: account.clone(),
                email: format!("u{i}@example.com"),
                name: format!("User {i}"),
                role: role.to_string(),
                password: None,
            },
        )
        .await
        .unwrap();
        keys.push(
            tenancy::create_api_key(&conn, user, &["platform:write".to_string()])
                .await
                .unwrap(),
        );
    }
    let (owner, mate) = (&keys[0], &keys[1]);
    let served = serve(&db, &[], Stdio::null());
    let base = &served.base;
    let metrics = &served.metrics_base().unwrap();
    let client = awc::Client::default();
    let open = |text: &str| {
        sample(
            text,
            "agentic_sse_streams_open",
            &[("kind", "conversation")],
        )
        .unwrap_or(0.0)
    };
    assert_eq!(open(&process_scrape(&client, metrics).await), 0.0);

    let mut res = client
        .post(format!("{base}/api/v2/assistant/conversations"))
        .insert_header(("Authorization", format!("Bearer {owner}")))
        .send_json(&json!({ "sharingEnabled": true }))
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    let created: serde_json::Value = res.json().await.unwrap();
    let uid = created["data"]["conversation"]["conversationUid"]
        .as_str()
        .unwrap()
        .to_string();
    let mut stream = client
        .get(format!(
            "{base}/api/v2/assistant/conversations/{uid}/events"
        ))
        .insert_header(("Authorization", format!("Bearer {mate}")))
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    let first = stream.next().await.unwrap().unwrap();
    assert!(String::from_utf8_lossy(&first).contains("event: ready"));

    let text = process_scrape(&client, metrics).await;
    assert_eq!(open(&text), 1.0, "{text}");
    assert_eq!(
        sample(&text, "agentic_rooms_open", &[]),
        Some(1.0),
        "{text}"
    );

    // Turning sharing off ends the teammate's stream on the server side.
    let res = client
        .patch(format!(
            "{base}/api/v2/assistant/conversations/{uid}/sharing"
        ))
        .insert_header(("Authorization", format!("Bearer {owner}")))
        .send_json(&json!({ "sharingEnabled": false }))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let mut rest = String::new();
    while let Some(chunk) = stream.next().await {
        rest.push_str(&String::from_utf8_lossy(&chunk.unwrap()));
    }
    assert!(rest.contains("event: error"), "{rest}");
    // The guard drops as the server finishes the body, which may land just
    // after the client has read its end.
    let mut now = open(&process_scrape(&client, metrics).await);
    for _ in 0..100 {
        if now == 0.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        now = open(&process_scrape(&client, metrics).await);
    }
    assert_eq!(now, 0.0);
}
