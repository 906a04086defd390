//! Room streams over real SSE: ready cursor, live fan-out, resume by `after`
//! and `Last-Event-ID`, presence, slow consumers, a lost database, revoked
//! access and keep-alives.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::helpers::*;

const WAIT: Duration = Duration::from_secs(10);

#[actix_web::test]
async fn ready_then_live_messages_with_sequence_ids() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    app.say(&t, &uid, "before").await;

    let mut s = app.room(&t, &uid, "", None).await;
    let ready = s.expect("ready").await;
    // Without a cursor the stream tails from the newest message.
    assert_eq!(ready.data, json!({"conversationUid": uid, "after": 1}));

    let seq = app.say(&t, &uid, "hello room").await;
    let got = messages(&mut s, 1).await;
    let ev = &got[0];
    assert_eq!(ev.id.as_deref(), Some("2"));
    assert_eq!(seq, 2);
    assert_eq!(ev.data["conversationUid"], json!(uid));
    assert_eq!(ev.data["message"]["sequence"], json!(2));
    assert_eq!(ev.data["message"]["audience"], json!("room"));
    assert_eq!(ev.data["message"]["content"], json!("hello room"));
    assert_eq!(ev.data["message"]["author"]["userId"], json!(t.user_id));
}

#[actix_web::test]
async fn after_replays_persisted_messages_in_order_then_continues_live() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    for i in 1..=5 {
        app.say(&t, &uid, &format!("m{i}")).await;
    }
    let mut s = app.room(&t, &uid, "?after=2", None).await;
    assert_eq!(s.expect("ready").await.data["after"], json!(2));
    let replay = messages(&mut s, 3).await;
    assert_eq!(replay.iter().map(seq_of).collect::<Vec<_>>(), vec![3, 4, 5]);
    assert_eq!(replay[0].data["message"]["content"], json!("m3"));
    app.say(&t, &uid, "m6").await;
    let live = messages(&mut s, 1).await;
    assert_eq!(seq_of(&live[0]), 6);

    // after=0 is the full history.
    let mut all = app.room(&t, &uid, "?after=0", None).await;
    let got = messages(&mut all, 6).await;
    assert_eq!(
        got.iter().map(seq_of).collect::<Vec<_>>(),
        (1..=6).collect::<Vec<_>>()
    );
}

#[actix_web::test]
async fn last_event_id_resumes_like_after_and_wins_over_the_query() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    for i in 1..=4 {
        app.say(&t, &uid, &format!("m{i}")).await;
    }
    // An EventSource reconnect resends its original URL plus Last-Event-ID.
    let mut s = app.room(&t, &uid, "?after=0", Some("3")).await;
    assert_eq!(s.expect("ready").await.data["after"], json!(3));
    let got = messages(&mut s, 1).await;
    assert_eq!(seq_of(&got[0]), 4);
    assert_eq!(got[0].id.as_deref(), Some("4"));
    app.say(&t, &uid, "m5").await;
    assert_eq!(seq_of(&messages(&mut s, 1).await[0]), 5);
}

#[actix_web::test]
async fn streams_opened_while_messages_flow_see_each_exactly_once_in_order() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    const N: i64 = 60;
    let poster = {
        let client = awc::Client::default();
        let url = app.url(&format!("/api/v2/assistant/conversations/{uid}/messages"));
        let key = t.key.clone();
        actix_rt::spawn(async move {
            for i in 1..=N {
                let res = client
                    .post(url.clone())
                    .insert_header(("Authorization", format!("Bearer {key}")))
                    .send_json(&json!({"audience": "room", "content": format!("m{i}")}))
                    .await
                    .unwrap();
                assert_eq!(res.status(), 201);
            }
        })
    };
    // Subscribe at different moments of the flow, all from the start.
    let mut streams = Vec::new();
    for _ in 0..6 {
        streams.push(app.room(&t, &uid, "?after=0", None).await);
        tokio::time::sleep(Duration::from_millis(15)).await;
    }
    poster.await.unwrap();
    for mut s in streams {
        let got = messages(&mut s, N as usize).await;
        let seqs: Vec<i64> = got.iter().map(seq_of).collect();
        assert_eq!(seqs, (1..=N).collect::<Vec<_>>());
        // And nothing more: no duplicates trail behind.
        let extra = s.next_event(Duration::from_millis(300)).await;
        assert!(
            extra.as_ref().is_none_or(|e| e.event != "message.created"),
            "{extra:?}"
        );
    }
}

#[actix_web::test]
async fn presence_counts_users_once_across_tabs_and_follows_leaves() {
    let app = spawn_app_with(|c| c.rooms.keepalive = Duration::from_millis(500)).await;
    let alice = app.tenant().await;
    let bob = app.user_in(&alice.account_id, "member", &[]).await;
    let uid = app.conversation(&alice, true).await;

    let mut a1 = app.room(&alice, &uid, "", None).await;
    let ev = presence_becomes(&mut a1, &[alice.user_id]).await;
    assert_eq!(ev.data["conversationUid"], json!(uid));
    let p = &ev.data["participants"][0];
    assert_eq!(p["email"], json!(alice.email));
    assert!(p["name"].is_string());

    let mut b = app.room(&bob, &uid, "", None).await;
    presence_becomes(&mut a1, &[alice.user_id, bob.user_id]).await;
    presence_becomes(&mut b, &[alice.user_id, bob.user_id]).await;

    // A second tab of Alice: she still counts once, and the tab is told who is here.
    let mut a2 = app.room(&alice, &uid, "", None).await;
    presence_becomes(&mut a2, &[alice.user_id, bob.user_id]).await;
    let list = app.get("/api/v2/assistant/conversations", &bob.key).await;
    let present: Vec<i64> = list.data()["presenceByConversationUid"][&uid]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["userId"].as_i64().unwrap())
        .collect();
    let mut want = vec![alice.user_id, bob.user_id];
    want.sort();
    assert_eq!(present, want);

    // Closing one of Alice's tabs changes nothing for the others...
    drop(a2);
    // ...Bob leaving does.
    drop(b);
    let ev = presence_becomes(&mut a1, &[alice.user_id]).await;
    assert_eq!(participant_ids(&ev), vec![alice.user_id]);
    let list = app.get("/api/v2/assistant/conversations", &alice.key).await;
    assert_eq!(
        list.data()["presenceByConversationUid"][&uid]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[actix_web::test]
async fn keep_alive_comments_arrive_while_idle() {
    let app = spawn_app_with(|c| c.rooms.keepalive = Duration::from_millis(200)).await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let mut s = app.room(&t, &uid, "", None).await;
    let mut comments = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while comments < 2 && tokio::time::Instant::now() < deadline {
        if let Some(ev) = s.next_raw(Duration::from_secs(1)).await
            && ev.event == ":"
        {
            assert_eq!(ev.raw_data, "ka");
            comments += 1;
        }
    }
    assert_eq!(comments, 2);
}

#[actix_web::test]
async fn turning_sharing_off_closes_teammates_streams() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let mate = app.user_in(&owner.account_id, "member", &[]).await;
    let uid = app.conversation(&owner, true).await;
    let mut mine = app.room(&owner, &uid, "", None).await;
    let mut theirs = app.room(&mate, &uid, "", None).await;
    theirs.expect("ready").await;
    let res = app
        .patch(
            &format!("/api/v2/assistant/conversations/{uid}/sharing"),
            &owner.key,
            &json!({"sharingEnabled": false}),
        )
        .await;
    assert_eq!(res.status, 200);
    let err = theirs.expect("error").await;
    assert_eq!(err.data["code"], json!("NOT_FOUND"));
    assert_eq!(err.data["status"], json!(404));
    assert!(theirs.ended(WAIT).await);
    // The owner's stream is unaffected.
    app.say(&owner, &uid, "still here").await;
    assert_eq!(seq_of(&messages(&mut mine, 1).await[0]), 1);
}

#[actix_web::test]
async fn a_slow_consumer_gets_an_error_and_is_disconnected_without_stalling_others() {
    let app = spawn_app_with(|c| c.rooms.subscriber_buffer = 8).await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;

    // A client that reads the headers, then stops reading.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    let mut slow = socket
        .connect(format!("127.0.0.1:{}", app.port).parse().unwrap())
        .await
        .unwrap();
    let request = format!(
        "GET /api/v2/assistant/conversations/{uid}/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {}\r\nAccept: text/event-stream\r\n\r\n",
        t.key
    );
    slow.write_all(request.as_bytes()).await.unwrap();
    let mut head = vec![0u8; 1024];
    let n = slow.read(&mut head).await.unwrap();
    assert!(String::from_utf8_lossy(&head[..n]).starts_with("HTTP/1.1 200"));

    let mut healthy = app.room(&t, &uid, "", None).await;
    healthy.expect("ready").await;

    // Flood well past the socket buffers and the 8-event subscriber buffer.
    let big = "x".repeat(30_000);
    const N: i64 = 400;
    for _ in 0..N {
        app.say(&t, &uid, &big).await;
    }
    // The healthy subscriber got everything, in order.
    let got = messages(&mut healthy, N as usize).await;
    assert_eq!(
        got.iter().map(seq_of).collect::<Vec<_>>(),
        (1..=N).collect::<Vec<_>>()
    );

    // The slow one: what was buffered, then an error event, then the end.
    let mut raw = Vec::new();
    tokio::time::timeout(WAIT, slow.read_to_end(&mut raw))
        .await
        .expect("slow stream ends")
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    let error_at = text.find("event: error").expect("error event sent");
    let tail = &text[error_at..];
    assert!(
        tail.contains("SLOW_CONSUMER"),
        "{}",
        &tail[..tail.len().min(300)]
    );
    let ids: Vec<i64> = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .map(|v| v.trim().parse().unwrap())
        .collect();
    let last = *ids.last().expect("some events before the cut");
    assert!(last < N, "the slow consumer should have been cut off early");
    assert_eq!(
        ids,
        (ids[0]..=last).collect::<Vec<_>>(),
        "no gaps before the cut"
    );

    // It reconnects from its last sequence and misses nothing.
    let mut again = app.room(&t, &uid, "", Some(&last.to_string())).await;
    let rest = messages(&mut again, (N - last) as usize).await;
    assert_eq!(
        rest.iter().map(seq_of).collect::<Vec<_>>(),
        ((last + 1)..=N).collect::<Vec<_>>()
    );
}

#[actix_web::test]
async fn losing_the_database_mid_stream_yields_an_error_event() {
    let app = spawn_app_with(|c| c.rooms.keepalive = Duration::from_millis(200)).await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let mut s = app.room(&t, &uid, "", None).await;
    s.expect("ready").await;
    app.db.close_by_ref().await.unwrap();
    let err = s.expect("error").await;
    assert_eq!(err.data["code"], json!("SERVICE_UNAVAILABLE"));
    assert_eq!(err.data["status"], json!(503));
    assert!(err.data["message"].as_str().unwrap().contains("database"));
    assert!(s.ended(WAIT).await);
    // Other requests report the outage as an envelope too.
    let res = app.get("/readyz", &t.key).await;
    assert_eq!(res.status, 503);
}

#[actix_web::test]
async fn the_stream_declares_itself_as_event_stream_without_caching() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let res = app
        .client
        .get(app.url(&format!("/api/v2/assistant/conversations/{uid}/events")))
        .insert_header(("Authorization", format!("Bearer {}", t.key)))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let h = |n: &str| {
        res.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert!(h("content-type").starts_with("text/event-stream"));
    assert!(h("cache-control").contains("no-cache"));
    assert!(!h("x-request-id").is_empty());
    let _: Value = Value::Null;
}
