//! Two app instances on one PostgreSQL database: fan-out over LISTEN/NOTIFY
//! and presence as the union across instances. On SQLite (single instance
//! by design) the test says so and checks nothing else.

use std::time::Duration;

use serde_json::json;

use crate::helpers::*;

fn on_postgres() -> bool {
    std::env::var("AGENTIC_TEST_DATABASE_URL").is_ok_and(|v| !v.is_empty())
}

#[actix_web::test]
async fn messages_posted_on_one_instance_reach_subscribers_on_another_in_order_once() {
    if !on_postgres() {
        eprintln!("multi-instance fan-out needs PostgreSQL: runs in the PostgreSQL pass of CI");
        return;
    }
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

/// Lists are cached on every instance, yet each change made through one
/// instance is in the very next list read through another: the cached pages
/// are warmed on the reading instance first, so a stale cache would show.
#[actix_web::test]
async fn every_change_through_one_instance_is_in_the_next_list_through_another() {
    if !on_postgres() {
        eprintln!("multi-instance lists need PostgreSQL: runs in the PostgreSQL pass of CI");
        return;
    }
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
