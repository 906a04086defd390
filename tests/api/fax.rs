//! Fax lines: sending through the simulated carrier (which fetches and
//! checks the PDF) and through the Telnyx adapter against a fake carrier
//! (real wire format, signed events), every error row, the request id's
//! binding to line, destination and digest, the unknown outcome (503, then
//! 409, then an operator's resolution), and another customer's faxes never
//! readable.

use std::time::Duration;

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use agentic_api::auth::tenancy::{self, NewAccount, NewLine};
use agentic_api::phone::carrier::{SimMode, Simulated};
use agentic_api::phone::fax::admin;

use crate::fake_carrier::FakeCarrier;
use crate::helpers::*;

pub(crate) const FAXES: &str = "/api/v2/communications/faxes";

/// A tiny PDF (the simulated carrier checks the magic bytes and digest).
pub(crate) fn pdf(text: &str) -> Vec<u8> {
    format!("%PDF-1.4\n% {text}\n%%EOF\n").into_bytes()
}

pub(crate) fn sha(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// An enrolled account with a fax line serving a customer with the
/// rollout, and a user who may act for it.
pub(crate) struct Setup {
    pub t: Tenant,
    pub line: String,
    pub customer: i64,
}

pub(crate) async fn setup(app: &TestApp) -> Setup {
    let mut account = NewAccount::named("Seller");
    account.phone_lines = true;
    let t = app.tenant_with(account, "admin", &["platform:write"]).await;
    let line = tenancy::provision_line(
        &app.db,
        NewLine {
            account_id: t.account_id.clone(),
            number: format!("+1212555{:04}", rand_suffix()),
            kind: "fax".into(),
            rcs_agent_verified: false,
            messaging_profile: Some("fax-app-1".into()),
            inactive: false,
        },
    )
    .await
    .unwrap()
    .to_string();
    let c = admin::create_customer(&app.db, &t.account_id, "Globex", true)
        .await
        .unwrap();
    let customer = c["customerId"].as_i64().unwrap();
    admin::assign_line(&app.db, &line, customer, true)
        .await
        .unwrap();
    admin::customer_access(&app.db, customer, t.user_id, true)
        .await
        .unwrap();
    Setup { t, line, customer }
}

fn rand_suffix() -> u32 {
    uuid::Uuid::new_v4().as_u128() as u32 % 10_000
}

pub(crate) fn body(line: &str, url: &str, digest: &str) -> Value {
    json!({
        "requestId": uuid::Uuid::new_v4().to_string(),
        "endpointId": line,
        "to": "+14155550124",
        "mediaUrl": url,
        "mediaSha256": digest,
    })
}

async fn fax_count(app: &TestApp) -> i64 {
    use sea_orm::{EntityTrait, PaginatorTrait};
    entity::fax::Entity::find().count(&app.db).await.unwrap() as i64
}

/// Polls the fax's status until it is `want`.
async fn status_becomes(app: &TestApp, key: &str, id: &str, want: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        let res = app.get(&format!("{FAXES}/{id}"), key).await;
        assert_eq!(res.status, 200, "{}", res.body);
        last = res.data()["fax"].clone();
        if last["providerStatus"] == want {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("fax {id} did not become {want}: {last}");
}

#[actix_web::test]
async fn the_simulated_carrier_fetches_the_pdf_checks_its_digest_and_reports() {
    let good = pdf("offer");
    let files = file_server(vec![
        ("offer.pdf", good.clone()),
        ("other.pdf", pdf("other")),
    ])
    .await;
    let app = spawn_app().await;
    let s = setup(&app).await;
    let req = body(&s.line, &format!("{}/offer.pdf", files.base), &sha(&good));
    let res = app.post(FAXES, &s.t.key, &req).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.body["error"], Value::Null);
    let fax = res.data()["fax"].clone();
    assert_eq!(fax["providerStatus"], "queued");
    assert_eq!(fax["duplicate"], false);
    let id = fax["providerFaxId"].as_str().unwrap().to_string();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "{id}");
    let done = status_becomes(&app, &s.t.key, &id, "delivered").await;
    assert_eq!(done["endpointId"], s.line.as_str());
    assert_eq!(done["mediaSha256"], sha(&good).as_str());

    // The same request: the earlier result, once sent.
    let sim = app.state.get::<Simulated>().unwrap().clone();
    let sent = sim.submissions();
    let again = app.post(FAXES, &s.t.key, &req).await;
    assert_eq!(again.status, 202, "{}", again.body);
    assert_eq!(again.data()["fax"]["providerFaxId"], id.as_str());
    assert_eq!(again.data()["fax"]["duplicate"], true);
    assert_eq!(sim.submissions(), sent);
    // The same request id with another digest, line or destination: 409.
    for (field, value) in [
        ("mediaSha256", json!(sha(b"else"))),
        ("to", json!("+14155550199")),
    ] {
        let mut changed = req.clone();
        changed[field] = value;
        app.post(FAXES, &s.t.key, &changed)
            .await
            .assert_error(409, "CONFLICT");
    }

    // A PDF that does not match its digest: accepted, then failed.
    let bad = body(&s.line, &format!("{}/other.pdf", files.base), &sha(&good));
    let res = app.post(FAXES, &s.t.key, &bad).await;
    assert_eq!(res.status, 202, "{}", res.body);
    let id = res.data()["fax"]["providerFaxId"]
        .as_str()
        .unwrap()
        .to_string();
    let failed = status_becomes(&app, &s.t.key, &id, "failed").await;
    assert!(
        failed["failureReason"]
            .as_str()
            .unwrap()
            .contains("mediaSha256"),
        "{failed}"
    );
    // And one the carrier cannot fetch.
    let gone = body(&s.line, &format!("{}/gone.pdf", files.base), &sha(&good));
    let id = app.post(FAXES, &s.t.key, &gone).await.data()["fax"]["providerFaxId"]
        .as_str()
        .unwrap()
        .to_string();
    status_becomes(&app, &s.t.key, &id, "failed").await;
}

#[actix_web::test]
async fn every_error_row_is_a_4xx_that_writes_and_sends_nothing() {
    let app = spawn_app().await;
    let s = setup(&app).await;
    let digest = sha(b"x");
    let url = "https://files.example.com/t/offer.pdf";
    let sim = app.state.get::<Simulated>().unwrap().clone();
    let ok = || body(&s.line, url, &digest);
    let with = |field: &str, value: Value| {
        let mut b = ok();
        b[field] = value;
        b
    };
    // 400: every field.
    for (b, field) in [
        (with("requestId", json!("nope")), "requestId"),
        (with("endpointId", json!("7a")), "endpointId"),
        (with("endpointId", json!(7)), "endpointId"),
        (with("to", json!("4155550124")), "to"),
        (
            with("mediaUrl", json!("ftp://files.example.com/a.pdf")),
            "mediaUrl",
        ),
        (
            with("mediaUrl", json!("https://user:pw@files.example.com/a.pdf")),
            "mediaUrl",
        ),
        (with("mediaUrl", json!("not a url")), "mediaUrl"),
        (
            with("mediaSha256", json!(digest.to_uppercase())),
            "mediaSha256",
        ),
        (with("mediaSha256", json!(&digest[..63])), "mediaSha256"),
        (with("extra", json!(1)), "extra"),
    ] {
        let res = app.post(FAXES, &s.t.key, &b).await;
        res.assert_error(400, "VALIDATION_ERROR");
        let issues = res.body["error"]["details"]["issues"].to_string();
        assert!(
            res.body["error"]["field"] == field || issues.contains(field),
            "{b}: {}",
            res.body
        );
    }
    let mut missing = ok();
    missing.as_object_mut().unwrap().remove("mediaSha256");
    app.post(FAXES, &s.t.key, &missing)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    // A plain-http URL where insecure URLs are not allowed.
    let strict = spawn_app_with(|c| c.allow_insecure_urls = false).await;
    let s2 = setup(&strict).await;
    strict
        .post(
            FAXES,
            &s2.t.key,
            &body(&s2.line, "http://files.example.com/a.pdf", &digest),
        )
        .await
        .assert_error(400, "VALIDATION_ERROR");
    // An SMS line is not a fax line.
    let sms = tenancy::provision_line(
        &app.db,
        NewLine {
            account_id: s.t.account_id.clone(),
            number: format!("+1646555{:04}", rand_suffix()),
            kind: "sms".into(),
            rcs_agent_verified: false,
            messaging_profile: None,
            inactive: false,
        },
    )
    .await
    .unwrap()
    .to_string();
    app.post(FAXES, &s.t.key, &body(&sms, url, &digest))
        .await
        .assert_error(400, "LINE_NOT_FAX");
    // 401 and 403.
    app.post(FAXES, "nope", &ok())
        .await
        .assert_error(401, "UNAUTHORIZED");
    let reader = app
        .user_in(&s.t.account_id, "admin", &["platform:read"])
        .await;
    admin::customer_access(&app.db, s.customer, reader.user_id, true)
        .await
        .unwrap();
    app.post(FAXES, &reader.key, &ok())
        .await
        .assert_error(403, "FORBIDDEN");
    let no_perm = app.user_in(&s.t.account_id, "admin", &[]).await;
    admin::customer_access(&app.db, s.customer, no_perm.user_id, true)
        .await
        .unwrap();
    app.post(FAXES, &no_perm.key, &ok())
        .await
        .assert_error(403, "FORBIDDEN");
    let stranger = app
        .user_in(&s.t.account_id, "admin", &["platform:write"])
        .await;
    app.post(FAXES, &stranger.key, &ok())
        .await
        .assert_error(403, "FORBIDDEN");
    // 404: not enrolled, unknown line, another account's line, rollout off,
    // line inactive for the customer, line serving no customer, inactive line.
    let mut plain = NewAccount::named("Plain");
    plain.phone_lines = false;
    let outsider = app.tenant_with(plain, "admin", &["platform:write"]).await;
    app.post(FAXES, &outsider.key, &ok())
        .await
        .assert_error(404, "NOT_FOUND");
    app.post(FAXES, &s.t.key, &body("999999", url, &digest))
        .await
        .assert_error(404, "NOT_FOUND");
    let other = setup(&app).await;
    app.post(FAXES, &s.t.key, &body(&other.line, url, &digest))
        .await
        .assert_error(404, "NOT_FOUND");
    admin::set_fax_rollout(&app.db, s.customer, false)
        .await
        .unwrap();
    app.post(FAXES, &s.t.key, &ok())
        .await
        .assert_error(404, "NOT_FOUND");
    admin::set_fax_rollout(&app.db, s.customer, true)
        .await
        .unwrap();
    admin::assign_line(&app.db, &s.line, s.customer, false)
        .await
        .unwrap();
    app.post(FAXES, &s.t.key, &ok())
        .await
        .assert_error(404, "NOT_FOUND");
    admin::assign_line(&app.db, &s.line, s.customer, true)
        .await
        .unwrap();
    let bare = tenancy::provision_line(
        &app.db,
        NewLine {
            account_id: s.t.account_id.clone(),
            number: format!("+1718555{:04}", rand_suffix()),
            kind: "fax".into(),
            rcs_agent_verified: false,
            messaging_profile: None,
            inactive: false,
        },
    )
    .await
    .unwrap()
    .to_string();
    app.post(FAXES, &s.t.key, &body(&bare, url, &digest))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(fax_count(&app).await, 0);
    assert_eq!(sim.submissions(), 0);
    // Status: unknown ids, other accounts' and other customers' faxes are 404.
    app.get(&format!("{FAXES}/{}", uuid::Uuid::new_v4()), &s.t.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn an_unknown_outcome_is_503_then_409_until_an_operator_resolves_it() {
    let good = pdf("contract");
    let files = file_server(vec![("c.pdf", good.clone())]).await;
    let app = spawn_app().await;
    let s = setup(&app).await;
    let sim = app.state.get::<Simulated>().unwrap().clone();
    sim.set_mode(SimMode::Timeout);
    let req = body(&s.line, &format!("{}/c.pdf", files.base), &sha(&good));
    let res = app.post(FAXES, &s.t.key, &req).await;
    res.assert_error(503, "submission_unknown");
    assert_eq!(sim.submissions(), 1);
    sim.set_mode(SimMode::Deliver);
    // The same request id: 409 while unresolved, and never re-sent.
    for _ in 0..2 {
        app.post(FAXES, &s.t.key, &req)
            .await
            .assert_error(409, "CONFLICT");
    }
    assert_eq!(sim.submissions(), 1);
    // The operator lists it and resolves it as sent, with the carrier's id.
    let out = cli(&app.database_url, &["admin", "list-faxes", "--unresolved"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let fax = &listed["faxes"][0];
    assert_eq!(fax["status"], "unresolved");
    assert_eq!(fax["requestId"], req["requestId"]);
    let id = fax["faxId"].as_i64().unwrap().to_string();
    let provider = uuid::Uuid::new_v4().to_string();
    let bad = cli(
        &app.database_url,
        &["admin", "resolve-fax", "--fax", &id, "--sent"],
    );
    assert!(!bad.status.success());
    let out = cli(
        &app.database_url,
        &[
            "admin",
            "resolve-fax",
            "--fax",
            &id,
            "--sent",
            "--provider-fax-id",
            &provider,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let res = app.post(FAXES, &s.t.key, &req).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.data()["fax"]["providerFaxId"], provider.as_str());
    assert_eq!(res.data()["fax"]["duplicate"], true);
    assert_eq!(sim.submissions(), 1);

    // Resolved as not sent: the same request id sends it anew.
    sim.set_mode(SimMode::Timeout);
    let req = body(&s.line, &format!("{}/c.pdf", files.base), &sha(&good));
    app.post(FAXES, &s.t.key, &req)
        .await
        .assert_error(503, "submission_unknown");
    sim.set_mode(SimMode::Deliver);
    let listed: Value = serde_json::from_slice(
        &cli(&app.database_url, &["admin", "list-faxes", "--unresolved"]).stdout,
    )
    .unwrap();
    let id = listed["faxes"][0]["faxId"].as_i64().unwrap().to_string();
    let out = cli(
        &app.database_url,
        &["admin", "resolve-fax", "--fax", &id, "--failed"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let res = app.post(FAXES, &s.t.key, &req).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(res.data()["fax"]["duplicate"], false);
    assert_eq!(sim.submissions(), 3);
    // Resolving what is not unresolved is refused.
    let again = cli(
        &app.database_url,
        &["admin", "resolve-fax", "--fax", &id, "--failed"],
    );
    assert!(!again.status.success());
}

#[actix_web::test]
async fn the_same_request_twice_at_once_is_sent_once() {
    let good = pdf("once");
    let files = file_server(vec![("o.pdf", good.clone())]).await;
    let app = spawn_app().await;
    let s = setup(&app).await;
    let req = body(&s.line, &format!("{}/o.pdf", files.base), &sha(&good));
    let (a, b) = futures_util::join!(
        app.post(FAXES, &s.t.key, &req),
        app.post(FAXES, &s.t.key, &req)
    );
    let mut statuses = [a.status, b.status];
    statuses.sort();
    assert!(
        statuses == [202, 202] || statuses == [202, 409],
        "{statuses:?}"
    );
    assert_eq!(app.state.get::<Simulated>().unwrap().submissions(), 1);
}

#[actix_web::test]
async fn another_customers_or_accounts_fax_is_never_readable() {
    let good = pdf("private");
    let files = file_server(vec![("p.pdf", good.clone())]).await;
    let app = spawn_app().await;
    let s = setup(&app).await;
    let res = app
        .post(
            FAXES,
            &s.t.key,
            &body(&s.line, &format!("{}/p.pdf", files.base), &sha(&good)),
        )
        .await;
    let id = res.data()["fax"]["providerFaxId"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("{FAXES}/{id}");
    assert_eq!(app.get(&path, &s.t.key).await.status, 200);
    let teammate = app
        .user_in(&s.t.account_id, "admin", &["platform:write"])
        .await;
    app.get(&path, &teammate.key)
        .await
        .assert_error(404, "NOT_FOUND");
    let other = setup(&app).await;
    app.get(&path, &other.t.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn the_carrier_gets_the_fax_wire_format_and_its_signed_events_move_the_status() {
    let carrier = FakeCarrier::start().await;
    let (base, public) = (carrier.base.clone(), carrier.public_key());
    let app = spawn_app_with(move |c| {
        c.carrier_url = Some(base);
        c.carrier_api_key = Some("KEY-fax".parse().unwrap());
        c.carrier_public_key = Some(public.parse().unwrap());
    })
    .await;
    let s = setup(&app).await;
    let url = "https://files.example.com/t/quote.pdf";
    let digest = sha(b"quote");
    let res = app
        .post(FAXES, &s.t.key, &body(&s.line, url, &digest))
        .await;
    assert_eq!(res.status, 202, "{}", res.body);
    let id = res.data()["fax"]["providerFaxId"]
        .as_str()
        .unwrap()
        .to_string();
    let sent = carrier.requests();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].path, "/v2/faxes");
    assert_eq!(sent[0].authorization.as_deref(), Some("Bearer KEY-fax"));
    assert_eq!(sent[0].body["connection_id"], "fax-app-1");
    assert_eq!(sent[0].body["media_url"], url);
    assert_eq!(sent[0].body["to"], "+14155550124");
    assert!(
        sent[0].body["from"]
            .as_str()
            .unwrap()
            .starts_with("+1212555")
    );

    let event = |kind: &str, reason: Option<&str>| {
        json!({"data": {"event_type": kind, "id": uuid::Uuid::new_v4().to_string(),
            "occurred_at": "2026-11-28T10:00:00Z", "record_type": "event",
            "payload": {"fax_id": id, "status": kind, "failure_reason": reason}}})
        .to_string()
    };
    let deliver = |body: String, at: i64, signed: bool| {
        let sig = carrier.sign(body.as_bytes(), at);
        let app = &app;
        async move {
            let mut req = app
                .client
                .post(app.url("/carrier/events"))
                .insert_header(("content-type", "application/json"))
                .insert_header(("telnyx-timestamp", at.to_string()));
            if signed {
                req = req.insert_header(("telnyx-signature-ed25519", sig));
            }
            req.send_body(body).await.unwrap().status().as_u16()
        }
    };
    let now = chrono::Utc::now().timestamp();
    assert_eq!(
        deliver(event("fax.sending.started", None), now, true).await,
        200
    );
    status_becomes(&app, &s.t.key, &id, "sending").await;
    // Unsigned or stale events change nothing.
    assert_eq!(deliver(event("fax.delivered", None), now, false).await, 401);
    assert_eq!(
        deliver(event("fax.delivered", None), now - 3600, true).await,
        401
    );
    assert_eq!(
        app.get(&format!("{FAXES}/{id}"), &s.t.key).await.data()["fax"]["providerStatus"],
        "sending"
    );
    assert_eq!(
        deliver(event("fax.failed", Some("busy")), now, true).await,
        200
    );
    let failed = status_becomes(&app, &s.t.key, &id, "failed").await;
    assert_eq!(failed["failureReason"], "busy");
    // A late event never moves it back.
    assert_eq!(
        deliver(event("fax.media.processed", None), now, true).await,
        200
    );
    assert_eq!(
        app.get(&format!("{FAXES}/{id}"), &s.t.key).await.data()["fax"]["providerStatus"],
        "failed"
    );

    // The carrier refuses: 400, and the request id stays free.
    carrier.answer(422);
    let refused = body(&s.line, url, &digest);
    app.post(FAXES, &s.t.key, &refused)
        .await
        .assert_error(400, "CARRIER_REJECTED");
    // Not reachable for now (503 from the carrier): nothing sent, retry later.
    carrier.answer(503);
    app.post(FAXES, &s.t.key, &refused)
        .await
        .assert_error(503, "SERVICE_UNAVAILABLE");
    // A 500 may have been taken: unknown.
    carrier.answer(500);
    let unknown = body(&s.line, url, &digest);
    app.post(FAXES, &s.t.key, &unknown)
        .await
        .assert_error(503, "submission_unknown");
    carrier.answer(202);
    app.post(FAXES, &s.t.key, &unknown)
        .await
        .assert_error(409, "CONFLICT");
    let res = app.post(FAXES, &s.t.key, &refused).await;
    assert_eq!(res.status, 202, "{}", res.body);
    assert_eq!(fax_count(&app).await, 3);
}
