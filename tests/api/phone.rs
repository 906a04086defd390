//! Agent phone lines (issue 12) over real HTTP: every row of the SMS/RCS
//! error table, idempotency (rules 1 and 3) with concurrent retries, the
//! sending limits, opt-outs, and the supervised sender on the simulated
//! carrier (held on an unknown outcome, never re-sent; rule 7).

use std::time::Duration;

use sea_orm::{ConnectionTrait, EntityTrait, PaginatorTrait, Set};
use serde_json::{Value, json};

use agentic_api::auth::tenancy::{self, NewAccount, NewLine};
use agentic_api::outbox::Outbox;
use agentic_api::phone::admin::{self, LimitsChange};
use agentic_api::phone::carrier::{SimMode, Simulated};
use entity::{phone_message, phone_opt_out};

use crate::helpers::*;

pub(crate) const SMS: &str = "/api/v2/communications/messages";
const RCS: &str = "/api/v2/communications/rcs/messages";
const TO: &str = "+14155550124";

pub(crate) async fn enrolled(app: &TestApp) -> Tenant {
    let mut account = NewAccount::named("Acme");
    account.phone_lines = true;
    app.tenant_with(account, "admin", &["platform:write"]).await
}

pub(crate) async fn line(
    app: &TestApp,
    t: &Tenant,
    number: &str,
    f: impl FnOnce(&mut NewLine),
) -> String {
    let mut new = NewLine {
        account_id: t.account_id.clone(),
        number: number.into(),
        kind: "sms".into(),
        rcs_agent_verified: true,
        messaging_profile: None,
        inactive: false,
    };
    f(&mut new);
    tenancy::provision_line(&app.db, new)
        .await
        .unwrap()
        .to_string()
}

pub(crate) fn body(line: &str, to: &str, text: &str) -> Value {
    json!({"requestId": uuid::Uuid::new_v4().to_string(), "endpointId": line, "to": to, "text": text})
}

async fn messages(app: &TestApp) -> u64 {
    phone_message::Entity::find().count(&app.db).await.unwrap()
}

pub(crate) async fn drain(app: &TestApp) {
    app.state
        .get::<Outbox>()
        .unwrap()
        .drain("text", Duration::from_secs(60))
        .await
        .unwrap();
}

async fn status(app: &TestApp, outbox_id: &str) -> phone_message::Model {
    phone_message::Entity::find_by_id(outbox_id.parse::<i64>().unwrap())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap()
}

#[actix_web::test]
async fn an_sms_is_queued_with_202_pending_and_rcs_says_its_channel() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let res = app.post(SMS, &t.key, &body(&l, TO, "Hello")).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert!(res.body["error"].is_null());
    let m = &res.data()["message"];
    assert!(m["outboxId"].as_str().unwrap().parse::<i64>().is_ok());
    assert_eq!(m["status"], "pending");
    assert_eq!(m["duplicate"], false);
    assert!(m.get("channel").is_none(), "{m}");
    let res = app.post(RCS, &t.key, &body(&l, TO, "Hello")).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.data()["message"]["channel"], "rcs");
    assert_eq!(res.data()["message"]["status"], "pending");
    let row = status(&app, res.data()["message"]["outboxId"].as_str().unwrap()).await;
    assert_eq!(
        (row.channel.as_str(), row.segments, row.encoding.as_str()),
        ("rcs", 1, "gsm7")
    );
}

#[actix_web::test]
async fn every_error_row_answers_its_status_and_queues_nothing() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let inactive = line(&app, &t, "+14155550101", |n| n.inactive = true).await;
    let no_rcs = line(&app, &t, "+14155550102", |n| n.rcs_agent_verified = false).await;
    let fax = line(&app, &t, "+14155550103", |n| {
        n.kind = "fax".into();
        n.rcs_agent_verified = false;
    })
    .await;
    let other = enrolled(&app).await;
    let others_line = line(&app, &other, "+14155550104", |_| {}).await;
    let not_enrolled = app.tenant().await;
    let read_only = app
        .user_in(&t.account_id, "admin", &["platform:read"])
        .await;
    let no_perms = app.user_in(&t.account_id, "admin", &[]).await;
    phone_opt_out::Entity::insert(phone_opt_out::ActiveModel {
        line_id: Set(l.parse().unwrap()),
        recipient: Set("+14155550199".into()),
        created_at: Set(chrono::Utc::now()),
    })
    .exec_without_returning(&app.db)
    .await
    .unwrap();

    let mut cases: Vec<(&str, String, Value, u16, &str)> = Vec::new();
    let k = t.key.clone();
    for path in [SMS, RCS] {
        let mut bad_uuid = body(&l, TO, "x");
        bad_uuid["requestId"] = json!("not-a-uuid");
        cases.push((path, k.clone(), bad_uuid, 400, "VALIDATION_ERROR"));
        cases.push((
            path,
            k.clone(),
            body("abc", TO, "x"),
            400,
            "VALIDATION_ERROR",
        ));
        cases.push((
            path,
            k.clone(),
            body(&l, "4155550124", "x"),
            400,
            "VALIDATION_ERROR",
        ));
        cases.push((
            path,
            k.clone(),
            body(&l, "+1415555", "x"),
            400,
            "VALIDATION_ERROR",
        ));
        cases.push((path, k.clone(), body(&l, TO, ""), 400, "VALIDATION_ERROR"));
        cases.push((
            path,
            k.clone(),
            body(&l, TO, &"a".repeat(1601)),
            400,
            "VALIDATION_ERROR",
        ));
        let mut extra = body(&l, TO, "x");
        extra["accountId"] = json!(other.account_id);
        cases.push((path, k.clone(), extra, 400, "VALIDATION_ERROR"));
        cases.push((
            path,
            k.clone(),
            body(&inactive, TO, "x"),
            400,
            "LINE_INACTIVE",
        ));
        cases.push((
            path,
            k.clone(),
            body(&l, "+14155550199", "x"),
            400,
            "RECIPIENT_OPTED_OUT",
        ));
        cases.push((
            path,
            k.clone(),
            body(&l, "+442079460958", "x"),
            400,
            "DESTINATION_NOT_ALLOWED",
        ));
        cases.push((
            path,
            k.clone(),
            body(&fax, TO, "x"),
            400,
            "LINE_NOT_MESSAGING",
        ));
        cases.push((
            path,
            k.clone(),
            body(&others_line, TO, "x"),
            404,
            "NOT_FOUND",
        ));
        cases.push((path, k.clone(), body("999999", TO, "x"), 404, "NOT_FOUND"));
        cases.push((
            path,
            not_enrolled.key.clone(),
            body(&l, TO, "x"),
            404,
            "NOT_FOUND",
        ));
        cases.push((
            path,
            read_only.key.clone(),
            body(&l, TO, "x"),
            403,
            "FORBIDDEN",
        ));
        cases.push((
            path,
            no_perms.key.clone(),
            body(&l, TO, "x"),
            403,
            "FORBIDDEN",
        ));
        cases.push((
            path,
            "agk_bogus".into(),
            body(&l, TO, "x"),
            401,
            "UNAUTHORIZED",
        ));
    }
    cases.push((
        RCS,
        k.clone(),
        body(&no_rcs, TO, "x"),
        400,
        "RCS_AGENT_NOT_VERIFIED",
    ));
    for (path, key, b, st, code) in cases {
        let res = app.post(path, &key, &b).await;
        assert_eq!(res.status.as_u16(), st, "{path} {b}: {}", res.body);
        res.assert_error(st, code);
    }
    // SMS from the line without an RCS agent is unaffected (rule 6).
    let res = app.post(SMS, &k, &body(&no_rcs, TO, "x")).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(messages(&app).await, 1);
    // No credential at all.
    let res = app
        .request(
            actix_web::http::Method::POST,
            SMS,
            None,
            Some(&body(&l, TO, "x")),
        )
        .await;
    res.assert_error(401, "UNAUTHORIZED");
    assert_eq!(messages(&app).await, 1);
}

#[actix_web::test]
async fn a_retry_returns_the_same_outbox_id_and_any_difference_is_409() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let l2 = line(&app, &t, "+14155550101", |_| {}).await;
    let b = body(&l, TO, "Hello");
    let first = app.post(SMS, &t.key, &b).await;
    assert_eq!(first.status, 202);
    let again = app.post(SMS, &t.key, &b).await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(
        again.data()["message"]["outboxId"],
        first.data()["message"]["outboxId"]
    );
    assert_eq!(again.data()["message"]["duplicate"], true);
    for (field, value) in [
        ("text", json!("Hello!")),
        ("to", json!("+14155550125")),
        ("endpointId", json!(l2)),
    ] {
        let mut changed = b.clone();
        changed[field] = value;
        app.post(SMS, &t.key, &changed)
            .await
            .assert_error(409, "CONFLICT");
    }
    // The same UUID on the other channel.
    app.post(RCS, &t.key, &b)
        .await
        .assert_error(409, "CONFLICT");
    // Another account has its own namespace.
    let other = enrolled(&app).await;
    let ol = line(&app, &other, "+14155550102", |_| {}).await;
    let mut theirs = b.clone();
    theirs["endpointId"] = json!(ol);
    assert_eq!(app.post(SMS, &other.key, &theirs).await.status, 202);
    assert_eq!(messages(&app).await, 2);
}

#[actix_web::test]
async fn fifty_concurrent_identical_requests_queue_exactly_one_message() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let b = body(&l, TO, "Once");
    let answers = futures_util::future::join_all((0..50).map(|_| app.post(SMS, &t.key, &b))).await;
    let ids: std::collections::HashSet<String> = answers
        .iter()
        .map(|r| {
            assert_eq!(r.status, 202, "{}", r.body);
            r.data()["message"]["outboxId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(ids.len(), 1);
    let fresh = answers
        .iter()
        .filter(|r| r.data()["message"]["duplicate"] == false)
        .count();
    assert_eq!(fresh, 1);
    assert_eq!(messages(&app).await, 1);
}

/// Concurrent sends are accepted in batches (one transaction each): the
/// limits must count the batch's own earlier messages, across lines too.
#[actix_web::test]
async fn concurrent_sends_never_exceed_a_lines_rate_or_the_accounts_daily_cap() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    admin::set_line_limits(
        &app.db,
        &l,
        LimitsChange {
            per_minute: Some(5),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let answers = futures_util::future::join_all(
        (0..20)
            .map(|i| body(&l, TO, &format!("m{i}")))
            .collect::<Vec<_>>()
            .iter()
            .map(|b| app.post(SMS, &t.key, b)),
    )
    .await;
    let accepted = answers.iter().filter(|r| r.status == 202).count();
    assert_eq!(accepted, 5, "per-minute limit of 5");
    for r in answers.iter().filter(|r| r.status != 202) {
        r.assert_error(400, "SENDING_LIMIT_EXCEEDED");
    }

    // An account cap of 0.02 at 0.004 a segment: five one-segment
    // messages over two lines, whatever the interleaving.
    let t = enrolled(&app).await;
    let a = line(&app, &t, "+14155550101", |_| {}).await;
    let b = line(&app, &t, "+14155550102", |_| {}).await;
    for x in [&a, &b] {
        admin::set_line_limits(
            &app.db,
            x,
            LimitsChange {
                segment_price: Some("0.004".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    }
    admin::set_account_limits(
        &app.db,
        &t.account_id,
        LimitsChange {
            daily_spend_cap: Some("0.02".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let bodies: Vec<Value> = (0..12)
        .map(|i| body(if i % 2 == 0 { &a } else { &b }, TO, &format!("c{i}")))
        .collect();
    let answers =
        futures_util::future::join_all(bodies.iter().map(|x| app.post(SMS, &t.key, x))).await;
    let accepted = answers.iter().filter(|r| r.status == 202).count();
    assert_eq!(accepted, 5, "the account cap counts every line");
    for r in answers.iter().filter(|r| r.status != 202) {
        r.assert_error(400, "SENDING_LIMIT_EXCEEDED");
        assert_eq!(r.body["error"]["details"]["scope"], "account", "{}", r.body);
    }
    assert_eq!(messages(&app).await, 10);
}

#[actix_web::test]
async fn sending_limits_bound_countries_rate_and_daily_spend() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    // Canada is a default destination; the UK is not until allowed.
    assert_eq!(
        app.post(SMS, &t.key, &body(&l, "+16135550123", "hi"))
            .await
            .status,
        202
    );
    admin::set_line_limits(
        &app.db,
        &l,
        LimitsChange {
            countries: Some("US,CA,GB".into()),
            per_minute: Some(3),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        app.post(SMS, &t.key, &body(&l, "+442079460958", "hi"))
            .await
            .status,
        202
    );
    assert_eq!(app.post(RCS, &t.key, &body(&l, TO, "hi")).await.status, 202);
    // Three in the last minute (SMS and RCS together): the fourth is refused.
    let res = app.post(SMS, &t.key, &body(&l, TO, "hi")).await;
    res.assert_error(400, "SENDING_LIMIT_EXCEEDED");
    assert_eq!(res.body["error"]["details"]["limit"], "messagesPerMinute");
    // Daily spend: a 1-cent cap at 0.004 a segment takes two segments.
    let l2 = line(&app, &t, "+14155550101", |_| {}).await;
    admin::set_line_limits(
        &app.db,
        &l2,
        LimitsChange {
            daily_spend_cap: Some("0.01".into()),
            segment_price: Some("0.004".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    // 161 GSM-7 characters are two segments: 0.008.
    assert_eq!(
        app.post(SMS, &t.key, &body(&l2, TO, &"a".repeat(161)))
            .await
            .status,
        202
    );
    let res = app.post(SMS, &t.key, &body(&l2, TO, "one more")).await;
    res.assert_error(400, "SENDING_LIMIT_EXCEEDED");
    assert_eq!(res.body["error"]["details"]["limit"], "dailySpendCap");
    // An account limit narrows every line.
    admin::set_account_limits(
        &app.db,
        &t.account_id,
        LimitsChange {
            countries: Some("CA".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let l3 = line(&app, &t, "+14155550102", |_| {}).await;
    app.post(SMS, &t.key, &body(&l3, TO, "hi"))
        .await
        .assert_error(400, "DESTINATION_NOT_ALLOWED");
    assert_eq!(
        app.post(SMS, &t.key, &body(&l3, "+16135550123", "hi"))
            .await
            .status,
        202
    );
    assert_eq!(messages(&app).await, 5);
}

#[actix_web::test]
async fn the_database_refusing_the_write_is_a_503_and_a_retry_then_succeeds() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let b = body(&l, TO, "hi");
    app.db
        .execute_unprepared("ALTER TABLE phone_messages RENAME TO phone_messages_away")
        .await
        .unwrap();
    app.post(SMS, &t.key, &b)
        .await
        .assert_error(503, "SERVICE_UNAVAILABLE");
    app.db
        .execute_unprepared("ALTER TABLE phone_messages_away RENAME TO phone_messages")
        .await
        .unwrap();
    let res = app.post(SMS, &t.key, &b).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.data()["message"]["duplicate"], false);
}

#[actix_web::test]
async fn the_sender_submits_once_and_records_delivery() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let res = app.post(SMS, &t.key, &body(&l, TO, "hi")).await;
    let id = res.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    let m = status(&app, &id).await;
    assert_eq!(m.status, "delivered");
    assert!(m.carrier_message_id.unwrap().starts_with("sim-"));
    assert_eq!(app.state.get::<Simulated>().unwrap().submissions(), 1);
}

#[actix_web::test]
async fn a_timed_out_submission_is_held_never_resent_and_an_operator_resolves_it() {
    let app = spawn_app().await;
    let sim = app.state.get::<Simulated>().unwrap().clone();
    sim.set_mode(SimMode::Timeout);
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let a = app.post(SMS, &t.key, &body(&l, TO, "a")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    let b = app.post(SMS, &t.key, &body(&l, TO, "b")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    assert_eq!(status(&app, &a).await.status, "held");
    assert_eq!(status(&app, &b).await.status, "held");
    assert_eq!(sim.submissions(), 2);
    // Nothing is due: a drain (and the sweep) sends nothing more.
    drain(&app).await;
    assert_eq!(sim.submissions(), 2);
    let held = admin::list_held(&app.db).await.unwrap();
    let listed: Vec<&str> = held["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["outboxId"].as_str().unwrap())
        .collect();
    assert_eq!(listed, vec![a.as_str(), b.as_str()]);
    // a: the operator found it sent; b: released for one more try.
    admin::resolve_held(&app.db, &a, true, Some("carrier-123".into()))
        .await
        .unwrap();
    sim.set_mode(SimMode::Deliver);
    admin::resolve_held(&app.db, &b, false, None).await.unwrap();
    drain(&app).await;
    let ma = status(&app, &a).await;
    assert_eq!(
        (ma.status.as_str(), ma.carrier_message_id.as_deref()),
        ("submitted", Some("carrier-123"))
    );
    assert_eq!(status(&app, &b).await.status, "delivered");
    assert_eq!(sim.submissions(), 3);
    assert!(admin::resolve_held(&app.db, &a, true, None).await.is_err());
}

#[actix_web::test]
async fn an_interrupted_submission_is_held_not_resent() {
    let app = spawn_app().await;
    let sim = app.state.get::<Simulated>().unwrap().clone();
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let id = app.post(SMS, &t.key, &body(&l, TO, "a")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    assert_eq!(sim.submissions(), 1);
    // What a sender that died between its claim and its record leaves: the
    // message claimed (`submitting`) and its job still pending.
    let mut row = status(&app, &id).await;
    row.id = 0;
    row.request_id = uuid::Uuid::new_v4().to_string();
    row.status = "submitting".into();
    row.carrier_message_id = None;
    let mut active: phone_message::ActiveModel = row.into();
    active.id = sea_orm::ActiveValue::NotSet;
    let claimed = phone_message::Entity::insert(active)
        .exec(&app.db)
        .await
        .unwrap()
        .last_insert_id;
    agentic_api::outbox::store::enqueue(
        &app.db,
        &[agentic_api::outbox::NewJob {
            queue: "text",
            lane: l.clone(),
            payload: json!({ "messageId": claimed }).to_string(),
        }],
    )
    .await
    .unwrap();
    drain(&app).await;
    assert_eq!(status(&app, &claimed.to_string()).await.status, "held");
    assert_eq!(sim.submissions(), 1, "never re-sent");
}

#[actix_web::test]
async fn rcs_reports_are_recorded_only_for_a_line_alone_on_its_profile() {
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let alone = line(&app, &t, "+14155550100", |n| {
        n.messaging_profile = Some("solo".into())
    })
    .await;
    let shared1 = line(&app, &t, "+14155550101", |n| {
        n.messaging_profile = Some("shared".into())
    })
    .await;
    line(&app, &t, "+14155550102", |n| {
        n.messaging_profile = Some("shared".into())
    })
    .await;
    let a = app.post(RCS, &t.key, &body(&alone, TO, "a")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    let s = app.post(RCS, &t.key, &body(&shared1, TO, "s")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    let sms = app.post(SMS, &t.key, &body(&shared1, TO, "s")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    assert_eq!(status(&app, &a).await.status, "delivered");
    let ms = status(&app, &s).await;
    assert_eq!(ms.status, "submitted");
    assert!(ms.carrier_message_id.is_some());
    assert_eq!(status(&app, &sms).await.status, "delivered");
}

fn cli_json(db: &str, args: &[&str]) -> Value {
    let out = cli(db, args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim().lines().count(), 1, "{stdout}");
    serde_json::from_str(stdout.trim()).unwrap()
}

fn cli_fails(db: &str, args: &[&str], says: &str) {
    let out = cli(db, args);
    assert!(!out.status.success(), "{args:?} should fail");
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(says), "{args:?}: {err}");
}

#[actix_web::test]
async fn operators_enrol_accounts_provision_lines_and_set_limits_with_the_cli() {
    let app = spawn_app().await;
    let db = app.database_url.clone();
    let t = app.tenant().await;
    let l = cli_json(
        &db,
        &[
            "admin",
            "provision-line",
            "--account",
            &t.account_id,
            "--number",
            "+14155550100",
            "--kind",
            "sms",
            "--rcs-agent-verified",
            "--messaging-profile",
            "p1",
        ],
    );
    let l = l["endpointId"].as_str().unwrap().to_string();
    // Not enrolled yet: 404, nothing queued.
    app.post(SMS, &t.key, &body(&l, TO, "hi"))
        .await
        .assert_error(404, "NOT_FOUND");
    let e = cli_json(
        &db,
        &["admin", "enrol-phone-lines", "--account", &t.account_id],
    );
    assert_eq!(e["phoneLines"], true);
    assert_eq!(app.post(RCS, &t.key, &body(&l, TO, "hi")).await.status, 202);
    // The defaults of a fresh line, as the operator contract says.
    let out = cli_json(&db, &["admin", "set-sending-limits", "--endpoint", &l]);
    assert_eq!(out["countries"], json!(["US", "CA"]));
    assert_eq!(out["perMinute"], 60);
    assert_eq!(out["dailySpendCap"], "100.000000");
    assert_eq!(out["segmentPrice"], "0.007900");
    let out = cli_json(
        &db,
        &[
            "admin",
            "set-sending-limits",
            "--endpoint",
            &l,
            "--countries",
            "us,gb",
            "--per-minute",
            "5",
            "--daily-spend-cap",
            "25.5",
        ],
    );
    assert_eq!(out["countries"], json!(["US", "GB"]));
    assert_eq!(out["dailySpendCap"], "25.500000");
    let out = cli_json(
        &db,
        &[
            "admin",
            "set-sending-limits",
            "--account",
            &t.account_id,
            "--daily-spend-cap",
            "10",
        ],
    );
    assert_eq!(out["dailySpendCap"], "10.000000");
    assert_eq!(
        cli_json(&db, &["admin", "list-held-messages"])["messages"],
        json!([])
    );
    // Bad input: a message on stderr, nothing on stdout, nothing written.
    cli_fails(
        &db,
        &[
            "admin",
            "set-sending-limits",
            "--endpoint",
            &l,
            "--countries",
            "XX",
        ],
        "ISO 3166-1",
    );
    cli_fails(
        &db,
        &[
            "admin",
            "set-sending-limits",
            "--endpoint",
            &l,
            "--per-minute",
            "0",
        ],
        "per-minute",
    );
    cli_fails(
        &db,
        &[
            "admin",
            "set-sending-limits",
            "--endpoint",
            &l,
            "--daily-spend-cap",
            "1.5x",
        ],
        "daily-spend-cap",
    );
    cli_fails(
        &db,
        &["admin", "set-sending-limits", "--endpoint", "999999"],
        "unknown line",
    );
    cli_fails(
        &db,
        &[
            "admin",
            "set-sending-limits",
            "--account",
            &t.account_id,
            "--per-minute",
            "5",
        ],
        "--endpoint",
    );
    cli_fails(
        &db,
        &["admin", "enrol-phone-lines", "--account", "nope"],
        "unknown account",
    );
    cli_fails(
        &db,
        &[
            "admin",
            "resolve-held-message",
            "--outbox-id",
            "1",
            "--mark-sent",
        ],
        "no held message",
    );
    cli_fails(
        &db,
        &["admin", "resolve-held-message", "--outbox-id", "1"],
        "--mark-sent",
    );
    let out = cli_json(&db, &["admin", "set-sending-limits", "--endpoint", &l]);
    assert_eq!(out["perMinute"], 5);
    cli_json(
        &db,
        &[
            "admin",
            "enrol-phone-lines",
            "--account",
            &t.account_id,
            "--disable",
        ],
    );
    app.post(SMS, &t.key, &body(&l, TO, "hi"))
        .await
        .assert_error(404, "NOT_FOUND");
}

/// A carrier webhook signed like Telnyx's: base64 Ed25519 over
/// `{timestamp}|{body}`.
async fn carrier_event(
    app: &TestApp,
    key: Option<&ed25519_dalek::SigningKey>,
    ts: i64,
    event: &Value,
) -> u16 {
    use base64::Engine;
    use ed25519_dalek::Signer;
    let body = serde_json::to_vec(event).unwrap();
    let mut req = app
        .client
        .post(app.url("/carrier/events"))
        .insert_header(("Content-Type", "application/json"))
        .insert_header(("telnyx-timestamp", ts.to_string()));
    if let Some(k) = key {
        let mut signed = format!("{ts}|").into_bytes();
        signed.extend_from_slice(&body);
        let sig = base64::engine::general_purpose::STANDARD.encode(k.sign(&signed).to_bytes());
        req = req.insert_header(("telnyx-signature-ed25519", sig));
    }
    req.send_body(body).await.unwrap().status().as_u16()
}

fn inbound(from: &str, to: &str, text: &str) -> Value {
    json!({"data": {"event_type": "message.received", "id": uuid::Uuid::new_v4().to_string(),
        "record_type": "event", "occurred_at": "2026-11-23T22:00:00.000+00:00",
        "payload": {"direction": "inbound", "from": {"phone_number": from},
            "to": [{"phone_number": to}], "text": text, "type": "SMS"}},
        "meta": {"attempt": 1, "delivered_to": "https://example.com/carrier/events"}})
}

#[actix_web::test]
async fn stop_and_start_through_signed_carrier_webhooks_opt_out_and_back_in() {
    use base64::Engine;
    let carrier = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
    let public =
        base64::engine::general_purpose::STANDARD.encode(carrier.verifying_key().to_bytes());
    let app = spawn_app_with(|c| c.carrier_public_key = public.parse().ok()).await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let now = chrono::Utc::now().timestamp();
    // Unsigned, stale, forged: refused, nothing changes.
    let stop = inbound(TO, "+14155550100", "STOP");
    assert_eq!(carrier_event(&app, None, now, &stop).await, 401);
    assert_eq!(
        carrier_event(&app, Some(&carrier), now - 301, &stop).await,
        401
    );
    let forger = ed25519_dalek::SigningKey::from_bytes(&[1; 32]);
    assert_eq!(carrier_event(&app, Some(&forger), now, &stop).await, 401);
    assert_eq!(app.post(SMS, &t.key, &body(&l, TO, "hi")).await.status, 202);
    // Each synonym opts out (both channels); START and UNSTOP opt back in.
    for (word, back) in [
        ("STOP", "START"),
        (" stopall ", "unstop"),
        ("Unsubscribe", "START"),
        ("CANCEL", "START"),
        ("end", "START"),
        ("QUIT", "START"),
    ] {
        assert_eq!(
            carrier_event(
                &app,
                Some(&carrier),
                now,
                &inbound(TO, "+14155550100", word)
            )
            .await,
            200
        );
        app.post(SMS, &t.key, &body(&l, TO, "hi"))
            .await
            .assert_error(400, "RECIPIENT_OPTED_OUT");
        app.post(RCS, &t.key, &body(&l, TO, "hi"))
            .await
            .assert_error(400, "RECIPIENT_OPTED_OUT");
        // Another recipient of the line is unaffected.
        assert_eq!(
            app.post(SMS, &t.key, &body(&l, "+14155550125", "hi"))
                .await
                .status,
            202
        );
        assert_eq!(
            carrier_event(
                &app,
                Some(&carrier),
                now,
                &inbound(TO, "+14155550100", back)
            )
            .await,
            200
        );
        assert_eq!(app.post(SMS, &t.key, &body(&l, TO, "hi")).await.status, 202);
    }
    // Any other text changes nothing.
    assert_eq!(
        carrier_event(
            &app,
            Some(&carrier),
            now,
            &inbound(TO, "+14155550100", "stop please")
        )
        .await,
        200
    );
    assert_eq!(app.post(SMS, &t.key, &body(&l, TO, "hi")).await.status, 202);
}

#[actix_web::test]
async fn a_thousand_signed_carrier_events_in_a_minute_from_one_address_are_all_applied() {
    use base64::Engine;
    use futures_util::StreamExt;
    let carrier = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
    let public =
        base64::engine::general_purpose::STANDARD.encode(carrier.verifying_key().to_bytes());
    let app = spawn_app_with(|c| {
        c.carrier_public_key = public.parse().ok();
        c.rate_limit_per_minute = 100;
    })
    .await;
    let t = enrolled(&app).await;
    line(&app, &t, "+14155550100", |_| {}).await;
    let now = chrono::Utc::now().timestamp();
    let started = std::time::Instant::now();
    let statuses: Vec<u16> = futures_util::stream::iter(0..1000)
        .map(|i| {
            let stop = inbound(&format!("+1415556{i:04}"), "+14155550100", "STOP");
            let carrier = &carrier;
            let app = &app;
            async move { carrier_event(app, Some(carrier), now, &stop).await }
        })
        .buffer_unordered(8)
        .collect()
        .await;
    // Well under the 9 minutes in which a 100/min bucket could admit 1,000
    // (a few seconds on an idle machine; the bound leaves room for a busy one).
    assert!(started.elapsed() < Duration::from_secs(300));
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert_eq!(
        phone_opt_out::Entity::find().count(&app.db).await.unwrap(),
        1000
    );
    // None of them drew from the address's bucket...
    let me = app.get("/api/v2/me", &t.key).await;
    assert_eq!(me.header("ratelimit-remaining"), Some("99"));
    // ...which still limits events that fail verification: unsigned and
    // forged events drain it (the bucket refills one every 600 ms, so on a
    // busy machine it may take a few more than 100 to run dry).
    let stop = inbound(TO, "+14155550100", "STOP");
    let forger = ed25519_dalek::SigningKey::from_bytes(&[1; 32]);
    let mut limited = 0;
    for i in 0..400 {
        let key = (i % 2 == 1).then_some(&forger);
        match carrier_event(&app, key, now, &stop).await {
            429 => limited += 1,
            status => assert_eq!(status, 401),
        }
        if limited == 2 {
            break;
        }
    }
    assert_eq!(
        limited, 2,
        "events that fail verification were never limited"
    );
    // A verified event still goes through.
    assert_eq!(carrier_event(&app, Some(&carrier), now, &stop).await, 200);
}

#[actix_web::test]
async fn carrier_webhooks_are_refused_without_a_configured_key() {
    let app = spawn_app().await;
    let carrier = ed25519_dalek::SigningKey::from_bytes(&[42; 32]);
    let now = chrono::Utc::now().timestamp();
    let stop = inbound(TO, "+14155550100", "STOP");
    assert_eq!(carrier_event(&app, Some(&carrier), now, &stop).await, 401);
    assert_eq!(
        phone_opt_out::Entity::find().count(&app.db).await.unwrap(),
        0
    );
}

#[actix_web::test]
async fn the_http_adapter_speaks_telnyx_v2_to_a_fake_carrier() {
    use base64::Engine;
    let fake = crate::fake_carrier::FakeCarrier::start().await;
    let carrier_key = ed25519_dalek::SigningKey::from_bytes(&[9; 32]);
    let public =
        base64::engine::general_purpose::STANDARD.encode(carrier_key.verifying_key().to_bytes());
    let base = fake.base.clone();
    let app = spawn_app_with(move |c| {
        c.carrier_url = Some(base);
        c.carrier_api_key = "KEY0123456789".parse().ok();
        c.carrier_public_key = public.parse().ok();
    })
    .await;
    assert!(
        app.state.get::<Simulated>().is_err(),
        "no simulator with a carrier URL"
    );
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |n| {
        n.messaging_profile = Some("prof-1".into())
    })
    .await;
    let sms = app.post(SMS, &t.key, &body(&l, TO, "Hello €")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    let rcs = app.post(RCS, &t.key, &body(&l, TO, "Hi RCS")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    let got = fake.requests();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].path, "/v2/messages");
    assert_eq!(
        got[0].authorization.as_deref(),
        Some("Bearer KEY0123456789")
    );
    assert_eq!(
        got[0].body,
        json!({"from": "+14155550100", "to": TO, "text": "Hello €", "messaging_profile_id": "prof-1", "type": "SMS"})
    );
    assert_eq!(got[1].path, "/v2/messages/rcs");
    assert_eq!(got[1].body["to"], TO);
    assert_eq!(
        got[1].body["agent_message"]["content_message"]["text"],
        "Hi RCS"
    );
    let m = status(&app, &sms).await;
    assert_eq!(m.status, "submitted");
    let carrier_id = m.carrier_message_id.unwrap();
    assert_eq!(carrier_id, "40317f2c-0000-4000-8000-000000000001");
    assert_eq!(status(&app, &rcs).await.status, "submitted");
    // A signed delivery report: recorded (the line is alone on its profile).
    let report = json!({"data": {"event_type": "message.finalized", "id": "e1", "record_type": "event",
        "payload": {"id": carrier_id, "to": [{"phone_number": TO, "status": "delivered"}]}}});
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        carrier_event(&app, Some(&carrier_key), now, &report).await,
        200
    );
    assert_eq!(status(&app, &sms).await.status, "delivered");
    // Reports only move a message forward: a late failure or `sent` does
    // not undo `delivered`; a read receipt follows it.
    for (late, after) in [
        ("delivery_failed", "delivered"),
        ("sent", "delivered"),
        ("read", "read"),
        ("delivered", "read"),
    ] {
        let event = json!({"data": {"event_type": "message.finalized", "id": format!("e-{late}"),
            "record_type": "event",
            "payload": {"id": carrier_id, "to": [{"phone_number": TO, "status": late}]}}});
        assert_eq!(
            carrier_event(&app, Some(&carrier_key), now, &event).await,
            200
        );
        assert_eq!(status(&app, &sms).await.status, after, "after {late}");
    }
    // A verified body that is not an event is refused as such.
    assert_eq!(
        carrier_event(
            &app,
            Some(&carrier_key),
            now,
            &json!({"data": {"event_type": "message.sent"}})
        )
        .await,
        400
    );
    // A refusal fails the message; a 5xx leaves the outcome unknown: held,
    // and never sent again.
    fake.answer(422);
    let refused = app.post(SMS, &t.key, &body(&l, TO, "x")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    let m = status(&app, &refused).await;
    assert_eq!(m.status, "failed");
    assert!(m.error.unwrap().contains("422"));
    fake.answer(502);
    let unknown = app.post(SMS, &t.key, &body(&l, TO, "y")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    assert_eq!(status(&app, &unknown).await.status, "held");
    fake.answer(200);
    drain(&app).await;
    assert_eq!(fake.requests().len(), 4);
}

#[actix_web::test]
async fn a_message_queued_before_stop_is_not_sent_after_it() {
    let app = spawn_app().await;
    let sim = app.state.get::<Simulated>().unwrap().clone();
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    let id = app.post(SMS, &t.key, &body(&l, TO, "a")).await.data()["message"]["outboxId"]
        .as_str()
        .unwrap()
        .to_string();
    drain(&app).await;
    // A message still queued (as its job left it) when the recipient opts out.
    let mut row = status(&app, &id).await;
    row.request_id = uuid::Uuid::new_v4().to_string();
    row.status = "pending".into();
    row.carrier_message_id = None;
    let mut active: phone_message::ActiveModel = row.into();
    active.id = sea_orm::ActiveValue::NotSet;
    let queued = phone_message::Entity::insert(active)
        .exec(&app.db)
        .await
        .unwrap()
        .last_insert_id;
    phone_opt_out::Entity::insert(phone_opt_out::ActiveModel {
        line_id: Set(l.parse().unwrap()),
        recipient: Set(TO.into()),
        created_at: Set(chrono::Utc::now()),
    })
    .exec_without_returning(&app.db)
    .await
    .unwrap();
    agentic_api::outbox::store::enqueue(
        &app.db,
        &[agentic_api::outbox::NewJob {
            queue: "text",
            lane: l.clone(),
            payload: json!({ "messageId": queued }).to_string(),
        }],
    )
    .await
    .unwrap();
    drain(&app).await;
    let m = status(&app, &queued.to_string()).await;
    assert_eq!(m.status, "failed");
    assert!(m.error.unwrap().contains("opted out"));
    assert_eq!(sim.submissions(), 1);
}

#[actix_web::test]
async fn a_lines_daily_spend_is_kept_and_rebuilt_from_its_messages() {
    use migration::{Migrator, MigratorTrait};
    use sea_orm::{ColumnTrait, QueryFilter};
    let app = spawn_app().await;
    let t = enrolled(&app).await;
    let l = line(&app, &t, "+14155550100", |_| {}).await;
    admin::set_line_limits(
        &app.db,
        &l,
        LimitsChange {
            daily_spend_cap: Some("0.01".into()),
            segment_price: Some("0.004".into()),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let spend = async || {
        entity::phone_daily_spend::Entity::find()
            .filter(entity::phone_daily_spend::Column::LineId.eq(l.parse::<i64>().unwrap()))
            .all(&app.db)
            .await
            .unwrap()
            .into_iter()
            .map(|r| (r.day, r.account_id, r.spent_micros, r.messages))
            .collect::<Vec<_>>()
    };
    // Two segments at 0.004, then one: 0.012 would pass the 0.01 cap.
    let first = body(&l, TO, &"a".repeat(161));
    assert_eq!(app.post(SMS, &t.key, &first).await.status, 202);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    let kept = spend().await;
    assert_eq!(kept, vec![(today, t.account_id.clone(), 8_000, 1)]);
    // A retry is no new spend; a refusal neither.
    assert_eq!(app.post(SMS, &t.key, &first).await.status, 202);
    app.post(SMS, &t.key, &body(&l, TO, "one more"))
        .await
        .assert_error(400, "SENDING_LIMIT_EXCEEDED");
    assert_eq!(spend().await, kept);
    // The migration that introduced the table rebuilds it from the
    // messages already accepted, so an upgrade keeps the day's caps.
    let migrations = Migrator::migrations();
    let introduced = migrations
        .iter()
        .position(|m| m.name() == "m20261201_090000_phone_daily_spend")
        .unwrap();
    let undo = (migrations.len() - introduced) as u32;
    Migrator::down(&app.db, Some(undo)).await.unwrap();
    Migrator::up(&app.db, None).await.unwrap();
    assert_eq!(spend().await, kept);
    app.post(SMS, &t.key, &body(&l, TO, "one more"))
        .await
        .assert_error(400, "SENDING_LIMIT_EXCEEDED");
}
