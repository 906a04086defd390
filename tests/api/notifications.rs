//! Notifications over real HTTP: every topic written where its change
//! happens, once per recipient (the account's users, or its operators) and
//! never to another account, and on the stream; the listing's pages and
//! filters, read-on-get, acknowledgement (one, many, all, idempotent),
//! preferences, tenancy, the stream with a stream token and resume,
//! `/mcp/v3 open_notifications`, and two instances on PostgreSQL.

use std::collections::BTreeMap;
use std::time::Duration;

use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use agentic_api::notifications::{self, New, topics};
use agentic_api::phone::carrier::{SimMode, Simulated};

use crate::fake_seller::{Behaviour, BuyOutcome};
use crate::helpers::*;
use crate::media_buys::{BUYS, new_campaign, pick, setup};

const LIST: &str = "/api/v2/notifications";
const ACK: &str = "/api/v2/notifications/acknowledge";
const PREFS: &str = "/api/v2/notifications/preferences";
const EVENTS: &str = "/api/v2/notifications/events";

/// Every notification of `t` (all pages), newest first.
async fn all_of(app: &TestApp, t: &Tenant) -> Vec<Value> {
    let res = app.get(&format!("{LIST}?take=100"), &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.data().as_array().unwrap().clone()
}

/// How many notifications of each topic `t` has.
async fn topics_of(app: &TestApp, t: &Tenant) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for n in all_of(app, t).await {
        *counts
            .entry(n["topic"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    counts
}

/// Rows written for `user` (whatever their channels), by topic.
async fn rows_of(app: &TestApp, user: i64, topic: &str) -> u64 {
    entity::notification::Entity::find()
        .filter(entity::notification::Column::UserId.eq(user))
        .filter(entity::notification::Column::Topic.eq(topic))
        .count(&app.db)
        .await
        .unwrap()
}

/// Writes one notification of `topic` for `account`, as a domain does.
pub(crate) async fn notify(app: &TestApp, account: &str, topic: &'static str, n: i64) -> Vec<i64> {
    // In a write transaction, as the server's callers do: its sequence lock
    // orders the commits (and SQLite takes the write lock at BEGIN).
    let txn = agentic_api::db::begin_write(&app.db).await.unwrap();
    let notices = notifications::notify(
        &txn,
        New {
            account_id: account.to_string(),
            topic,
            title: format!("Title {n}"),
            body: format!("Body {n}"),
            data: json!({ "n": n }),
        },
        chrono::Utc::now(),
    )
    .await
    .unwrap();
    txn.commit().await.unwrap();
    notices.publish(&app.state.bus).await;
    notices
        .events()
        .iter()
        .map(|e| e.payload["seq"].as_i64().unwrap())
        .collect()
}

/// Collects `notification.created` events until `n` arrived; panics if
/// they do not within 10 s.
async fn created(stream: &mut SseStream, n: usize) -> Vec<SseEvent> {
    let mut got = Vec::new();
    while got.len() < n {
        let ev = stream.expect("notification.created").await;
        got.push(ev);
    }
    got
}

/// Nothing more arrives on the stream for a while.
async fn quiet(stream: &mut SseStream) {
    if let Some(ev) = stream.next_event(Duration::from_millis(700)).await {
        panic!("unexpected event {} {}", ev.event, ev.raw_data);
    }
}

async fn open(app: &TestApp, t: &Tenant) -> SseStream {
    let mut s = app
        .sse(EVENTS, &t.key, None)
        .await
        .map_err(|r| r.body)
        .unwrap();
    s.expect("ready").await;
    s
}

fn fast(c: &mut agentic_api::Config) {
    c.rooms.keepalive = Duration::from_millis(300);
}

#[actix_web::test]
async fn discovery_catalog_and_webhook_topics_reach_each_user_of_the_account_once() {
    let app = spawn_app_with(fast).await;
    let admin = app.tenant().await;
    let member = app.user_in(&admin.account_id, "member", &[]).await;
    let stranger = app.tenant().await;
    let mut admin_stream = open(&app, &admin).await;
    let mut member_stream = open(&app, &member).await;
    let mut stranger_stream = open(&app, &stranger).await;
    let adv = advertiser(&app, &admin).await;

    // discovery.completed: no storefronts, so the first revision completes.
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &admin.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let discovery = res.data()["discoveryId"].as_str().unwrap().to_string();
    for s in [&mut admin_stream, &mut member_stream] {
        let ev = created(s, 1).await.remove(0);
        assert_eq!(ev.data["topic"], topics::DISCOVERY_COMPLETED);
        assert_eq!(ev.data["data"]["discoveryId"], discovery.as_str());
        assert_eq!(ev.id.as_deref(), Some(&*ev.data["sequence"].to_string()));
    }

    // catalog.sync_failed: a feed that is not there.
    let files = file_server(vec![]).await;
    let res = app
        .post(
            &format!("/api/v2/buyer/advertisers/{adv}/catalogs/sync"),
            &member.key,
            &json!({"catalogs": [{"name": "Missing", "feedUrl": format!("{}/missing.json", files.base)}]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let catalog = res.data()["catalogs"][0]["catalogId"]
        .as_str()
        .unwrap()
        .to_string();
    for s in [&mut admin_stream, &mut member_stream] {
        let ev = created(s, 1).await.remove(0);
        assert_eq!(ev.data["topic"], topics::CATALOG_SYNC_FAILED);
        assert_eq!(ev.data["data"]["catalogId"], catalog.as_str());
    }

    // webhook_subscription.failed: ten failed deliveries in a row.
    let rx = crate::receiver::Receiver::start().await;
    rx.answer(500);
    let sub = app
        .post(
            "/api/v2/buyer/webhook-subscriptions",
            &admin.key,
            &json!({"url": rx.url("/hook"), "secret": "whsec-test-0123456789abcdef", "eventTypes": ["discovery.revision"]}),
        )
        .await;
    assert_eq!(sub.status, 201, "{}", sub.body);
    let sub = sub.data()["subscription"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for _ in 0..10 {
        let res = app
            .post(
                "/api/v2/buyer/discovery/discover-products",
                &admin.key,
                &json!({"advertiserId": adv, "waitSeconds": 10}),
            )
            .await;
        assert_eq!(res.status, 200, "{}", res.body);
        app.state
            .get::<agentic_api::outbox::Outbox>()
            .unwrap()
            .drain("webhook", Duration::from_secs(60))
            .await
            .unwrap();
    }
    for s in [&mut admin_stream, &mut member_stream] {
        let evs = created(s, 11).await;
        let failed: Vec<&SseEvent> = evs
            .iter()
            .filter(|e| e.data["topic"] == topics::WEBHOOK_SUBSCRIPTION_FAILED)
            .collect();
        assert_eq!(failed.len(), 1);
        assert_eq!(failed[0].data["data"]["subscriptionId"], sub.as_str());
        quiet(s).await;
    }

    // Once per recipient, in the list as on the stream; nothing elsewhere.
    let want: BTreeMap<String, usize> = [
        (topics::DISCOVERY_COMPLETED.to_string(), 11),
        (topics::CATALOG_SYNC_FAILED.to_string(), 1),
        (topics::WEBHOOK_SUBSCRIPTION_FAILED.to_string(), 1),
    ]
    .into();
    assert_eq!(topics_of(&app, &admin).await, want);
    assert_eq!(topics_of(&app, &member).await, want);
    assert!(all_of(&app, &stranger).await.is_empty());
    quiet(&mut stranger_stream).await;
}

#[actix_web::test]
async fn media_buy_status_changes_and_a_credit_limit_near_reach_the_account_once() {
    let app = spawn_app_with(|c| {
        c.media_buy_poll_seconds = 1;
        fast(c);
    })
    .await;
    let t = app.tenant().await;
    let member = app.user_in(&t.account_id, "member", &[]).await;
    let stranger = app.tenant().await;
    let b = Behaviour {
        default_buy: BuyOutcome::Accept {
            status: "pending_start",
        },
        ..Behaviour::default()
    };
    let s = setup(&app, &t, b).await;
    let out = cli(
        &app.database_url,
        &[
            "admin",
            "set-credit-limit",
            "--account",
            &t.account_id,
            "--currency",
            "EUR",
            "--amount",
            "1000",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut stream = open(&app, &member).await;
    // 700 of 1000 committed: below 80 %, nothing.
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "campaign": new_campaign(5000.0),
                                     "mode": "execute", "selections": [pick("ctv-1", 700.0)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let campaign = res.data()["campaignId"].as_str().unwrap().to_string();
    let first = res.data()["mediaBuys"][0]["mediaBuyId"]
        .as_str()
        .unwrap()
        .to_string();
    let ev = created(&mut stream, 1).await.remove(0);
    assert_eq!(ev.data["topic"], topics::MEDIA_BUY_STATUS_CHANGED);
    assert_eq!(ev.data["data"]["mediaBuyId"], first.as_str());
    assert_eq!(ev.data["data"]["status"], "pending_start");
    assert_eq!(ev.data["data"]["campaignId"], campaign.as_str());
    // 850: crosses 80 %, once.
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "campaign": {"campaignId": campaign},
                                     "mode": "execute", "selections": [pick("olv-2", 150.0)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let evs = created(&mut stream, 2).await;
    let near: Vec<&SseEvent> = evs
        .iter()
        .filter(|e| e.data["topic"] == topics::CREDIT_LIMIT_NEAR)
        .collect();
    assert_eq!(near.len(), 1, "{evs:?}");
    assert_eq!(near[0].data["data"]["currency"], "EUR");
    assert_eq!(near[0].data["data"]["committed"], 850.0);
    // 900: still above, not crossing again.
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "campaign": new_campaign(5000.0),
                                     "mode": "execute", "selections": [pick("ctv-1", 50.0)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    created(&mut stream, 1).await;
    // The seller moves the first buy: the poller sees it once.
    let adcp = s
        .seller
        .buys()
        .iter()
        .find(|b| b.arguments["packages"][0]["budget"] == 700.0)
        .and_then(|b| b.id.clone())
        .unwrap();
    s.seller.set_buy_status(&adcp, "active");
    let ev = created(&mut stream, 1).await.remove(0);
    assert_eq!(ev.data["topic"], topics::MEDIA_BUY_STATUS_CHANGED);
    assert_eq!(ev.data["data"]["status"], "active");
    assert_eq!(ev.data["data"]["previousStatus"], "pending_start");
    tokio::time::sleep(Duration::from_millis(2500)).await;
    quiet(&mut stream).await;

    let want: BTreeMap<String, usize> = [
        (topics::DISCOVERY_COMPLETED.to_string(), 1),
        (topics::MEDIA_BUY_STATUS_CHANGED.to_string(), 4),
        (topics::CREDIT_LIMIT_NEAR.to_string(), 1),
    ]
    .into();
    assert_eq!(topics_of(&app, &t).await, want);
    assert_eq!(topics_of(&app, &member).await, want);
    assert!(all_of(&app, &stranger).await.is_empty());
}

#[actix_web::test]
async fn held_texts_and_unresolved_faxes_reach_only_the_accounts_operators() {
    let app = spawn_app_with(fast).await;
    let sim = app.state.get::<Simulated>().unwrap().clone();
    // Texts: an admin and a super-admin receive, a member does not.
    let admin = crate::phone::enrolled(&app).await;
    let boss = app.user_in(&admin.account_id, "super-admin", &[]).await;
    let member = app
        .user_in(&admin.account_id, "member", &["platform:write"])
        .await;
    let mut admin_stream = open(&app, &admin).await;
    let mut member_stream = open(&app, &member).await;
    let l = crate::phone::line(&app, &admin, "+14155550100", |_| {}).await;
    sim.set_mode(SimMode::Timeout);
    let res = app
        .post(
            crate::phone::SMS,
            &member.key,
            &crate::phone::body(&l, "+14155550124", "hi"),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let id = res.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    crate::phone::drain(&app).await;
    let ev = created(&mut admin_stream, 1).await.remove(0);
    assert_eq!(ev.data["topic"], topics::PHONE_MESSAGE_HELD);
    assert_eq!(ev.data["data"]["messageId"].to_string(), id);
    quiet(&mut member_stream).await;
    assert_eq!(
        rows_of(&app, admin.user_id, topics::PHONE_MESSAGE_HELD).await,
        1
    );
    assert_eq!(
        rows_of(&app, boss.user_id, topics::PHONE_MESSAGE_HELD).await,
        1
    );
    assert_eq!(
        rows_of(&app, member.user_id, topics::PHONE_MESSAGE_HELD).await,
        0
    );
    // Draining again holds nothing more.
    crate::phone::drain(&app).await;
    quiet(&mut admin_stream).await;

    // Faxes: the unknown submission's account's admins.
    let f = crate::fax::setup(&app).await;
    let fax_member = app.user_in(&f.t.account_id, "member", &[]).await;
    let doc = crate::fax::pdf("contract");
    let files = file_server(vec![("c.pdf", doc.clone())]).await;
    let mut fax_stream = open(&app, &f.t).await;
    let req = crate::fax::body(
        &f.line,
        &format!("{}/c.pdf", files.base),
        &crate::fax::sha(&doc),
    );
    app.post(crate::fax::FAXES, &f.t.key, &req)
        .await
        .assert_error(503, "submission_unknown");
    let ev = created(&mut fax_stream, 1).await.remove(0);
    assert_eq!(ev.data["topic"], topics::FAX_UNRESOLVED);
    assert!(ev.data["data"]["faxId"].is_i64());
    // The same request again is refused: nothing more.
    app.post(crate::fax::FAXES, &f.t.key, &req)
        .await
        .assert_error(409, "CONFLICT");
    quiet(&mut fax_stream).await;
    assert_eq!(rows_of(&app, f.t.user_id, topics::FAX_UNRESOLVED).await, 1);
    assert_eq!(
        rows_of(&app, fax_member.user_id, topics::FAX_UNRESOLVED).await,
        0
    );
    // Neither account saw the other's.
    assert_eq!(
        rows_of(&app, admin.user_id, topics::FAX_UNRESOLVED).await,
        0
    );
    assert_eq!(
        rows_of(&app, f.t.user_id, topics::PHONE_MESSAGE_HELD).await,
        0
    );
}

#[actix_web::test]
async fn the_list_pages_filters_reads_and_acknowledges_only_the_callers_own() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let other = app.user_in(&t.account_id, "member", &[]).await;
    let reader = app.user_in(&t.account_id, "member", &[]).await;
    let stranger = app.tenant().await;
    for i in 0..5 {
        notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, i).await;
    }
    notify(&app, &t.account_id, topics::CATALOG_SYNC_FAILED, 5).await;
    notify(&app, &stranger.account_id, topics::CATALOG_SYNC_FAILED, 6).await;

    // Pages, newest first.
    let page = app.get(&format!("{LIST}?take=4&skip=1"), &t.key).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let items = page.data().as_array().unwrap();
    assert_eq!(items.len(), 4);
    assert_eq!(items[0]["title"], "Title 4");
    assert_eq!(items[3]["title"], "Title 1");
    assert_eq!(
        page.body["meta"]["pagination"],
        json!({"skip": 1, "take": 4, "total": 6, "hasMore": true})
    );
    let seqs: Vec<i64> = items
        .iter()
        .map(|n| n["sequence"].as_i64().unwrap())
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "{seqs:?}");
    // The topic filter; a bad topic, take or unread is a 400.
    let res = app
        .get(
            &format!("{LIST}?topic={}", topics::CATALOG_SYNC_FAILED),
            &t.key,
        )
        .await;
    assert_eq!(res.data().as_array().unwrap().len(), 1);
    assert_eq!(res.data()[0]["data"], json!({"n": 5}));
    app.get(&format!("{LIST}?topic=nope"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.get(&format!("{LIST}?take=0"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.get(&format!("{LIST}?unread=maybe"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");

    // Reading one marks it read (once); the unread filter then leaves it out.
    let newest = all_of(&app, &t).await[0].clone();
    let id = newest["id"].as_str().unwrap();
    assert!(newest["readAt"].is_null());
    let got = app.get(&format!("{LIST}/{id}"), &t.key).await;
    assert_eq!(got.status, 200, "{}", got.body);
    let read_at = got.data()["readAt"].clone();
    assert!(read_at.is_string(), "{}", got.body);
    let again = app.get(&format!("{LIST}/{id}"), &t.key).await;
    assert_eq!(again.data()["readAt"], read_at);
    let unread = app
        .get(&format!("{LIST}?unread=true&take=100"), &t.key)
        .await;
    assert_eq!(unread.body["meta"]["pagination"]["total"], 5);
    assert!(
        unread
            .data()
            .as_array()
            .unwrap()
            .iter()
            .all(|n| n["id"] != id)
    );
    // Another user's, another account's or an unknown id: 404.
    for key in [&other.key, &stranger.key] {
        app.get(&format!("{LIST}/{id}"), key)
            .await
            .assert_error(404, "NOT_FOUND");
    }
    app.get(&format!("{LIST}/ntf_nope"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(all_of(&app, &other).await.len(), 6);
    assert_eq!(all_of(&app, &stranger).await.len(), 1);

    // Acknowledging: bad bodies are 400 and write nothing; someone else's
    // id is a 404 and acknowledges nothing, not even the caller's own.
    let mine: Vec<String> = all_of(&app, &t)
        .await
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect();
    let theirs = all_of(&app, &other).await[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    for bad in [
        json!({}),
        json!({"ids": []}),
        json!({"ids": [mine[0]], "all": true}),
        json!({"all": false}),
        json!({"ids": "x"}),
        json!({"ids": [""]}),
        json!({"everything": true}),
    ] {
        app.post(ACK, &t.key, &bad)
            .await
            .assert_error(400, "VALIDATION_ERROR");
    }
    let res = app
        .post(ACK, &t.key, &json!({"ids": [mine[1], theirs]}))
        .await;
    res.assert_error(404, "NOT_FOUND");
    assert_eq!(res.body["error"]["details"]["missingIds"], json!([theirs]));
    assert!(
        all_of(&app, &t)
            .await
            .iter()
            .all(|n| n["acknowledgedAt"].is_null())
    );
    // A read-only key may list but not acknowledge.
    let ro = app
        .user_in(&t.account_id, "member", &["platform:read"])
        .await;
    app.post(ACK, &ro.key, &json!({"all": true}))
        .await
        .assert_error(403, "FORBIDDEN");
    let _ = reader;

    // One, then many (one of them again), then all; each counted once.
    let res = app.post(ACK, &t.key, &json!({"ids": [mine[0]]})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data(), &json!({"acknowledged": 1, "ids": [mine[0]]}));
    let res = app
        .post(
            ACK,
            &t.key,
            &json!({"ids": [mine[0], mine[1], mine[2], mine[2]]}),
        )
        .await;
    assert_eq!(res.data()["acknowledged"], 2, "{}", res.body);
    let res = app.post(ACK, &t.key, &json!({"all": true})).await;
    assert_eq!(res.data()["acknowledged"], 3, "{}", res.body);
    let res = app.post(ACK, &t.key, &json!({"all": true})).await;
    assert_eq!(res.data(), &json!({"acknowledged": 0, "ids": []}));
    let listed = all_of(&app, &t).await;
    assert!(
        listed
            .iter()
            .all(|n| n["acknowledgedAt"].is_string() && n["readAt"].is_string())
    );
    // The other users' stay as they were.
    assert!(
        all_of(&app, &other)
            .await
            .iter()
            .all(|n| n["acknowledgedAt"].is_null())
    );
    let unread = app.get(&format!("{LIST}?unread=true"), &t.key).await;
    assert_eq!(unread.body["meta"]["pagination"]["total"], 0);
}

#[actix_web::test]
async fn preferences_choose_channels_per_topic_and_bad_input_writes_nothing() {
    let app = spawn_app_with(fast).await;
    let t = app.tenant().await;
    let other = app.user_in(&t.account_id, "member", &[]).await;
    let res = app.get(PREFS, &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let defaults = res.data().clone();
    assert!(defaults["emailAddress"].is_null());
    let prefs = defaults["topics"].as_array().unwrap();
    assert_eq!(prefs.len(), topics::TOPICS.len());
    for p in prefs {
        assert_eq!(
            (
                p["console"].as_bool(),
                p["webhook"].as_bool(),
                p["email"].as_bool()
            ),
            (Some(true), Some(false), Some(false)),
            "{p}"
        );
    }
    let held = prefs
        .iter()
        .find(|p| p["topic"] == topics::PHONE_MESSAGE_HELD)
        .unwrap();
    assert_eq!(held["audience"], "admins");

    for bad in [
        json!({"topics": [{"topic": "nope", "console": false}]}),
        json!({"emailAddress": "not an address", "topics": [{"topic": topics::CATALOG_SYNC_FAILED, "console": false}]}),
        json!({"topics": [{"topic": topics::CATALOG_SYNC_FAILED, "sms": true}]}),
        json!({"topics": [{"topic": topics::CATALOG_SYNC_FAILED, "console": "no"}]}),
    ] {
        app.patch(PREFS, &t.key, &bad)
            .await
            .assert_error(400, "VALIDATION_ERROR");
    }
    assert_eq!(app.get(PREFS, &t.key).await.data(), &defaults);

    // Console off for catalogs, e-mail on with an address for discovery.
    let res = app
        .patch(
            PREFS,
            &t.key,
            &json!({
            "emailAddress": "ops@example.com",
            "topics": [
                {"topic": topics::CATALOG_SYNC_FAILED, "console": false},
                {"topic": topics::DISCOVERY_COMPLETED, "email": true},
            ]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["emailAddress"], "ops@example.com");
    let of = |d: &Value, topic: &str| {
        d["topics"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["topic"] == topic)
            .unwrap()
            .clone()
    };
    assert_eq!(
        of(res.data(), topics::CATALOG_SYNC_FAILED)["console"],
        false
    );
    assert_eq!(of(res.data(), topics::DISCOVERY_COMPLETED)["email"], true);
    assert_eq!(of(res.data(), topics::DISCOVERY_COMPLETED)["console"], true);
    // Another user's stay the defaults.
    assert_eq!(app.get(PREFS, &other.key).await.data(), &defaults);

    let mut stream = open(&app, &t).await;
    notify(&app, &t.account_id, topics::CATALOG_SYNC_FAILED, 1).await;
    notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, 2).await;
    // Console off: not listed, not streamed (and with every channel off,
    // not even written).
    let ev = created(&mut stream, 1).await.remove(0);
    assert_eq!(ev.data["topic"], topics::DISCOVERY_COMPLETED);
    quiet(&mut stream).await;
    assert_eq!(
        topics_of(&app, &t).await,
        [(topics::DISCOVERY_COMPLETED.to_string(), 1)].into()
    );
    assert_eq!(
        rows_of(&app, t.user_id, topics::CATALOG_SYNC_FAILED).await,
        0
    );
    assert_eq!(all_of(&app, &other).await.len(), 2);
    // The e-mail channel records the address on the notification.
    let row = entity::notification::Entity::find()
        .filter(entity::notification::Column::UserId.eq(t.user_id))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.email_to.as_deref(), Some("ops@example.com"));
    // Webhook on with console off: recorded, not listed.
    app.patch(
        PREFS,
        &t.key,
        &json!({"emailAddress": null, "topics": [
        {"topic": topics::CATALOG_SYNC_FAILED, "webhook": true}]}),
    )
    .await;
    notify(&app, &t.account_id, topics::CATALOG_SYNC_FAILED, 3).await;
    assert_eq!(
        rows_of(&app, t.user_id, topics::CATALOG_SYNC_FAILED).await,
        1
    );
    assert_eq!(topics_of(&app, &t).await.len(), 1);
    assert!(app.get(PREFS, &t.key).await.data()["emailAddress"].is_null());
}

#[actix_web::test]
async fn the_stream_takes_a_stream_token_and_resumes_after_last_event_id() {
    let app = spawn_app_with(fast).await;
    let t = app.tenant().await;
    let other = app.user_in(&t.account_id, "member", &[]).await;
    let res = crate::browser::mint(&app, &t.key, EVENTS).await;
    assert_eq!(res.status, 201, "{}", res.body);
    assert_eq!(res.data()["stream"], EVENTS);
    let token = res.data()["token"].as_str().unwrap().to_string();
    let mut stream = app
        .sse_with_token(&format!("{EVENTS}?streamToken={token}"))
        .await
        .map_err(|r| r.body)
        .unwrap();
    let ready = stream.expect("ready").await;
    assert_eq!(ready.data["userId"], t.user_id);
    let first = notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, 1).await;
    let ev = created(&mut stream, 1).await.remove(0);
    assert_eq!(ev.data["title"], "Title 1");
    assert_eq!(ev.data["userId"], t.user_id);
    // Keep-alives come from the hub.
    let mut ka = false;
    for _ in 0..10 {
        if let Some(e) = stream.next_raw(Duration::from_secs(1)).await
            && e.event == ":"
        {
            ka = true;
            break;
        }
    }
    assert!(ka, "no keep-alive");
    drop(stream);
    notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, 2).await;
    notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, 3).await;
    // Resuming after the first: the two missed, in order, then live.
    let cursor = first[0].to_string();
    let mut resumed = app
        .sse(EVENTS, &t.key, Some(&cursor))
        .await
        .map_err(|r| r.body)
        .unwrap();
    resumed.expect("ready").await;
    let evs = created(&mut resumed, 2).await;
    let titles: Vec<&str> = evs
        .iter()
        .map(|e| e.data["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Title 2", "Title 3"]);
    notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, 4).await;
    assert_eq!(created(&mut resumed, 1).await[0].data["title"], "Title 4");
    quiet(&mut resumed).await;
    // The other user's stream saw theirs only, and `after=` works too.
    let mut theirs = app
        .sse(&format!("{EVENTS}?after=0"), &other.key, None)
        .await
        .map_err(|r| r.body)
        .unwrap();
    theirs.expect("ready").await;
    let evs = created(&mut theirs, 4).await;
    assert!(evs.iter().all(|e| e.data["userId"] == other.user_id));
    // Bad cursors are 400s; a token for another stream is refused.
    for (cursor, field) in [
        ("x", "Last-Event-ID"),
        ("-1", "Last-Event-ID"),
        ("999999", "Last-Event-ID"),
    ] {
        let err = app.sse(EVENTS, &t.key, Some(cursor)).await.err().unwrap();
        err.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(err.body["error"]["field"], field, "{}", err.body);
    }
    let err = app
        .sse(&format!("{EVENTS}?after=nope"), &t.key, None)
        .await
        .err()
        .unwrap();
    err.assert_error(400, "VALIDATION_ERROR");
    let err = app.sse(EVENTS, "nope", None).await.err().unwrap();
    err.assert_error(401, "UNAUTHORIZED");
    let err = app
        .sse_with_token(&format!("{EVENTS}?streamToken=nope"))
        .await
        .err()
        .unwrap();
    err.assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn agents_open_and_acknowledge_notifications_over_mcp_v3() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for i in 0..3 {
        notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, i).await;
    }
    let mut s = crate::mcp::open_at(&app, "/mcp/v3", &t.key).await;
    let res = s.call(&app, "open_notifications", json!({"take": 2})).await;
    assert_ne!(res["isError"], true, "{res}");
    let d = &res["structuredContent"]["data"];
    assert_eq!(d["acknowledged"], Value::Null);
    assert_eq!(d["notifications"].as_array().unwrap().len(), 2);
    assert_eq!(d["pagination"]["total"], 3);
    let newest = d["notifications"][0]["id"].as_str().unwrap().to_string();
    let res = s
        .call(&app, "open_notifications", json!({"acknowledge": [newest]}))
        .await;
    let d = &res["structuredContent"]["data"];
    assert_eq!(d["acknowledged"]["acknowledged"], 1, "{res}");
    // Acknowledged means read: two unread left.
    assert_eq!(d["notifications"].as_array().unwrap().len(), 2);
    let res = s
        .call(
            &app,
            "open_notifications",
            json!({"acknowledgeAll": true, "unread": false}),
        )
        .await;
    let d = &res["structuredContent"]["data"];
    assert_eq!(d["acknowledged"]["acknowledged"], 2, "{res}");
    assert_eq!(d["notifications"].as_array().unwrap().len(), 3);
    let res = s
        .call(
            &app,
            "open_notifications",
            json!({"acknowledge": ["ntf_nope"]}),
        )
        .await;
    assert_eq!(res["isError"], true, "{res}");
    let res = s
        .call(
            &app,
            "open_notifications",
            json!({"acknowledgeAll": true, "acknowledge": ["x"]}),
        )
        .await;
    assert_eq!(res["isError"], true, "{res}");
    let res = s.call(&app, "open_notifications", json!({"what": 1})).await;
    assert_eq!(res["isError"], true, "{res}");
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn two_instances_stream_once_and_count_an_acknowledgement_once() {
    assert!(
        std::env::var("AGENTIC_TEST_DATABASE_URL").is_ok_and(|v| !v.is_empty()),
        "needs PostgreSQL: run the PostgreSQL pass with -- --include-ignored"
    );
    let a = spawn_app_with(fast).await;
    let b = spawn_on(&a.database_url, fast).await;
    let t = a.tenant().await;
    let mut on_b = open(&b, &t).await;
    let mut on_a = open(&a, &t).await;
    // Created on A (written and published there): B's stream gets it once.
    let ids = notify(&a, &t.account_id, topics::CATALOG_SYNC_FAILED, 1).await;
    let ev = created(&mut on_b, 1).await.remove(0);
    assert_eq!(ev.data["sequence"], ids[0]);
    created(&mut on_a, 1).await;
    // Several at once from both instances: each stream gets each once, in order.
    let (x, y) = tokio::join!(
        async {
            for i in 0..10 {
                notify(&a, &t.account_id, topics::DISCOVERY_COMPLETED, i).await;
            }
        },
        async {
            for i in 10..20 {
                notify(&b, &t.account_id, topics::DISCOVERY_COMPLETED, i).await;
            }
        }
    );
    let _ = (x, y);
    for s in [&mut on_a, &mut on_b] {
        let evs = created(s, 20).await;
        let seqs: Vec<i64> = evs
            .iter()
            .map(|e| e.data["sequence"].as_i64().unwrap())
            .collect();
        assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
        quiet(s).await;
    }
    // Acknowledging through A and B at once counts each once.
    let all = json!({"all": true});
    let (ra, rb) = tokio::join!(a.post(ACK, &t.key, &all), b.post(ACK, &t.key, &all));
    assert_eq!(ra.status, 200, "{}", ra.body);
    assert_eq!(rb.status, 200, "{}", rb.body);
    let total =
        ra.data()["acknowledged"].as_u64().unwrap() + rb.data()["acknowledged"].as_u64().unwrap();
    assert_eq!(total, 21);
    let mut ids: Vec<Value> = ra.data()["ids"].as_array().unwrap().clone();
    ids.extend(rb.data()["ids"].as_array().unwrap().iter().cloned());
    ids.sort_by_key(|v| v.as_str().unwrap().to_string());
    ids.dedup();
    assert_eq!(ids.len(), 21);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn a_status_change_seen_by_two_instances_pollers_is_notified_once() {
    assert!(
        std::env::var("AGENTIC_TEST_DATABASE_URL").is_ok_and(|v| !v.is_empty()),
        "needs PostgreSQL: run the PostgreSQL pass with -- --include-ignored"
    );
    let quick = |c: &mut agentic_api::Config| {
        c.media_buy_poll_seconds = 1;
        fast(c);
    };
    let a = spawn_app_with(quick).await;
    let b = spawn_on(&a.database_url, quick).await;
    let t = a.tenant().await;
    let behaviour = Behaviour {
        default_buy: BuyOutcome::Accept {
            status: "pending_start",
        },
        ..Behaviour::default()
    };
    let s = setup(&a, &t, behaviour).await;
    let res = b
        .post(BUYS, &t.key, &json!({"productQueryId": s.session, "campaign": new_campaign(1000.0),
                                    "mode": "execute", "selections": [pick("ctv-1", 100.0), pick("olv-2", 100.0)]}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let mut on_a = open(&a, &t).await;
    for buy in s.seller.buys() {
        s.seller
            .set_buy_status(buy.id.as_deref().unwrap(), "active");
    }
    // Both pollers run every second; each change is notified once.
    let evs = created(&mut on_a, 2).await;
    assert!(evs.iter().all(|e| e.data["data"]["status"] == "active"));
    tokio::time::sleep(Duration::from_secs(3)).await;
    quiet(&mut on_a).await;
    let res = a
        .get(
            &format!("{LIST}?topic={}&take=100", topics::MEDIA_BUY_STATUS_CHANGED),
            &t.key,
        )
        .await;
    let statuses: Vec<&str> = res
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["data"]["status"].as_str().unwrap())
        .collect();
    assert_eq!(
        statuses,
        ["active", "active", "pending_start", "pending_start"]
    );
}

/// A topic some recipients chose by webhook: one `notification.created`
/// event, naming them, to each of the account's subscriptions taking that
/// type, and none to other subscriptions or for other topics.
#[actix_web::test]
async fn a_topic_chosen_by_webhook_goes_once_to_the_subscriptions_taking_notification_created() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let bob = app.user_in(&t.account_id, "member", &[]).await;
    let carol = app.user_in(&t.account_id, "member", &[]).await;
    let rx = crate::receiver::Receiver::start().await;
    for (path, types) in [
        ("/notifications", json!(["notification.created"])),
        ("/buys", json!(["media_buy.status"])),
    ] {
        let res = app
            .post(
                "/api/v2/buyer/webhook-subscriptions",
                &t.key,
                &json!({"url": rx.url(path), "secret": "whsec-test-0123456789abcdef", "eventTypes": types}),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.body);
    }
    for who in [&t, &bob] {
        let res = app
            .patch(
                PREFS,
                &who.key,
                &json!({"topics": [{"topic": topics::CATALOG_SYNC_FAILED, "webhook": true}]}),
            )
            .await;
        assert_eq!(res.status, 200, "{}", res.body);
    }
    notify(&app, &t.account_id, topics::CATALOG_SYNC_FAILED, 1).await;
    notify(&app, &t.account_id, topics::DISCOVERY_COMPLETED, 2).await;
    app.state
        .get::<agentic_api::outbox::Outbox>()
        .unwrap()
        .drain("webhook", Duration::from_secs(30))
        .await
        .unwrap();
    let hits = rx.wait_for(1).await;
    assert_eq!(
        hits.len(),
        1,
        "one event, one subscription: {:?}",
        hits.iter().map(|h| &h.path).collect::<Vec<_>>()
    );
    let hit = &hits[0];
    assert_eq!(hit.path, "/notifications");
    assert_eq!(hit.event_type.as_deref(), Some("notification.created"));
    assert!(hit.signature.is_some());
    let body = hit.json();
    assert_eq!(body["event"], "notification.created", "{body}");
    assert_eq!(body["topic"], topics::CATALOG_SYNC_FAILED);
    assert_eq!(body["title"], "Title 1");
    assert_eq!(body["data"], json!({"n": 1}));
    let mut users: Vec<i64> = body["recipients"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["userId"].as_i64().unwrap())
        .collect();
    users.sort();
    assert_eq!(users, vec![t.user_id, bob.user_id], "{body}");
    // Each recipient's row is the one named (the console still has it).
    for r in body["recipients"].as_array().unwrap() {
        assert!(r["notificationId"].as_str().unwrap().starts_with("ntf_"));
    }
    assert_eq!(
        rows_of(&app, carol.user_id, topics::CATALOG_SYNC_FAILED).await,
        1
    );
}
