//! Two app instances on one PostgreSQL database: fan-out over LISTEN/NOTIFY,
//! presence as the union across instances, a killed listener, concurrent
//! writers, revocation across instances. These need PostgreSQL, so they
//! are `#[ignore]`d: the SQLite run reports them as ignored, and the
//! PostgreSQL run includes them (`-- --include-ignored`) and fails if no
//! PostgreSQL URL is set.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

const NEEDS_PG: &str = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)";

fn require_postgres() {
    assert!(
        std::env::var("AGENTIC_TEST_DATABASE_URL").is_ok_and(|v| !v.is_empty()),
        "{NEEDS_PG}: run the PostgreSQL pass with -- --include-ignored"
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn messages_posted_on_one_instance_reach_subscribers_on_another_in_order_once() {
    require_postgres();
    // Short keep-alives: a closed tab is noticed at the next write.
    let fast = |c: &mut agentic_api::Config| c.rooms.keepalive = Duration::from_millis(500);
    let a = spawn_app_with(fast).await;
    let b = spawn_on(&a.database_url, fast).await;
    let alice = a.tenant().await;
    let bob = a.user_in(&alice.account_id, "member", &[]).await;
    let uid = a.conversation(&alice, true).await;

    let mut on_b = b.room(&bob, &uid, "", None).await;
    let mut on_a = a.room(&alice, &uid, "", None).await;
    on_b.expect("ready").await;
    on_a.expect("ready").await;

    // Presence is the union: each instance sees both users.
    presence_becomes(&mut on_a, &[alice.user_id, bob.user_id]).await;
    presence_becomes(&mut on_b, &[alice.user_id, bob.user_id]).await;
    let list = b.get("/api/v2/assistant/conversations", &bob.key).await;
    assert_eq!(
        list.data()["presenceByConversationUid"][&uid]
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // Posts through both instances, some large enough to travel without data.
    let big = "y".repeat(9_000);
    const N: i64 = 30;
    for i in 1..=N {
        let (app, who) = if i % 3 == 0 { (&b, &bob) } else { (&a, &alice) };
        let text = if i % 10 == 0 {
            big.clone()
        } else {
            format!("m{i}")
        };
        assert_eq!(app.say(who, &uid, &text).await, i);
    }
    assert_eq!(
        messages(&mut on_b, N as usize)
            .await
            .iter()
            .map(seq_of)
            .collect::<Vec<_>>(),
        (1..=N).collect::<Vec<_>>()
    );
    assert_eq!(
        messages(&mut on_a, N as usize)
            .await
            .iter()
            .map(seq_of)
            .collect::<Vec<_>>(),
        (1..=N).collect::<Vec<_>>()
    );
    // Exactly once: nothing trails behind.
    for s in [&mut on_a, &mut on_b] {
        if let Some(ev) = s.next_event(Duration::from_millis(500)).await {
            assert_ne!(ev.event, "message.created", "duplicate {ev:?}");
        }
    }

    // A change made through A is read back through B at once (no stale cache).
    let before = b.get("/api/v2/assistant/conversations", &bob.key).await;
    assert_eq!(before.data()["totalCount"], json!(1));
    let created = a.conversation(&alice, true).await;
    let after = b.get("/api/v2/assistant/conversations", &bob.key).await;
    assert_eq!(after.data()["totalCount"], json!(2));
    assert_eq!(
        after.data()["conversations"][0]["conversationUid"],
        json!(created)
    );

    // Bob leaving instance B shows up on instance A.
    drop(on_b);
    presence_becomes(&mut on_a, &[alice.user_id]).await;

    // Sharing turned off on A closes Bob's new stream on B.
    let mut again = b.room(&bob, &uid, "", None).await;
    again.expect("ready").await;
    a.patch(
        &format!("/api/v2/assistant/conversations/{uid}/sharing"),
        &alice.key,
        &json!({"sharingEnabled": false}),
    )
    .await;
    assert_eq!(again.expect("error").await.data["code"], json!("NOT_FOUND"));
}

fn fast(c: &mut agentic_api::Config) {
    c.rooms.keepalive = Duration::from_millis(300);
    c.bus_heartbeat = Duration::from_millis(200);
}

/// The backend pids of this database's LISTEN connections.
async fn listener_pids(app: &TestApp) -> Vec<i32> {
    use sea_orm::{ConnectionTrait, Statement};
    let rows = app
        .db
        .query_all_raw(Statement::from_string(
            sea_orm::DbBackend::Postgres,
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query ILIKE 'LISTEN%'".to_string(),
        ))
        .await
        .unwrap();
    rows.iter()
        .map(|r| r.try_get::<i32>("", "pid").unwrap())
        .collect()
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn killing_the_listener_mid_stream_loses_no_message_and_shows_in_readyz() {
    use sea_orm::ConnectionTrait;
    require_postgres();
    let a = spawn_app_with(fast).await;
    let b = spawn_on(&a.database_url, fast).await;
    let alice = a.tenant().await;
    let uid = a.conversation(&alice, true).await;
    let mut on_a = a.room(&alice, &uid, "", None).await;
    on_a.expect("ready").await;
    for i in 1..=5 {
        assert_eq!(b.say(&alice, &uid, &format!("before {i}")).await, i);
    }
    assert_eq!(messages(&mut on_a, 5).await.len(), 5);
    let ready = a
        .request(actix_web::http::Method::GET, "/readyz", None, None)
        .await;
    assert_eq!(ready.status, 200, "{}", ready.body);
    // Kill every listener backend while B keeps posting.
    let pids = listener_pids(&a).await;
    assert!(pids.len() >= 2, "listeners: {pids:?}");
    for pid in pids {
        a.db.execute_unprepared(&format!("SELECT pg_terminate_backend({pid})"))
            .await
            .unwrap();
    }
    for i in 6..=20 {
        assert_eq!(b.say(&alice, &uid, &format!("during {i}")).await, i);
    }
    // Every message arrives, in order, once; the stream stayed open.
    let got: Vec<i64> = messages(&mut on_a, 15).await.iter().map(seq_of).collect();
    assert_eq!(got, (6..=20).collect::<Vec<_>>());
    if let Some(ev) = on_a.next_event(Duration::from_millis(700)).await {
        assert_ne!(ev.event, "message.created", "duplicate {ev:?}");
        assert_ne!(ev.event, "error", "stream closed: {ev:?}");
    }
    // The bus reconnected: readiness is back, and live delivery works again.
    let mut ready = false;
    for _ in 0..50 {
        if a.request(actix_web::http::Method::GET, "/readyz", None, None)
            .await
            .status
            == 200
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(ready, "readyz never recovered");
    assert_eq!(b.say(&alice, &uid, "after").await, 21);
    assert_eq!(seq_of(&messages(&mut on_a, 1).await[0]), 21);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn concurrent_posts_on_two_instances_arrive_in_order_on_both() {
    require_postgres();
    let a = spawn_app_with(fast).await;
    let b = spawn_on(&a.database_url, fast).await;
    let alice = a.tenant().await;
    let bob = a.user_in(&alice.account_id, "member", &[]).await;
    let uid = a.conversation(&alice, true).await;
    let mut on_a = a.room(&alice, &uid, "", None).await;
    let mut on_b = b.room(&bob, &uid, "", None).await;
    on_a.expect("ready").await;
    on_b.expect("ready").await;
    const EACH: usize = 25;
    let texts: Vec<String> = (0..EACH).map(|i| format!("m{i}")).collect();
    let from_a = futures_util::future::join_all(texts.iter().map(|t| a.say(&alice, &uid, t)));
    let from_b = futures_util::future::join_all(texts.iter().map(|t| b.say(&bob, &uid, t)));
    let (from_a, from_b) = futures_util::future::join(from_a, from_b).await;
    let mut assigned: Vec<i64> = from_a.into_iter().chain(from_b).collect();
    assigned.sort_unstable();
    let all: Vec<i64> = (1..=(2 * EACH) as i64).collect();
    assert_eq!(assigned, all, "each post gets its own sequence");
    for stream in [&mut on_a, &mut on_b] {
        let got: Vec<i64> = messages(stream, 2 * EACH)
            .await
            .iter()
            .map(seq_of)
            .collect();
        assert_eq!(got, all);
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn a_key_revoked_on_one_instance_closes_its_stream_and_cache_entry_on_the_other() {
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let alice = a.tenant().await;
    let uid = a.conversation(&alice, false).await;
    let second = agentic_api::auth::tenancy::create_api_key(&a.db, alice.user_id, &[])
        .await
        .unwrap();
    // B has the key cached and a stream open with it.
    assert_eq!(b.get("/api/v2/me", &alice.key).await.status, 200);
    let mut on_b = b.room(&alice, &uid, "", None).await;
    on_b.expect("ready").await;
    let keys = a.get("/api/v2/api-keys", &second).await;
    let prefix = agentic_api::auth::keys::prefix_of(&alice.key).unwrap();
    let id = keys
        .data()
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["prefix"] == json!(prefix))
        .unwrap()["id"]
        .as_i64()
        .unwrap();
    assert_eq!(
        a.delete(&format!("/api/v2/api-keys/{id}"), &second)
            .await
            .status,
        200
    );
    // Well within the 5 s cache TTL and the 15 s keep-alive.
    let err = on_b.expect("error").await;
    assert_eq!(err.data["code"], json!("UNAUTHORIZED"));
    let mut refused = false;
    for _ in 0..20 {
        if b.get("/api/v2/me", &alice.key).await.status == 401 {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused, "B still accepts the revoked key");
    // Another user's cached key on B was not flushed: still answered.
    assert_eq!(b.get("/api/v2/me", &second).await.status, 200);
}

/// Lists are cached on every instance, yet each change made through one
/// instance is in the very next list read through another: the cached pages
/// are warmed on the reading instance first, so a stale cache would show.
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn every_change_through_one_instance_is_in_the_next_list_through_another() {
    require_postgres();
    const LIST: &str = "/api/v2/assistant/conversations";
    let fast = |c: &mut agentic_api::Config| c.rooms.keepalive = Duration::from_millis(500);
    let a = spawn_app_with(fast).await;
    let b = spawn_on(&a.database_url, fast).await;
    let alice = a.tenant().await;
    let bob = a.user_in(&alice.account_id, "member", &[]).await;
    let first = a.conversation(&alice, true).await;
    let second = a.conversation(&alice, true).await;
    async fn read(app: &TestApp, who: &Tenant) -> Resp {
        let res = app.get(LIST, &who.key).await;
        assert_eq!(res.status, 200, "{}", res.body);
        res
    }
    fn top(res: &Resp) -> &serde_json::Value {
        &res.data()["conversations"][0]
    }
    // Warm instance B's cache for Bob (twice: the second read is a hit).
    for _ in 0..2 {
        assert_eq!(read(&b, &bob).await.data()["totalCount"], json!(2));
    }

    // Rename through A.
    let renamed = a
        .patch(
            &format!("{LIST}/{first}/title"),
            &alice.key,
            &json!({"title": "Renamed on A"}),
        )
        .await;
    assert_eq!(renamed.status, 200, "{}", renamed.body);
    let res = read(&b, &bob).await;
    assert_eq!(top(&res)["conversationUid"], json!(first));
    assert_eq!(top(&res)["title"], json!("Renamed on A"));

    // A message through A: the conversation moves up, its sequence and
    // auto title follow.
    assert_eq!(a.say(&alice, &second, "Brief is in").await, 1);
    let res = read(&b, &bob).await;
    assert_eq!(top(&res)["conversationUid"], json!(second));
    assert_eq!(top(&res)["lastSequence"], json!(1));
    assert_eq!(top(&res)["title"], json!("Brief is in"));

    // A new conversation through A.
    let third = a.conversation(&alice, true).await;
    let res = read(&b, &bob).await;
    assert_eq!(res.data()["totalCount"], json!(3));
    assert_eq!(top(&res)["conversationUid"], json!(third));

    // Sharing turned off through A: gone from Bob's list on B.
    let unshared = a
        .patch(
            &format!("{LIST}/{third}/sharing"),
            &alice.key,
            &json!({"sharingEnabled": false}),
        )
        .await;
    assert_eq!(unshared.status, 200, "{}", unshared.body);
    let res = read(&b, &bob).await;
    assert_eq!(res.data()["totalCount"], json!(2));
    assert_ne!(top(&res)["conversationUid"], json!(third));

    // Presence: Alice's room on A; her list on A is cached with her alone.
    let mut on_a = a.room(&alice, &first, "", None).await;
    on_a.expect("ready").await;
    presence_becomes(&mut on_a, &[alice.user_id]).await;
    let present = |res: &Resp| {
        res.data()["presenceByConversationUid"][&first]
            .as_array()
            .map(|p| {
                p.iter()
                    .map(|u| u["userId"].as_i64().unwrap())
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
    };
    for _ in 0..2 {
        assert_eq!(present(&read(&a, &alice).await), vec![alice.user_id]);
    }
    // Bob joins on B: once A's room has reloaded it from the database (the
    // write is committed), A's next list shows him too.
    let on_b = b.room(&bob, &first, "", None).await;
    presence_becomes(&mut on_a, &[alice.user_id, bob.user_id]).await;
    let mut both = vec![alice.user_id, bob.user_id];
    both.sort();
    assert_eq!(present(&read(&a, &alice).await), both);
    // And his leaving too.
    drop(on_b);
    presence_becomes(&mut on_a, &[alice.user_id]).await;
    assert_eq!(present(&read(&a, &alice).await), vec![alice.user_id]);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn a_discovery_driven_on_one_instance_streams_every_revision_on_another() {
    use crate::fake_seller::{Behaviour, FakeSeller, product};
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let t = a.tenant().await;
    let adv = a
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &json!({"name": "Acme", "brand": "acme.example", "primaryCurrency": "USD"}),
        )
        .await;
    let mut sellers = Vec::new();
    for (i, ms) in [0u64, 250, 500, 750].into_iter().enumerate() {
        let s = FakeSeller::start(Behaviour {
            delay: Duration::from_millis(ms),
            products: json!([product(&format!("p-{i}"), 1.0)]),
            ..Behaviour::default()
        })
        .await;
        agentic_api::auth::tenancy::register_storefront(
            &a.db,
            &format!("Seller {i}"),
            &s.url(),
            a.config.url_policy(),
        )
        .await
        .unwrap();
        sellers.push(s);
    }
    // Started (and driven) on A, watched on B.
    let res = a
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &t.key,
            &json!({"advertiserId": adv.data()["id"], "progressive": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    let path = format!("/api/v2/buyer/discovery/{id}/events");
    let mut on_b = match b.sse(&path, &t.key, None).await {
        Ok(s) => s,
        Err(r) => panic!("{}", r.body),
    };
    on_b.expect("ready").await;
    let mut revisions = Vec::new();
    let mut groups = 0;
    loop {
        let ev = on_b
            .next_event(Duration::from_secs(10))
            .await
            .expect("an event on B");
        match ev.event.as_str() {
            "revision" => {
                revisions.push(ev.data["revision"].as_i64().unwrap());
                groups += ev.data["productGroups"].as_array().unwrap().len();
            }
            "complete" => break,
            other => panic!("{other}"),
        }
    }
    assert!(on_b.ended(Duration::from_secs(5)).await);
    // Every revision exactly once, in order, and every seller's group.
    let expected: Vec<i64> = (0..=*revisions.last().unwrap()).collect();
    assert_eq!(revisions, expected);
    assert_eq!(groups, 4);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn two_instances_deliver_each_webhook_once_and_one_takes_over_from_the_other() {
    use std::collections::{HashMap, HashSet};

    use agentic_api::outbox::Outbox;

    use crate::receiver::Receiver;

    require_postgres();
    let quick = |c: &mut agentic_api::Config| {
        c.outbox.lease = Duration::from_secs(2);
        c.outbox.sweep = Duration::from_millis(300);
    };
    let a = spawn_app_with(quick).await;
    let b = spawn_on(&a.database_url, quick).await;
    let t = a.tenant().await;
    let adv = advertiser(&a, &t).await;
    let rx = Receiver::start().await;
    const SUBS: usize = 6;
    for i in 0..SUBS {
        let res = a
            .post(
                "/api/v2/buyer/webhook-subscriptions",
                &t.key,
                &json!({"url": rx.url(&format!("/s{i}")), "secret": "a-secret-of-16-chars", "eventTypes": ["discovery.revision"]}),
            )
            .await;
        assert_eq!(res.status, 201, "{}", res.body);
    }
    // Events committed on both instances (no storefronts: one each).
    const EVENTS: usize = 20;
    for i in 0..EVENTS {
        one_event(if i % 2 == 0 { &a } else { &b }, &t, &adv).await;
    }
    let drain = |app: &TestApp| {
        let outbox = app.state.get::<Outbox>().unwrap().clone();
        async move {
            outbox
                .drain("webhook", Duration::from_secs(60))
                .await
                .unwrap()
        }
    };
    drain(&a).await;
    drain(&b).await;
    rx.wait_for(SUBS * EVENTS).await;

    // Each subscription is worked by one instance only.
    let lanes = |app: &TestApp| -> HashSet<String> {
        let outbox = app.state.get::<Outbox>().unwrap();
        outbox.local_lanes("webhook").into_iter().collect()
    };
    let (on_a, on_b) = (lanes(&a), lanes(&b));
    assert!(on_a.is_disjoint(&on_b), "{on_a:?} / {on_b:?}");
    assert_eq!(on_a.len() + on_b.len(), SUBS);

    let once = |hits: &[crate::receiver::Hit]| {
        let mut seen: HashMap<(String, String), usize> = HashMap::new();
        let mut ids = HashSet::new();
        for h in hits {
            assert!(
                ids.insert(h.delivery_id.clone().unwrap()),
                "a delivery went out twice"
            );
            let d = h.json()["discoveryId"].as_str().unwrap().to_string();
            *seen.entry((h.path.clone(), d)).or_default() += 1;
        }
        assert!(
            seen.values().all(|&n| n == 1),
            "an event reached a subscription twice"
        );
        seen.len()
    };
    assert_eq!(once(&rx.hits()), SUBS * EVENTS);

    // The instance working lanes stops; the other takes them over.
    let (gone, stays) = if on_a.is_empty() { (&b, &a) } else { (&a, &b) };
    gone.state.shutdown.cancel();
    gone.handle.stop(true).await;
    for _ in 0..5 {
        one_event(stays, &t, &adv).await;
    }
    drain(stays).await;
    rx.wait_for(SUBS * (EVENTS + 5)).await;
    assert_eq!(once(&rx.hits()), SUBS * (EVENTS + 5));
    assert_eq!(lanes(stays).len(), SUBS);
}

/// A discovery with no storefronts: one complete revision, one event.
async fn one_event(app: &TestApp, t: &Tenant, adv: &str) {
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 5}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn an_oauth_grant_revoked_on_one_instance_stops_working_on_the_other_at_once() {
    use crate::oauth;
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let acc = oauth::account(&a, "Acme").await;
    let pat = oauth::person(&a, &acc, "member").await;
    let client_id = oauth::client(&a, "Agent").await;
    // Issued through A; B has it cached and a stream open with it.
    let tokens = oauth::tokens_for(&a, &client_id, &pat).await;
    let access = oauth::bearer(&tokens).to_string();
    assert_eq!(oauth::me(&b, &access).await.status, 200);
    let as_token = Tenant {
        key: access.clone(),
        ..pat.clone()
    };
    let uid = a.conversation(&as_token, false).await;
    let mut on_b = b.room(&as_token, &uid, "", None).await;
    on_b.expect("ready").await;

    let revoked = oauth::form(
        &a,
        "/auth/revoke",
        &[("token", tokens["refresh_token"].as_str().unwrap())],
        None,
    )
    .await;
    assert_eq!(revoked.status, 200);
    // Well within the 5 s cache TTL and the 15 s keep-alive.
    let err = on_b.expect("error").await;
    assert_eq!(err.data["code"], json!("UNAUTHORIZED"));
    let mut refused = false;
    for _ in 0..20 {
        if oauth::me(&b, &access).await.status == 401 {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(refused, "B still accepts the revoked access token");
    // The user's API key, cached on B too, still works.
    assert_eq!(b.get("/api/v2/me", &pat.key).await.status, 200);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn an_mcp_session_opened_on_one_instance_is_served_by_another_to_its_owner_only() {
    use crate::mcp::{MCP, post, session_status, stored_sessions};
    use awc::http::Method;
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let owner = a.tenant().await;
    let teammate = a
        .user_in(&owner.account_id, "admin", &["platform:write"])
        .await;
    let stranger = a.tenant().await;

    // initialize (and notifications/initialized) on A only.
    let mut s = crate::mcp::open(&a, &owner.key).await;

    // Another user or another account presenting the id on B, where the
    // session is not in memory yet, then on A, where it is: unknown to
    // them, and B has not restored it for them.
    for other in [&teammate, &stranger] {
        for app in [&b, &a] {
            for method in [Method::POST, Method::GET, Method::DELETE] {
                let status = session_status(app, MCP, method.clone(), &other.key, &s.id).await;
                assert_eq!(status, 404, "{method} by another caller");
            }
        }
    }
    assert_eq!(stored_sessions(&a, &s.id).await, 1);

    // tools/list and tools/call on B with the same Mcp-Session-Id: B
    // restores the session from the database, no new initialize.
    let (status, headers, msgs) = post(
        &b,
        MCP,
        &owner.key,
        Some(&s.id),
        &json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    )
    .await;
    assert_eq!(status, 200, "{msgs:?}");
    assert!(headers.get("mcp-session-id").is_none(), "no new session");
    let tools = msgs.last().unwrap()["result"]["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["name"] == "create_advertiser"));
    let (status, _, msgs) = post(
        &b,
        MCP,
        &owner.key,
        Some(&s.id),
        &json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
            "name": "create_advertiser",
            "arguments": {"body": {"name": "Across", "brand": "across.example", "primaryCurrency": "USD"}}}}),
    )
    .await;
    assert_eq!(status, 200, "{msgs:?}");
    let created = &msgs.last().unwrap()["result"];
    assert_ne!(created["isError"], true, "{created}");
    let adv = created["structuredContent"]["data"]["id"].as_str().unwrap();
    // The call ran as the owner, in the owner's account.
    let rest = a
        .get(&format!("/api/v2/buyer/advertisers/{adv}"), &owner.key)
        .await;
    assert_eq!(rest.status, 200);

    // Now held by both; still refused to the others on both.
    for app in [&a, &b] {
        assert_eq!(
            session_status(app, MCP, Method::POST, &stranger.key, &s.id).await,
            404
        );
    }
    s.next = 10;
    let listed = s.call(&a, "list_advertisers", json!({})).await;
    assert_eq!(
        listed["structuredContent"]["meta"]["pagination"]["total"],
        1
    );

    // Ended through B: gone for A too, which still held it in memory.
    assert_eq!(
        session_status(&b, MCP, Method::DELETE, &owner.key, &s.id).await,
        204
    );
    assert_eq!(stored_sessions(&a, &s.id).await, 0);
    for app in [&a, &b] {
        assert_eq!(
            session_status(app, MCP, Method::POST, &owner.key, &s.id).await,
            404
        );
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn two_instances_never_send_a_text_twice_and_a_sender_killed_mid_batch_loses_nothing() {
    use std::collections::HashSet;

    use agentic_api::auth::tenancy::{self, NewAccount, NewLine};
    use agentic_api::outbox::Outbox;
    use sea_orm::EntityTrait;

    use crate::fake_carrier::FakeCarrier;

    require_postgres();
    let fake = FakeCarrier::start().await;
    // A slow carrier (100 ms an answer), so a batch is under way when an
    // instance dies.
    fake.delay(100);
    let base = fake.base.clone();
    let quick = move |c: &mut agentic_api::Config| {
        c.outbox.lease = Duration::from_secs(2);
        c.outbox.sweep = Duration::from_millis(300);
        c.carrier_url = Some(base.clone());
        c.carrier_api_key = "KEY".parse().ok();
    };
    let a = spawn_app_with(quick.clone()).await;
    let b = spawn_on(&a.database_url, quick).await;
    let mut account = NewAccount::named("Lines");
    account.phone_lines = true;
    let t = a.tenant_with(account, "admin", &["platform:write"]).await;
    const LINES: usize = 4;
    const PER_LINE: usize = 25;
    let mut lines = Vec::new();
    for i in 0..LINES {
        let id = tenancy::provision_line(
            &a.db,
            NewLine {
                account_id: t.account_id.clone(),
                number: format!("+1415555020{i}"),
                kind: "sms".into(),
                rcs_agent_verified: false,
                messaging_profile: None,
                inactive: false,
            },
        )
        .await
        .unwrap()
        .to_string();
        agentic_api::phone::admin::set_line_limits(
            &a.db,
            &id,
            agentic_api::phone::admin::LimitsChange {
                per_minute: Some(10_000),
                ..Default::default()
            },
        )
        .await
        .unwrap();
        lines.push(id);
    }
    // Messages accepted through both instances, each text unique.
    for n in 0..PER_LINE {
        for (i, line) in lines.iter().enumerate() {
            let via = if (n + i) % 2 == 0 { &a } else { &b };
            let res = via
                .post(
                    "/api/v2/communications/messages",
                    &t.key,
                    &json!({"requestId": uuid::Uuid::new_v4().to_string(), "endpointId": line,
                        "to": "+14155550124", "text": format!("m-{line}-{n}")}),
                )
                .await;
            assert_eq!(res.status, 202, "{}", res.body);
        }
    }
    // Kill whichever instance is sending once part of the batch went out.
    while fake.requests().len() < 20 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let busy = |app: &TestApp| {
        !app.state
            .get::<Outbox>()
            .unwrap()
            .local_lanes("text")
            .is_empty()
    };
    let (gone, stays) = if busy(&a) { (&a, &b) } else { (&b, &a) };
    gone.state.shutdown.cancel();
    gone.handle.stop(false).await;
    // The other instance takes the lanes over once the leases run out.
    let outbox = stays.state.get::<Outbox>().unwrap().clone();
    loop {
        outbox.drain("text", Duration::from_secs(60)).await.unwrap();
        let rows = entity::phone_message::Entity::find()
            .all(&stays.db)
            .await
            .unwrap();
        if rows
            .iter()
            .all(|m| m.status != "pending" && m.status != "submitting")
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rows = entity::phone_message::Entity::find()
        .all(&stays.db)
        .await
        .unwrap();
    assert_eq!(rows.len(), LINES * PER_LINE);
    let sent: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| r.body["text"].as_str().unwrap().to_string())
        .collect();
    let distinct: HashSet<&String> = sent.iter().collect();
    assert_eq!(
        distinct.len(),
        sent.len(),
        "a text went to the carrier twice"
    );
    // Nothing lost: every message was submitted once, or (cut between its
    // claim and its record) is held for an operator, never re-sent.
    for m in &rows {
        match m.status.as_str() {
            "submitted" => assert!(
                distinct.contains(&m.text),
                "{} submitted but never sent",
                m.text
            ),
            "held" => {}
            other => panic!("message {} is {other}", m.id),
        }
    }
    // And whatever reached the carrier is accounted for.
    let texts: HashSet<&String> = rows.iter().map(|m| &m.text).collect();
    assert!(sent.iter().all(|t| texts.contains(t)));
}

/// Instance A submits a text to a slow carrier and misses its lease
/// renewal; B takes the line over, finds the message mid-submit and holds
/// it. A's answer from the carrier still lands: the hold is settled, the
/// message submitted with its carrier id (sent once), and its delivery
/// report matches.
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn a_text_under_way_when_another_instance_takes_its_line_keeps_its_carrier_id() {
    use agentic_api::auth::tenancy::{self, NewAccount, NewLine};
    use base64::Engine;
    use ed25519_dalek::Signer;
    use sea_orm::EntityTrait;

    use crate::fake_carrier::FakeCarrier;

    require_postgres();
    let fake = FakeCarrier::start().await;
    fake.delay(2000);
    let key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let public = base64::engine::general_purpose::STANDARD.encode(key.verifying_key().to_bytes());
    let (base, public_a) = (fake.base.clone(), public.clone());
    // A renews far too late for its 1-second lease; B sweeps often.
    let a = spawn_app_with(move |c| {
        c.outbox.lease = Duration::from_secs(1);
        c.outbox.sweep = Duration::from_secs(60);
        c.carrier_url = Some(base);
        c.carrier_api_key = "KEY".parse().ok();
        c.carrier_public_key = public_a.parse().ok();
    })
    .await;
    let mut account = NewAccount::named("Lines");
    account.phone_lines = true;
    let t = a.tenant_with(account, "admin", &["platform:write"]).await;
    let line = tenancy::provision_line(
        &a.db,
        NewLine {
            account_id: t.account_id.clone(),
            number: "+14155550210".into(),
            kind: "sms".into(),
            rcs_agent_verified: false,
            messaging_profile: None,
            inactive: false,
        },
    )
    .await
    .unwrap()
    .to_string();
    let res = a
        .post(
            "/api/v2/communications/messages",
            &t.key,
            &json!({"requestId": uuid::Uuid::new_v4().to_string(), "endpointId": line,
                "to": "+14155550124", "text": "hello"}),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let id: i64 = res.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    while fake.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // B starts while A's submission is under way.
    let base = fake.base.clone();
    let b = spawn_on(&a.database_url, move |c| {
        c.outbox.lease = Duration::from_secs(1);
        c.outbox.sweep = Duration::from_millis(100);
        c.carrier_url = Some(base);
        c.carrier_api_key = "KEY".parse().ok();
        c.carrier_public_key = public.parse().ok();
    })
    .await;
    let (seen, settled) = statuses_until(&b.db, id, "submitted").await;
    // Held by B (A's own lane is still waiting for the carrier), then
    // settled by A's answer.
    assert_eq!(seen, ["submitting", "held", "submitted"]);
    let carrier_id = settled.carrier_message_id.unwrap();
    assert_eq!(carrier_id, "40317f2c-0000-4000-8000-000000000001");
    assert_eq!(fake.requests().len(), 1, "sent once");
    let job = entity::outbox_job::Entity::find()
        .all(&b.db)
        .await
        .unwrap()
        .into_iter()
        .find(|j| j.queue == "text")
        .unwrap();
    assert_eq!(job.state, "done");
    // A delivery report, to either instance, matches it.
    let report = json!({"data": {"event_type": "message.finalized", "id": "e1", "record_type": "event",
        "payload": {"id": carrier_id, "to": [{"phone_number": "+14155550124", "status": "delivered"}]}}});
    let body = serde_json::to_vec(&report).unwrap();
    let now = chrono::Utc::now().timestamp();
    let mut signed = format!("{now}|").into_bytes();
    signed.extend_from_slice(&body);
    let sig = base64::engine::general_purpose::STANDARD.encode(key.sign(&signed).to_bytes());
    let res = a
        .client
        .post(b.url("/carrier/events"))
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("telnyx-timestamp", now.to_string()))
        .insert_header(("telnyx-signature-ed25519", sig))
        .send_body(body)
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(text_message(&b.db, id).await.status, "delivered");
}

/// A first campaign on one instance and a currency change on another, at
/// once and many times over: never both. Either the campaign is in the old
/// currency and the change is refused, or the change landed first and the
/// campaign (sent without a currency) takes the new one.
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn a_first_campaign_and_a_currency_change_on_two_instances_never_both_win() {
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let t = a.tenant().await;
    for round in 0..10 {
        let adv = advertiser(&a, &t).await;
        let campaign = json!({
            "advertiserId": adv, "name": format!("C{round}"),
            "flightDates": {"startDate": "2027-01-01T00:00:00Z", "endDate": "2027-02-01T00:00:00Z"},
            "budget": {"total": 100}
        });
        let path = format!("/api/v2/buyer/advertisers/{adv}");
        let change = json!({"primaryCurrency": "EUR"});
        let (created, changed) = tokio::join!(
            a.post("/api/v2/buyer/campaigns", &t.key, &campaign),
            b.put(&path, &t.key, &change),
        );
        assert_eq!(created.status, 201, "{}", created.body);
        let currency = created.data()["campaign"]["budget"]["currency"].clone();
        if changed.status == 200 {
            assert_eq!(currency, "EUR", "the change came first");
        } else {
            changed.assert_error(409, "CONFLICT");
            assert_eq!(currency, "USD", "the campaign came first");
        }
        let now = a.get(&path, &t.key).await.data()["primaryCurrency"].clone();
        assert_eq!(now, currency, "the advertiser's currency is the campaign's");
    }
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn an_assistant_turn_directed_on_one_instance_streams_on_another_and_runs_once() {
    use crate::fake_llm::{FakeLlm, Reply};
    require_postgres();
    let llm = FakeLlm::start().await;
    llm.script([Reply::Text(
        vec!["One", " two", " three"],
        Duration::from_millis(30),
    )]);
    let a = crate::assistant::with_llm(&llm, fast).await;
    let base = llm.base.clone();
    let b = spawn_on(&a.database_url, move |c| {
        fast(c);
        c.assistant_url = Some(base);
    })
    .await;
    let ada = a.tenant().await;
    let bo = a.user_in(&ada.account_id, "member", &[]).await;
    let uid = a.conversation(&ada, true).await;
    let mut on_b = b.room(&bo, &uid, "", None).await;
    on_b.expect("ready").await;
    let run = crate::assistant::direct(&a, &ada, &uid, "count").await;
    let (streamed, answer) = crate::assistant::answer_of(&mut on_b, &run).await;
    assert_eq!(streamed, "One two three");
    assert_eq!(answer["message"]["content"], "One two three");
    crate::assistant::run_becomes(&b, &bo, &uid, &run, "completed").await;
    // Both instances saw the turn; one drove it.
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(llm.seen().len(), 1);
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn two_instances_answer_each_received_fax_once() {
    use agentic_api::auth::tenancy::{NewAccount, NewLine};
    use agentic_api::phone::fax::{admin, pdf, storage::Storage};
    use sea_orm::{ActiveModelTrait, ColumnTrait, EntityTrait, QueryFilter, Set};
    require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    let tune = move |c: &mut agentic_api::Config| {
        c.fax_storage_dir = root.clone();
        c.fax.tick = Duration::from_millis(100);
        c.fax.extractor = Some(env!("CARGO_BIN_EXE_agentic-api").into());
    };
    let a = spawn_app_with(tune.clone()).await;
    let b = spawn_on(&a.database_url, tune).await;
    let mut account = NewAccount::named("Seller");
    account.phone_lines = true;
    let t = a.tenant_with(account, "admin", &["platform:write"]).await;
    let line = agentic_api::auth::tenancy::provision_line(
        &a.db,
        NewLine {
            account_id: t.account_id.clone(),
            number: "+13325550100".into(),
            kind: "fax".into(),
            rcs_agent_verified: false,
            messaging_profile: None,
            inactive: false,
        },
    )
    .await
    .unwrap();
    let c = admin::create_customer(&a.db, &t.account_id, "Initech", true)
        .await
        .unwrap();
    let customer = c["customerId"].as_i64().unwrap();
    admin::assign_line(&a.db, &line.to_string(), customer, true)
        .await
        .unwrap();
    let storage = Storage::new(dir.path().to_path_buf());
    let doc = pdf::render_text("RFQ", "Rates please.").unwrap();
    let now = chrono::Utc::now();
    for i in 0..8 {
        let rel = storage
            .put(&t.account_id, customer, &format!("{i}.pdf"), &doc)
            .await
            .unwrap();
        entity::inbound_fax::ActiveModel {
            account_id: Set(t.account_id.clone()),
            customer_id: Set(customer),
            line_id: Set(line),
            provider_fax_id: Set(format!("mi-{i}")),
            from_number: Set(format!("+1312555{i:04}")),
            to_number: Set("+13325550100".into()),
            stage: Set("stored".into()),
            file_path: Set(Some(rel)),
            created_at: Set(now),
            updated_at: Set(now),
            ..Default::default()
        }
        .insert(&a.db)
        .await
        .unwrap();
    }
    for _ in 0..300 {
        let open = entity::inbound_fax::Entity::find()
            .filter(entity::inbound_fax::Column::Stage.ne("sent"))
            .all(&a.db)
            .await
            .unwrap();
        if open.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // Each fax answered once: one reply each, to its own sender.
    let replies = entity::fax::Entity::find().all(&b.db).await.unwrap();
    assert_eq!(replies.len(), 8, "{replies:?}");
    let mut to: Vec<String> = replies.iter().map(|f| f.to_number.clone()).collect();
    to.sort();
    to.dedup();
    assert_eq!(to.len(), 8);
}

/// An intake accepted on one instance and rejected on another at the same
/// moment: exactly one decision wins, and the binding follows it.
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn an_intake_decided_on_two_instances_at_once_is_decided_once() {
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let t = a.tenant().await;
    let m = crate::accounts::managed(&a).await;
    for round in 0..6 {
        let adv = advertiser(&a, &t).await;
        let mut e = crate::accounts::entry(&adv, m.sf, "agency.example", "agent");
        e["sandbox"] = json!(true);
        let synced = a
            .post(
                "/api/v2/buyer/storefront-accounts/sync",
                &t.key,
                &json!({"accounts": [e]}),
            )
            .await;
        assert_eq!(synced.status, 200, "{}", synced.body);
        let intake = synced.data()["accounts"][0]["intakeId"]
            .as_str()
            .unwrap()
            .to_string();
        let base = format!("/api/v2/storefront/account-mappings/reviews/{intake}");
        let (accept, reject) = (format!("{base}/accept"), format!("{base}/reject"));
        let (empty, note) = (json!({}), json!({"note": "race"}));
        let (accepted, rejected) = tokio::join!(
            a.post(&accept, &m.operator.key, &empty),
            b.post(&reject, &m.operator.key, &note),
        );
        let wins = [accepted.status == 200, rejected.status == 200];
        assert_eq!(
            wins.iter().filter(|w| **w).count(),
            1,
            "round {round}: {} / {}",
            accepted.body,
            rejected.body
        );
        let loser = if wins[0] { &rejected } else { &accepted };
        loser.assert_error(409, "CONFLICT");
        let want = if wins[0] { "active" } else { "rejected" };
        let bindings = b
            .get(
                &format!("/api/v2/buyer/advertiser-accounts?advertiserId={adv}"),
                &t.key,
            )
            .await;
        assert_eq!(bindings.data()[0]["status"], json!(want), "round {round}");
    }
}

/// The same account synced through two instances at the same moment: one
/// intake, one binding, and both answers name it.
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn one_account_synced_on_two_instances_at_once_is_one_intake() {
    require_postgres();
    let a = spawn_app().await;
    let b = spawn_on(&a.database_url, |_| {}).await;
    let t = a.tenant().await;
    let m = crate::accounts::managed(&a).await;
    for _ in 0..4 {
        let adv = advertiser(&a, &t).await;
        let mut e = crate::accounts::entry(&adv, m.sf, "agency.example", "agent");
        e["sandbox"] = json!(true);
        let body = json!({"accounts": [e]});
        let path = "/api/v2/buyer/storefront-accounts/sync";
        let (x, y) = tokio::join!(a.post(path, &t.key, &body), b.post(path, &t.key, &body));
        assert_eq!(x.status, 200, "{}", x.body);
        assert_eq!(y.status, 200, "{}", y.body);
        let id = |r: &Resp| r.data()["accounts"][0]["intakeId"].clone();
        assert_eq!(id(&x), id(&y));
        let bindings = a
            .get(
                &format!("/api/v2/buyer/advertiser-accounts?advertiserId={adv}"),
                &t.key,
            )
            .await;
        assert_eq!(
            bindings.body["meta"]["pagination"]["total"],
            json!(1),
            "{}",
            bindings.body
        );
    }
}

/// One upload URL sent to two instances at the same moment (sharing the
/// database and the upload storage directory): one PUT stores the file,
/// the other is refused as a replay; and a Page capability issued through
/// one instance is honoured by the other in the same MCP session.
#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn an_upload_url_is_single_use_across_instances() {
    require_postgres();
    let dir = tempfile::tempdir().unwrap();
    let shared = dir.path().to_path_buf();
    let again = shared.clone();
    let a = spawn_app_with(move |c| c.upload_storage_dir = shared).await;
    let b = spawn_on(&a.database_url, move |c| c.upload_storage_dir = again).await;
    let t = a.tenant().await;
    let pdf = b"%PDF-1.7\n% two instances\n%%EOF\n".to_vec();
    for round in 0..5 {
        let reserved = a
            .post(
                "/api/v2/buyer/materials/uploads",
                &t.key,
                &json!({"title": format!("Deck {round}"), "contentType": "application/pdf", "sizeBytes": pdf.len()}),
            )
            .await;
        assert_eq!(reserved.status, 201, "{}", reserved.body);
        let url = reserved.data()["upload"]["url"].as_str().unwrap();
        let path = url.strip_prefix(&a.address).unwrap().to_string();
        let id = reserved.data()["material"]["id"]
            .as_str()
            .unwrap()
            .to_string();
        let put = actix_web::http::Method::PUT;
        let ct = Some("application/pdf");
        let (x, y) = tokio::join!(
            a.send_raw(put.clone(), &path, None, ct, pdf.clone()),
            b.send_raw(put.clone(), &path, None, ct, pdf.clone()),
        );
        let mut statuses = [x.status.as_u16(), y.status.as_u16()];
        statuses.sort();
        assert_eq!(
            statuses,
            [200, 409],
            "round {round}: {} / {}",
            x.body,
            y.body
        );
        let loser = if x.status == 200 { &y } else { &x };
        loser.assert_error(409, "CONFLICT");
        // Either instance serves the result; the bytes are whole.
        let got = b
            .get(&format!("/api/v2/buyer/materials/{id}"), &t.key)
            .await;
        assert_eq!(got.data()["status"], "uploaded", "{}", got.body);
        let stored = std::fs::read(dir.path().join(&t.account_id).join(&id)).unwrap();
        assert_eq!(stored, pdf);
    }

    // A capability opened through one instance works through the other.
    let mut s = crate::mcp::open_at(&a, "/mcp/v3", &t.key).await;
    let opened = s.call(&a, "open_page", json!({"page": "library"})).await;
    let token = opened["_meta"]["agentic-api/pageCapability"]["token"]
        .as_str()
        .unwrap()
        .to_string();
    let on_b = s
        .call(
            &b,
            "library_search_materials",
            json!({"capability": token, "take": 10}),
        )
        .await;
    assert_ne!(on_b["isError"], true, "{on_b}");
    assert_eq!(
        on_b["structuredContent"]["data"].as_array().unwrap().len(),
        5
    );
}
