//! The assistant in the room, against a fake OpenAI-compatible model on
//! 127.0.0.1 (and the built-in offline assistant): turns answered and
//! streamed, tools with the caller's rights, proposed writes confirmed and
//! declined, cancellation, a model that is down or hangs, turns queued in
//! order, and every error row of the endpoints.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fake_llm::{FakeLlm, Reply, text};
use crate::helpers::{SseStream, Tenant, TestApp, advertiser, messages, spawn_app_with};

pub const API_KEY: &str = "sk-test-0123456789";

pub async fn with_llm(llm: &FakeLlm, tweak: impl FnOnce(&mut agentic_api::Config)) -> TestApp {
    let base = llm.base.clone();
    spawn_app_with(move |c| {
        c.assistant_url = Some(base);
        c.assistant_model = "test-model".into();
        c.assistant_api_key = Some(API_KEY.parse().unwrap());
        tweak(c);
    })
    .await
}

pub fn turns(uid: &str) -> String {
    format!("/api/v2/assistant/conversations/{uid}/turns")
}

fn run_path(uid: &str, run: &str) -> String {
    format!("/api/v2/assistant/conversations/{uid}/runs/{run}")
}

/// Directs a turn; returns the run id.
pub async fn direct(app: &TestApp, t: &Tenant, uid: &str, content: &str) -> String {
    let res = app
        .post(&turns(uid), &t.key, &json!({ "content": content }))
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    res.data()["run"]["runId"].as_str().unwrap().to_string()
}

/// Polls the run until its status is `status`; returns its detail.
pub async fn run_becomes(app: &TestApp, t: &Tenant, uid: &str, run: &str, status: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..400 {
        let res = app.get(&run_path(uid, run), &t.key).await;
        assert_eq!(res.status, 200, "{}", res.body);
        last = res.data().clone();
        if last["run"]["status"] == status {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("run {run} did not become {status}: {last}");
}

/// Reads the room until the run's answer is created: the deltas' text, in
/// order, and the answer event.
pub async fn answer_of(stream: &mut SseStream, run: &str) -> (String, Value) {
    let mut text = String::new();
    let mut next_index = 0;
    loop {
        let ev = stream
            .next_event(Duration::from_secs(10))
            .await
            .expect("an event within 10 s");
        if ev.event == "message.delta" && ev.data["runId"] == run {
            assert_eq!(ev.data["index"], next_index, "deltas in order");
            next_index += 1;
            text.push_str(ev.data["delta"].as_str().unwrap());
        }
        if ev.event == "message.created"
            && ev.data["message"]["runId"] == run
            && ev.data["message"]["kind"] == "answer"
        {
            return (text, ev.data);
        }
    }
}

/// The messages of the conversation, in order (replayed from the start).
async fn history(app: &TestApp, t: &Tenant, uid: &str) -> Vec<Value> {
    let res = app
        .get("/api/v2/assistant/conversations?take=100", &t.key)
        .await;
    let last = res.data()["conversations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["conversationUid"] == uid)
        .map(|c| c["lastSequence"].as_i64().unwrap())
        .unwrap();
    let mut stream = app.room(t, uid, "?after=0", None).await;
    messages(&mut stream, last as usize)
        .await
        .into_iter()
        .map(|e| e.data["message"].clone())
        .collect()
}

#[actix_rt::test]
async fn a_turn_is_answered_and_streamed_to_two_subscribers_then_replayed() {
    let llm = FakeLlm::start().await;
    llm.script([Reply::Text(
        vec!["Hello", " there", "!"],
        Duration::from_millis(30),
    )]);
    let app = with_llm(&llm, |_| {}).await;
    let ada = app.tenant().await;
    let bo = app.user_in(&ada.account_id, "member", &[]).await;
    let uid = app.conversation(&ada, true).await;
    let mut s1 = app.room(&ada, &uid, "", None).await;
    let mut s2 = app.room(&bo, &uid, "", None).await;
    s1.expect("ready").await;
    s2.expect("ready").await;

    let res = app
        .post(
            &turns(&uid),
            &ada.key,
            &json!({ "audience": "assistant", "content": "Say hello" }),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let turn = &res.data()["message"];
    assert_eq!(turn["audience"], "assistant");
    assert_eq!(turn["kind"], "turn");
    assert_eq!(turn["author"]["userId"], ada.user_id);
    let run = res.data()["run"]["runId"].as_str().unwrap().to_string();
    assert_eq!(turn["runId"], run.as_str());
    assert_eq!(res.data()["run"]["status"], "queued");

    for stream in [&mut s1, &mut s2] {
        let (streamed, answer) = answer_of(stream, &run).await;
        assert_eq!(streamed, "Hello there!");
        assert_eq!(answer["message"]["content"], "Hello there!");
        assert_eq!(answer["message"]["audience"], "assistant");
        assert!(answer["message"].get("author").is_none());
        loop {
            let ev = stream.expect("run.updated").await;
            if ev.data["run"]["status"] == "completed" {
                break;
            }
        }
    }
    let detail = run_becomes(&app, &ada, &uid, &run, "completed").await;
    assert_eq!(detail["run"]["usage"]["completionTokens"], 3);

    let seen = llm.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].authorization.as_deref(),
        Some(format!("Bearer {API_KEY}").as_str())
    );
    assert_eq!(seen[0].body["model"], "test-model");
    assert_eq!(seen[0].body["stream"], true);
    let sent = seen[0].messages();
    assert_eq!(sent[0]["role"], "system");
    assert_eq!(sent.last().unwrap()["role"], "user");
    assert_eq!(sent.last().unwrap()["content"], "Say hello");

    // Resuming from the start replays the turn and the answer, in order.
    let all = history(&app, &ada, &uid).await;
    let kinds: Vec<&str> = all.iter().map(|m| m["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["turn", "answer"]);
}

#[actix_rt::test]
async fn tools_run_with_the_directing_callers_rights() {
    let llm = FakeLlm::start().await;
    let app = with_llm(&llm, |_| {}).await;
    let ada = app.tenant().await;
    let mine = advertiser(&app, &ada).await;
    let other = app.tenant().await;
    let theirs = advertiser(&app, &other).await;
    llm.script([
        Reply::Call("list_advertisers", json!({})),
        Reply::Call(
            "get_advertiser",
            json!({ "pathParams": { "advertiserId": theirs } }),
        ),
        text(&["Done."]),
    ]);
    let uid = app.conversation(&ada, false).await;
    let run = direct(&app, &ada, &uid, "what do we have?").await;
    let detail = run_becomes(&app, &ada, &uid, &run, "completed").await;
    assert_eq!(detail["run"]["toolCalls"], 2);
    let activity = detail["activity"].as_array().unwrap();
    let kinds: Vec<&str> = activity
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["tool_call", "tool_result", "tool_call", "tool_result"]
    );
    let listed = activity[1]["data"]["result"].to_string();
    assert!(
        listed.contains(&mine) && !listed.contains(&theirs),
        "{listed}"
    );
    assert_eq!(activity[3]["data"]["ok"], false);
    assert_eq!(activity[3]["data"]["result"]["error"]["code"], "NOT_FOUND");
    // The model saw the results as tool messages answering its calls.
    let seen = llm.wait_requests(3).await;
    let second = seen[1].messages();
    let tool = second.iter().find(|m| m["role"] == "tool").unwrap();
    assert_eq!(tool["tool_call_id"], "call_list_advertisers");
    assert!(tool["content"].as_str().unwrap().contains(&mine));
    assert!(
        seen[0]
            .tool_names()
            .contains(&"create_advertiser".to_string())
    );
    assert!(
        !seen[0]
            .tool_names()
            .iter()
            .any(|n| n == "create_api_key" || n == "direct_assistant_turn")
    );

    // A read-only key's turn is offered read tools only.
    let reader = app
        .user_in(&ada.account_id, "member", &["platform:read"])
        .await;
    let shared = app.conversation(&ada, true).await;
    let run = direct(&app, &reader, &shared, "hello").await;
    run_becomes(&app, &reader, &shared, &run, "completed").await;
    let names = llm.seen().last().unwrap().tool_names();
    assert!(names.contains(&"list_advertisers".to_string()), "{names:?}");
    assert!(
        !names.contains(&"create_advertiser".to_string()),
        "{names:?}"
    );
    assert!(
        !names.contains(&"discover_products".to_string()),
        "{names:?}"
    );
}

fn new_advertiser_call(name: &str) -> Reply {
    Reply::Call(
        "create_advertiser",
        json!({ "body": { "name": name, "brand": "acme.example", "primaryCurrency": "USD" } }),
    )
}

async fn advertiser_names(app: &TestApp, t: &Tenant) -> Vec<String> {
    let res = app.get("/api/v2/buyer/advertisers", &t.key).await;
    res.data()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap().to_string())
        .collect()
}

#[actix_rt::test]
async fn a_write_is_proposed_then_confirmed_or_declined() {
    let llm = FakeLlm::start().await;
    let app = with_llm(&llm, |_| {}).await;
    let ada = app.tenant().await;
    let bo = app.user_in(&ada.account_id, "member", &[]).await;
    let reader = app
        .user_in(&ada.account_id, "member", &["platform:read"])
        .await;
    let uid = app.conversation(&ada, true).await;
    let mut room = app.room(&bo, &uid, "", None).await;

    llm.script([new_advertiser_call("Globex"), text(&["Created Globex."])]);
    let run = direct(&app, &ada, &uid, "create Globex").await;
    let waiting = run_becomes(&app, &ada, &uid, &run, "awaiting_confirmation").await;
    let action = waiting["run"]["pendingAction"].clone();
    assert_eq!(action["operation"], "create_advertiser");
    assert_eq!(action["arguments"]["body"]["name"], "Globex");
    let action_id = action["actionId"].as_str().unwrap().to_string();
    // Shown in the room, and nothing written yet.
    loop {
        let ev = room.expect("message.created").await;
        if ev.data["message"]["kind"] == "action_proposed" {
            assert_eq!(ev.data["message"]["data"]["actionId"], action_id.as_str());
            break;
        }
    }
    assert!(advertiser_names(&app, &ada).await.is_empty());

    let decide = format!("{}/actions/{action_id}", run_path(&uid, &run));
    // Error rows: a read-only key cannot confirm; a bad decision; another action.
    app.post(&decide, &reader.key, &json!({ "decision": "confirm" }))
        .await
        .assert_error(403, "FORBIDDEN");
    app.post(&decide, &bo.key, &json!({ "decision": "maybe" }))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(&decide, &bo.key, &json!({}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(
        &format!("{}/actions/other", run_path(&uid, &run)),
        &bo.key,
        &json!({ "decision": "confirm" }),
    )
    .await
    .assert_error(409, "CONFLICT");

    // A teammate confirms: the write runs as the directing user, the run goes on.
    let res = app
        .post(&decide, &bo.key, &json!({ "decision": "confirm" }))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let done = run_becomes(&app, &ada, &uid, &run, "completed").await;
    assert_eq!(advertiser_names(&app, &ada).await, ["Globex"]);
    let kinds: Vec<&str> = done["activity"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["action_proposed", "tool_result"]);
    // Deciding again is a conflict.
    app.post(&decide, &bo.key, &json!({ "decision": "confirm" }))
        .await
        .assert_error(409, "CONFLICT");

    // Declined: nothing written, and the model is told.
    llm.script([new_advertiser_call("Initech"), text(&["Understood."])]);
    let run = direct(&app, &ada, &uid, "create Initech").await;
    let waiting = run_becomes(&app, &ada, &uid, &run, "awaiting_confirmation").await;
    let action_id = waiting["run"]["pendingAction"]["actionId"]
        .as_str()
        .unwrap()
        .to_string();
    let decide = format!("{}/actions/{action_id}", run_path(&uid, &run));
    let res = app
        .post(&decide, &bo.key, &json!({ "decision": "decline" }))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    run_becomes(&app, &ada, &uid, &run, "completed").await;
    assert_eq!(advertiser_names(&app, &ada).await, ["Globex"]);
    let last = llm.seen().last().unwrap().messages();
    let told = last.iter().rev().find(|m| m["role"] == "tool").unwrap();
    assert!(
        told["content"].as_str().unwrap().contains("declined"),
        "{told}"
    );

    // The account can let writes through without a confirmation.
    let res = app
        .patch(
            "/api/v2/assistant/conversation-settings",
            &ada.key,
            &json!({ "assistantWritesNeedConfirmation": false }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["assistantWritesNeedConfirmation"], false);
    assert_eq!(res.data()["defaultSharingEnabled"], false);
    llm.script([new_advertiser_call("Umbrella"), text(&["Done."])]);
    let run = direct(&app, &ada, &uid, "create Umbrella").await;
    run_becomes(&app, &ada, &uid, &run, "completed").await;
    assert_eq!(advertiser_names(&app, &ada).await.len(), 2);
}

#[actix_rt::test]
async fn runs_are_canceled_queued_in_order_and_end_on_failures() {
    let llm = FakeLlm::start().await;
    let app = with_llm(&llm, |c| c.assistant_run_seconds = 3).await;
    let ada = app.tenant().await;
    let uid = app.conversation(&ada, false).await;

    // A running run is canceled by a participant; the one queued behind it
    // waited its turn, then runs.
    llm.script([Reply::Hang(vec!["Thinking"]), text(&["Second answer"])]);
    let mut room = app.room(&ada, &uid, "", None).await;
    let first = direct(&app, &ada, &uid, "first").await;
    let second = direct(&app, &ada, &uid, "second").await;
    room.expect("message.delta").await;
    let res = app.get(&run_path(&uid, &second), &ada.key).await;
    assert_eq!(res.data()["run"]["status"], "queued");
    assert_eq!(llm.seen().len(), 1);
    let res = app
        .post(
            &format!("{}/cancel", run_path(&uid, &first)),
            &ada.key,
            &json!({}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let canceled = run_becomes(&app, &ada, &uid, &first, "canceled").await;
    assert_eq!(canceled["run"]["error"]["code"], "canceled");
    run_becomes(&app, &ada, &uid, &second, "completed").await;
    let seen = llm.wait_requests(2).await;
    let turns: Vec<String> = seen[1]
        .messages()
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(turns, ["first", "second"]);

    // A queued run is canceled at once.
    llm.script([Reply::Hang(vec![])]);
    let third = direct(&app, &ada, &uid, "third").await;
    let fourth = direct(&app, &ada, &uid, "fourth").await;
    let res = app
        .post(
            &format!("{}/cancel", run_path(&uid, &fourth)),
            &ada.key,
            &json!({}),
        )
        .await;
    assert_eq!(res.data()["run"]["status"], "canceled");
    // A hanging model ends the run at its time limit, with a message.
    let timed_out = run_becomes(&app, &ada, &uid, &third, "failed").await;
    assert_eq!(timed_out["run"]["error"]["code"], "timeout");

    // The model answers an error: the run fails with a message saying so.
    llm.script([Reply::Status(500, "the model is overloaded")]);
    let run = direct(&app, &ada, &uid, "fifth").await;
    let failed = run_becomes(&app, &ada, &uid, &run, "failed").await;
    assert_eq!(failed["run"]["error"]["code"], "backend_error");
    let all = history(&app, &ada, &uid).await;
    let notice = all.iter().rev().find(|m| m["kind"] == "notice").unwrap();
    assert!(
        notice["content"].as_str().unwrap().contains("overloaded"),
        "{notice}"
    );
    assert_eq!(notice["runId"], run.as_str());
    // A canceled run that is over stays as it is.
    let res = app
        .post(
            &format!("{}/cancel", run_path(&uid, &run)),
            &ada.key,
            &json!({}),
        )
        .await;
    assert_eq!(res.data()["run"]["status"], "failed");
}

#[actix_rt::test]
async fn a_model_that_cannot_be_reached_ends_the_run_with_a_message() {
    // A port nothing listens on.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let app =
        spawn_app_with(|c| c.assistant_url = Some(format!("http://127.0.0.1:{closed}/v1"))).await;
    let ada = app.tenant().await;
    let uid = app.conversation(&ada, false).await;
    let run = direct(&app, &ada, &uid, "hello?").await;
    let failed = run_becomes(&app, &ada, &uid, &run, "failed").await;
    assert_eq!(failed["run"]["error"]["code"], "backend_unreachable");
    let all = history(&app, &ada, &uid).await;
    assert_eq!(all.last().unwrap()["kind"], "notice");
}

#[actix_rt::test]
async fn turn_and_run_errors_are_4xx_and_write_nothing() {
    let llm = FakeLlm::start().await;
    let app = with_llm(&llm, |_| {}).await;
    let ada = app.tenant().await;
    let other = app.tenant().await;
    let uid = app.conversation(&ada, false).await;
    let path = turns(&uid);
    app.post(&path, &ada.key, &json!({ "content": "  " }))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(&path, &ada.key, &json!({}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(
        &path,
        &ada.key,
        &json!({ "audience": "room", "content": "x" }),
    )
    .await
    .assert_error(400, "VALIDATION_ERROR");
    app.post(&path, &ada.key, &json!({ "content": "x", "extra": 1 }))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(&path, &ada.key, &json!({ "content": "x".repeat(32_001) }))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(&turns("not-a-uuid"), &ada.key, &json!({ "content": "x" }))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(&path, &other.key, &json!({ "content": "x" }))
        .await
        .assert_error(404, "NOT_FOUND");
    app.post(&path, "nope", &json!({ "content": "x" }))
        .await
        .assert_error(401, "UNAUTHORIZED");
    let mut off = agentic_api::auth::tenancy::NewAccount::named("Off");
    off.assistant = false;
    let no_assistant = app.tenant_with(off, "admin", &[]).await;
    let theirs = app.conversation(&no_assistant, false).await;
    app.post(
        &turns(&theirs),
        &no_assistant.key,
        &json!({ "content": "x" }),
    )
    .await
    .assert_error(403, "FORBIDDEN");
    // The posting to the room still refuses the assistant audience.
    app.post(
        &format!("/api/v2/assistant/conversations/{uid}/messages"),
        &ada.key,
        &json!({ "audience": "assistant", "content": "x" }),
    )
    .await
    .assert_error(400, "VALIDATION_ERROR");
    // Nothing was written.
    let res = app
        .get(
            &format!("/api/v2/assistant/conversations/{uid}/runs"),
            &ada.key,
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data().as_array().unwrap().len(), 0);
    assert!(llm.seen().is_empty());
    // Runs of another account's conversation, and unknown runs, are not found.
    let run = direct(&app, &ada, &uid, "hi").await;
    app.get(&run_path(&uid, &run), &other.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.post(
        &format!("{}/cancel", run_path(&uid, &run)),
        &other.key,
        &json!({}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    app.get(&run_path(&uid, &uuid::Uuid::new_v4().to_string()), &ada.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&run_path(&uid, "nope"), &ada.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    // Settings: at least one field.
    app.patch(
        "/api/v2/assistant/conversation-settings",
        &ada.key,
        &json!({}),
    )
    .await
    .assert_error(400, "VALIDATION_ERROR");
}

#[actix_rt::test]
async fn the_offline_assistant_lists_and_starts_a_discovery_with_a_confirmation() {
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.0).await;
    let ada = app.tenant().await;
    let adv = advertiser(&app, &ada).await;
    let uid = app.conversation(&ada, false).await;
    let run = direct(&app, &ada, &uid, "List advertisers").await;
    run_becomes(&app, &ada, &uid, &run, "completed").await;
    let all = history(&app, &ada, &uid).await;
    let answer = all.last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(answer.contains("Acme") && answer.contains(&adv), "{answer}");

    let run = direct(&app, &ada, &uid, "Discover sports video inventory").await;
    let waiting = run_becomes(&app, &ada, &uid, &run, "awaiting_confirmation").await;
    let action = &waiting["run"]["pendingAction"];
    assert_eq!(action["operation"], "discover_products");
    assert_eq!(action["arguments"]["body"]["advertiserId"], adv.as_str());
    let decide = format!(
        "{}/actions/{}",
        run_path(&uid, &run),
        action["actionId"].as_str().unwrap()
    );
    let res = app
        .post(&decide, &ada.key, &json!({ "decision": "confirm" }))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    run_becomes(&app, &ada, &uid, &run, "completed").await;
    let all = history(&app, &ada, &uid).await;
    let answer = all.last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(answer.starts_with("Discovery "), "{answer}");

    let run = direct(&app, &ada, &uid, "Summarise the discovery").await;
    run_becomes(&app, &ada, &uid, &run, "completed").await;
    let all = history(&app, &ada, &uid).await;
    let answer = all.last().unwrap()["content"].as_str().unwrap().to_string();
    assert!(answer.starts_with("The discovery is"), "{answer}");
}

#[actix_rt::test]
async fn a_run_whose_server_died_is_marked_interrupted_by_another() {
    let llm = FakeLlm::start().await;
    llm.script([Reply::Hang(vec!["Working"])]);
    let (url, _dir) = crate::helpers::migrated_database().await;
    let base = llm.base.clone();
    let survivor = crate::helpers::spawn_on(&url, move |c| {
        c.lease_seconds = Some(2);
        c.assistant_url = Some(base);
    })
    .await;
    let mut dying = crate::helpers::serve(
        &url,
        &[
            ("AGENTIC_ASSISTANT_URL", llm.base.as_str()),
            ("AGENTIC_LEASE_SECONDS", "2"),
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
        ],
        std::process::Stdio::null(),
    );
    let ada = survivor.tenant().await;
    let uid = survivor.conversation(&ada, false).await;
    // Directed through the instance that will die, which drives the run.
    let mut res = survivor
        .client
        .post(format!("{}{}", dying.base, turns(&uid)))
        .insert_header(("Authorization", format!("Bearer {}", ada.key)))
        .send_json(&json!({ "content": "a long task" }))
        .await
        .unwrap();
    assert_eq!(res.status(), 202);
    let body: Value = res.json().await.unwrap();
    let run = body["data"]["run"]["runId"].as_str().unwrap().to_string();
    llm.wait_requests(1).await;
    run_becomes(&survivor, &ada, &uid, &run, "running").await;
    // Its lease is renewed: the other instance leaves it alone.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let res = survivor.get(&run_path(&uid, &run), &ada.key).await;
    assert_eq!(res.data()["run"]["status"], "running");

    dying.child.kill().unwrap();
    dying.child.wait().unwrap();
    let ended = run_becomes(&survivor, &ada, &uid, &run, "interrupted").await;
    assert_eq!(ended["run"]["error"]["code"], "interrupted");
    let all = history(&survivor, &ada, &uid).await;
    assert_eq!(all.last().unwrap()["kind"], "notice");
    // The conversation is not stuck: the next turn is answered.
    llm.script([text(&["Back."])]);
    let next = direct(&survivor, &ada, &uid, "again").await;
    run_becomes(&survivor, &ada, &uid, &next, "completed").await;
}
