//! Advertisers: every field rule with a passing and a failing case, lock
//! rules, brand resolution, the audit log, isolation, the operation
//! dispatcher and `admin register-brand`.

use serde_json::{Value, json};

use agentic_api::ops::{OperationCall, dispatch};

use crate::helpers::*;

const ADV: &str = "/api/v2/buyer/advertisers";
const AUDIT: &str = "/api/v2/buyer/audit-logs";

fn minimal() -> Value {
    json!({"name": "Acme Shoes", "brand": "acme-shoes.example", "primaryCurrency": "USD"})
}

fn with(extra: Value) -> Value {
    let mut v = minimal();
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

async fn create(app: &TestApp, t: &Tenant, body: Value) -> Value {
    let res = app.post(ADV, &t.key, &body).await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data().clone()
}

async fn storefront(app: &TestApp) -> i64 {
    agentic_api::auth::tenancy::register_storefront(
        &app.db,
        "Seller",
        "https://seller.example.com/mcp",
        app.config.url_policy(),
    )
    .await
    .unwrap()
}

fn assert_field(res: &Resp, field: &str) {
    res.assert_error(400, "VALIDATION_ERROR");
    let issues = res.body["error"]["details"]["issues"].as_array().unwrap();
    assert!(
        issues.iter().any(|i| i["path"] == json!(field)),
        "expected an issue at {field}: {}",
        res.body
    );
}

async fn count(app: &TestApp, t: &Tenant) -> i64 {
    app.get(ADV, &t.key).await.body["meta"]["pagination"]["total"]
        .as_i64()
        .unwrap()
}

#[actix_web::test]
async fn create_applies_defaults_and_normalises() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = create(
        &app,
        &t,
        json!({"name": "  Acme  ", "brand": "Acme-Shoes.Example", "primaryCurrency": "eur"}),
    )
    .await;
    assert!(uuid::Uuid::parse_str(a["id"].as_str().unwrap()).is_ok());
    assert!(a.get("advertiserId").is_none());
    assert_eq!(a["name"], json!("Acme"));
    assert_eq!(a["brand"], json!("acme-shoes.example"));
    assert_eq!(a["primaryCurrency"], json!("EUR"));
    assert_eq!(a["status"], json!("ACTIVE"));
    assert_eq!(a["sandbox"], json!(false));
    assert_eq!(a["optimizationApplyMode"], json!("MANUAL"));
    assert_eq!(a["channels"], json!([]));
    assert_eq!(a["brandCountries"], json!([]));
    assert_eq!(a["frequencyCaps"], json!([]));
    assert_eq!(a["linkedAccounts"], json!([]));
    assert_eq!(a["description"], Value::Null);
    assert_eq!(
        a["utmConfig"],
        json!([
            {"paramKey": "utm_source", "paramValue": "agentic-api"},
            {"paramKey": "utm_medium", "paramValue": "agentic"},
            {"paramKey": "utm_campaign", "paramValue": "{CAMPAIGN_ID}"},
            {"paramKey": "utm_content", "paramValue": "{CREATIVE_ID}"},
            {"paramKey": "utm_media_buy", "paramValue": "{MEDIA_BUY_ID}"},
            {"paramKey": "utm_package", "paramValue": "{PACKAGE_ID}"},
        ])
    );
    for ts in ["createdAt", "updatedAt"] {
        assert!(
            chrono::DateTime::parse_from_rfc3339(a[ts].as_str().unwrap()).is_ok(),
            "{ts}"
        );
    }
    // Unknown brand: enrichment, with a warning.
    assert!(a["brandWarning"].as_str().unwrap().contains("enrichment"));
    assert!(
        a["linkedBrand"]["id"]
            .as_str()
            .unwrap()
            .starts_with("brand_")
    );
    assert_eq!(a["linkedBrand"]["name"], json!("Acme Shoes"));
    assert_eq!(a["linkedBrand"]["domain"], json!("acme-shoes.example"));
    assert!(a["linkedBrand"]["manifest"].is_object());

    // A registry brand: no warning, identity from the registry.
    let n = create(&app, &t, with(json!({"brand": "NIKE.com"}))).await;
    assert_eq!(n["brandWarning"], Value::Null);
    assert_eq!(n["linkedBrand"]["name"], json!("Nike"));
    assert_eq!(n["linkedBrand"]["industry"], json!("Apparel & Footwear"));
    assert_eq!(n["linkedBrand"]["tagline"], json!("Just Do It."));
}

#[actix_web::test]
async fn every_optional_field_round_trips() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app).await;
    crate::accounts::make_available(&app, &t, sf, "src-1", &["acct-9"]).await;
    let body = with(json!({
        "description": "Running shoes",
        "brandCountries": ["us", "GB", "US"],
        "preferredTimezone": "America/New_York",
        "sandbox": true,
        "channels": ["ctv", "display", "ctv"],
        "optimizationApplyMode": "AUTO",
        "linkedAccounts": [{"storefrontId": sf, "sourceId": "src-1", "accountId": "acct-9", "billingType": "operator"}],
        "utmConfig": [{"paramKey": "utm_source", "paramValue": "acme"}],
        "frequencyCaps": [{"maxExposure": 3, "window": {"interval": 1, "unit": "days"}}],
    }));
    let a = create(&app, &t, body).await;
    assert_eq!(a["description"], json!("Running shoes"));
    assert_eq!(a["brandCountries"], json!(["US", "GB"]));
    assert_eq!(a["preferredTimezone"], json!("America/New_York"));
    assert_eq!(a["sandbox"], json!(true));
    assert_eq!(a["channels"], json!(["ctv", "display"]));
    assert_eq!(a["optimizationApplyMode"], json!("AUTO"));
    assert_eq!(
        a["linkedAccounts"],
        json!([{"storefrontId": sf, "sourceId": "src-1", "accountId": "acct-9", "billingType": "operator", "status": "active"}])
    );
    assert_eq!(
        a["utmConfig"],
        json!([{"paramKey": "utm_source", "paramValue": "acme"}])
    );
    assert_eq!(
        a["frequencyCaps"],
        json!([{"maxExposure": 3, "window": {"interval": 1, "unit": "days"}}])
    );
    let got = app
        .get(&format!("{ADV}/{}", a["id"].as_str().unwrap()), &t.key)
        .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.data(), &a);
}

#[actix_web::test]
async fn invalid_fields_are_named_by_exact_path_and_write_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app.post(ADV, &t.key, &json!({})).await;
    for f in ["name", "brand", "primaryCurrency"] {
        assert_field(&res, f);
    }
    let sf = storefront(&app).await;
    let utm21: Vec<Value> = (0..21)
        .map(|i| json!({"paramKey": format!("k{i}"), "paramValue": "v"}))
        .collect();
    let utm20: Vec<Value> = (0..20)
        .map(|i| json!({"paramKey": format!("k{i}"), "paramValue": "v"}))
        .collect();
    let cases: Vec<(Value, &str)> = vec![
        (json!({"name": "   "}), "name"),
        (json!({"name": "x".repeat(256)}), "name"),
        (json!({"brand": "not a domain"}), "brand"),
        (json!({"brand": "https://acme.com"}), "brand"),
        (json!({"brand": "localhost"}), "brand"),
        (json!({"brand": "acme..com"}), "brand"),
        (json!({"primaryCurrency": "XYZ"}), "primaryCurrency"),
        (json!({"primaryCurrency": "US"}), "primaryCurrency"),
        (json!({"primaryCurrency": 840}), "primaryCurrency"),
        (json!({"brandCountries": ["US", "ZZ"]}), "brandCountries[1]"),
        (json!({"brandCountries": ["USA"]}), "brandCountries[0]"),
        (
            json!({"preferredTimezone": "Mars/Olympus"}),
            "preferredTimezone",
        ),
        (json!({"preferredTimezone": "EST5"}), "preferredTimezone"),
        (json!({"channels": ["ctv", "tv"]}), "channels[1]"),
        (json!({"channels": "ctv"}), "channels"),
        (
            json!({"optimizationApplyMode": "auto"}),
            "optimizationApplyMode",
        ),
        (json!({"sandbox": "yes"}), "sandbox"),
        (json!({"utmConfig": utm21}), "utmConfig"),
        (
            json!({"utmConfig": [{"paramKey": "a", "paramValue": "1"}, {"paramKey": "b", "paramValue": "2"}, {"paramKey": "c", "paramValue": "3"}, {"paramKey": "bad key", "paramValue": "4"}]}),
            "utmConfig[3].paramKey",
        ),
        (
            json!({"utmConfig": [{"paramKey": "a", "paramValue": "1"}, {"paramKey": "a", "paramValue": "2"}]}),
            "utmConfig[1].paramKey",
        ),
        (
            json!({"utmConfig": [{"paramKey": "a", "paramValue": ""}]}),
            "utmConfig[0].paramValue",
        ),
        (
            json!({"utmConfig": [{"paramKey": "a"}]}),
            "utmConfig[0].paramValue",
        ),
        (
            json!({"frequencyCaps": [{"maxExposure": 3, "window": {"interval": 1, "unit": "years"}}]}),
            "frequencyCaps[0].window.unit",
        ),
        (
            json!({"frequencyCaps": [{"maxExposure": 0, "window": {"interval": 1, "unit": "days"}}]}),
            "frequencyCaps[0].maxExposure",
        ),
        (
            json!({"frequencyCaps": [{"maxExposure": 1, "window": {"interval": -2, "unit": "days"}}]}),
            "frequencyCaps[0].window.interval",
        ),
        (
            json!({"frequencyCaps": [{"maxExposure": 1, "window": {"interval": "1", "unit": "days"}}]}),
            "frequencyCaps[0].window.interval",
        ),
        (
            json!({"linkedAccounts": [{"storefrontId": 999_999, "sourceId": "s", "accountId": "a"}]}),
            "linkedAccounts[0].storefrontId",
        ),
        (
            json!({"linkedAccounts": [{"storefrontId": sf, "sourceId": "s", "accountId": "a", "billingType": "card"}]}),
            "linkedAccounts[0].billingType",
        ),
        (
            json!({"linkedAccounts": [{"storefrontId": sf, "sourceId": "", "accountId": "a"}]}),
            "linkedAccounts[0].sourceId",
        ),
        (json!({"advertiserId": "x"}), "advertiserId"),
        (json!({"status": "PAUSED"}), "status"),
    ];
    for (extra, field) in cases {
        let res = app.post(ADV, &t.key, &with(extra.clone())).await;
        assert_field(&res, field);
        assert_eq!(res.body["error"]["field"], json!(field), "{extra}");
    }
    assert_eq!(count(&app, &t).await, 0, "refused creates wrote nothing");
    assert_eq!(
        app.get(AUDIT, &t.key).await.body["meta"]["pagination"]["total"],
        json!(0)
    );
    // Twenty UTM entries is the bound.
    create(&app, &t, with(json!({"utmConfig": utm20}))).await;
}

#[actix_web::test]
async fn updates_replace_clear_add_and_leave_unchanged_as_specified() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app).await;
    crate::accounts::make_available(&app, &t, sf, "s1", &["a1"]).await;
    crate::accounts::make_available(&app, &t, sf, "s2", &["a2"]).await;
    let a = create(
        &app,
        &t,
        with(json!({
            "description": "d",
            "channels": ["ctv"],
            "preferredTimezone": "Europe/Paris",
            "frequencyCaps": [{"maxExposure": 3, "window": {"interval": 1, "unit": "days"}}],
            "linkedAccounts": [{"storefrontId": sf, "sourceId": "s1", "accountId": "a1"}],
        })),
    )
    .await;
    let path = format!("{ADV}/{}", a["id"].as_str().unwrap());
    let put = |body: Value| {
        let app = &app;
        let path = path.clone();
        let key = t.key.clone();
        async move { app.put(&path, &key, &body).await }
    };

    // Omitted fields stay; channels replace fully.
    let res = put(json!({"channels": ["display", "olv"], "name": "Renamed"})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let u = res.data();
    assert_eq!(u["channels"], json!(["display", "olv"]));
    assert_eq!(u["name"], json!("Renamed"));
    assert_eq!(u["description"], json!("d"));
    assert_eq!(u["frequencyCaps"], a["frequencyCaps"]);
    assert_eq!(u["utmConfig"], a["utmConfig"]);
    assert_eq!(u["createdAt"], a["createdAt"]);
    assert_ne!(u["updatedAt"], a["updatedAt"]);

    // [] clears; null clears nullable fields.
    let u = put(json!({"channels": [], "frequencyCaps": [], "utmConfig": [], "description": null, "preferredTimezone": null}))
        .await;
    let u = u.data();
    assert_eq!(u["channels"], json!([]));
    assert_eq!(u["frequencyCaps"], json!([]));
    assert_eq!(u["utmConfig"], json!([]));
    assert_eq!(u["description"], Value::Null);
    assert_eq!(u["preferredTimezone"], Value::Null);

    // Full arrays replace.
    let u = put(
        json!({"utmConfig": [{"paramKey": "ref", "paramValue": "{CAMPAIGN_ID}"}],
        "frequencyCaps": [{"maxExposure": 10, "window": {"interval": 2, "unit": "weeks"}}]}),
    )
    .await;
    assert_eq!(
        u.data()["utmConfig"],
        json!([{"paramKey": "ref", "paramValue": "{CAMPAIGN_ID}"}])
    );
    assert_eq!(
        u.data()["frequencyCaps"][0]["window"]["unit"],
        json!("weeks")
    );

    // linkedAccounts adds, never removes, and ignores duplicates.
    let u = put(json!({"linkedAccounts": [
        {"storefrontId": sf, "sourceId": "s1", "accountId": "a1"},
        {"storefrontId": sf, "sourceId": "s2", "accountId": "a2", "billingType": "agent"}]}))
    .await;
    let links = u.data()["linkedAccounts"].as_array().unwrap();
    assert_eq!(links.len(), 2);
    assert_eq!(links[1]["sourceId"], json!("s2"));
    let u = put(json!({"linkedAccounts": []})).await;
    assert_eq!(u.data()["linkedAccounts"].as_array().unwrap().len(), 2);

    // Mode, countries.
    let u = put(json!({"optimizationApplyMode": "AUTO", "brandCountries": ["de"]})).await;
    assert_eq!(u.data()["optimizationApplyMode"], json!("AUTO"));
    assert_eq!(u.data()["brandCountries"], json!(["DE"]));

    // Bad input on update: exact paths, nothing written.
    let before = app.get(&path, &t.key).await.data().clone();
    for (body, field) in [
        (json!({"channels": ["radio", "nope"]}), "channels[1]"),
        (
            json!({"frequencyCaps": [{"maxExposure": 1, "window": {"interval": 1, "unit": "fortnights"}}]}),
            "frequencyCaps[0].window.unit",
        ),
        (
            json!({"preferredTimezone": "Nowhere/City"}),
            "preferredTimezone",
        ),
        (json!({"primaryCurrency": "ABC"}), "primaryCurrency"),
        (json!({"name": ""}), "name"),
        (json!({"bogus": 1}), "bogus"),
    ] {
        assert_field(&put(body).await, field);
    }
    assert_eq!(app.get(&path, &t.key).await.data(), &before);
}

#[actix_web::test]
async fn sandbox_is_immutable() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = create(&app, &t, with(json!({"sandbox": true}))).await;
    let path = format!("{ADV}/{}", a["id"].as_str().unwrap());
    assert_field(
        &app.put(&path, &t.key, &json!({"sandbox": false})).await,
        "sandbox",
    );
    let same = app.put(&path, &t.key, &json!({"sandbox": true})).await;
    assert_eq!(same.status, 200);
    assert_eq!(app.get(&path, &t.key).await.data()["sandbox"], json!(true));
}

#[actix_web::test]
async fn brand_and_currency_lock_after_the_first_seller_account_binding() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app).await;
    crate::accounts::make_available(&app, &t, sf, "s", &["a"]).await;
    let a = create(&app, &t, minimal()).await;
    let path = format!("{ADV}/{}", a["id"].as_str().unwrap());

    // Before any binding both can change; a new brand is resolved anew.
    let u = app
        .put(
            &path,
            &t.key,
            &json!({"brand": "nike.com", "primaryCurrency": "GBP"}),
        )
        .await;
    assert_eq!(u.status, 200, "{}", u.body);
    assert_eq!(u.data()["linkedBrand"]["name"], json!("Nike"));
    assert_eq!(u.data()["brandWarning"], Value::Null);
    assert_eq!(u.data()["primaryCurrency"], json!("GBP"));

    let bind = json!({"linkedAccounts": [{"storefrontId": sf, "sourceId": "s", "accountId": "a"}]});
    assert_eq!(app.put(&path, &t.key, &bind).await.status, 200);

    for (body, field) in [
        (json!({"brand": "adidas.com"}), "brand"),
        (json!({"primaryCurrency": "USD"}), "primaryCurrency"),
    ] {
        let res = app.put(&path, &t.key, &body).await;
        res.assert_error(409, "CONFLICT");
        assert_eq!(
            res.body["error"]["details"]["reason"],
            json!("seller_account_bound")
        );
        assert_eq!(res.body["error"]["details"]["field"], json!(field));
    }
    let now = app.get(&path, &t.key).await;
    assert_eq!(now.data()["brand"], json!("nike.com"));
    assert_eq!(now.data()["primaryCurrency"], json!("GBP"));
    // The same values (any case) are not a change.
    let same = app
        .put(
            &path,
            &t.key,
            &json!({"brand": "Nike.com", "primaryCurrency": "gbp", "name": "ok"}),
        )
        .await;
    assert_eq!(same.status, 200, "{}", same.body);
}

#[actix_web::test]
async fn save_brand_refreshes_resolution_and_fills_the_registry() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = create(&app, &t, with(json!({"brand": "fresh-brand.example"}))).await;
    assert!(a["brandWarning"].is_string());
    let path = format!("{ADV}/{}", a["id"].as_str().unwrap());
    let u = app
        .put(
            &path,
            &t.key,
            &json!({"brand": "fresh-brand.example", "saveBrand": true}),
        )
        .await;
    assert_eq!(u.status, 200, "{}", u.body);
    assert_eq!(u.data()["brandWarning"], Value::Null);
    assert_eq!(u.data()["linkedBrand"]["id"], a["linkedBrand"]["id"]);
    // The registry now knows it: another advertiser resolves without a warning.
    let b = create(&app, &t, with(json!({"brand": "fresh-brand.example"}))).await;
    assert_eq!(b["brandWarning"], Value::Null);
    // saveBrand on create does the same.
    let c = create(
        &app,
        &t,
        with(json!({"brand": "other.example", "saveBrand": true})),
    )
    .await;
    assert_eq!(c["brandWarning"], Value::Null);
}

#[actix_web::test]
async fn another_accounts_advertiser_is_404_and_never_listed() {
    let app = spawn_app().await;
    let mine = app.tenant().await;
    let theirs = app.tenant().await;
    let a = create(&app, &mine, minimal()).await;
    let path = format!("{ADV}/{}", a["id"].as_str().unwrap());
    app.get(&path, &theirs.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.put(&path, &theirs.key, &json!({"name": "stolen"}))
        .await
        .assert_error(404, "NOT_FOUND");
    assert_eq!(count(&app, &theirs).await, 0);
    assert_eq!(
        app.get(&path, &mine.key).await.data()["name"],
        json!("Acme Shoes")
    );
    app.get(&format!("{ADV}/{}", uuid::Uuid::new_v4()), &mine.key)
        .await
        .assert_error(404, "NOT_FOUND");
    let res = app.get(&format!("{ADV}/not-a-uuid"), &mine.key).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], json!("advertiserId"));
    for (m, p) in [
        ("GET", ADV.to_string()),
        ("GET", path.clone()),
        ("GET", AUDIT.to_string()),
    ] {
        let res = app.request(m.parse().unwrap(), &p, None, None).await;
        res.assert_error(401, "UNAUTHORIZED");
    }
    app.request(actix_web::http::Method::POST, ADV, None, Some(&minimal()))
        .await
        .assert_error(401, "UNAUTHORIZED");
    // The audit log is per account too.
    assert_eq!(
        app.get(AUDIT, &theirs.key).await.body["meta"]["pagination"]["total"],
        json!(0)
    );
}

#[actix_web::test]
async fn list_is_newest_first_and_paginated() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut ids = Vec::new();
    for i in 0..5 {
        let a = create(&app, &t, with(json!({"name": format!("A{i}")}))).await;
        ids.push(a["id"].as_str().unwrap().to_string());
    }
    ids.reverse();
    let res = app.get(&format!("{ADV}?take=2&skip=1"), &t.key).await;
    assert_eq!(res.status, 200);
    let got: Vec<&str> = res
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"].as_str().unwrap())
        .collect();
    assert_eq!(got, vec![ids[1].as_str(), ids[2].as_str()]);
    assert_eq!(
        res.body["meta"]["pagination"],
        json!({"skip": 1, "take": 2, "total": 5, "hasMore": true})
    );
    assert_field(&app.get(&format!("{ADV}?take=101"), &t.key).await, "take");
}

#[actix_web::test]
async fn the_audit_log_records_who_what_and_a_field_diff() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = create(&app, &t, minimal()).await;
    let id = a["id"].as_str().unwrap();
    app.put(
        &format!("{ADV}/{id}"),
        &t.key,
        &json!({"name": "New name", "channels": ["ctv"]}),
    )
    .await;
    let res = app.get(AUDIT, &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let entries = res.data().as_array().unwrap();
    assert_eq!(entries.len(), 2);
    let (update, create_entry) = (&entries[0], &entries[1]);
    assert_eq!(update["action"], json!("advertiser.updated"));
    assert_eq!(update["resourceType"], json!("advertiser"));
    assert_eq!(update["resourceId"], json!(id));
    assert_eq!(update["actor"]["userId"], json!(t.user_id));
    assert!(update["actor"]["apiKeyId"].is_i64());
    assert_eq!(
        update["changes"],
        json!({
            "name": {"from": "Acme Shoes", "to": "New name"},
            "channels": {"from": [], "to": ["ctv"]},
        })
    );
    assert_eq!(create_entry["action"], json!("advertiser.created"));
    assert_eq!(
        create_entry["changes"]["name"],
        json!({"from": null, "to": "Acme Shoes"})
    );
    assert_eq!(
        create_entry["changes"]["primaryCurrency"]["to"],
        json!("USD")
    );
    assert!(create_entry["createdAt"].is_string());
    assert_eq!(
        res.body["meta"]["pagination"],
        json!({"skip": 0, "take": 20, "total": 2, "hasMore": false})
    );
    assert_eq!(
        app.get(&format!("{AUDIT}?take=200"), &t.key).await.status,
        200
    );
    assert_field(&app.get(&format!("{AUDIT}?take=201"), &t.key).await, "take");
}

#[actix_web::test]
async fn named_operations_run_the_same_code_as_rest() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let caller = app.state.auth.authenticate(&t.key).await.unwrap().unwrap();
    let call = |v: Value| serde_json::from_value::<OperationCall>(v).unwrap();

    let created = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "create_advertiser", "body": minimal()})),
    )
    .await
    .unwrap();
    let id = created.data["id"].as_str().unwrap().to_string();
    let rest = app.get(&format!("{ADV}/{id}"), &t.key).await;
    assert_eq!(rest.data(), &created.data);

    let got = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "get_advertiser", "pathParams": {"advertiserId": id}})),
    )
    .await
    .unwrap();
    assert_eq!(got.data, created.data);

    let updated = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(
            json!({"operation": "update_advertiser", "pathParams": {"advertiserId": id},
                     "body": {"channels": ["podcast"]}}),
        ),
    )
    .await
    .unwrap();
    assert_eq!(updated.data["channels"], json!(["podcast"]));

    let listed = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "list_advertisers", "params": {"take": 1}})),
    )
    .await
    .unwrap();
    assert_eq!(listed.data.as_array().unwrap().len(), 1);
    assert_eq!(listed.meta.unwrap()["pagination"]["take"], json!(1));

    // The same validation, with the same paths.
    let err = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "create_advertiser",
                     "body": with(json!({"frequencyCaps": [{"maxExposure": 1, "window": {"interval": 1, "unit": "eons"}}]}))})),
    )
    .await
    .unwrap_err();
    assert_eq!(err.body()["field"], json!("frequencyCaps[0].window.unit"));
    let err = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "delete_everything"})),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "VALIDATION_ERROR");
    let err = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "get_advertiser"})),
    )
    .await
    .unwrap_err();
    assert_eq!(err.body()["field"], json!("advertiserId"));
}

#[actix_web::test]
async fn admin_register_brand_feeds_the_registry_and_rejects_bad_input() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let out = cli(
        &app.database_url,
        &[
            "admin",
            "register-brand",
            "--domain",
            "Acme-Corp.example",
            "--name",
            "Acme Corp",
            "--manifest",
            r#"{"industry": "Retail", "logos": [{"url": "https://cdn.example/logo.png", "tags": ["primary"]}]}"#,
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(printed["brandId"].as_str().unwrap().starts_with("brand_"));
    let a = create(&app, &t, with(json!({"brand": "acme-corp.example"}))).await;
    assert_eq!(a["brandWarning"], Value::Null);
    assert_eq!(a["linkedBrand"]["id"], printed["brandId"]);
    assert_eq!(a["linkedBrand"]["name"], json!("Acme Corp"));
    assert_eq!(a["linkedBrand"]["industry"], json!("Retail"));
    assert_eq!(
        a["linkedBrand"]["logoUrl"],
        json!("https://cdn.example/logo.png")
    );

    for args in [
        vec![
            "admin",
            "register-brand",
            "--domain",
            "not a domain",
            "--name",
            "X",
        ],
        vec![
            "admin",
            "register-brand",
            "--domain",
            "bad.example",
            "--name",
            " ",
        ],
        vec![
            "admin",
            "register-brand",
            "--domain",
            "bad.example",
            "--name",
            "X",
            "--manifest",
            "[1]",
        ],
    ] {
        let out = cli(&app.database_url, &args);
        assert!(!out.status.success(), "{args:?}");
        assert!(out.stdout.is_empty());
        assert!(!out.stderr.is_empty());
    }
    let b = create(&app, &t, with(json!({"brand": "bad.example"}))).await;
    assert!(
        b["brandWarning"].is_string(),
        "refused registrations wrote nothing"
    );
}

#[actix_web::test]
async fn concurrent_updates_are_serialised_and_lose_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let sf = storefront(&app).await;
    let ten: Vec<String> = (0..10).map(|i| format!("a{i}")).collect();
    let ten: Vec<&str> = ten.iter().map(String::as_str).collect();
    crate::accounts::make_available(&app, &t, sf, "s", &ten).await;
    let a = create(&app, &t, minimal()).await;
    let path = format!("{ADV}/{}", a["id"].as_str().unwrap());
    let mut tasks = Vec::new();
    for i in 0..10 {
        let url = app.url(&path);
        let key = t.key.clone();
        tasks.push(actix_rt::spawn(async move {
            let body = json!({"linkedAccounts": [{"storefrontId": sf, "sourceId": "s", "accountId": format!("a{i}")}],
                              "name": format!("N{i}")});
            let res = awc::Client::default()
                .put(url)
                .insert_header(("Authorization", format!("Bearer {key}")))
                .send_json(&body)
                .await
                .unwrap();
            res.status().as_u16()
        }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), 200);
    }
    let got = app.get(&path, &t.key).await;
    assert_eq!(got.data()["linkedAccounts"].as_array().unwrap().len(), 10);
    let audit = app.get(&format!("{AUDIT}?take=50"), &t.key).await;
    let updates: Vec<&Value> = audit
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["action"] == json!("advertiser.updated"))
        .collect();
    assert_eq!(updates.len(), 10);
    // Serialised: every update saw the previous one's links, so each added exactly one.
    for e in updates {
        let change = &e["changes"]["linkedAccounts"];
        assert_eq!(
            change["to"].as_array().unwrap().len(),
            change["from"].as_array().unwrap().len() + 1,
            "{e}"
        );
    }
}

/// A campaign body for `adv`.
fn campaign(adv: &str) -> Value {
    json!({
        "advertiserId": adv,
        "name": "Spring launch",
        "flightDates": {"startDate": "2027-03-01T00:00:00Z", "endDate": "2027-03-31T23:59:59Z"},
        "budget": {"total": 50000}
    })
}

const CMP: &str = "/api/v2/buyer/campaigns";

async fn total(app: &TestApp, t: &Tenant, path: &str) -> u64 {
    let res = app.get(path, &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    res.body["meta"]["pagination"]["total"].as_u64().unwrap()
}

/// `/mcp/v3` `save_advertiser` with `isArchived`: archived advertisers leave
/// the lists (unless asked for), keep answering by id, refuse new campaigns
/// and come back when restored; every step is audited, and a call whose
/// later step fails leaves nothing.
#[actix_web::test]
async fn archiving_hides_an_advertiser_refuses_campaigns_and_restoring_undoes_it() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = create(&app, &t, minimal()).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let b = create(&app, &t, with(json!({"name": "Other"}))).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    // A campaign locks the currency (used below for a failing step).
    assert_eq!(app.post(CMP, &t.key, &campaign(&a)).await.status, 201);
    let mut s = crate::mcp::open_at(&app, "/mcp/v3", &t.key).await;
    let audited = total(&app, &t, AUDIT).await;

    // Archive and rename in one call.
    let archived = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": true, "name": "Acme Old"}),
        )
        .await;
    assert_ne!(archived["isError"], true, "{archived}");
    let d = &archived["structuredContent"]["data"];
    assert_eq!(d["status"], "ARCHIVED", "{archived}");
    assert_eq!(d["name"], "Acme Old");
    let archived_at = d["archivedAt"].as_str().unwrap().to_string();
    assert!(chrono::DateTime::parse_from_rfc3339(&archived_at).is_ok());
    let entries = app.get(AUDIT, &t.key).await;
    let entries = entries.data().as_array().unwrap();
    assert_eq!(total(&app, &t, AUDIT).await, audited + 2);
    assert_eq!(entries[0]["action"], "advertiser.archived");
    assert_eq!(entries[0]["resourceId"], a.as_str());
    assert_eq!(
        entries[0]["changes"]["status"],
        json!({"from": "ACTIVE", "to": "ARCHIVED"})
    );
    assert_eq!(entries[0]["changes"]["archivedAt"]["from"], Value::Null);
    assert_eq!(entries[1]["action"], "advertiser.updated");

    // Hidden from the lists, unless asked for; still there by id.
    let listed = app.get(ADV, &t.key).await;
    assert_eq!(listed.body["meta"]["pagination"]["total"], 1);
    assert_eq!(listed.data()[0]["id"], b.as_str());
    assert_eq!(listed.data()[0]["status"], "ACTIVE");
    assert!(listed.data()[0].get("archivedAt").is_none());
    let all = app
        .get(&format!("{ADV}?includeArchived=true"), &t.key)
        .await;
    assert_eq!(all.body["meta"]["pagination"]["total"], 2, "{}", all.body);
    assert!(
        all.data()
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["id"] == a.as_str()
                && x["status"] == "ARCHIVED"
                && x["archivedAt"] == archived_at.as_str())
    );
    assert_eq!(
        total(&app, &t, &format!("{ADV}?includeArchived=false")).await,
        1
    );
    assert_field(
        &app.get(&format!("{ADV}?includeArchived=maybe"), &t.key)
            .await,
        "includeArchived",
    );
    let got = app.get(&format!("{ADV}/{a}"), &t.key).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.data()["status"], "ARCHIVED");
    assert_eq!(got.data()["archivedAt"], archived_at.as_str());
    let found = s.call(&app, "search", json!({"type": "advertiser"})).await;
    assert_eq!(found["structuredContent"]["meta"]["pagination"]["total"], 1);
    let found = s
        .call(
            &app,
            "search",
            json!({"type": "advertiser", "includeArchived": true}),
        )
        .await;
    assert_eq!(
        found["structuredContent"]["meta"]["pagination"]["total"], 2,
        "{found}"
    );
    let bad = s
        .call(
            &app,
            "search",
            json!({"type": "campaign", "includeArchived": true}),
        )
        .await;
    assert_eq!(
        bad["structuredContent"]["field"], "includeArchived",
        "{bad}"
    );

    // No new campaign, over REST or /mcp/v3; nothing written.
    let audited = total(&app, &t, AUDIT).await;
    let refused = app.post(CMP, &t.key, &campaign(&a)).await;
    refused.assert_error(409, "CONFLICT");
    let message = refused.body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("archived") && message.contains("isArchived false"),
        "{message}"
    );
    let made = s.call(&app, "save_campaign", campaign(&a)).await;
    assert_eq!(made["isError"], true, "{made}");
    assert_eq!(made["structuredContent"]["code"], "CONFLICT", "{made}");
    // Nor a discovery.
    let disc = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &t.key,
            &json!({"advertiserId": a}),
        )
        .await;
    disc.assert_error(409, "CONFLICT");
    assert_eq!(total(&app, &t, &format!("{CMP}?advertiserId={a}")).await, 1);
    assert_eq!(total(&app, &t, AUDIT).await, audited);
    // The other advertiser is unaffected.
    assert_eq!(app.post(CMP, &t.key, &campaign(&b)).await.status, 201);
    let audited = total(&app, &t, AUDIT).await;

    // A repeat changes nothing and records nothing.
    let again = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": true}),
        )
        .await;
    assert_eq!(
        again["structuredContent"]["data"]["archivedAt"],
        archived_at.as_str()
    );
    assert_eq!(total(&app, &t, AUDIT).await, audited);

    // Another account cannot see, archive or restore it; a read-only key
    // may not; a new advertiser cannot be born archived.
    let stranger = app.tenant().await;
    let mut other = crate::mcp::open_at(&app, "/mcp/v3", &stranger.key).await;
    for flag in [true, false] {
        let hidden = other
            .call(
                &app,
                "save_advertiser",
                json!({"advertiserId": a, "isArchived": flag}),
            )
            .await;
        assert_eq!(hidden["structuredContent"]["code"], "NOT_FOUND", "{hidden}");
    }
    let reader = app
        .user_in(&t.account_id, "admin", &["platform:read"])
        .await;
    let mut r = crate::mcp::open_at(&app, "/mcp/v3", &reader.key).await;
    let refused = r
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": false}),
        )
        .await;
    assert_eq!(
        refused["structuredContent"]["code"], "FORBIDDEN",
        "{refused}"
    );
    let born = s
        .call(&app, "save_advertiser", with(json!({"isArchived": true})))
        .await;
    assert_eq!(born["structuredContent"]["field"], "isArchived", "{born}");
    let bad = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": "yes"}),
        )
        .await;
    assert_eq!(bad["structuredContent"]["field"], "isArchived", "{bad}");
    assert_eq!(total(&app, &t, AUDIT).await, audited);

    // Restore and change a locked field in one call: the lock refuses the
    // change, so the restore is undone too.
    let failed = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": false, "primaryCurrency": "EUR"}),
        )
        .await;
    assert_eq!(failed["structuredContent"]["code"], "CONFLICT", "{failed}");
    let still = app.get(&format!("{ADV}/{a}"), &t.key).await;
    assert_eq!(still.data(), got.data(), "nothing of the call stays");
    assert_eq!(total(&app, &t, AUDIT).await, audited);
    // An invalid field is refused before anything.
    let failed = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": false, "channels": ["telepathy"]}),
        )
        .await;
    assert_eq!(
        failed["structuredContent"]["code"], "VALIDATION_ERROR",
        "{failed}"
    );
    assert_eq!(
        app.get(&format!("{ADV}/{a}"), &t.key).await.data(),
        got.data()
    );

    // Restore: listed again, and campaigns can be created again.
    let restored = s
        .call(
            &app,
            "save_advertiser",
            json!({"advertiserId": a, "isArchived": false}),
        )
        .await;
    let d = &restored["structuredContent"]["data"];
    assert_eq!(d["status"], "ACTIVE", "{restored}");
    assert!(d.get("archivedAt").is_none(), "{restored}");
    let entries = app.get(AUDIT, &t.key).await;
    assert_eq!(entries.data()[0]["action"], "advertiser.restored");
    assert_eq!(
        entries.data()[0]["changes"]["status"],
        json!({"from": "ARCHIVED", "to": "ACTIVE"})
    );
    assert_eq!(total(&app, &t, ADV).await, 2);
    let res = app.post(CMP, &t.key, &campaign(&a)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    assert_eq!(total(&app, &t, &format!("{CMP}?advertiserId={a}")).await, 2);
}

/// An archived advertiser starts no discovery and stages no media buys
/// from an earlier session; restored, it does again.
#[actix_web::test]
async fn an_archived_advertiser_takes_no_media_buys() {
    use crate::media_buys::{BUYS, buy_count, discover, eur_advertiser, new_campaign, pick};
    let app = spawn_app().await;
    let t = app.tenant().await;
    let (_seller, _) =
        crate::fake_seller::seller(&app, "Northwind", crate::fake_seller::Behaviour::default())
            .await;
    let adv = eur_advertiser(&app, &t, false).await;
    let session = discover(&app, &t, &adv).await;
    let mut s = crate::mcp::open_at(&app, "/mcp/v3", &t.key).await;
    let archive = |flag: bool| json!({"advertiserId": adv, "isArchived": flag});
    let done = s.call(&app, "save_advertiser", archive(true)).await;
    assert_eq!(done["structuredContent"]["data"]["status"], "ARCHIVED");

    let cart = json!({
        "productQueryId": session,
        "campaign": new_campaign(10_000.0),
        "mode": "stage",
        "selections": [pick("ctv-1", 4000.0)],
    });
    let audited = total(&app, &t, AUDIT).await;
    let refused = app.post(BUYS, &t.key, &cart).await;
    refused.assert_error(409, "CONFLICT");
    assert_eq!(
        refused.body["error"]["details"]["reason"], "advertiser_archived",
        "{}",
        refused.body
    );
    let staged = s.call(&app, "save_media_buy", cart.clone()).await;
    assert_eq!(staged["structuredContent"]["code"], "CONFLICT", "{staged}");
    assert_eq!(buy_count(&app).await, 0);
    assert_eq!(total(&app, &t, CMP).await, 0);
    assert_eq!(total(&app, &t, AUDIT).await, audited);

    s.call(&app, "save_advertiser", archive(false)).await;
    let res = app.post(BUYS, &t.key, &cart).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(buy_count(&app).await, 1);
}
