//! Access stays true after a stream connects: changes that reach the room
//! through the bus close streams at once, and changes whose notification
//! never arrived (another process, a lost NOTIFY) are found by the room's
//! re-validation within one keep-alive tick. Missed messages are filled
//! the same way. A stream opened with an OAuth access token (or a stream
//! token minted with one) ends when that token expires.

use std::time::Duration;

use sea_orm::{ActiveModelTrait, EntityTrait, IntoActiveModel, Set};
use serde_json::json;

use agentic_api::auth::tenancy;
use agentic_api::bus::EventBus;
use agentic_api::conversations::model::{Audience, Content, ConversationUid};

use crate::browser::mint;
use crate::fake_seller::{Behaviour, hanging, progressive_session, seller};
use crate::helpers::*;
use crate::oauth::{account, bearer, client, person, tokens_for};

const TICK: Duration = Duration::from_millis(200);
const WAIT: Duration = Duration::from_secs(10);

fn fast(c: &mut agentic_api::Config) {
    c.rooms.keepalive = TICK;
}

/// The key's id, as `GET /api-keys` lists it.
async fn key_id(app: &TestApp, t: &Tenant) -> i64 {
    let keys = app.get("/api/v2/api-keys", &t.key).await;
    let prefix = agentic_api::auth::keys::prefix_of(&t.key).unwrap();
    keys.data()
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["prefix"] == json!(prefix))
        .unwrap()["id"]
        .as_i64()
        .unwrap()
}

#[actix_web::test]
async fn a_revoked_key_closes_its_streams_at_once() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let uid = app.conversation(&owner, false).await;
    // A second key of the same user revokes the first.
    let second = tenancy::create_api_key(&app.db, owner.user_id, &[])
        .await
        .unwrap();
    let mut stream = app.room(&owner, &uid, "", None).await;
    stream.expect("ready").await;
    let id = key_id(&app, &owner).await;
    let res = app.delete(&format!("/api/v2/api-keys/{id}"), &second).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let err = stream.expect("error").await;
    assert_eq!(err.data["code"], json!("UNAUTHORIZED"));
    assert_eq!(err.data["status"], json!(401));
    assert!(stream.ended(WAIT).await);
    // The key no longer opens streams; the other key still does.
    assert!(
        app.sse(
            &format!("/api/v2/assistant/conversations/{uid}/events"),
            &owner.key,
            None
        )
        .await
        .is_err()
    );
    let mut other = app
        .sse(
            &format!("/api/v2/assistant/conversations/{uid}/events"),
            &second,
            None,
        )
        .await
        .ok()
        .unwrap();
    other.expect("ready").await;
}

#[actix_web::test]
async fn a_key_revoked_by_another_process_closes_its_stream_within_a_tick() {
    let app = spawn_app_with(fast).await;
    let owner = app.tenant().await;
    let uid = app.conversation(&owner, false).await;
    let mut stream = app.room(&owner, &uid, "", None).await;
    stream.expect("ready").await;
    // What `admin revoke-api-key` does from its own process: no event
    // reaches this server on SQLite.
    tenancy::revoke_api_key(&app.db, &owner.key).await.unwrap();
    let err = stream.expect("error").await;
    assert_eq!(err.data["code"], json!("UNAUTHORIZED"));
    assert!(stream.ended(WAIT).await);
}

#[actix_web::test]
async fn sharing_turned_off_without_a_notification_closes_teammates_within_a_tick() {
    let app = spawn_app_with(fast).await;
    let owner = app.tenant().await;
    let mate = app.user_in(&owner.account_id, "member", &[]).await;
    let uid = app.conversation(&owner, true).await;
    let mut mine = app.room(&owner, &uid, "", None).await;
    let mut theirs = app.room(&mate, &uid, "", None).await;
    mine.expect("ready").await;
    theirs.expect("ready").await;
    // The change is committed but its bus event is lost.
    let conv = entity::conversation::Entity::find_by_id(uid.clone())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    let mut active = conv.into_active_model();
    active.sharing_enabled = Set(false);
    active.update(&app.db).await.unwrap();
    let err = theirs.expect("error").await;
    assert_eq!(err.data["code"], json!("NOT_FOUND"));
    assert!(theirs.ended(WAIT).await);
    // The owner stays, and a teammate can no longer join.
    app.say(&owner, &uid, "still mine").await;
    assert_eq!(seq_of(&messages(&mut mine, 1).await[0]), 1);
    let refused = app
        .sse(
            &format!("/api/v2/assistant/conversations/{uid}/events"),
            &mate.key,
            None,
        )
        .await
        .err()
        .unwrap();
    refused.assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn the_account_disabling_shared_conversations_closes_every_shared_stream_within_a_tick() {
    let app = spawn_app_with(fast).await;
    let owner = app.tenant().await;
    let uid = app.conversation(&owner, true).await;
    let mut mine = app.room(&owner, &uid, "", None).await;
    mine.expect("ready").await;
    let account = entity::account::Entity::find_by_id(owner.account_id.clone())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    let mut active = account.into_active_model();
    active.shared_conversations_enabled = Set(false);
    active.update(&app.db).await.unwrap();
    let err = mine.expect("error").await;
    assert_eq!(err.data["code"], json!("NOT_FOUND"));
}

#[actix_web::test]
async fn a_message_whose_notification_was_lost_arrives_within_a_tick() {
    let app = spawn_app_with(fast).await;
    let owner = app.tenant().await;
    let uid = app.conversation(&owner, false).await;
    let mut stream = app.room(&owner, &uid, "", None).await;
    stream.expect("ready").await;
    // Committed through a bus this server does not hear.
    let deaf = EventBus::in_process("elsewhere".into());
    let caller = app
        .state
        .auth
        .authenticate(&owner.key)
        .await
        .unwrap()
        .unwrap();
    for text in ["one", "two"] {
        agentic_api::conversations::service::post_message(
            &app.db,
            &app.state.writes,
            &deaf,
            &caller,
            &ConversationUid::parse(&uid).unwrap(),
            Audience::parse_postable("room").unwrap(),
            Content::parse(text.to_string()).unwrap(),
        )
        .await
        .unwrap();
    }
    let got = messages(&mut stream, 2).await;
    assert_eq!(got.iter().map(seq_of).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(got[1].data["message"]["content"], json!("two"));
}

/// OAuth access tokens live this long in the expiry tests: long enough to
/// sign in and open streams on a loaded machine, far shorter than a
/// keep-alive tick (15 s), so the tick is not what ends the streams.
const TOKEN_LIFE: Duration = Duration::from_secs(6);

fn room_path(uid: &str) -> String {
    format!("/api/v2/assistant/conversations/{uid}/events")
}

/// Waits for the `error` event that closes `stream` and for its end.
async fn ends_with_token_expired(stream: &mut SseStream) {
    let err = stream.expect("error").await;
    assert_eq!(err.data["code"], json!("UNAUTHORIZED"), "{}", err.raw_data);
    assert_eq!(err.data["status"], json!(401));
    assert!(
        err.data["message"].as_str().unwrap().contains("expired"),
        "{}",
        err.raw_data
    );
    assert!(stream.ended(WAIT).await);
}

#[actix_web::test]
async fn streams_opened_with_an_oauth_token_end_when_it_expires() {
    let app = spawn_app_with(|c| c.oauth.access_ttl = TOKEN_LIFE).await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "admin").await;
    let uid = app.conversation(&pat, false).await;
    let adv = advertiser(&app, &pat).await;
    let _hangs = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &pat.key,
            &json!({"advertiserId": adv, "progressive": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let discovery = res.data()["discoveryId"].as_str().unwrap().to_string();

    let client_id = client(&app, "Agent").await;
    let tokens = tokens_for(&app, &client_id, &pat).await;
    let issued = std::time::Instant::now();
    let token = bearer(&tokens);
    let mut room = app.sse(&room_path(&uid), token, None).await.ok().unwrap();
    room.expect("ready").await;
    let discovery_path = format!("/api/v2/buyer/discovery/{discovery}/events");
    let mut session = app.sse(&discovery_path, token, None).await.ok().unwrap();
    session.expect("ready").await;
    let mut by_key = app
        .sse(&room_path(&uid), &pat.key, None)
        .await
        .ok()
        .unwrap();
    by_key.expect("ready").await;

    // Both streams end at the token's expiry, not before, and well before
    // the next keep-alive tick.
    ends_with_token_expired(&mut room).await;
    ends_with_token_expired(&mut session).await;
    let at = issued.elapsed();
    assert!(at >= TOKEN_LIFE - Duration::from_secs(1), "{at:?}");
    assert!(at < TOKEN_LIFE + Duration::from_secs(4), "{at:?}");
    // The expired token opens nothing; the key's stream goes on.
    let refused = app.sse(&room_path(&uid), token, None).await.err().unwrap();
    refused.assert_error(401, "UNAUTHORIZED");
    let seq = app.say(&pat, &uid, "still here").await;
    assert_eq!(seq_of(&by_key.expect("message.created").await), seq);
}

#[actix_web::test]
async fn a_stream_token_minted_with_an_oauth_token_expires_with_it_and_so_does_its_stream() {
    let app = spawn_app_with(|c| c.oauth.access_ttl = TOKEN_LIFE).await;
    let acc = account(&app, "Acme").await;
    let pat = person(&app, &acc, "member").await;
    let uid = app.conversation(&pat, false).await;
    let client_id = client(&app, "Agent").await;
    let tokens = tokens_for(&app, &client_id, &pat).await;
    let mint = |key: String| {
        let app = &app;
        let uid = uid.clone();
        async move {
            let res = app
                .post(
                    "/api/v2/auth/stream-tokens",
                    &key,
                    &json!({"stream": room_path(&uid)}),
                )
                .await;
            assert_eq!(res.status, 201, "{}", res.body);
            let expires: chrono::DateTime<chrono::Utc> =
                serde_json::from_value(res.data()["expiresAt"].clone()).unwrap();
            (res.data()["token"].as_str().unwrap().to_string(), expires)
        }
    };

    // Minted with the access token: it expires no later than that token
    // (stream tokens otherwise live 5 minutes, as one minted with a key).
    let (with_oauth, expires) = mint(bearer(&tokens).to_string()).await;
    assert!(expires <= chrono::Utc::now() + TOKEN_LIFE, "{expires}");
    let (with_key, key_expires) = mint(pat.key.clone()).await;
    assert!(
        key_expires > chrono::Utc::now() + chrono::Duration::minutes(4),
        "{key_expires}"
    );

    let url = |token: &str| format!("{}?streamToken={token}", room_path(&uid));
    let mut stream = app.sse_with_token(&url(&with_oauth)).await.ok().unwrap();
    stream.expect("ready").await;
    let mut by_key = app.sse_with_token(&url(&with_key)).await.ok().unwrap();
    by_key.expect("ready").await;
    ends_with_token_expired(&mut stream).await;
    let refused = app.sse_with_token(&url(&with_oauth)).await.err().unwrap();
    refused.assert_error(401, "UNAUTHORIZED");
    // The key's stream token opened a stream that goes on.
    let seq = app.say(&pat, &uid, "still here").await;
    assert_eq!(seq_of(&by_key.expect("message.created").await), seq);
}

// ------------------------------------------------ discovery stream tokens

fn discovery_path(id: &str) -> String {
    format!("/api/v2/buyer/discovery/{id}/events")
}

#[actix_web::test]
async fn a_stream_token_opens_a_discovery_stream_and_no_other() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let _hangs = hanging(&app).await;
    let id = progressive_session(&app, &t).await;
    let other = progressive_session(&app, &t).await;
    let uid = app.conversation(&t, false).await;

    let res = mint(&app, &t.key, &discovery_path(&id)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    assert_eq!(res.data()["stream"], json!(discovery_path(&id)));
    let token = res.data()["token"].as_str().unwrap().to_string();
    let url = |path: &str| format!("{path}?streamToken={token}");

    // Opens its stream without a header, as often as an EventSource retries.
    for _ in 0..2 {
        let mut s = app
            .sse_with_token(&url(&discovery_path(&id)))
            .await
            .unwrap_or_else(|r| panic!("{} {}", r.status, r.body));
        assert_eq!(s.expect("ready").await.data, json!({"discoveryId": id}));
    }
    // Not another session's stream of the same account, nor a conversation's.
    for path in [discovery_path(&other), room_path(&uid)] {
        let refused = app.sse_with_token(&url(&path)).await.err().unwrap();
        refused.assert_error(401, "UNAUTHORIZED");
        assert!(
            refused.body["error"]["message"]
                .as_str()
                .unwrap()
                .contains("another stream"),
            "{}",
            refused.body
        );
    }
    // A conversation's token does not open the discovery stream either.
    let res = mint(&app, &t.key, &room_path(&uid)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let room_token = res.data()["token"].as_str().unwrap();
    app.sse_with_token(&format!("{}?streamToken={room_token}", discovery_path(&id)))
        .await
        .err()
        .unwrap()
        .assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn minting_for_a_discovery_stream_checks_the_session_is_the_callers() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mate = app.user_in(&t.account_id, "member", &[]).await;
    let stranger = app.tenant().await;
    let _hangs = hanging(&app).await;
    let id = progressive_session(&app, &t).await;

    // Another account's session, or none: 404, as the stream itself answers.
    mint(&app, &stranger.key, &discovery_path(&id))
        .await
        .assert_error(404, "NOT_FOUND");
    app.sse(&discovery_path(&id), &stranger.key, None)
        .await
        .err()
        .unwrap()
        .assert_error(404, "NOT_FOUND");
    mint(
        &app,
        &t.key,
        &discovery_path("disc_unknown0000000000000000"),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    // Sessions belong to the account: a teammate may open it.
    assert_eq!(
        mint(&app, &mate.key, &discovery_path(&id)).await.status,
        201
    );
    // Not a discovery id, or not a stream path: 400 naming `stream`.
    for bad in [
        discovery_path("not-a-session"),
        format!("/api/v2/buyer/discovery/{id}/products"),
        format!("{}?since=1", discovery_path(&id)),
    ] {
        let res = mint(&app, &t.key, &bad).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!("stream"), "{bad}");
    }
}

#[actix_web::test]
async fn an_expired_discovery_stream_token_is_refused() {
    let app = spawn_app_with(|c| c.stream_token_ttl = Duration::ZERO).await;
    let t = app.tenant().await;
    let _hangs = hanging(&app).await;
    let id = progressive_session(&app, &t).await;
    let res = mint(&app, &t.key, &discovery_path(&id)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let token = res.data()["token"].as_str().unwrap();
    let refused = app
        .sse_with_token(&format!("{}?streamToken={token}", discovery_path(&id)))
        .await
        .err()
        .unwrap();
    refused.assert_error(401, "UNAUTHORIZED");
    assert!(
        refused.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("expired"),
        "{}",
        refused.body
    );
}
