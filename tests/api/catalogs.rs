//! Catalogs: inline and URL feeds (JSON, CSV, partly bad, oversized, slow,
//! redirected) served by a real HTTP server on 127.0.0.1, versions and
//! health in the list, refresh, activation plans (preview writes nothing,
//! save stores, execute is idempotent per version), validation, tenancy,
//! the audit log, and the same operations through the dispatcher and MCP.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use actix_web::dev::ServerHandle;
use actix_web::{App, HttpRequest, HttpResponse, HttpServer, web};
use parking_lot::Mutex;
use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use agentic_api::ops::{OperationCall, dispatch};

use crate::helpers::*;

const AUDIT: &str = "/api/v2/buyer/audit-logs";

fn catalogs(adv: &str) -> String {
    format!("/api/v2/buyer/advertisers/{adv}/catalogs")
}

fn sync_path(adv: &str) -> String {
    format!("{}/sync", catalogs(adv))
}

fn catalog(adv: &str, cat: &str, tail: &str) -> String {
    format!("{}/{cat}/{tail}", catalogs(adv))
}

/// One canned answer of the feed server.
#[derive(Clone)]
struct Answer {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
    delay: Duration,
    location: Option<String>,
}

fn ok(content_type: &'static str, body: impl Into<Vec<u8>>) -> Answer {
    Answer {
        status: 200,
        content_type,
        body: body.into(),
        delay: Duration::ZERO,
        location: None,
    }
}

#[derive(Default)]
struct FeedState {
    answers: Mutex<HashMap<String, Answer>>,
    hits: Mutex<HashMap<String, usize>>,
}

/// A feed server on 127.0.0.1: answers each path as it is told and counts hits.
struct FeedServer {
    base: String,
    state: Arc<FeedState>,
    handle: ServerHandle,
}

impl Drop for FeedServer {
    fn drop(&mut self) {
        let handle = self.handle.clone();
        actix_rt::spawn(async move { handle.stop(false).await });
    }
}

async fn serve(req: HttpRequest, state: web::Data<FeedState>) -> HttpResponse {
    let path = req.path().to_string();
    *state.hits.lock().entry(path.clone()).or_default() += 1;
    let answer = state.answers.lock().get(&path).cloned();
    let Some(a) = answer else {
        return HttpResponse::NotFound().finish();
    };
    if !a.delay.is_zero() {
        tokio::time::sleep(a.delay).await;
    }
    let mut res = HttpResponse::build(actix_web::http::StatusCode::from_u16(a.status).unwrap());
    res.insert_header(("Content-Type", a.content_type));
    if let Some(l) = a.location {
        res.insert_header(("Location", l));
    }
    res.body(a.body)
}

impl FeedServer {
    async fn start() -> FeedServer {
        let state = Arc::new(FeedState::default());
        let data = web::Data::from(Arc::clone(&state));
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(web::route().to(serve))
        })
        .workers(1)
        .disable_signals()
        .bind(("127.0.0.1", 0))
        .unwrap();
        let port = server.addrs()[0].port();
        let server = server.run();
        let handle = server.handle();
        actix_rt::spawn(server);
        FeedServer {
            base: format!("http://127.0.0.1:{port}"),
            state,
            handle,
        }
    }

    fn set(&self, path: &str, answer: Answer) {
        self.state.answers.lock().insert(path.into(), answer);
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    fn hits(&self, path: &str) -> usize {
        self.state.hits.lock().get(path).copied().unwrap_or(0)
    }
}

fn item(id: &str, title: &str, amount: f64) -> Value {
    json!({"item_id": id, "title": title, "price": {"amount": amount, "currency": "USD"},
           "url": format!("https://shop.example/{id}"), "image_url": format!("https://img.example/{id}.jpg"),
           "availability": "in_stock"})
}

/// An app whose feed fetches give up after 1 s and 64 KiB.
async fn app() -> TestApp {
    spawn_app_with(|c| {
        c.catalog_feeds.timeout = Duration::from_secs(1);
        c.catalog_feeds.max_bytes = 64 * 1024;
    })
    .await
}

async fn sync(app: &TestApp, t: &Tenant, adv: &str, body: Value) -> Value {
    let res = app.post(&sync_path(adv), &t.key, &body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data()["catalogs"].clone()
}

async fn list(app: &TestApp, t: &Tenant, adv: &str) -> Vec<Value> {
    let res = app.get(&catalogs(adv), &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().as_array().unwrap().clone()
}

fn by_name<'a>(list: &'a [Value], name: &str) -> &'a Value {
    list.iter().find(|c| c["name"] == name).unwrap()
}

/// Rows of every catalog table plus audit entries: what "writes nothing" compares.
async fn footprint(app: &TestApp) -> [u64; 5] {
    [
        entity::catalog::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        entity::catalog_version::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        entity::catalog_activation_plan::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        entity::catalog_activation_job::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        entity::audit_log::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
    ]
}

#[actix_web::test]
async fn inline_items_sync_into_a_version_and_bad_items_are_reported_by_index() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let out = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [{"name": "Shoes", "items": [
            item("sku-1", "Runner", 89.5),
            {"item_id": "sku-2", "title": "Bad price", "price": {"amount": "x", "currency": "USD"}},
            {"id": "sku-3", "title": "Trail", "price": "120 usd"},
            {"title": "No id"},
        ]}]}),
    )
    .await;
    let r = &out[0];
    assert_eq!(r["action"], "created", "{r}");
    assert_eq!(r["status"], "synced");
    assert_eq!(r["version"], 1);
    assert_eq!(r["itemCount"], 2);
    assert_eq!(r["rejectedCount"], 2);
    assert_eq!(
        r["rejected"],
        json!([
            {"index": 1, "itemId": "sku-2", "field": "price.amount", "message": "must be a number, 0 or more"},
            {"index": 3, "field": "item_id", "message": "is required (item_id or id)"},
        ])
    );
    let id = r["catalogId"].as_str().unwrap();
    assert!(id.starts_with("cat_"), "{id}");

    let listed = list(&app, &t, &adv).await;
    assert_eq!(listed.len(), 1);
    let c = &listed[0];
    assert_eq!(c["id"], id);
    assert_eq!(c["advertiserId"], adv);
    assert_eq!(c["type"], "product");
    assert_eq!(
        c["source"],
        json!({"kind": "inline", "feedUrl": null, "format": null})
    );
    assert_eq!(c["syncStatus"], "synced");
    assert_eq!(c["itemCount"], 2);
    assert_eq!(c["latestVersion"], 1);
    assert_eq!(
        c["health"],
        json!({"status": "degraded", "itemCount": 2, "rejectedCount": 2})
    );
    assert!(c["lastSyncedAt"].is_string());

    // The same name again is the same catalog, one version up.
    let again = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [{"name": "Shoes", "type": "product", "items": [item("sku-1", "Runner", 89.5)]}]}),
    )
    .await;
    assert_eq!(again[0]["catalogId"], id);
    assert_eq!(again[0]["action"], "updated");
    assert_eq!(again[0]["version"], 2);
    let c = &list(&app, &t, &adv).await[0];
    assert_eq!(c["health"]["status"], "healthy");
    assert_eq!(c["latestVersion"], 2);

    // Every change is in the audit log.
    let audit = app.get(AUDIT, &t.key).await;
    let actions: Vec<&str> = audit
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["resourceType"] == "catalog")
        .map(|e| e["action"].as_str().unwrap())
        .collect();
    assert_eq!(actions, vec!["catalog.synced", "catalog.created"]);
    let synced = &audit.data()[0];
    assert_eq!(synced["resourceId"], id);
    assert_eq!(
        synced["changes"]["latestVersion"],
        json!({"from": 1, "to": 2})
    );
}

#[actix_web::test]
async fn json_and_csv_feeds_are_fetched_and_bad_rows_never_fail_the_feed() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let feeds = FeedServer::start().await;
    feeds.set(
        "/good.json",
        ok(
            "application/json",
            json!({"items": [item("a", "A", 1.0), item("b", "B", 2.0), item("c", "C", 3.0)]})
                .to_string(),
        ),
    );
    feeds.set(
        "/good.csv",
        ok(
            "text/csv; charset=utf-8",
            "id,title,price,currency,url,availability\n\
             s1,Sofa,499.00,EUR,https://shop.example/s1,in stock\n\
             s2,\"Table, oak\",250,EUR,https://shop.example/s2,preorder\n",
        ),
    );
    feeds.set(
        "/partial.json",
        ok(
            "application/json",
            json!([item("p1", "One", 1.0), {"item_id": "p2"}, item("p3", "Three", 3.0),
                   {"item_id": "p4", "title": "Bad URL", "url": "javascript:alert(1)"}, item("p1", "Dup", 1.0)])
            .to_string(),
        ),
    );
    // No content type and a .csv path: inferred as CSV.
    feeds.set(
        "/rows.csv",
        ok(
            "application/octet-stream",
            "item_id,title\nr1,Row one\nr2\n",
        ),
    );
    let out = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [
            {"name": "Json", "feedUrl": feeds.url("/good.json")},
            {"name": "Csv", "feedUrl": feeds.url("/good.csv")},
            {"name": "Partial", "feedUrl": feeds.url("/partial.json"), "format": "json"},
            {"name": "Rows", "type": "store", "feedUrl": feeds.url("/rows.csv")},
        ]}),
    )
    .await;
    assert_eq!(out[0]["status"], "synced", "{out}");
    assert_eq!(out[0]["itemCount"], 3);
    assert_eq!(out[1]["status"], "synced", "{out}");
    assert_eq!(out[1]["itemCount"], 2);
    assert_eq!(out[1]["rejectedCount"], 0, "{out}");
    assert_eq!(out[2]["itemCount"], 2);
    assert_eq!(out[2]["rejectedCount"], 3);
    let at: Vec<(i64, &str)> = out[2]["rejected"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["index"].as_i64().unwrap(), r["field"].as_str().unwrap()))
        .collect();
    assert_eq!(at, vec![(1, "title"), (3, "url"), (4, "item_id")]);
    assert_eq!(out[3]["itemCount"], 1);
    assert_eq!(out[3]["rejected"][0]["index"], 1, "{out}");

    let listed = list(&app, &t, &adv).await;
    let csv = by_name(&listed, "Csv");
    assert_eq!(
        csv["source"],
        json!({"kind": "url", "feedUrl": feeds.url("/good.csv"), "format": null})
    );
    assert_eq!(by_name(&listed, "Rows")["type"], "store");
    assert_eq!(by_name(&listed, "Partial")["health"]["status"], "degraded");
    assert_eq!(by_name(&listed, "Json")["health"]["status"], "healthy");

    // Stored normalised: CSV prices as {amount, currency}, availability as a value.
    let v = entity::catalog_version::Entity::find()
        .all(&app.db)
        .await
        .unwrap()
        .into_iter()
        .find(|v| v.catalog_id == csv["id"].as_str().unwrap())
        .unwrap();
    assert_eq!(v.format, "csv");
    let items: Value = serde_json::from_str(&v.items).unwrap();
    assert_eq!(
        items[0]["price"],
        json!({"amount": 499.0, "currency": "EUR"})
    );
    assert_eq!(items[0]["availability"], "in_stock");
    assert_eq!(items[1]["title"], "Table, oak");
}

#[actix_web::test]
async fn oversized_slow_and_redirected_feeds_fail_only_their_catalog() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let feeds = FeedServer::start().await;
    feeds.set(
        "/good.json",
        ok("application/json", json!([item("a", "A", 1.0)]).to_string()),
    );
    let big: Vec<Value> = (0..2000)
        .map(|i| item(&format!("big-{i}"), "An item with a title", 1.0))
        .collect();
    feeds.set(
        "/big.json",
        ok("application/json", Value::Array(big).to_string()),
    );
    feeds.set(
        "/slow.json",
        Answer {
            delay: Duration::from_secs(3),
            ..ok("application/json", "[]")
        },
    );
    // A redirect to an inside address (here the feed server's own loopback
    // address, which this test app may otherwise reach) is never followed.
    feeds.set(
        "/redirect.json",
        Answer {
            status: 302,
            location: Some(feeds.url("/inside.json")),
            ..ok("text/plain", "")
        },
    );
    feeds.set(
        "/inside.json",
        ok("application/json", json!([item("x", "X", 1.0)]).to_string()),
    );
    feeds.set("/broken.json", ok("application/json", "[{\"item_id\": "));

    let started = std::time::Instant::now();
    let out = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [
            {"name": "Good", "feedUrl": feeds.url("/good.json")},
            {"name": "Big", "feedUrl": feeds.url("/big.json")},
            {"name": "Slow", "feedUrl": feeds.url("/slow.json")},
            {"name": "Redirect", "feedUrl": feeds.url("/redirect.json")},
            {"name": "Broken", "feedUrl": feeds.url("/broken.json")},
            {"name": "Missing", "feedUrl": feeds.url("/missing.json")},
        ]}),
    )
    .await;
    // Feeds are fetched together: the slow one's timeout bounds the call.
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(out[0]["status"], "synced", "{out}");
    let codes: Vec<&str> = out
        .as_array()
        .unwrap()
        .iter()
        .skip(1)
        .map(|r| r["error"]["code"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(
        codes,
        vec![
            "FEED_TOO_LARGE",
            "FEED_TIMEOUT",
            "FEED_HTTP_ERROR",
            "FEED_INVALID",
            "FEED_HTTP_ERROR"
        ],
        "{out}"
    );
    for r in out.as_array().unwrap().iter().skip(1) {
        assert_eq!(r["status"], "failed", "{r}");
        assert!(r["version"].is_null());
    }
    assert!(
        out[3]["error"]["message"]
            .as_str()
            .unwrap()
            .contains("redirects are not followed"),
        "{out}"
    );
    assert_eq!(feeds.hits("/redirect.json"), 1);
    assert_eq!(feeds.hits("/inside.json"), 0, "the redirect was followed");

    let listed = list(&app, &t, &adv).await;
    let big = by_name(&listed, "Big");
    assert_eq!(big["syncStatus"], "failed");
    assert_eq!(big["health"]["status"], "failing");
    assert!(big["latestVersion"].is_null());
    assert!(
        big["lastError"]
            .as_str()
            .unwrap()
            .starts_with("FEED_TOO_LARGE"),
        "{big}"
    );
    assert_eq!(by_name(&listed, "Good")["syncStatus"], "synced");
    // A failure after a good version keeps serving it (degraded).
    feeds.set("/good.json", ok("application/json", "not json"));
    let good = by_name(&listed, "Good")["id"].as_str().unwrap().to_string();
    let res = app
        .post(&catalog(&adv, &good, "refresh"), &t.key, &json!({}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["sync"]["status"], "failed");
    assert_eq!(res.data()["catalog"]["health"]["status"], "degraded");
    assert_eq!(res.data()["catalog"]["latestVersion"], 1);
    assert_eq!(res.data()["catalog"]["itemCount"], 1);
}

#[actix_web::test]
async fn private_and_plain_http_feed_urls_are_refused_under_the_strict_policy() {
    let app = spawn_app_with(|c| c.allow_insecure_urls = false).await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let before = footprint(&app).await;
    for url in [
        "http://127.0.0.1:9/feed.json",
        "https://127.0.0.1/feed.json",
        "https://10.0.0.7/feed.json",
        "https://169.254.169.254/latest/meta-data",
        "https://localhost/feed.json",
    ] {
        let res = app
            .post(
                &sync_path(&adv),
                &t.key,
                &json!({"catalogs": [{"name": "Inside", "feedUrl": url}]}),
            )
            .await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], "catalogs[0].feedUrl", "{url}");
    }
    assert_eq!(footprint(&app).await, before);
}

#[actix_web::test]
async fn refresh_adds_versions_and_inline_catalogs_cannot_be_refreshed() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let feeds = FeedServer::start().await;
    feeds.set(
        "/feed.json",
        ok("application/json", json!([item("a", "A", 1.0)]).to_string()),
    );
    let out = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [{"name": "Feed", "feedUrl": feeds.url("/feed.json")},
                            {"name": "Inline", "items": [item("a", "A", 1.0)]}]}),
    )
    .await;
    let cat = out[0]["catalogId"].as_str().unwrap();
    let inline = out[1]["catalogId"].as_str().unwrap();

    feeds.set(
        "/feed.json",
        ok(
            "application/json",
            json!([item("a", "A", 1.0), item("b", "B", 2.0)]).to_string(),
        ),
    );
    // No body at all is the same as {}.
    let res = app
        .request(
            actix_web::http::Method::POST,
            &catalog(&adv, cat, "refresh"),
            Some(&t.key),
            None,
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["sync"]["version"], 2);
    assert_eq!(res.data()["sync"]["action"], "updated");
    assert_eq!(res.data()["catalog"]["itemCount"], 2);
    assert!(res.data()["activation"].is_null());
    let res = app
        .post(&catalog(&adv, cat, "refresh"), &t.key, &json!({}))
        .await;
    assert_eq!(res.data()["sync"]["version"], 3);
    assert_eq!(feeds.hits("/feed.json"), 3);
    let listed = list(&app, &t, &adv).await;
    assert_eq!(by_name(&listed, "Feed")["latestVersion"], 3);

    let before = footprint(&app).await;
    let res = app
        .post(&catalog(&adv, inline, "refresh"), &t.key, &json!({}))
        .await;
    res.assert_error(409, "CONFLICT");
    assert_eq!(res.body["error"]["details"]["reason"], "inline_catalog");
    assert_eq!(footprint(&app).await, before);

    let audit = app.get(AUDIT, &t.key).await;
    assert_eq!(audit.data()[0]["action"], "catalog.refreshed");
    assert_eq!(
        audit.data()[0]["changes"]["latestVersion"],
        json!({"from": 2, "to": 3})
    );
}

#[actix_web::test]
async fn preview_writes_nothing_unless_saved_and_execute_records_pending_jobs_once_per_version() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let feeds = FeedServer::start().await;
    feeds.set(
        "/feed.json",
        ok(
            "application/json",
            json!([
                item("a", "A", 1.0),
                item("b", "B", 2.0),
                item("c", "C", 3.0)
            ])
            .to_string(),
        ),
    );
    let out = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [{"name": "Feed", "feedUrl": feeds.url("/feed.json")}]}),
    )
    .await;
    let cat = out[0]["catalogId"].as_str().unwrap();
    let preview = catalog(&adv, cat, "activation-plan/preview");
    let execute = catalog(&adv, cat, "activation-plan/execute");

    // A preview: the plan, and nothing written.
    let listed_before = list(&app, &t, &adv).await;
    let before = footprint(&app).await;
    let res = app.post(&preview, &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let plan = res.data().clone();
    assert_eq!(plan["fromVersion"], Value::Null);
    assert_eq!(plan["toVersion"], 1);
    assert_eq!(plan["activate"], json!(["a", "b", "c"]));
    assert_eq!(
        plan["summary"],
        json!({"activate": 3, "update": 0, "deactivate": 0, "unchanged": 0})
    );
    assert!(plan["planId"].is_null());
    assert_eq!(footprint(&app).await, before);
    assert_eq!(list(&app, &t, &adv).await, listed_before);

    // save: true stores it.
    let res = app.post(&preview, &t.key, &json!({"save": true})).await;
    let plan_id = res.data()["planId"].as_str().unwrap().to_string();
    assert!(plan_id.starts_with("plan_"));
    let saved = entity::catalog_activation_plan::Entity::find_by_id(plan_id.clone())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(saved.catalog_id, cat);
    assert_eq!(saved.to_version, 1);
    let audit = app.get(AUDIT, &t.key).await;
    assert_eq!(audit.data()[0]["action"], "catalog.activation_plan_saved");

    // A dry run writes nothing.
    let before = footprint(&app).await;
    let res = app.post(&execute, &t.key, &json!({"dryRun": true})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["dryRun"], true);
    assert!(res.data()["jobId"].is_null());
    assert_eq!(res.data()["plan"]["summary"]["activate"], 3);
    assert_eq!(footprint(&app).await, before);

    // An unknown planId is not found, and writes nothing.
    let res = app
        .post(&execute, &t.key, &json!({"planId": "plan_unknown"}))
        .await;
    assert_eq!(res.status, 404, "{}", res.body);
    assert_eq!(res.body["error"]["code"], "NOT_FOUND");
    assert_eq!(footprint(&app).await, before);

    // Execute the saved plan: one pending job; again: the same job, nothing new.
    let res = app
        .post(&execute, &t.key, &json!({"planId": plan_id}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let job = res.data()["jobId"].as_str().unwrap().to_string();
    assert_eq!(res.data()["status"], "pending");
    assert_eq!(res.data()["created"], true);
    assert_eq!(res.data()["plan"]["toVersion"], 1);
    assert_eq!(res.data()["plan"]["planId"], plan_id.as_str());
    let after_first = footprint(&app).await;
    let again = app
        .request(actix_web::http::Method::POST, &execute, Some(&t.key), None)
        .await;
    assert_eq!(again.data()["jobId"], job.as_str());
    assert_eq!(again.data()["created"], false);
    assert_eq!(footprint(&app).await, after_first);
    let jobs = entity::catalog_activation_job::Entity::find()
        .all(&app.db)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].status, "pending");
    assert_eq!(jobs[0].version, 1);
    let c = &list(&app, &t, &adv).await[0];
    assert_eq!(c["activatedVersion"], 1);
    let audit = app.get(AUDIT, &t.key).await;
    assert_eq!(audit.data()[0]["action"], "catalog.activation_executed");

    // Concurrent executions of one version still make one job.
    feeds.set(
        "/feed.json",
        ok(
            "application/json",
            json!([
                item("a", "A", 1.0),
                item("b", "B changed", 2.0),
                item("d", "D", 4.0)
            ])
            .to_string(),
        ),
    );
    let res = app
        .post(&catalog(&adv, cat, "refresh"), &t.key, &json!({}))
        .await;
    assert_eq!(res.data()["sync"]["version"], 2);
    let res = app.post(&preview, &t.key, &json!({})).await;
    assert_eq!(res.data()["fromVersion"], 1);
    assert_eq!(res.data()["activate"], json!(["d"]));
    assert_eq!(res.data()["update"], json!(["b"]));
    assert_eq!(res.data()["deactivate"], json!(["c"]));
    assert_eq!(res.data()["summary"]["unchanged"], 1);
    // The plan saved for version 1 is stale now: refused, nothing written.
    let before = footprint(&app).await;
    let res = app
        .post(&execute, &t.key, &json!({"planId": plan_id}))
        .await;
    assert_eq!(res.status, 409, "{}", res.body);
    assert_eq!(res.body["error"]["details"]["reason"], "plan_stale");
    assert_eq!(
        res.body["error"]["details"]["current"],
        json!({"fromVersion": 1, "toVersion": 2})
    );
    assert_eq!(footprint(&app).await, before);
    let empty = json!({});
    let (r1, r2) = futures_util::join!(
        app.post(&execute, &t.key, &empty),
        app.post(&execute, &t.key, &empty)
    );
    assert_eq!(r1.status, 200, "{}", r1.body);
    assert_eq!(r2.status, 200, "{}", r2.body);
    assert_eq!(r1.data()["jobId"], r2.data()["jobId"]);
    assert_eq!(
        entity::catalog_activation_job::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        2
    );

    // refresh with executeActivation runs the new version's plan too.
    feeds.set(
        "/feed.json",
        ok("application/json", json!([item("a", "A", 1.0)]).to_string()),
    );
    let res = app
        .post(
            &catalog(&adv, cat, "refresh"),
            &t.key,
            &json!({"executeActivation": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let activation = &res.data()["activation"];
    assert_eq!(activation["created"], true, "{activation}");
    assert_eq!(activation["plan"]["fromVersion"], 2);
    assert_eq!(activation["plan"]["toVersion"], 3);
    assert_eq!(activation["plan"]["deactivate"], json!(["b", "d"]));
    assert_eq!(res.data()["catalog"]["activatedVersion"], 3);
}

#[actix_web::test]
async fn a_catalog_without_a_version_has_no_plan() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let feeds = FeedServer::start().await;
    let out = sync(
        &app,
        &t,
        &adv,
        json!({"catalogs": [{"name": "Missing", "feedUrl": feeds.url("/missing.json")}]}),
    )
    .await;
    let cat = out[0]["catalogId"].as_str().unwrap();
    for tail in ["activation-plan/preview", "activation-plan/execute"] {
        let res = app
            .post(&catalog(&adv, cat, tail), &t.key, &json!({}))
            .await;
        res.assert_error(409, "CONFLICT");
        assert_eq!(res.body["error"]["details"]["reason"], "no_version");
    }
}

#[actix_web::test]
async fn invalid_requests_are_400_envelopes_naming_every_field_and_write_nothing() {
    let app = app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let before = footprint(&app).await;
    let res = app
        .post(
            &sync_path(&adv),
            &t.key,
            &json!({"catalogs": [
                {"items": []},
                {"name": "X", "type": "spaceship", "items": [], "feedUrl": "https://feeds.example/x.json"},
                {"name": "Y", "feedUrl": "ftp://feeds.example/y.csv", "format": "xml"},
                {"name": "Y", "items": [], "format": "csv"},
                {"name": " ", "catalogId": "nope"},
            ]}),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    let paths: Vec<&str> = res.body["error"]["details"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    for want in [
        "catalogs[0].name",
        "catalogs[1].type",
        "catalogs[1].feedUrl",
        "catalogs[2].format",
        "catalogs[2].feedUrl",
        "catalogs[3].name",
        "catalogs[3].format",
        "catalogs[4].catalogId",
        "catalogs[4].name",
        "catalogs[4].items",
    ] {
        assert!(paths.contains(&want), "missing {want}: {paths:?}");
    }
    for (body, field) in [
        (json!({}), "catalogs"),
        (json!({"catalogs": []}), "catalogs"),
        (
            json!({"catalogs": [{"name": "A", "items": []}], "extra": 1}),
            "extra",
        ),
        (
            json!({"catalogs": [{"name": 5, "items": []}]}),
            "catalogs[0].name",
        ),
    ] {
        let res = app.post(&sync_path(&adv), &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], field, "{}", res.body);
    }
    let res = app
        .post(
            &sync_path("not-a-uuid"),
            &t.key,
            &json!({"catalogs": [{"name": "A", "items": []}]}),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "advertiserId");
    let res = app
        .post(&catalog(&adv, "cat_zz", "refresh"), &t.key, &json!({}))
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "catalogId");
    let res = app
        .post(
            &catalog(
                &adv,
                "cat_00000000000000000000000000000000",
                "activation-plan/execute",
            ),
            &t.key,
            &json!({"dryRun": "yes"}),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "dryRun");
    let res = app
        .get(&format!("{}?take=101", catalogs(&adv)), &t.key)
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(footprint(&app).await, before);
}

#[actix_web::test]
async fn another_account_sees_404_and_cannot_sync_or_touch_catalogs() {
    let app = app().await;
    let owner = app.tenant().await;
    let stranger = app.tenant().await;
    let reader = app
        .user_in(&owner.account_id, "member", &["platform:read"])
        .await;
    let adv = advertiser(&app, &owner).await;
    let theirs = advertiser(&app, &stranger).await;
    let out = sync(
        &app,
        &owner,
        &adv,
        json!({"catalogs": [{"name": "Mine", "items": [item("a", "A", 1.0)]}]}),
    )
    .await;
    let cat = out[0]["catalogId"].as_str().unwrap();
    let before = footprint(&app).await;

    let body = json!({"catalogs": [{"name": "Mine", "items": []}]});
    app.post(&sync_path(&adv), &stranger.key, &body)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&catalogs(&adv), &stranger.key)
        .await
        .assert_error(404, "NOT_FOUND");
    for tail in [
        "refresh",
        "activation-plan/preview",
        "activation-plan/execute",
    ] {
        app.post(&catalog(&adv, cat, tail), &stranger.key, &json!({}))
            .await
            .assert_error(404, "NOT_FOUND");
        // Their own advertiser with our catalog id: still not found.
        app.post(&catalog(&theirs, cat, tail), &stranger.key, &json!({}))
            .await
            .assert_error(404, "NOT_FOUND");
    }
    // Naming our catalog id in a sync to their advertiser is not found either.
    app.post(
        &sync_path(&theirs),
        &stranger.key,
        &json!({"catalogs": [{"catalogId": cat, "items": []}]}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    assert_eq!(list(&app, &stranger, &theirs).await, Vec::<Value>::new());

    // A read-only key of the owner lists but cannot change.
    assert_eq!(list(&app, &reader, &adv).await.len(), 1);
    app.post(&sync_path(&adv), &reader.key, &body)
        .await
        .assert_error(403, "FORBIDDEN");
    app.post(
        &catalog(&adv, cat, "activation-plan/execute"),
        &reader.key,
        &json!({}),
    )
    .await
    .assert_error(403, "FORBIDDEN");
    assert_eq!(footprint(&app).await, before);
}

#[actix_web::test]
async fn catalog_operations_run_the_same_through_the_dispatcher_and_mcp() {
    let app = app().await;
    let t = app.tenant().await;
    let stranger = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let caller = app.state.auth.authenticate(&t.key).await.unwrap().unwrap();
    let call = |v: Value| serde_json::from_value::<OperationCall>(v).unwrap();

    let synced = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(
            json!({"operation": "sync_catalogs", "pathParams": {"advertiserId": adv},
                     "body": {"catalogs": [{"name": "Agent", "items": [item("a", "A", 1.0)]}]}}),
        ),
    )
    .await
    .unwrap();
    let cat = synced.data["catalogs"][0]["catalogId"]
        .as_str()
        .unwrap()
        .to_string();
    let listed = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(
            json!({"operation": "list_catalogs", "pathParams": {"advertiserId": adv},
                     "params": {"take": 1}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(
        listed.data,
        app.get(&catalogs(&adv), &t.key).await.data().clone()
    );
    assert_eq!(listed.meta.unwrap()["pagination"]["total"], 1);
    let err = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(
            json!({"operation": "sync_catalogs", "pathParams": {"advertiserId": adv},
                     "body": {"catalogs": [{"name": "Bad", "type": "boat", "items": []}]}}),
        ),
    )
    .await
    .unwrap_err();
    assert_eq!(err.body()["field"], "catalogs[0].type");

    let mut s = crate::mcp::open(&app, &t.key).await;
    let tools = s.request(&app, "tools/list", json!({})).await;
    let names: Vec<&str> = tools.last().unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for op in [
        "sync_catalogs",
        "list_catalogs",
        "refresh_catalog",
        "preview_catalog_activation_plan",
        "execute_catalog_activation_plan",
    ] {
        assert!(names.contains(&op), "{op} is a tool");
    }
    let path = json!({"advertiserId": adv, "catalogId": cat});
    let result = s
        .call(
            &app,
            "preview_catalog_activation_plan",
            json!({"pathParams": path}),
        )
        .await;
    assert_ne!(result["isError"], true, "{result}");
    assert_eq!(
        result["structuredContent"]["data"]["activate"],
        json!(["a"])
    );
    let result = s
        .call(
            &app,
            "execute_catalog_activation_plan",
            json!({"pathParams": path, "body": {"dryRun": false}}),
        )
        .await;
    assert_eq!(
        result["structuredContent"]["data"]["status"], "pending",
        "{result}"
    );
    let result = s
        .call(&app, "refresh_catalog", json!({"pathParams": path}))
        .await;
    assert_eq!(result["isError"], true);
    assert_eq!(result["structuredContent"]["code"], "CONFLICT");

    let mut other = crate::mcp::open(&app, &stranger.key).await;
    let hidden = other
        .call(
            &app,
            "list_catalogs",
            json!({"pathParams": {"advertiserId": adv}}),
        )
        .await;
    assert_eq!(hidden["isError"], true);
    assert_eq!(hidden["structuredContent"]["code"], "NOT_FOUND");
}

#[actix_web::test]
async fn the_operator_sets_the_feed_bounds_in_the_environment() {
    let feeds = FeedServer::start().await;
    // A little over 1 MiB of good items, and a good feed that answers in 2 s.
    let big: Vec<Value> = (0..6000)
        .map(|i| item(&format!("big-{i}"), "An item with a longer title", 1.0))
        .collect();
    let big = Value::Array(big).to_string();
    assert!(big.len() > 1 << 20 && big.len() < 10 << 20, "{}", big.len());
    feeds.set("/big.json", ok("application/json", big));
    feeds.set(
        "/slow.json",
        Answer {
            delay: Duration::from_secs(2),
            ..ok("application/json", json!([item("s", "S", 1.0)]).to_string())
        },
    );
    let body = json!({"catalogs": [
        {"name": "Big", "feedUrl": feeds.url("/big.json")},
        {"name": "Slow", "feedUrl": feeds.url("/slow.json")},
    ]});
    let outcomes = |out: &Value| -> Vec<(String, String)> {
        out.as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let text = |v: &Value| v.as_str().unwrap_or("").to_string();
                (text(&r["status"]), text(&r["error"]["code"]))
            })
            .collect()
    };

    // The defaults (10 MiB, 30 s) take both feeds.
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let out = sync(&app, &t, &adv, body.clone()).await;
    let synced = ("synced".to_string(), String::new());
    assert_eq!(outcomes(&out), vec![synced.clone(), synced], "{out}");

    // The binary, given 1 MiB and 1 s, fails each on its bound.
    let (db, _dir) = fresh_database().await;
    let mut served = crate::helpers::serve(
        &db,
        &[
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
            ("AGENTIC_CATALOG_FEED_MAX_MB", "1"),
            ("AGENTIC_CATALOG_FEED_TIMEOUT", "1"),
        ],
        std::process::Stdio::null(),
    );
    let base = served.base.clone();
    let conn = agentic_api::db::connect(&db).await.unwrap();
    let account = agentic_api::auth::tenancy::create_account(
        &conn,
        agentic_api::auth::tenancy::NewAccount::named("Acme"),
    )
    .await
    .unwrap();
    let t = user_on(&conn, &account, "admin", &["platform:write"]).await;
    let client = awc::Client::default();
    let post = |path: String, body: Value| {
        client
            .post(format!("{base}{path}"))
            .bearer_auth(&t.key)
            .send_json(&body)
    };
    let mut res = post(
        "/api/v2/buyer/advertisers".into(),
        json!({"name": "Acme", "brand": "acme.example", "primaryCurrency": "USD"}),
    )
    .await
    .unwrap();
    let created: Value = res.json().await.unwrap();
    let adv = created["data"]["id"].as_str().unwrap().to_string();
    let mut res = post(sync_path(&adv), body).await.unwrap();
    assert_eq!(res.status(), 200);
    let answer: Value = res.json().limit(1 << 20).await.unwrap();
    let out = &answer["data"]["catalogs"];
    assert_eq!(
        outcomes(out),
        vec![
            ("failed".to_string(), "FEED_TOO_LARGE".to_string()),
            ("failed".to_string(), "FEED_TIMEOUT".to_string()),
        ],
        "{out}"
    );
    assert!(sigterm_and_wait(&mut served.child).success());
}
