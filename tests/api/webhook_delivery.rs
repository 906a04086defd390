//! Webhook delivery (issue 10, items 2 to 7) with real receivers on
//! 127.0.0.1: signed exact bytes for every revision in order, the audience
//! fixed when a session starts, the failure count and its reset, delete
//! stopping queued deliveries, a hanging receiver delaying only its own
//! subscription, the SSRF guard at every attempt, the delivery log, and a
//! server killed mid-session restarting without loss or duplicates.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, Set};
use serde_json::{Value, json};
use sha2::Sha256;

use agentic_api::outbox::Outbox;

use crate::fake_seller::{Behaviour, product, seller};
use crate::helpers::*;
use crate::receiver::{Hit, Receiver};

const SUBS: &str = "/api/v2/buyer/webhook-subscriptions";
const DISCOVER: &str = "/api/v2/buyer/discovery/discover-products";
const SECRET: &str = "whsec-test-0123456789abcdef";

fn hmac_hex(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(body);
    hex::encode(mac.finalize().into_bytes())
}

async fn subscribe(app: &TestApp, t: &Tenant, url: &str) -> String {
    let res = app
        .post(
            SUBS,
            &t.key,
            &json!({"url": url, "secret": SECRET, "eventTypes": ["discovery.revision"]}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Waits until every queued delivery was attempted and recorded.
async fn drain(app: &TestApp) {
    app.state
        .get::<Outbox>()
        .unwrap()
        .drain("webhook", Duration::from_secs(60))
        .await
        .unwrap();
}

/// A discovery that waits for its sellers; returns its id.
async fn discover(app: &TestApp, t: &Tenant, adv: &str) -> String {
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data()["discoveryId"].as_str().unwrap().to_string()
}

async fn subscription(app: &TestApp, t: &Tenant, id: &str) -> Value {
    let list = app.get(&format!("{SUBS}?take=100"), &t.key).await;
    assert_eq!(list.status, 200, "{}", list.body);
    list.data()
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["id"] == id)
        .cloned()
        .unwrap_or_else(|| panic!("{id} not listed"))
}

async fn log(app: &TestApp, t: &Tenant, id: &str) -> Vec<Value> {
    let res = app
        .get(&format!("{SUBS}/{id}/deliveries?take=100"), &t.key)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().as_array().unwrap().clone()
}

#[track_caller]
fn assert_signed(hit: &Hit) {
    assert_eq!(
        hit.signature.as_deref(),
        Some(hmac_hex(SECRET, &hit.raw).as_str()),
        "signature over the raw bytes"
    );
}

#[actix_web::test]
async fn every_revision_is_delivered_in_order_signed_over_its_exact_bytes() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let fast = Behaviour {
        products: json!([product("n-1", 10.0)]),
        ..Behaviour::default()
    };
    let slow = Behaviour {
        delay: Duration::from_millis(300),
        products: json!([product("c-1", 30.0), product("c-2", 31.0)]),
        ..Behaviour::default()
    };
    let (_a, _) = seller(&app, "Fast News", fast).await;
    let (_b, _) = seller(&app, "Slow CTV", slow).await;
    let rx = Receiver::start().await;
    let sub = subscribe(&app, &t, &rx.url("/hooks/agentic")).await;

    let id = discover(&app, &t, &adv).await;
    drain(&app).await;
    let hits = rx.hits();
    assert_eq!(hits.len(), 3, "revisions 0, 1 and 2");
    let mut ids = HashSet::new();
    for (i, hit) in hits.iter().enumerate() {
        assert_eq!(hit.path, "/hooks/agentic");
        assert_signed(hit);
        // One changed byte and the signature no longer matches.
        let mut tampered = hit.raw.clone();
        tampered[1] ^= 1;
        assert_ne!(
            hit.signature.as_deref(),
            Some(hmac_hex(SECRET, &tampered).as_str())
        );
        assert_eq!(hit.content_type.as_deref(), Some("application/json"));
        assert_eq!(hit.event_type.as_deref(), Some("discovery.revision"));
        let did = hit.delivery_id.clone().unwrap();
        assert!(did.starts_with("whd_") && did.len() == 28, "{did}");
        assert!(ids.insert(did), "delivery ids are unique");
        let body = hit.json();
        let keys: HashSet<&str> = body
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            keys,
            HashSet::from([
                "event",
                "discoveryId",
                "revision",
                "resultsComplete",
                "productGroups",
                "pendingAgents",
                "incompleteAgents",
                "timestamp"
            ]),
            "the catalog's payload"
        );
        assert_eq!(body["event"], "discovery.revision");
        assert_eq!(body["discoveryId"], id.as_str());
        assert_eq!(body["revision"], i as i64);
        assert_eq!(body["resultsComplete"], i == 2);
        assert!(
            chrono::DateTime::parse_from_rfc3339(body["timestamp"].as_str().unwrap()).is_ok(),
            "{body}"
        );
        let groups = body["productGroups"].as_array().unwrap().len();
        assert_eq!(groups, usize::from(i > 0), "only the groups landed: {body}");
        assert_eq!(body["pendingAgents"].as_array().unwrap().len(), 2 - i);
    }

    let s = subscription(&app, &t, &sub).await;
    assert_eq!(s["status"], "active");
    assert_eq!(s["failureCount"], 0);
    assert!(
        s["lastSuccess"].is_string() && s["lastFailure"].is_null(),
        "{s}"
    );

    // The log, newest first, matches what the receiver saw.
    let entries = log(&app, &t, &sub).await;
    assert_eq!(entries.len(), 3);
    for (entry, hit) in entries.iter().zip(hits.iter().rev()) {
        assert_eq!(
            entry["deliveryId"],
            hit.delivery_id.clone().unwrap().as_str()
        );
        assert_eq!(entry["status"], "delivered");
        assert_eq!(entry["statusCode"], 200);
        assert_eq!(entry["eventType"], "discovery.revision");
        assert!(entry["eventId"].as_str().unwrap().starts_with("evt_"));
        assert!(
            entry["attemptedAt"].is_string() && entry["durationMs"].is_u64(),
            "{entry}"
        );
        assert!(entry["errorClass"].is_null());
    }
    let page = app
        .get(&format!("{SUBS}/{sub}/deliveries?take=1&skip=1"), &t.key)
        .await;
    assert_eq!(page.data().as_array().unwrap().len(), 1);
    assert_eq!(page.data()[0]["deliveryId"], entries[1]["deliveryId"]);
    assert_eq!(page.body["meta"]["pagination"]["total"], 3);

    // Someone else's log, or none at all, is not found.
    let other = app
        .tenant_with(
            agentic_api::auth::tenancy::NewAccount::named("Other"),
            "admin",
            &["platform:write"],
        )
        .await;
    app.get(&format!("{SUBS}/{sub}/deliveries"), &other.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&format!("{SUBS}/wh_nope/deliveries"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&format!("{SUBS}/{sub}/deliveries"), "nope")
        .await
        .assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn only_subscriptions_active_when_a_session_starts_receive_its_events() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let slow = Behaviour {
        delay: Duration::from_millis(800),
        ..Behaviour::default()
    };
    let (_s, _) = seller(&app, "Slow", slow).await;
    let rx = Receiver::start().await;
    subscribe(&app, &t, &rx.url("/before")).await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "progressive": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let first = res.data()["discoveryId"].as_str().unwrap().to_string();
    // Registered while the session runs: none of its events.
    subscribe(&app, &t, &rx.url("/after")).await;
    let done = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"discoveryId": first, "waitSeconds": 10}),
        )
        .await;
    assert_eq!(done.data()["resultsComplete"], true, "{}", done.body);
    drain(&app).await;
    let by_path = |hits: &[Hit], path: &str| -> Vec<(String, i64)> {
        hits.iter()
            .filter(|h| h.path == path)
            .map(|h| {
                let b = h.json();
                (
                    b["discoveryId"].as_str().unwrap().to_string(),
                    b["revision"].as_i64().unwrap(),
                )
            })
            .collect()
    };
    let hits = rx.hits();
    assert_eq!(
        by_path(&hits, "/before"),
        vec![(first.clone(), 0), (first.clone(), 1)]
    );
    assert!(by_path(&hits, "/after").is_empty());

    // The next session has both.
    let second = discover(&app, &t, &adv).await;
    drain(&app).await;
    let hits = rx.hits();
    assert_eq!(by_path(&hits, "/before").len(), 4);
    assert_eq!(
        by_path(&hits, "/after"),
        vec![(second.clone(), 0), (second, 1)]
    );
}

#[actix_web::test]
async fn ten_consecutive_failures_fail_a_subscription_for_good_and_a_success_resets_the_count() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    // No storefronts: each discovery is one complete revision, one event.
    let rx = Receiver::start().await;
    let sub = subscribe(&app, &t, &rx.url("/hook")).await;
    let events = |n: usize| {
        let (app, t, adv) = (&app, &t, &adv);
        async move {
            for _ in 0..n {
                discover(app, t, adv).await;
            }
            drain(app).await;
        }
    };

    rx.answer(500);
    events(3).await;
    let s = subscription(&app, &t, &sub).await;
    assert_eq!(
        (s["status"].as_str(), s["failureCount"].as_i64()),
        (Some("active"), Some(3))
    );
    assert!(
        s["lastFailure"].is_string() && s["lastSuccess"].is_null(),
        "{s}"
    );
    let entries = log(&app, &t, &sub).await;
    assert_eq!(entries[0]["status"], "failed");
    assert_eq!(entries[0]["statusCode"], 500);
    assert_eq!(entries[0]["errorClass"], "http_status");

    rx.answer(204);
    events(1).await;
    let s = subscription(&app, &t, &sub).await;
    assert_eq!(s["failureCount"], 0, "a success resets the count");
    assert!(
        s["lastSuccess"].is_string() && s["lastFailure"].is_string(),
        "{s}"
    );

    // A redirect is a failure too, and is not followed.
    rx.answer(302);
    events(9).await;
    let s = subscription(&app, &t, &sub).await;
    assert_eq!(
        (s["status"].as_str(), s["failureCount"].as_i64()),
        (Some("active"), Some(9))
    );
    assert_eq!(log(&app, &t, &sub).await[0]["errorClass"], "redirect");
    assert_eq!(rx.count(), 13);

    events(1).await;
    let s = subscription(&app, &t, &sub).await;
    assert_eq!(
        (s["status"].as_str(), s["failureCount"].as_i64()),
        (Some("failed"), Some(10))
    );

    // Failed for good: a receiver that recovers gets nothing more.
    rx.answer(200);
    events(2).await;
    assert_eq!(rx.count(), 14);
    let s = subscription(&app, &t, &sub).await;
    assert_eq!(
        (s["status"].as_str(), s["failureCount"].as_i64()),
        (Some("failed"), Some(10))
    );
    assert_eq!(log(&app, &t, &sub).await.len(), 14);
}

#[actix_web::test]
async fn deleting_a_subscription_stops_its_queued_deliveries() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let rx = Receiver::start().await;
    rx.hold();
    let sub = subscribe(&app, &t, &rx.url("/hook")).await;
    for _ in 0..4 {
        discover(&app, &t, &adv).await;
    }
    // The first is under way (held by the receiver), three are queued.
    rx.wait_for(1).await;
    let res = app.delete(&format!("{SUBS}/{sub}"), &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let left = entity::outbox_job::Entity::find()
        .filter(entity::outbox_job::Column::Lane.eq(sub.as_str()))
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(left, 0, "its queue went with it");
    rx.release();
    drain(&app).await;
    // Were queued deliveries still sent, they would arrive within
    // milliseconds of the release.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(rx.count(), 1, "only the delivery already under way");
    app.get(&format!("{SUBS}/{sub}/deliveries"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn a_hanging_receiver_delays_only_its_own_subscription() {
    // Long enough that the held receiver never times out here.
    let app = spawn_app_with(|c| c.webhook_delivery.timeout = Duration::from_secs(60)).await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let stuck = Receiver::start().await;
    let fine = Receiver::start().await;
    stuck.hold();
    subscribe(&app, &t, &stuck.url("/hook")).await;
    subscribe(&app, &t, &fine.url("/hook")).await;
    let mut sessions = Vec::new();
    for _ in 0..5 {
        sessions.push(discover(&app, &t, &adv).await);
    }
    let order = |hits: Vec<Hit>| -> Vec<String> {
        hits.iter()
            .map(|h| h.json()["discoveryId"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(order(fine.wait_for(5).await), sessions);
    // Its first POST may land after the other's five; it is the only one.
    stuck.wait_for(1).await;
    assert_eq!(stuck.count(), 1, "still waiting on its first delivery");
    stuck.release();
    assert_eq!(
        order(stuck.wait_for(5).await),
        sessions,
        "then the rest, in order"
    );
    drain(&app).await;
}

#[actix_web::test]
async fn a_timeout_or_a_closed_port_is_a_failure_with_its_class() {
    let app = spawn_app_with(|c| c.webhook_delivery.timeout = Duration::from_secs(1)).await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let rx = Receiver::start().await;
    rx.hold();
    let slow = subscribe(&app, &t, &rx.url("/hook")).await;
    let closed = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        subscribe(&app, &t, &format!("http://127.0.0.1:{port}/hook")).await
    };
    discover(&app, &t, &adv).await;
    drain(&app).await;
    rx.release();
    for (sub, class) in [(&slow, "timeout"), (&closed, "connection")] {
        let s = subscription(&app, &t, sub).await;
        assert_eq!(s["failureCount"], 1, "{s}");
        let entry = &log(&app, &t, sub).await[0];
        assert_eq!(entry["status"], "failed");
        assert_eq!(entry["errorClass"], class, "{entry}");
        assert!(entry["statusCode"].is_null());
    }
}

#[actix_web::test]
async fn the_guard_refuses_private_addresses_at_every_attempt() {
    // The strict policy; lanes start only when their events come (no
    // periodic sweep here), so a changed URL is what the attempt uses.
    let app = spawn_app_with(|c| {
        c.allow_insecure_urls = false;
        c.outbox.sweep = Duration::from_secs(3600);
    })
    .await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let rx = Receiver::start().await;
    let port = rx.base.rsplit(':').next().unwrap().to_string();
    // Addresses a registered name could come to resolve to (DNS
    // rebinding), or an address that slipped into the store.
    let table = [
        format!("https://127.0.0.1:{port}/hook"),
        format!("https://localhost:{port}/hook"),
        "https://10.0.0.1/hook".to_string(),
        "https://192.168.1.10/hook".to_string(),
        "https://169.254.169.254/latest/meta-data".to_string(),
        "https://[::1]/hook".to_string(),
        "https://[::ffff:127.0.0.1]/hook".to_string(),
        "https://[fe80::1]/hook".to_string(),
        "https://0.0.0.0/hook".to_string(),
    ];
    for url in &table {
        let sub = subscribe(&app, &t, "https://hooks.example.com/agentic").await;
        entity::webhook_subscription::Entity::update(entity::webhook_subscription::ActiveModel {
            id: Set(sub.clone()),
            url: Set(url.clone()),
            ..Default::default()
        })
        .exec(&app.db)
        .await
        .unwrap();
        discover(&app, &t, &adv).await;
        drain(&app).await;
        let entry = &log(&app, &t, &sub).await[0];
        assert_eq!(entry["status"], "failed", "{url}: {entry}");
        assert_eq!(entry["errorClass"], "ssrf_blocked", "{url}: {entry}");
        app.delete(&format!("{SUBS}/{sub}"), &t.key).await;
    }
    assert_eq!(rx.count(), 0, "nothing reached the loopback receiver");
}

// ------------------------------------------------ a server killed mid-session

/// The real binary with short leases (so a killed server's work moves on
/// quickly) on `database_url`.
fn serve_leased(database_url: &str) -> Served {
    serve(
        database_url,
        &[
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
            ("AGENTIC_LEASE_SECONDS", "2"),
        ],
        std::process::Stdio::inherit(),
    )
}

#[actix_web::test]
async fn a_server_killed_mid_session_loses_no_delivery_and_sends_none_twice() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let mut sellers = Vec::new();
    for (i, ms) in [0u64, 600, 4000, 5000].into_iter().enumerate() {
        let b = Behaviour {
            delay: Duration::from_millis(ms),
            products: json!([product(&format!("p-{i}"), 10.0)]),
            ..Behaviour::default()
        };
        sellers.push(seller(&app, &format!("Seller {i}"), b).await);
    }
    let rx = Receiver::start().await;
    subscribe(&app, &t, &rx.url("/hook")).await;
    // From here on only the real binary serves this database; the test
    // reads it on a connection of its own (on PostgreSQL the app's pooled
    // connections belong to the stopped server's runtimes).
    app.state.shutdown.cancel();
    app.handle.stop(true).await;
    let db = sea_orm::Database::connect(&app.database_url).await.unwrap();

    let mut first = serve_leased(&app.database_url);
    let base = first.base.clone();
    let res = app
        .client
        .post(format!("{base}{DISCOVER}"))
        .insert_header(("Authorization", format!("Bearer {}", t.key)))
        .send_json(&json!({"advertiserId": adv, "progressive": true}))
        .await
        .unwrap()
        .json::<Value>()
        .await
        .unwrap();
    let id = res["data"]["discoveryId"].as_str().unwrap().to_string();
    // Revisions 0, 1 and 2 delivered and recorded; two sellers still
    // asked. SIGKILL. (Killed between a receiver's answer and its record,
    // the server would send that one delivery again, under the same id.)
    rx.wait_for(3).await;
    for _ in 0..3000 {
        let recorded = entity::outbox_job::Entity::find()
            .filter(entity::outbox_job::Column::State.eq("done"))
            .count(&db)
            .await
            .unwrap();
        if recorded == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    first.child.kill().unwrap();
    first.child.wait().unwrap();

    // The next server completes the orphaned session once the dead one's
    // lease runs out, and delivers whatever was queued.
    let mut second = serve_leased(&app.database_url);
    let mut complete = false;
    for _ in 0..3000 {
        complete = rx
            .hits()
            .iter()
            .any(|h| h.json()["resultsComplete"] == true);
        let pending = entity::outbox_job::Entity::find()
            .filter(entity::outbox_job::Column::State.eq("pending"))
            .count(&db)
            .await
            .unwrap();
        if complete && pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    second.child.kill().unwrap();
    second.child.wait().unwrap();
    assert!(complete, "the session completed after the restart");

    let hits = rx.hits();
    let mut by_revision: BTreeMap<i64, HashSet<String>> = BTreeMap::new();
    let mut copies: HashMap<String, usize> = HashMap::new();
    for h in &hits {
        assert_signed(h);
        let b = h.json();
        assert_eq!(b["discoveryId"], id.as_str());
        let did = h.delivery_id.clone().unwrap();
        *copies.entry(did.clone()).or_default() += 1;
        by_revision
            .entry(b["revision"].as_i64().unwrap())
            .or_default()
            .insert(did);
    }
    let last = *by_revision.keys().last().unwrap();
    assert_eq!(
        by_revision.keys().copied().collect::<Vec<_>>(),
        (0..=last).collect::<Vec<_>>(),
        "every revision, none missing"
    );
    for (rev, ids) in &by_revision {
        assert_eq!(ids.len(), 1, "revision {rev} went out as one delivery");
    }
    assert!(copies.values().all(|&n| n == 1), "{copies:?}");
    let final_event = hits
        .iter()
        .map(Hit::json)
        .find(|b| b["resultsComplete"] == true)
        .unwrap();
    assert_eq!(final_event["revision"], last);
    let incomplete = final_event["incompleteAgents"].as_array().unwrap();
    assert!(
        !incomplete.is_empty(),
        "the sellers asked when it died: {final_event}"
    );
}

#[actix_web::test]
async fn the_delivery_log_is_pruned_after_its_retention() {
    let app = spawn_app_with(|c| {
        c.webhook_delivery.retention = Duration::from_secs(2);
        c.outbox.sweep = Duration::from_millis(100);
    })
    .await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let rx = Receiver::start().await;
    let sub = subscribe(&app, &t, &rx.url("/hook")).await;
    discover(&app, &t, &adv).await;
    discover(&app, &t, &adv).await;
    drain(&app).await;
    assert_eq!(log(&app, &t, &sub).await.len(), 2);
    let (mut left, mut events) = (2, 2);
    for _ in 0..3000 {
        left = log(&app, &t, &sub).await.len();
        events = entity::webhook_event::Entity::find()
            .count(&app.db)
            .await
            .unwrap();
        if left == 0 && events == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(left, 0, "attempts older than the retention are pruned");
    assert_eq!(events, 0, "and the events only they used");
    assert_eq!(rx.count(), 2);
}

#[actix_web::test]
async fn a_secret_that_cannot_be_read_holds_deliveries_without_failing_the_subscription() {
    use agentic_api::webhooks::secret::SecretKey;
    let right = SecretKey::from_bytes([7; 32]);
    let wrong = SecretKey::from_bytes([9; 32]);
    let first = spawn_app_with(|c| c.webhook_secret_key = Some(right.clone())).await;
    let t = first.tenant().await;
    let adv = advertiser(&first, &t).await;
    let rx = Receiver::start().await;
    let sub = subscribe(&first, &t, &rx.url("/hook")).await;
    first.state.shutdown.cancel();
    first.handle.stop(true).await;

    // The operator restarts with another key: the lane cannot sign, keeps
    // retrying with a growing pause, and counts no failure.
    let url = first.database_url.clone();
    let second = spawn_on(&url, |c| c.webhook_secret_key = Some(wrong)).await;
    discover(&second, &t, &adv).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(rx.count(), 0);
    let s = subscription(&second, &t, &sub).await;
    assert_eq!(
        (s["status"].as_str(), s["failureCount"].as_i64()),
        (Some("active"), Some(0))
    );
    assert_eq!(log(&second, &t, &sub).await[0]["status"], "pending");
    second.state.shutdown.cancel();
    second.handle.stop(true).await;

    // With the right key again, the held delivery goes out.
    let third = spawn_on(&url, |c| c.webhook_secret_key = Some(right)).await;
    drain(&third).await;
    let hits = rx.wait_for(1).await;
    assert_signed(&hits[0]);
    assert_eq!(log(&third, &t, &sub).await[0]["status"], "delivered");
}
