//! Seller accounts (issue 37): account sources and credentials, available
//! accounts (AdCP list_accounts), account sync to managed storefronts (AdCP
//! sync_accounts) with the operator-identity rules, the storefront
//! operator's review of intakes, and linkedAccounts checked and bound.

use std::process::Stdio;

use sea_orm::{ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter};
use serde_json::{Value, json};

use agentic_api::accounts::admin::{self, NewSource};
use agentic_api::auth::tenancy::NewAccount;

use crate::fake_seller::{Behaviour, FakeSeller, seller, storefront};
use crate::helpers::*;

/// A credential no response, log line or audit entry may show.
const CANARY: &str = "canary-Op3rator-Token-5e1f";
/// Bank details (write-only) no response or row may show.
const BANK_CANARY: &str = "DE44500105175407324931";
const SYNC: &str = "/api/v2/buyer/storefront-accounts/sync";
const CREDENTIALS: &str = "/api/v2/buyer/source-credentials";

#[track_caller]
fn no_canary(res: &Resp) {
    let raw = String::from_utf8_lossy(&res.raw);
    assert!(!raw.contains(CANARY), "credential in response: {raw}");
    assert!(
        !raw.contains(BANK_CANARY),
        "bank details in response: {raw}"
    );
}

/// Registers an external source at `storefront` whose agent is `url`.
pub async fn external_source(app: &TestApp, storefront: i64, source: &str, url: &str) {
    admin::register_account_source(
        &app.db,
        NewSource {
            storefront,
            source_id: source.into(),
            name: Some(format!("{source} accounts")),
            url: Some(url.into()),
            requires_credentials: true,
            billing: vec![],
        },
        app.config.url_policy(),
    )
    .await
    .unwrap();
}

async fn credential(
    app: &TestApp,
    t: &Tenant,
    storefront: i64,
    source: &str,
    secret: &str,
) -> String {
    let res = app
        .post(
            CREDENTIALS,
            &t.key,
            &json!({"storefrontId": storefront, "sourceId": source, "label": "Main seat", "secret": secret}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    no_canary(&res);
    res.data()["credentialId"].as_str().unwrap().to_string()
}

fn available(advertiser: &str, storefront: i64, source: &str, extra: &str) -> String {
    format!(
        "/api/v2/buyer/advertisers/{advertiser}/accounts/available?storefrontId={storefront}&sourceId={source}{extra}"
    )
}

/// A seller with two accounts behind `CANARY`, registered as a storefront
/// with the external source `seats` at the same agent; a credential for it.
async fn seats(app: &TestApp, t: &Tenant) -> (FakeSeller, i64) {
    let (s, sf) = seller(
        app,
        "Seats",
        Behaviour {
            token: Some(CANARY.into()),
            accounts: json!([
                {"account_id": "seat-1", "name": "Self-serve seat", "status": "active", "billing": "operator"},
                {"account_id": "seat-2", "name": "Managed seat", "status": "pending_approval"},
            ]),
            ..Default::default()
        },
    )
    .await;
    external_source(app, sf, "seats", &s.url()).await;
    credential(app, t, sf, "seats", CANARY).await;
    (s, sf)
}

/// Makes `accounts` bindable for `t` at (`storefront`, `source`), as a
/// `list_available_accounts` would have left them: a fixture for tests of
/// other rules (written straight to the database).
pub async fn make_available(
    app: &TestApp,
    t: &Tenant,
    storefront: i64,
    source: &str,
    accounts: &[&str],
) {
    use sea_orm::{ActiveModelTrait, Set};
    external_source(app, storefront, source, "https://accounts.example/mcp").await;
    let id = format!("cred_{}", uuid::Uuid::new_v4().simple());
    entity::source_credential::ActiveModel {
        id: Set(id.clone()),
        account_id: Set(t.account_id.clone()),
        storefront_id: Set(storefront),
        source_id: Set(source.into()),
        label: Set("fixture".into()),
        secret: Set("plain1:fixture".into()),
        created_at: Set(chrono::Utc::now()),
        rotated_at: Set(None),
    }
    .insert(&app.db)
    .await
    .unwrap();
    for a in accounts {
        entity::available_account::ActiveModel {
            credential_id: Set(id.clone()),
            account_ref: Set(a.to_string()),
            name: Set(a.to_string()),
            status: Set("active".into()),
            billing: Set(None),
            data: Set("{}".into()),
            refreshed_at: Set(chrono::Utc::now()),
            ..Default::default()
        }
        .insert(&app.db)
        .await
        .unwrap();
    }
}

#[actix_web::test]
async fn a_storefront_lists_its_agent_and_external_sources() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app, "Plain", "https://seller.example/mcp").await;
    let path = format!("/api/v2/buyer/storefronts/{sf}/account-sources");
    let res = app.get(&path, &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["managed"], json!(false));
    assert_eq!(
        res.data()["sources"],
        json!([{"storefrontId": sf, "sourceId": "agent", "name": "Plain (seller agent)", "kind": "agent",
            "capabilities": {"requiresCredentials": false, "supportedBilling": ["operator", "agent", "advertiser"]}}])
    );
    external_source(&app, sf, "upstream", "https://upstream.example/mcp").await;
    admin::assign_storefront_operator(&app.db, sf, &t.account_id)
        .await
        .unwrap();
    let res = app.get(&path, &t.key).await;
    assert_eq!(res.data()["managed"], json!(true));
    assert_eq!(res.data()["sources"][1]["kind"], json!("external"));
    assert_eq!(
        res.data()["sources"][1]["capabilities"]["requiresCredentials"],
        json!(true)
    );
    app.get("/api/v2/buyer/storefronts/999999/account-sources", &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn credentials_are_write_only_sealed_rotated_and_deleted() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app, "Seats", "https://seller.example/mcp").await;
    external_source(&app, sf, "seats", "https://seats.example/mcp").await;
    let id = credential(&app, &t, sf, "seats", CANARY).await;
    let row = entity::source_credential::Entity::find_by_id(id.as_str())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    // Sealed with the SQLite key file; on PostgreSQL the tests give no key,
    // so it is kept as `plain1:` text (sealed at the next start with one).
    if app.database_url.starts_with("sqlite") {
        assert!(
            agentic_api::webhooks::secret::is_encrypted(&row.secret),
            "sealed at rest"
        );
        assert!(!row.secret.contains(CANARY));
    } else {
        assert_eq!(row.secret, format!("plain1:{CANARY}"));
    }
    let list = app.get(CREDENTIALS, &t.key).await;
    no_canary(&list);
    assert_eq!(list.data()["credentials"][0]["credentialId"], json!(id));
    assert_eq!(list.data()["credentials"][0]["label"], json!("Main seat"));

    let rotated = app
        .put(
            &format!("{CREDENTIALS}/{id}/secret"),
            &t.key,
            &json!({"secret": "second-secret"}),
        )
        .await;
    assert_eq!(rotated.status, 200, "{}", rotated.body);
    assert!(rotated.data()["rotatedAt"].is_string());

    // Another account sees none of it.
    let other = app.tenant().await;
    assert_eq!(
        app.get(CREDENTIALS, &other.key).await.data()["credentials"],
        json!([])
    );
    app.put(
        &format!("{CREDENTIALS}/{id}/secret"),
        &other.key,
        &json!({"secret": "x"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    app.delete(&format!("{CREDENTIALS}/{id}"), &other.key)
        .await
        .assert_error(404, "NOT_FOUND");

    let deleted = app.delete(&format!("{CREDENTIALS}/{id}"), &t.key).await;
    assert_eq!(deleted.status, 200, "{}", deleted.body);
    assert_eq!(
        app.get(CREDENTIALS, &t.key).await.data()["credentials"],
        json!([])
    );

    // No audit entry carries the secret.
    let audits = entity::audit_log::Entity::find()
        .all(&app.db)
        .await
        .unwrap();
    assert!(audits.iter().all(|a| !a.changes.contains(CANARY)));
}

#[actix_web::test]
async fn credential_errors() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app, "Seats", "https://seller.example/mcp").await;
    external_source(&app, sf, "seats", "https://seats.example/mcp").await;
    let post = |body: Value| {
        let app = &app;
        let key = t.key.clone();
        async move { app.post(CREDENTIALS, &key, &body).await }
    };
    let res = post(json!({"storefrontId": sf, "sourceId": "agent", "secret": CANARY})).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], json!("sourceId"));
    no_canary(&res);
    post(json!({"storefrontId": sf, "sourceId": "nope", "secret": "s"}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let res = post(json!({"storefrontId": sf, "sourceId": "seats", "secret": "  "})).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], json!("secret"));
    post(json!({"storefrontId": sf, "sourceId": "seats"}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    // Account admin operations are for admins.
    let member = app
        .user_in(&t.account_id, "member", &["platform:write"])
        .await;
    let res = app
        .post(
            CREDENTIALS,
            &member.key,
            &json!({"storefrontId": sf, "sourceId": "seats", "secret": CANARY}),
        )
        .await;
    res.assert_error(403, "FORBIDDEN");
    no_canary(&res);
    assert_eq!(
        entity::source_credential::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0,
        "nothing written"
    );
}

#[actix_web::test]
async fn available_accounts_come_from_the_source_with_the_credential_and_are_cached() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (s, sf) = seats(&app, &t).await;

    let res = app.get(&available(&adv, sf, "seats", ""), &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    no_canary(&res);
    let d = res.data();
    assert_eq!(d["fromCache"], json!(false));
    assert_eq!(d["accounts"][0]["accountId"], json!("seat-1"));
    assert_eq!(d["accounts"][0]["billing"], json!("operator"));
    assert_eq!(d["accounts"][1]["status"], json!("pending_approval"));
    assert_eq!(d["accounts"][0]["linked"], json!(false));
    let calls: Vec<_> = s
        .seen()
        .into_iter()
        .filter(|x| x.body["params"]["name"] == "list_accounts")
        .collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0].authorization.as_deref(),
        Some(format!("Bearer {CANARY}").as_str())
    );

    // refresh=false answers from the projection, with its age.
    s.set(|b| {
        b.accounts = json!([{"account_id": "seat-3", "name": "New seat", "status": "active"}])
    });
    let cached = app
        .get(&available(&adv, sf, "seats", "&refresh=false"), &t.key)
        .await;
    assert_eq!(cached.data()["fromCache"], json!(true));
    assert_eq!(cached.data()["accounts"].as_array().unwrap().len(), 2);
    assert!(cached.data()["ageSeconds"].as_i64().unwrap() >= 0);
    assert!(cached.data()["refreshedAt"].is_string());
    let fresh = app.get(&available(&adv, sf, "seats", ""), &t.key).await;
    assert_eq!(fresh.data()["accounts"][0]["accountId"], json!("seat-3"));
    assert_eq!(fresh.data()["accounts"].as_array().unwrap().len(), 1);

    // A source that no longer takes the credential: 503, the cache stays.
    s.set(|b| b.token = Some("rotated-elsewhere".into()));
    let res = app.get(&available(&adv, sf, "seats", ""), &t.key).await;
    res.assert_error(503, "SERVICE_UNAVAILABLE");
    no_canary(&res);
    let cached = app
        .get(&available(&adv, sf, "seats", "&refresh=false"), &t.key)
        .await;
    assert_eq!(cached.data()["accounts"][0]["accountId"], json!("seat-3"));
}

#[actix_web::test]
async fn available_accounts_errors() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_s, sf) = seats(&app, &t).await;
    let base = format!("/api/v2/buyer/advertisers/{adv}/accounts/available");

    let res = app.get(&base, &t.key).await;
    res.assert_error(400, "VALIDATION_ERROR");
    let paths: Vec<&str> = res.body["error"]["details"]["issues"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["storefrontId", "sourceId"]);
    // The storefront's own agent takes no credentials.
    let res = app.get(&available(&adv, sf, "agent", ""), &t.key).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], json!("sourceId"));
    app.get(&available(&adv, sf, "nope", ""), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    // Several credentials: credentialId is required, and the ids are listed.
    let second = credential(&app, &t, sf, "seats", "second-secret").await;
    let res = app.get(&available(&adv, sf, "seats", ""), &t.key).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], json!("credentialId"));
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains(&second)
    );
    app.get(
        &available(&adv, sf, "seats", "&credentialId=cred_nope"),
        &t.key,
    )
    .await
    .assert_error(404, "NOT_FOUND");
    // Another account: its advertiser is not found, and its credentials are not ours.
    let other = app.tenant().await;
    app.get(&available(&adv, sf, "seats", ""), &other.key)
        .await
        .assert_error(404, "NOT_FOUND");
    let theirs = advertiser(&app, &other).await;
    let res = app
        .get(&available(&theirs, sf, "seats", ""), &other.key)
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("no credential")
    );
    app.get(
        &available(&theirs, sf, "seats", &format!("&credentialId={second}")),
        &other.key,
    )
    .await
    .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn linked_accounts_must_be_available_and_an_active_binding_locks() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let (_s, sf) = seats(&app, &t).await;
    let link = |account: &str| json!({"storefrontId": sf, "sourceId": "seats", "accountId": account, "billingType": "operator"});
    let create = |links: Value| json!({"name": "Linked", "brand": "linked.example", "primaryCurrency": "USD", "linkedAccounts": links});

    let res = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &create(json!([link("seat-1")])),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        res.body["error"]["field"],
        json!("linkedAccounts[0].accountId")
    );

    let adv = advertiser(&app, &t).await;
    app.get(&available(&adv, sf, "seats", ""), &t.key).await;
    let res = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &create(json!([link("seat-1")])),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let id = res.data()["id"].as_str().unwrap().to_string();
    assert_eq!(res.data()["linkedAccounts"][0]["status"], json!("active"));
    let res = app
        .put(
            &format!("/api/v2/buyer/advertisers/{id}"),
            &t.key,
            &json!({"primaryCurrency": "EUR"}),
        )
        .await;
    assert_eq!(res.status, 409, "{}", res.body);

    let list = app.get("/api/v2/buyer/advertiser-accounts", &t.key).await;
    assert_eq!(list.status, 200, "{}", list.body);
    assert_eq!(list.body["meta"]["pagination"]["total"], json!(1));
    assert_eq!(list.data()[0]["accountId"], json!("seat-1"));
    assert_eq!(list.data()[0]["status"], json!("active"));
    let seen = app
        .get(&available(&id, sf, "seats", "&refresh=false"), &t.key)
        .await;
    assert_eq!(seen.data()["accounts"][0]["linked"], json!(true));
    let other = app.tenant().await;
    let theirs = app
        .get("/api/v2/buyer/advertiser-accounts", &other.key)
        .await;
    assert_eq!(theirs.body["meta"]["pagination"]["total"], json!(0));
    // Another account cannot bind an account our credential saw.
    let res = app
        .post(
            "/api/v2/buyer/advertisers",
            &other.key,
            &create(json!([link("seat-2")])),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
}

/// A managed storefront (operated by `operator`'s account) backed by a
/// fake seller; the buyer `t` with an advertiser.
pub struct Managed {
    pub seller: FakeSeller,
    pub sf: i64,
    pub operator: Tenant,
}

pub async fn managed(app: &TestApp) -> Managed {
    let (seller, sf) = seller(app, "Managed", Behaviour::default()).await;
    let operator = app
        .tenant_with(
            NewAccount::named("Storefront Co"),
            "admin",
            &["platform:write"],
        )
        .await;
    admin::assign_storefront_operator(&app.db, sf, &operator.account_id)
        .await
        .unwrap();
    Managed {
        seller,
        sf,
        operator,
    }
}

pub fn entry(adv: &str, sf: i64, operator: &str, billing: &str) -> Value {
    json!({"advertiserId": adv, "storefrontId": sf, "operator": operator, "billing": billing})
}

fn billing_entity() -> Value {
    json!({
        "legal_name": "Agency Example GmbH",
        "vat_id": "DE123456789",
        "address": {"street": "Hauptstr. 1", "city": "Berlin", "postal_code": "10115", "country": "DE"},
        "contacts": [{"role": "billing", "email": "billing@agency.example"}],
        "bank": {"account_holder": "Agency Example GmbH", "iban": BANK_CANARY},
    })
}

fn syncs(s: &FakeSeller) -> Vec<Value> {
    s.seen()
        .into_iter()
        .filter(|x| x.body["params"]["name"] == "sync_accounts")
        .map(|x| x.body["params"]["arguments"].clone())
        .collect()
}

#[actix_web::test]
async fn account_sync_errors_write_nothing_and_call_no_seller() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let m = managed(&app).await;
    let unmanaged = storefront(&app, "Unmanaged", "https://unmanaged.example/mcp").await;
    let sync = |body: Value| {
        let app = &app;
        let key = t.key.clone();
        async move { app.post(SYNC, &key, &body).await }
    };

    let member = app
        .user_in(&t.account_id, "member", &["platform:write"])
        .await;
    app.post(
        SYNC,
        &member.key,
        &json!({"accounts": [entry(&adv, m.sf, "agency.example", "agent")]}),
    )
    .await
    .assert_error(403, "FORBIDDEN");
    let res = sync(json!({"accounts": [entry(&adv, m.sf, "agency.example", "DECISIONED")]})).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("deprecated")
    );
    sync(json!({"accounts": [entry(&adv, m.sf, "agency.example", "ROUTED")]}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let res = sync(json!({"accounts": [entry(&adv, m.sf, "agency.example", "operator")]})).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        res.body["error"]["field"],
        json!("accounts[0].billing_entity")
    );
    sync(json!({"accounts": [entry(&adv, m.sf, "Agency.Example", "agent")]}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    sync(json!({"accounts": []}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let res = sync(json!({"accounts": [entry(&adv, unmanaged, "agency.example", "agent")]})).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(
        res.body["error"]["field"],
        json!("accounts[0].storefrontId")
    );
    sync(json!({"accounts": [entry("00000000-0000-0000-0000-000000000000", m.sf, "agency.example", "agent")]}))
        .await
        .assert_error(404, "NOT_FOUND");
    let theirs = advertiser(&app, &m.operator).await;
    sync(json!({"accounts": [entry(&theirs, m.sf, "agency.example", "agent")]}))
        .await
        .assert_error(404, "NOT_FOUND");

    // A billing mode the storefront does not support names the supported ones.
    admin::register_account_source(
        &app.db,
        NewSource {
            storefront: m.sf,
            source_id: "agent".into(),
            name: None,
            url: None,
            requires_credentials: false,
            billing: vec!["agent".into()],
        },
        app.config.url_policy(),
    )
    .await
    .unwrap();
    let mut e = entry(&adv, m.sf, "agency.example", "advertiser");
    e["billing_entity"] = billing_entity();
    let res = sync(json!({"accounts": [e]})).await;
    res.assert_error(400, "BILLING_NOT_SUPPORTED");
    assert_eq!(
        res.body["error"]["details"]["supportedBilling"],
        json!(["agent"])
    );
    assert!(
        res.body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("agent")
    );
    no_canary(&res);

    // Production entries need a confirmed operator identity, and the same domain.
    let res = sync(json!({"accounts": [entry(&adv, m.sf, "agency.example", "agent")]})).await;
    res.assert_error(409, "BUYER_SETUP_REQUIRED");
    admin::confirm_operator_identity(&app.db, &t.account_id, "agency.example")
        .await
        .unwrap();
    let res = sync(json!({"accounts": [entry(&adv, m.sf, "other.example", "agent")]})).await;
    res.assert_error(403, "ACCESS_DENIED");
    assert_eq!(
        res.body["error"]["details"]["reason"],
        json!("operator_identity_mismatch")
    );

    assert!(syncs(&m.seller).is_empty(), "no seller was asked");
    assert_eq!(
        entity::account_intake::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
    assert_eq!(
        entity::advertiser_linked_account::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );

    // A sandbox entry needs no identity.
    let other = app.tenant().await;
    let sandbox_adv = advertiser(&app, &other).await;
    let mut e = entry(&sandbox_adv, m.sf, "someone.example", "agent");
    e["sandbox"] = json!(true);
    let res = app.post(SYNC, &other.key, &json!({"accounts": [e]})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data()["accounts"][0]["reviewStatus"],
        json!("pending_review")
    );
}

#[actix_web::test]
async fn synced_accounts_are_reviewed_by_the_storefront_operator() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let m = managed(&app).await;
    // Confirmed by the operator through the binary, audited.
    let out = cli(
        &app.database_url,
        &[
            "admin",
            "confirm-operator-identity",
            "--account",
            &t.account_id,
            "--domain",
            "agency.example",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed["operatorDomain"], json!("agency.example"));
    let audit = entity::audit_log::Entity::find()
        .filter(entity::audit_log::Column::Action.eq("confirm_operator_identity"))
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(audit.account_id, t.account_id);
    assert!(audit.changes.contains("agency.example"));

    let mut e = entry(&adv, m.sf, "agency.example", "operator");
    e["billing_entity"] = billing_entity();
    // A dry run asks the seller with dry_run and keeps nothing.
    let dry = app
        .post(
            SYNC,
            &t.key,
            &json!({"dry_run": true, "accounts": [e.clone()]}),
        )
        .await;
    assert_eq!(dry.status, 200, "{}", dry.body);
    assert_eq!(dry.data()["dry_run"], json!(true));
    assert_eq!(dry.data()["accounts"][0]["action"], json!("created"));
    assert!(dry.data()["accounts"][0]["intakeId"].is_null());
    assert_eq!(
        entity::account_intake::Entity::find()
            .count(&app.db)
            .await
            .unwrap(),
        0
    );
    let sent = syncs(&m.seller);
    assert_eq!(sent[0]["dry_run"], json!(true));
    assert_eq!(
        sent[0]["accounts"][0]["brand"],
        json!({"domain": "acme.example"})
    );
    // The bank details go to the seller, and nowhere else.
    assert_eq!(
        sent[0]["accounts"][0]["billing_entity"]["bank"]["iban"],
        json!(BANK_CANARY)
    );

    let res = app
        .post(SYNC, &t.key, &json!({"accounts": [e.clone()]}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    no_canary(&res);
    let r = &res.data()["accounts"][0];
    assert_eq!(r["action"], json!("created"));
    assert_eq!(r["accountId"], json!("acc_acme_example_agency_example"));
    assert_eq!(r["reviewStatus"], json!("pending_review"));
    let intake = r["intakeId"].as_str().unwrap().to_string();
    let stored = entity::account_intake::Entity::find_by_id(intake.as_str())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert!(
        !stored
            .billing_entity
            .unwrap_or_default()
            .contains(BANK_CANARY)
    );
    // Pending: listed, but it locks nothing.
    let list = app.get("/api/v2/buyer/advertiser-accounts", &t.key).await;
    assert_eq!(list.data()[0]["status"], json!("pending_review"));
    assert_eq!(list.data()[0]["intakeId"], json!(intake));
    let res = app
        .put(
            &format!("/api/v2/buyer/advertisers/{adv}"),
            &t.key,
            &json!({"primaryCurrency": "EUR"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);

    // The storefront operator reviews; the buyer cannot.
    let reviews = "/api/v2/storefront/account-mappings/reviews";
    let listed = app
        .get(&format!("{reviews}?status=pending_review"), &m.operator.key)
        .await;
    assert_eq!(listed.status, 200, "{}", listed.body);
    no_canary(&listed);
    assert_eq!(listed.data()[0]["intakeId"], json!(intake));
    assert_eq!(
        listed.data()[0]["billingEntity"]["legal_name"],
        json!("Agency Example GmbH")
    );
    assert_eq!(
        app.get(reviews, &t.key).await.body["meta"]["pagination"]["total"],
        json!(0)
    );
    app.get(&format!("{reviews}?status=maybe"), &m.operator.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    let act = |what: &str| format!("{reviews}/{intake}/{what}");
    app.post(&act("accept"), &t.key, &json!({}))
        .await
        .assert_error(404, "NOT_FOUND");
    let member = app
        .user_in(&m.operator.account_id, "member", &["platform:write"])
        .await;
    app.post(&act("accept"), &member.key, &json!({}))
        .await
        .assert_error(403, "FORBIDDEN");
    app.post(&act("readmit"), &m.operator.key, &json!({}))
        .await
        .assert_error(409, "CONFLICT");

    let res = app
        .post(
            &act("reject"),
            &m.operator.key,
            &json!({"note": "unknown agency"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["status"], json!("rejected"));
    assert_eq!(res.data()["reviewNote"], json!("unknown agency"));
    app.post(&act("accept"), &m.operator.key, &json!({}))
        .await
        .assert_error(409, "CONFLICT");
    // Syncing again keeps the decision.
    let again = app
        .post(SYNC, &t.key, &json!({"accounts": [e.clone()]}))
        .await;
    assert_eq!(again.data()["accounts"][0]["action"], json!("unchanged"));
    assert_eq!(
        again.data()["accounts"][0]["reviewStatus"],
        json!("rejected")
    );
    assert_eq!(again.data()["accounts"][0]["intakeId"], json!(intake));

    let res = app.post(&act("readmit"), &m.operator.key, &json!({})).await;
    assert_eq!(res.data()["status"], json!("pending_review"));
    app.post(&act("readmit"), &m.operator.key, &json!({}))
        .await
        .assert_error(409, "CONFLICT");
    let res = app.post(&act("accept"), &m.operator.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["status"], json!("accepted"));

    // Accepted: the binding is active and locks brand and currency.
    let list = app
        .get("/api/v2/buyer/advertiser-accounts?status=active", &t.key)
        .await;
    assert_eq!(
        list.data()[0]["accountId"],
        json!("acc_acme_example_agency_example")
    );
    let res = app
        .put(
            &format!("/api/v2/buyer/advertisers/{adv}"),
            &t.key,
            &json!({"primaryCurrency": "USD"}),
        )
        .await;
    assert_eq!(res.status, 409, "{}", res.body);
}

#[actix_web::test]
async fn the_credential_never_reaches_the_log() {
    let (db, _dir) = fresh_database().await;
    let s = FakeSeller::start(Behaviour {
        token: Some(CANARY.into()),
        accounts: json!([{"account_id": "seat-1", "name": "Seat", "status": "active"}]),
        ..Default::default()
    })
    .await;
    let setup = |args: &[&str]| -> Value {
        let out = cli(&db, args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let account = setup(&["admin", "create-account", "--name", "Logs"])["accountId"]
        .as_str()
        .unwrap()
        .to_string();
    let user = setup(&[
        "admin",
        "create-user",
        "--account",
        &account,
        "--email",
        "l@example.com",
        "--name",
        "L",
        "--role",
        "admin",
    ])["userId"]
        .to_string();
    let key = setup(&["admin", "create-api-key", "--user", &user])["apiKey"]
        .as_str()
        .unwrap()
        .to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .args([
            "admin",
            "register-storefront",
            "--name",
            "Seats",
            "--url",
            &s.url(),
        ])
        .env("AGENTIC_DATABASE_URL", &db)
        .env("AGENTIC_ALLOW_INSECURE_URLS", "true")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let sf = serde_json::from_slice::<Value>(&out.stdout).unwrap()["storefrontId"].to_string();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .args([
            "admin",
            "register-account-source",
            "--storefront",
            &sf,
            "--source-id",
            "seats",
            "--url",
            &s.url(),
            "--requires-credentials",
        ])
        .env("AGENTIC_DATABASE_URL", &db)
        .env("AGENTIC_ALLOW_INSECURE_URLS", "true")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut served = serve(
        &db,
        &[
            ("AGENTIC_LOG", "info,agentic_api=debug"),
            ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
            ("AGENTIC_WEBHOOK_SECRET_KEY", &"cd".repeat(32)),
        ],
        Stdio::piped(),
    );
    // Read as it comes, so a chatty server never blocks on a full pipe.
    let mut pipe = served.child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut pipe, &mut text).ok();
        text
    });
    let client = awc::Client::default();
    let base = served.base.clone();
    let call = |method: awc::http::Method, path: String, body: Option<Value>| {
        let req = client
            .request(method, format!("{base}{path}"))
            .insert_header(("authorization", format!("Bearer {key}")));
        async move {
            let mut res = match body {
                Some(b) => req.send_json(&b).await.unwrap(),
                None => req.send().await.unwrap(),
            };
            let bytes = res.body().await.unwrap();
            (
                res.status().as_u16(),
                serde_json::from_slice::<Value>(&bytes).unwrap_or(Value::Null),
            )
        }
    };
    let (status, body) = call(
        awc::http::Method::POST,
        "/api/v2/buyer/advertisers".into(),
        Some(json!({"name": "Logs", "brand": "logs.example", "primaryCurrency": "USD"})),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    let adv = body["data"]["id"].as_str().unwrap().to_string();
    let (status, body) = call(awc::http::Method::POST, CREDENTIALS.into(),
        Some(json!({"storefrontId": sf.parse::<i64>().unwrap(), "sourceId": "seats", "secret": CANARY}))).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = call(
        awc::http::Method::GET,
        available(&adv, sf.parse().unwrap(), "seats", ""),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["data"]["accounts"][0]["accountId"], json!("seat-1"));
    // A failing call logs its error: still without the credential.
    s.set(|b| b.token = Some("another".into()));
    let (status, _) = call(
        awc::http::Method::GET,
        available(&adv, sf.parse().unwrap(), "seats", ""),
        None,
    )
    .await;
    assert_eq!(status, 503);
    sigterm_and_wait(&mut served.child);
    let stderr = reader.join().unwrap();
    assert!(
        stderr.contains("accounts/available"),
        "the log has the calls: {stderr}"
    );
    assert!(!stderr.contains(CANARY), "credential in the log");
}

#[actix_web::test]
async fn the_storefront_agent_reviews_intakes_over_mcp() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let m = managed(&app).await;
    let mut e = entry(&adv, m.sf, "agency.example", "agent");
    e["sandbox"] = json!(true);
    let res = app.post(SYNC, &t.key, &json!({"accounts": [e]})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let intake = res.data()["accounts"][0]["intakeId"]
        .as_str()
        .unwrap()
        .to_string();

    let mut s = crate::mcp::open_at(&app, "/mcp/storefront", &m.operator.key).await;
    let msgs = s.request(&app, "tools/list", json!({})).await;
    let mut names: Vec<String> = msgs.last().unwrap()["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "accept_account_mapping",
            "list_account_mapping_reviews",
            "list_storefront_media_buys",
            "readmit_account_mapping",
            "reject_account_mapping"
        ]
    );
    // Only its own tools: a buyer operation is unknown here.
    let msgs = s
        .request(
            &app,
            "tools/call",
            json!({"name": "list_advertisers", "arguments": {}}),
        )
        .await;
    assert!(msgs.last().unwrap()["error"].is_object(), "{msgs:?}");

    let listed = s
        .call(
            &app,
            "list_account_mapping_reviews",
            json!({"params": {"status": "pending_review"}}),
        )
        .await;
    assert_eq!(
        listed["structuredContent"]["data"][0]["intakeId"],
        json!(intake)
    );
    let accepted = s
        .call(
            &app,
            "accept_account_mapping",
            json!({"pathParams": {"intakeId": intake}, "body": {"note": "welcome"}}),
        )
        .await;
    assert_eq!(
        accepted["structuredContent"]["data"]["status"],
        json!("accepted"),
        "{accepted}"
    );
    // The buyer's key sees nothing to review on the same endpoint.
    let mut buyer = crate::mcp::open_at(&app, "/mcp/storefront", &t.key).await;
    let none = buyer
        .call(&app, "list_account_mapping_reviews", json!({}))
        .await;
    assert_eq!(none["structuredContent"]["data"], json!([]));
    let denied = buyer
        .call(
            &app,
            "reject_account_mapping",
            json!({"pathParams": {"intakeId": intake}}),
        )
        .await;
    assert_eq!(denied["structuredContent"]["code"], json!("NOT_FOUND"));
}

#[actix_web::test]
async fn v3_save_connection_registers_a_credential_binds_an_account_and_deletes() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (s, sf) = seller(
        &app,
        "Seats",
        Behaviour {
            token: Some(CANARY.into()),
            accounts: json!([{"account_id": "seat-1", "name": "Self-serve seat", "status": "active"}]),
            ..Default::default()
        },
    )
    .await;
    external_source(&app, sf, "seats", &s.url()).await;
    let mut v3 = crate::mcp::open_at(&app, "/mcp/v3", &t.key).await;
    let res = v3
        .call(
            &app,
            "save_connection",
            json!({"storefrontId": sf, "sourceId": "seats", "secret": CANARY, "label": "Seat login",
                   "advertiserId": adv, "accountId": "seat-1"}),
        )
        .await;
    assert_ne!(res["isError"], json!(true), "{res}");
    assert!(
        !res.to_string().contains(CANARY),
        "secret in a tool result: {res}"
    );
    let data = &res["structuredContent"]["data"];
    let credential = data["credential"]["credentialId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        data["available"]["accounts"][0]["accountId"],
        json!("seat-1")
    );
    assert_eq!(
        data["advertiser"]["linkedAccounts"][0]["status"],
        json!("active")
    );
    // An account the credential does not see is refused, as over REST.
    let res = v3
        .call(
            &app,
            "save_connection",
            json!({"storefrontId": sf, "sourceId": "seats", "credentialId": credential, "advertiserId": adv, "accountId": "seat-9"}),
        )
        .await;
    assert_eq!(
        res["structuredContent"]["code"],
        json!("VALIDATION_ERROR"),
        "{res}"
    );
    let res = v3
        .call(
            &app,
            "save_connection",
            json!({"storefrontId": sf, "credentialId": credential, "delete": true}),
        )
        .await;
    assert_eq!(
        res["structuredContent"]["data"]["deleted"]["credentialId"],
        json!(credential),
        "{res}"
    );
    let res = v3
        .call(&app, "save_connection", json!({"storefrontId": sf}))
        .await;
    assert_eq!(res["isError"], json!(true));
}

#[actix_web::test]
async fn media_buys_use_the_accepted_account_of_their_storefront() {
    use crate::media_buys::{discover, eur_advertiser, new_campaign, pick};
    let app = spawn_app().await;
    let t = app.tenant().await;
    let (seller, sf) = seller(&app, "Northwind", Behaviour::default()).await;
    let operator = app.tenant().await;
    admin::assign_storefront_operator(&app.db, sf, &operator.account_id)
        .await
        .unwrap();
    admin::confirm_operator_identity(&app.db, &t.account_id, "agency.example")
        .await
        .unwrap();
    let adv = eur_advertiser(&app, &t, false).await;
    let res = app
        .post(
            SYNC,
            &t.key,
            &json!({"accounts": [entry(&adv, sf, "agency.example", "agent")]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let intake = res.data()["accounts"][0]["intakeId"]
        .as_str()
        .unwrap()
        .to_string();
    let cart = |campaign: &str| {
        json!({"productQueryId": campaign, "campaign": new_campaign(10_000.0), "mode": "execute",
               "selections": [pick("ctv-1", 4000.0)]})
    };
    // Pending review: the buy goes under the natural key.
    let session = discover(&app, &t, &adv).await;
    let res = app
        .post("/api/v2/buyer/media-buys", &t.key, &cart(&session))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let first = seller.buys();
    assert_eq!(
        first[0].arguments["account"]["operator"],
        json!("acme.example"),
        "{:?}",
        first[0].arguments
    );
    // Accepted: the next buy names the seller's account.
    let res = app
        .post(
            &format!("/api/v2/storefront/account-mappings/reviews/{intake}/accept"),
            &operator.key,
            &json!({}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let session = discover(&app, &t, &adv).await;
    let res = app
        .post("/api/v2/buyer/media-buys", &t.key, &cart(&session))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let sent = seller.buys();
    assert_eq!(sent.len(), 2);
    assert_eq!(
        sent[1].arguments["account"],
        json!({"account_id": "acc_acme_example_agency_example"})
    );
}

#[actix_web::test]
async fn plain_credentials_are_sealed_at_start_once_a_key_is_present() {
    use agentic_api::webhooks::secret::{self, SecretKey};
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app, "Seats", "https://seller.example/mcp").await;
    // As a PostgreSQL server without a key left it.
    make_available(&app, &t, sf, "seats", &["seat-1"]).await;
    let row = entity::source_credential::Entity::find()
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(row.secret, "plain1:fixture");
    let key = SecretKey::from_bytes([7; 32]);
    let k = key.clone();
    let b = spawn_on(&app.database_url, move |c| c.webhook_secret_key = Some(k)).await;
    let row = entity::source_credential::Entity::find()
        .one(&b.db)
        .await
        .unwrap()
        .unwrap();
    assert!(secret::is_encrypted(&row.secret), "{}", row.secret);
    let aad = format!("source-credential:{}", row.id);
    assert_eq!(
        secret::open(&row.secret, &aad, Some(&key)).unwrap(),
        "fixture"
    );
}
