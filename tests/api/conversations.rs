//! Conversations and settings over REST: every state transition and every
//! row of the Conversations and Settings error tables.

use actix_web::http::Method;
use serde_json::{Value, json};

use agentic_api::auth::tenancy::NewAccount;

use crate::helpers::*;

const LIST: &str = "/api/v2/assistant/conversations";
const SETTINGS: &str = "/api/v2/assistant/conversation-settings";

fn uids(res: &Resp) -> Vec<String> {
    res.data()["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["conversationUid"].as_str().unwrap().to_string())
        .collect()
}

async fn last_sequence(app: &TestApp, t: &Tenant, uid: &str) -> i64 {
    let res = app.get(&format!("{LIST}?take=100"), &t.key).await;
    res.data()["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["conversationUid"] == json!(uid))
        .map(|c| c["lastSequence"].as_i64().unwrap())
        .expect("conversation listed")
}

#[actix_web::test]
async fn create_returns_the_conversation_with_an_auto_title_until_renamed() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    // No body at all is a valid create.
    let res = app.request(Method::POST, LIST, Some(&t.key), None).await;
    assert_eq!(res.status, 201, "{}", res.body);
    let conv = &res.data()["conversation"];
    let uid = conv["conversationUid"].as_str().unwrap().to_string();
    assert!(uuid::Uuid::parse_str(&uid).is_ok());
    assert_eq!(conv["title"], json!("New conversation"));
    assert_eq!(conv["sharingEnabled"], json!(false));
    assert_eq!(conv["ownerUserId"], json!(t.user_id));
    assert_eq!(conv["lastSequence"], json!(0));

    // The first message names an auto-titled conversation.
    app.say(&t, &uid, "  Plan the Q3 CTV flight\nwith details")
        .await;
    let list = app.get(LIST, &t.key).await;
    assert_eq!(
        list.data()["conversations"][0]["title"],
        json!("Plan the Q3 CTV flight")
    );

    // Renaming trims and sticks: later messages do not retitle.
    let res = app
        .patch(
            &format!("{LIST}/{uid}/title"),
            &t.key,
            &json!({"title": "  Q3 plan  "}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["conversation"]["conversationUid"], json!(uid));
    assert_eq!(res.data()["conversation"]["title"], json!("Q3 plan"));
    app.say(&t, &uid, "another").await;
    let list = app.get(LIST, &t.key).await;
    assert_eq!(list.data()["conversations"][0]["title"], json!("Q3 plan"));

    // An explicit title on create is kept as given (trimmed).
    let res = app
        .post(LIST, &t.key, &json!({"title": " Brief review "}))
        .await;
    assert_eq!(res.data()["conversation"]["title"], json!("Brief review"));
}

#[actix_web::test]
async fn long_first_messages_give_a_shortened_auto_title() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let words = "word ".repeat(60);
    app.say(&t, &uid, &words).await;
    let list = app.get(LIST, &t.key).await;
    let title = list.data()["conversations"][0]["title"].as_str().unwrap();
    assert!(title.ends_with('…'), "{title}");
    assert!(title.chars().count() <= 81, "{title}");
}

#[actix_web::test]
async fn sharing_follows_explicit_value_then_account_default_then_private() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let c = |res: Resp| res.data()["conversation"]["sharingEnabled"].clone();

    assert_eq!(
        c(app.post(LIST, &admin.key, &json!({})).await),
        json!(false)
    );
    let res = app
        .patch(
            SETTINGS,
            &admin.key,
            &json!({"defaultSharingEnabled": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data(),
        &json!({"defaultSharingEnabled": true, "assistantWritesNeedConfirmation": true})
    );
    assert_eq!(c(app.post(LIST, &admin.key, &json!({})).await), json!(true));
    assert_eq!(
        c(app
            .post(LIST, &admin.key, &json!({"sharingEnabled": false}))
            .await),
        json!(false)
    );
    let res = app
        .patch(
            SETTINGS,
            &admin.key,
            &json!({"defaultSharingEnabled": false}),
        )
        .await;
    assert_eq!(
        res.data(),
        &json!({"defaultSharingEnabled": false, "assistantWritesNeedConfirmation": true})
    );
    assert_eq!(
        c(app
            .post(LIST, &admin.key, &json!({"sharingEnabled": true}))
            .await),
        json!(true)
    );
    assert_eq!(
        c(app.post(LIST, &admin.key, &json!({})).await),
        json!(false)
    );
}

#[actix_web::test]
async fn a_changed_default_leaves_existing_conversations_alone() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let before = app.conversation(&admin, false).await;
    app.patch(
        SETTINGS,
        &admin.key,
        &json!({"defaultSharingEnabled": true}),
    )
    .await;
    let after =
        app.post(LIST, &admin.key, &json!({})).await.data()["conversation"]["conversationUid"]
            .clone();
    let list = app.get(LIST, &admin.key).await;
    for c in list.data()["conversations"].as_array().unwrap() {
        if c["conversationUid"] == json!(before) {
            assert_eq!(c["sharingEnabled"], json!(false));
        } else {
            assert_eq!(c["conversationUid"], after);
            assert_eq!(c["sharingEnabled"], json!(true));
        }
    }
}

#[actix_web::test]
async fn sharing_transitions_private_to_shared_and_back() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let mate = app.user_in(&owner.account_id, "member", &[]).await;
    let uid = app.conversation(&owner, false).await;
    let share = |v: bool| json!({ "sharingEnabled": v });
    let path = format!("{LIST}/{uid}/sharing");

    assert!(!uids(&app.get(LIST, &mate.key).await).contains(&uid));
    // A teammate cannot even see the private one to share it.
    app.patch(&path, &mate.key, &share(true))
        .await
        .assert_error(404, "NOT_FOUND");

    let res = app.patch(&path, &owner.key, &share(true)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["conversation"]["sharingEnabled"], json!(true));
    assert_eq!(res.data()["conversation"]["conversationUid"], json!(uid));
    assert!(uids(&app.get(LIST, &mate.key).await).contains(&uid));
    app.say(&mate, &uid, "teammates can post in a shared room")
        .await;

    // Idempotent: sharing an already shared conversation changes nothing.
    let res = app.patch(&path, &owner.key, &share(true)).await;
    assert_eq!(res.data()["conversation"]["sharingEnabled"], json!(true));

    // Anyone who can read it may turn sharing off (spec: caller can read it).
    let res = app.patch(&path, &mate.key, &share(false)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["conversation"]["sharingEnabled"], json!(false));
    assert!(!uids(&app.get(LIST, &mate.key).await).contains(&uid));
    assert!(uids(&app.get(LIST, &owner.key).await).contains(&uid));
}

#[actix_web::test]
async fn only_the_owner_renames() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let mate = app.user_in(&owner.account_id, "admin", &[]).await;
    let uid = app.conversation(&owner, true).await;
    let res = app
        .patch(
            &format!("{LIST}/{uid}/title"),
            &mate.key,
            &json!({"title": "mine"}),
        )
        .await;
    res.assert_error(403, "FORBIDDEN");
    let list = app.get(LIST, &owner.key).await;
    assert_eq!(
        list.data()["conversations"][0]["title"],
        json!("New conversation")
    );
}

#[actix_web::test]
async fn list_shows_own_private_and_account_shared_newest_activity_first() {
    let app = spawn_app().await;
    let me = app.tenant().await;
    let mate = app.user_in(&me.account_id, "member", &[]).await;
    let other = app.tenant().await;
    let mine_private = app.conversation(&me, false).await;
    let mine_shared = app.conversation(&me, true).await;
    let mate_private = app.conversation(&mate, false).await;
    let mate_shared = app.conversation(&mate, true).await;
    let foreign_shared = app.conversation(&other, true).await;
    // Activity moves a conversation to the top.
    app.say(&me, &mine_private, "bump").await;

    let res = app.get(LIST, &me.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let got = uids(&res);
    assert_eq!(got[0], mine_private);
    let mut sorted = got.clone();
    sorted.sort();
    let mut want = vec![
        mine_private.clone(),
        mine_shared.clone(),
        mate_shared.clone(),
    ];
    want.sort();
    assert_eq!(sorted, want);
    assert!(!got.contains(&mate_private) && !got.contains(&foreign_shared));
    assert_eq!(res.data()["totalCount"], json!(3));
    assert_eq!(res.data()["hasMore"], json!(false));
    assert_eq!(res.data()["presenceByConversationUid"], json!({}));
    assert_eq!(
        res.body["meta"]["pagination"],
        json!({"skip": 0, "take": 20, "total": 3, "hasMore": false})
    );

    let page = app.get(&format!("{LIST}?take=2&skip=1"), &me.key).await;
    assert_eq!(uids(&page), got[1..3].to_vec());
    assert_eq!(page.data()["hasMore"], json!(false));
    let first = app.get(&format!("{LIST}?take=2"), &me.key).await;
    assert_eq!(first.data()["hasMore"], json!(true));
    assert_eq!(first.data()["totalCount"], json!(3));
}

#[actix_web::test]
async fn shared_conversations_disabled_hides_every_shared_one() {
    let app = spawn_app().await;
    let mut account = NewAccount::named("Solo");
    account.shared_conversations = false;
    let admin = app.tenant_with(account, "admin", &[]).await;
    let private = app.conversation(&admin, false).await;
    // Sharing cannot be turned on, explicitly or by default.
    app.post(LIST, &admin.key, &json!({"sharingEnabled": true}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.patch(
        &format!("{LIST}/{private}/sharing"),
        &admin.key,
        &json!({"sharingEnabled": true}),
    )
    .await
    .assert_error(400, "VALIDATION_ERROR");
    app.patch(
        SETTINGS,
        &admin.key,
        &json!({"defaultSharingEnabled": true}),
    )
    .await;
    let res = app.post(LIST, &admin.key, &json!({})).await;
    assert_eq!(res.data()["conversation"]["sharingEnabled"], json!(false));
    // A conversation that was shared before the switch went off is 404 on every route.
    let shared = {
        use sea_orm::{ConnectionTrait, Statement};
        let uid = uuid::Uuid::new_v4().to_string();
        let backend = app.db.get_database_backend();
        let sql = match backend {
            sea_orm::DbBackend::Postgres => {
                "INSERT INTO conversations (uid, account_id, owner_user_id, title, title_is_auto, sharing_enabled, last_sequence, created_at, updated_at) VALUES ($1, $2, $3, 'old', false, true, 0, now(), now())"
            }
            _ => {
                "INSERT INTO conversations (uid, account_id, owner_user_id, title, title_is_auto, sharing_enabled, last_sequence, created_at, updated_at) VALUES (?, ?, ?, 'old', false, true, 0, '2026-01-01T00:00:00Z', '2026-01-01T00:00:00Z')"
            }
        };
        app.db
            .execute_raw(Statement::from_sql_and_values(
                backend,
                sql,
                [
                    uid.clone().into(),
                    admin.account_id.clone().into(),
                    admin.user_id.into(),
                ],
            ))
            .await
            .unwrap();
        uid
    };
    let list = app.get(LIST, &admin.key).await;
    assert!(!uids(&list).contains(&shared));
    assert!(uids(&list).contains(&private));
    assert_eq!(list.data()["presenceByConversationUid"], json!({}));
    assert_not_found_everywhere(&app, &admin, &shared).await;
}

/// Every conversation route answers 404 NOT_FOUND for `uid`, writing nothing.
async fn assert_not_found_everywhere(app: &TestApp, t: &Tenant, uid: &str) {
    let base = format!("{LIST}/{uid}");
    app.patch(&format!("{base}/title"), &t.key, &json!({"title": "x"}))
        .await
        .assert_error(404, "NOT_FOUND");
    app.patch(
        &format!("{base}/sharing"),
        &t.key,
        &json!({"sharingEnabled": false}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    app.post(
        &format!("{base}/messages"),
        &t.key,
        &json!({"audience": "room", "content": "hi"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    match app.sse(&format!("{base}/events"), &t.key, None).await {
        Ok(_) => panic!("stream opened for an invisible conversation"),
        Err(res) => res.assert_error(404, "NOT_FOUND"),
    }
}

#[actix_web::test]
async fn invisible_conversations_are_404_on_every_route() {
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let mate = app
        .user_in(&owner.account_id, "admin", &["platform:write"])
        .await;
    let stranger = app.tenant().await;
    let private = app.conversation(&owner, false).await;
    let shared = app.conversation(&owner, true).await;
    app.say(&owner, &private, "secret").await;

    // Missing.
    assert_not_found_everywhere(&app, &owner, &uuid::Uuid::new_v4().to_string()).await;
    // Another account's, shared or not.
    assert_not_found_everywhere(&app, &stranger, &shared).await;
    assert_not_found_everywhere(&app, &stranger, &private).await;
    // Private to another user of the same account.
    assert_not_found_everywhere(&app, &mate, &private).await;
    // Nothing was written by the refused calls.
    assert_eq!(last_sequence(&app, &owner, &private).await, 1);
    let list = app.get(LIST, &owner.key).await;
    let titles: Vec<&Value> = list.data()["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["title"])
        .collect();
    assert!(!titles.contains(&&json!("x")));
}

#[actix_web::test]
async fn bad_uuids_queries_and_bodies_are_400_validation_errors() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, true).await;

    for bad in ["not-a-uuid", "123", "00000000-0000-0000-0000-00000000000g"] {
        let base = format!("{LIST}/{bad}");
        let res = app
            .patch(&format!("{base}/title"), &t.key, &json!({"title": "x"}))
            .await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!("conversationUid"));
        app.patch(
            &format!("{base}/sharing"),
            &t.key,
            &json!({"sharingEnabled": true}),
        )
        .await
        .assert_error(400, "VALIDATION_ERROR");
        app.post(
            &format!("{base}/messages"),
            &t.key,
            &json!({"audience": "room", "content": "x"}),
        )
        .await
        .assert_error(400, "VALIDATION_ERROR");
        let Err(res) = app.sse(&format!("{base}/events"), &t.key, None).await else {
            panic!("stream opened for {bad}");
        };
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!("conversationUid"));
    }

    // Query strings.
    for (q, field) in [
        ("?take=0", "take"),
        ("?take=101", "take"),
        ("?skip=-1", "skip"),
    ] {
        let res = app.get(&format!("{LIST}{q}"), &t.key).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{q}");
    }
    app.say(&t, &uid, "one").await;
    for (q, field) in [
        ("?after=-1", "after"),
        ("?after=abc", "after"),
        ("?after=1.5", "after"),
        ("?after=2", "after"),
    ] {
        let Err(res) = app
            .sse(&format!("{LIST}/{uid}/events{q}"), &t.key, None)
            .await
        else {
            panic!("stream opened with {q}");
        };
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{q}");
    }
    // Unknown query parameters are ignored, as everywhere (cache busters).
    assert!(
        app.sse(&format!("{LIST}/{uid}/events?_=1"), &t.key, None)
            .await
            .is_ok()
    );
    let Err(res) = app
        .sse(&format!("{LIST}/{uid}/events"), &t.key, Some("nope"))
        .await
    else {
        panic!("stream opened with a bad Last-Event-ID");
    };
    assert_eq!(res.body["error"]["field"], json!("Last-Event-ID"));

    // Bodies.
    let title = format!("{LIST}/{uid}/title");
    for (body, field) in [
        (json!({}), "title"),
        (json!({"title": ""}), "title"),
        (json!({"title": "   "}), "title"),
        (json!({"title": "x".repeat(256)}), "title"),
        (json!({"title": 5}), "title"),
        (json!({"title": "ok", "extra": 1}), "extra"),
    ] {
        let res = app.patch(&title, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{body}");
    }
    // 255 characters (multi-byte) is the upper bound.
    let res = app
        .patch(&title, &t.key, &json!({"title": "é".repeat(255)}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);

    let sharing = format!("{LIST}/{uid}/sharing");
    for body in [
        json!({}),
        json!({"sharingEnabled": "yes"}),
        json!({"sharingEnabled": null}),
    ] {
        let res = app.patch(&sharing, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(
            res.body["error"]["field"],
            json!("sharingEnabled"),
            "{body}"
        );
    }

    let messages = format!("{LIST}/{uid}/messages");
    for (body, field) in [
        (json!({"content": "x"}), "audience"),
        (json!({"audience": "room"}), "content"),
        (json!({"audience": "assistant", "content": "x"}), "audience"),
        (json!({"audience": "everyone", "content": "x"}), "audience"),
        (json!({"audience": "room", "content": ""}), "content"),
        (json!({"audience": "room", "content": " \n "}), "content"),
        (
            json!({"audience": "room", "content": "x".repeat(32_001)}),
            "content",
        ),
        (json!({"audience": "room", "content": 7}), "content"),
    ] {
        let res = app.post(&messages, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{body}");
    }
    let res = app
        .post(
            &messages,
            &t.key,
            &json!({"audience": "assistant", "content": "x"}),
        )
        .await;
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("assistant"),
        "{}",
        res.body
    );
    // None of the refused posts was stored.
    assert_eq!(last_sequence(&app, &t, &uid).await, 1);

    for (body, field) in [
        (json!({"sharingEnabled": 1}), "sharingEnabled"),
        (json!({"title": ""}), "title"),
        (json!({"owner": 1}), "owner"),
    ] {
        let res = app.post(LIST, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{body}");
    }
    let res = app
        .send_raw(
            Method::POST,
            LIST,
            Some(&t.key),
            Some("text/plain"),
            b"hi".to_vec(),
        )
        .await;
    assert_eq!(res.status, 415);
    assert_eq!(app.get(LIST, &t.key).await.data()["totalCount"], json!(1));
}

#[actix_web::test]
async fn every_route_needs_a_valid_bearer_token() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, true).await;
    let base = format!("{LIST}/{uid}");
    let routes: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, LIST.into(), None),
        (Method::POST, LIST.into(), Some(json!({}))),
        (
            Method::PATCH,
            format!("{base}/title"),
            Some(json!({"title": "x"})),
        ),
        (
            Method::PATCH,
            format!("{base}/sharing"),
            Some(json!({"sharingEnabled": false})),
        ),
        (
            Method::POST,
            format!("{base}/messages"),
            Some(json!({"audience": "room", "content": "x"})),
        ),
        (Method::GET, format!("{base}/events"), None),
        (Method::GET, SETTINGS.into(), None),
        (
            Method::PATCH,
            SETTINGS.into(),
            Some(json!({"defaultSharingEnabled": true})),
        ),
    ];
    for (method, path, body) in routes {
        for key in [
            None,
            Some("agk_AAAAAAAAAAAA_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"),
        ] {
            let res = app.request(method.clone(), &path, key, body.as_ref()).await;
            res.assert_error(401, "UNAUTHORIZED");
        }
    }
    assert_eq!(app.get(LIST, &t.key).await.data()["totalCount"], json!(1));
    let settings = app.get(SETTINGS, &t.key).await;
    assert_eq!(
        settings.data(),
        &json!({"defaultSharingEnabled": false, "assistantWritesNeedConfirmation": true})
    );
}

#[actix_web::test]
async fn settings_are_for_admins_of_accounts_with_the_assistant() {
    let app = spawn_app().await;
    let admin = app.tenant().await;
    let member = app
        .user_in(&admin.account_id, "member", &["platform:write"])
        .await;
    let superadmin = app.user_in(&admin.account_id, "super-admin", &[]).await;
    let mut no_assistant = NewAccount::named("NoAI");
    no_assistant.assistant = false;
    let other_admin = app.tenant_with(no_assistant, "admin", &[]).await;

    let res = app.get(SETTINGS, &admin.key).await;
    assert_eq!(res.status, 200);
    assert_eq!(
        res.data(),
        &json!({"defaultSharingEnabled": false, "assistantWritesNeedConfirmation": true})
    );

    for key in [&member.key, &other_admin.key] {
        app.get(SETTINGS, key).await.assert_error(403, "FORBIDDEN");
        // 403 comes before the body is even looked at.
        app.patch(SETTINGS, key, &json!({"defaultSharingEnabled": true}))
            .await
            .assert_error(403, "FORBIDDEN");
        app.patch(SETTINGS, key, &json!({"nonsense": 1}))
            .await
            .assert_error(403, "FORBIDDEN");
    }
    // Refused writes changed nothing.
    assert_eq!(
        app.get(SETTINGS, &admin.key).await.data(),
        &json!({"defaultSharingEnabled": false, "assistantWritesNeedConfirmation": true})
    );

    let res = app
        .patch(
            SETTINGS,
            &superadmin.key,
            &json!({"defaultSharingEnabled": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data(),
        &json!({"defaultSharingEnabled": true, "assistantWritesNeedConfirmation": true})
    );
    assert_eq!(
        app.get(SETTINGS, &admin.key).await.data(),
        &json!({"defaultSharingEnabled": true, "assistantWritesNeedConfirmation": true})
    );
    // A PATCH changes the fields it names only.
    let res = app
        .patch(
            SETTINGS,
            &admin.key,
            &json!({"assistantWritesNeedConfirmation": false}),
        )
        .await;
    assert_eq!(
        res.data(),
        &json!({"defaultSharingEnabled": true, "assistantWritesNeedConfirmation": false})
    );
    // Settings are per account.
    let stranger = app.tenant().await;
    assert_eq!(
        app.get(SETTINGS, &stranger.key).await.data(),
        &json!({"defaultSharingEnabled": false, "assistantWritesNeedConfirmation": true})
    );

    for (body, field) in [
        (json!({}), "defaultSharingEnabled"),
        (
            json!({"defaultSharingEnabled": "true"}),
            "defaultSharingEnabled",
        ),
        (json!({"defaultSharingEnabled": true, "x": 1}), "x"),
        (
            json!({"assistantWritesNeedConfirmation": 1}),
            "assistantWritesNeedConfirmation",
        ),
    ] {
        let res = app.patch(SETTINGS, &admin.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], json!(field), "{body}");
    }
    let res = app
        .send_raw(
            Method::PATCH,
            SETTINGS,
            Some(&admin.key),
            Some("application/json"),
            b"{".to_vec(),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        app.get(SETTINGS, &admin.key).await.data(),
        &json!({"defaultSharingEnabled": true, "assistantWritesNeedConfirmation": false})
    );
    // A PATCH changes the fields it names only.
    let res = app
        .patch(
            SETTINGS,
            &admin.key,
            &json!({"assistantWritesNeedConfirmation": false}),
        )
        .await;
    assert_eq!(
        res.data(),
        &json!({"defaultSharingEnabled": true, "assistantWritesNeedConfirmation": false})
    );
}

#[actix_web::test]
async fn posted_messages_carry_sequence_audience_content_and_author() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let uid = app.conversation(&t, false).await;
    let res = app
        .post(
            &format!("{LIST}/{uid}/messages"),
            &t.key,
            &json!({"audience": "room", "content": "  keep my spacing  "}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let m = &res.data()["message"];
    assert_eq!(m["sequence"], json!(1));
    assert_eq!(m["audience"], json!("room"));
    assert_eq!(m["content"], json!("  keep my spacing  "));
    assert_eq!(m["author"]["userId"], json!(t.user_id));
    assert_eq!(m["author"]["email"], json!(t.email));
    assert!(m["author"]["name"].is_string());
    assert!(m["createdAt"].is_string());
    assert_eq!(app.say(&t, &uid, "two").await, 2);
    assert_eq!(last_sequence(&app, &t, &uid).await, 2);
}

#[actix_web::test]
async fn concurrent_posts_get_strictly_increasing_gap_free_sequences() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mate = app.user_in(&t.account_id, "member", &[]).await;
    let uid = app.conversation(&t, true).await;
    let mut tasks = Vec::new();
    for i in 0..40 {
        let who = if i % 2 == 0 { t.clone() } else { mate.clone() };
        let path = format!("{LIST}/{uid}/messages");
        let client = awc::Client::default();
        let url = app.url(&path);
        tasks.push(actix_rt::spawn(async move {
            let mut res = client
                .post(url)
                .insert_header(("Authorization", format!("Bearer {}", who.key)))
                .send_json(&json!({"audience": "room", "content": format!("m{i}")}))
                .await
                .unwrap();
            assert_eq!(res.status(), 201);
            let body: Value = res.json().await.unwrap();
            body["data"]["message"]["sequence"].as_i64().unwrap()
        }));
    }
    let mut seqs = Vec::new();
    for task in tasks {
        seqs.push(task.await.unwrap());
    }
    seqs.sort();
    assert_eq!(seqs, (1..=40).collect::<Vec<i64>>());
    assert_eq!(last_sequence(&app, &t, &uid).await, 40);
}
