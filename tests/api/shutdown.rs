//! Nothing lost at shutdown or takeover (issue 33, item 6): the real
//! binary stopped with SIGTERM mid-burst finishes and records the attempts
//! under way (texts at a slow fake carrier, a webhook at a receiver that
//! answers late) and the next start sends the rest, each once; a sender
//! that lost its lane mid-submit still records the carrier's answer.

use std::collections::HashMap;
use std::time::Duration;

use sea_orm::sea_query::Expr;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use agentic_api::auth::tenancy::{self, NewAccount, NewLine};
use entity::{outbox_job, outbox_lease, phone_message};

use crate::fake_carrier::FakeCarrier;
use crate::fake_seller::{Behaviour, product, seller};
use crate::helpers::*;
use crate::receiver::Receiver;

const SMS: &str = "/api/v2/communications/messages";
const TO: &str = "+14155550124";

async fn enrolled(app: &TestApp) -> Tenant {
    let mut account = NewAccount::named("Acme");
    account.phone_lines = true;
    app.tenant_with(account, "admin", &["platform:write"]).await
}

async fn line(db: &DatabaseConnection, t: &Tenant, number: &str) -> String {
    tenancy::provision_line(
        db,
        NewLine {
            account_id: t.account_id.clone(),
            number: number.into(),
            kind: "sms".into(),
            rcs_agent_verified: false,
            messaging_profile: None,
            inactive: false,
        },
    )
    .await
    .unwrap()
    .to_string()
}

/// Stops the in-process app, so only the binary works the database from
/// here on; the test reads it on a connection of its own.
async fn hand_over(app: &TestApp) -> DatabaseConnection {
    app.state.shutdown.cancel();
    app.handle.stop(true).await;
    sea_orm::Database::connect(&app.database_url).await.unwrap()
}

async fn statuses(db: &DatabaseConnection) -> HashMap<String, usize> {
    let mut by = HashMap::new();
    for m in phone_message::Entity::find().all(db).await.unwrap() {
        *by.entry(m.status).or_default() += 1;
    }
    by
}

async fn leases(db: &DatabaseConnection, queue: &str) -> u64 {
    outbox_lease::Entity::find()
        .filter(outbox_lease::Column::Queue.eq(queue))
        .count(db)
        .await
        .unwrap()
}

#[actix_web::test]
async fn sigterm_mid_burst_leaves_no_text_held_and_sends_none_twice() {
    let fake = FakeCarrier::start().await;
    // A slow carrier, so each line has a submission under way at SIGTERM.
    fake.delay(300);
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let mut lines = Vec::new();
    for i in 0..3 {
        lines.push(line(&app.db, &t, &format!("+1415555030{i}")).await);
    }
    let db = hand_over(&app).await;
    let env = [
        ("AGENTIC_CARRIER_URL", fake.base.as_str()),
        ("AGENTIC_CARRIER_API_KEY", "KEY"),
        ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
        // What is checked is that in-flight attempts finish and leases are
        // given up, not how fast: on a loaded 2-core CI machine the default
        // 10 s grace has run out before the lanes were done.
        ("AGENTIC_SHUTDOWN_GRACE", "30"),
    ];
    let mut first = serve(&app.database_url, &env, std::process::Stdio::inherit());
    // The burst is queued at once; the lines then need seconds to send it.
    const PER_LINE: usize = 10;
    let texts: Vec<(String, String)> = (0..PER_LINE)
        .flat_map(|n| lines.iter().map(move |l| (l.clone(), format!("m-{l}-{n}"))))
        .collect();
    let posts = texts.iter().map(|(l, text)| {
        app.client
            .post(format!("{}{SMS}", first.base))
            .insert_header(("Authorization", format!("Bearer {}", t.key)))
            .send_json(&json!({"requestId": uuid::Uuid::new_v4().to_string(),
                "endpointId": l, "to": TO, "text": text}))
    });
    for res in futures_util::future::join_all(posts).await {
        assert_eq!(res.unwrap().status(), 202);
    }
    while fake.requests().len() < 4 {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(sigterm_and_wait(&mut first.child).success());

    // Every submission under way finished and was recorded; the rest wait.
    let by = statuses(&db).await;
    let sent = fake.requests().len();
    assert_eq!(by.get("submitted").copied().unwrap_or(0), sent, "{by:?}");
    assert!(
        by.get("pending").copied().unwrap_or(0) > 0,
        "mid-burst: {by:?}"
    );
    assert_eq!(by.get("submitting"), None, "{by:?}");
    assert_eq!(by.get("held"), None, "{by:?}");
    assert_eq!(leases(&db, "text").await, 0, "leases given up");

    // The next start sends the rest at once.
    let mut second = serve(&app.database_url, &env, std::process::Stdio::inherit());
    for _ in 0..3000 {
        let by = statuses(&db).await;
        if by.get("submitted") == Some(&texts.len()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(sigterm_and_wait(&mut second.child).success());
    let rows = phone_message::Entity::find().all(&db).await.unwrap();
    assert!(
        rows.iter()
            .all(|m| m.status == "submitted" && m.carrier_message_id.is_some()),
        "{:?}",
        statuses(&db).await
    );
    let mut copies: HashMap<String, usize> = HashMap::new();
    for r in fake.requests() {
        *copies
            .entry(r.body["text"].as_str().unwrap().to_string())
            .or_default() += 1;
    }
    assert_eq!(copies.len(), texts.len(), "every text reached the carrier");
    assert!(copies.values().all(|&n| n == 1), "sent twice: {copies:?}");
}

#[actix_web::test]
async fn a_webhook_delivery_in_flight_at_sigterm_is_recorded_and_not_sent_again() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let b = Behaviour {
        products: json!([product("p-0", 10.0)]),
        ..Behaviour::default()
    };
    let _seller = seller(&app, "Seller", b).await;
    let rx = Receiver::start().await;
    let res = app
        .post(
            "/api/v2/buyer/webhook-subscriptions",
            &t.key,
            &json!({"url": rx.url("/hook"), "secret": "whsec-test-0123456789abcdef",
                "eventTypes": ["discovery.revision"]}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let db = hand_over(&app).await;
    let env = [
        ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
        ("AGENTIC_LEASE_SECONDS", "2"),
    ];
    // The receiver takes the first delivery and answers only later.
    rx.hold();
    let mut first = serve(&app.database_url, &env, std::process::Stdio::inherit());
    let res = app
        .client
        .post(format!(
            "{}/api/v2/buyer/discovery/discover-products",
            first.base
        ))
        .insert_header(("Authorization", format!("Bearer {}", t.key)))
        .send_json(&json!({"advertiserId": adv, "progressive": true}))
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let held = rx.wait_for(1).await[0].delivery_id.clone().unwrap();
    let pid = first.child.id().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    // The server waits for the answer (within its grace) and records it.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(
        first.child.try_wait().unwrap().is_none(),
        "exited before the delivery under way finished"
    );
    rx.release();
    assert!(sigterm_and_wait(&mut first.child).success());
    let recorded: Vec<Value> = outbox_job::Entity::find()
        .filter(outbox_job::Column::Queue.eq("webhook"))
        .filter(outbox_job::Column::State.eq("done"))
        .all(&db)
        .await
        .unwrap()
        .into_iter()
        .map(|j| serde_json::from_str(&j.result.unwrap()).unwrap())
        .collect();
    assert_eq!(recorded.len(), 1, "{recorded:?}");
    assert_eq!(recorded[0]["statusCode"], 200);
    assert_eq!(rx.count(), 1, "nothing else sent after the signal");
    assert_eq!(leases(&db, "webhook").await, 0, "leases given up");

    // The next start delivers the rest; the recorded one is not sent again.
    let mut second = serve(&app.database_url, &env, std::process::Stdio::inherit());
    for _ in 0..3000 {
        let complete = rx
            .hits()
            .iter()
            .any(|h| h.json()["resultsComplete"] == true);
        let pending = outbox_job::Entity::find()
            .filter(outbox_job::Column::Queue.eq("webhook"))
            .filter(outbox_job::Column::State.eq("pending"))
            .count(&db)
            .await
            .unwrap();
        if complete && pending == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(sigterm_and_wait(&mut second.child).success());
    let mut copies: HashMap<String, usize> = HashMap::new();
    for h in rx.hits() {
        *copies.entry(h.delivery_id.unwrap()).or_default() += 1;
    }
    assert!(copies.len() > 1, "the rest was delivered: {copies:?}");
    assert_eq!(copies[&held], 1);
    assert!(copies.values().all(|&n| n == 1), "sent twice: {copies:?}");
}

#[actix_web::test]
async fn a_sender_that_lost_its_lease_mid_submit_still_records_the_carrier_id() {
    use base64::Engine;
    let fake = FakeCarrier::start().await;
    fake.delay(1500);
    let carrier_key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let public =
        base64::engine::general_purpose::STANDARD.encode(carrier_key.verifying_key().to_bytes());
    let base = fake.base.clone();
    let app = spawn_app_with(move |c| {
        c.carrier_url = Some(base);
        c.carrier_api_key = "KEY".parse().ok();
        c.carrier_public_key = public.parse().ok();
        c.outbox.sweep = Duration::from_millis(100);
    })
    .await;
    let t = enrolled(&app).await;
    let l = line(&app.db, &t, "+14155550400").await;
    let res = app
        .post(
            SMS,
            &t.key,
            &json!({"requestId": uuid::Uuid::new_v4().to_string(), "endpointId": l,
                "to": TO, "text": "hello"}),
        )
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let id: i64 = res.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // Under way at the carrier, the lane's lease passes to another holder
    // (as after a missed renewal); the instance's sweep takes it back as a
    // new lane, which finds the message mid-submit and holds it.
    while fake.requests().is_empty() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    outbox_lease::Entity::update_many()
        .col_expr(outbox_lease::Column::Owner, Expr::value("another-outbox"))
        .col_expr(
            outbox_lease::Column::Until,
            Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .filter(outbox_lease::Column::Queue.eq("text"))
        .exec(&app.db)
        .await
        .unwrap();
    let (seen, _) = statuses_until(&app.db, id, "submitted").await;
    assert_eq!(seen, ["submitting", "held", "submitted"]);
    // The old holder's answer settled it: carrier id kept, job done.
    let m = text_message(&app.db, id).await;
    let carrier_id = m.carrier_message_id.unwrap();
    assert_eq!(carrier_id, "40317f2c-0000-4000-8000-000000000001");
    let jobs = outbox_job::Entity::find()
        .filter(outbox_job::Column::Queue.eq("text"))
        .all(&app.db)
        .await
        .unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0].state, "done");
    assert_eq!(fake.requests().len(), 1, "sent once");
    // Its delivery report matches.
    let report = json!({"data": {"event_type": "message.finalized", "id": "e1", "record_type": "event",
        "payload": {"id": carrier_id, "to": [{"phone_number": TO, "status": "delivered"}]}}});
    let body = serde_json::to_vec(&report).unwrap();
    let now = chrono::Utc::now().timestamp();
    let sig = {
        use ed25519_dalek::Signer;
        let mut signed = format!("{now}|").into_bytes();
        signed.extend_from_slice(&body);
        base64::engine::general_purpose::STANDARD.encode(carrier_key.sign(&signed).to_bytes())
    };
    let res = app
        .client
        .post(app.url("/carrier/events"))
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("telnyx-timestamp", now.to_string()))
        .insert_header(("telnyx-signature-ed25519", sig))
        .send_body(body)
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(text_message(&app.db, id).await.status, "delivered");
}
