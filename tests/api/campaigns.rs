//! Campaigns: every field rule with a passing and a failing case, currency
//! mismatch and the advertiser lock, status transitions, the audit log,
//! isolation, the storefront pin in discovery, the dispatcher and `/mcp/v3`.

use std::time::Duration;

use sea_orm::{ActiveModelTrait, EntityTrait, Set};
use serde_json::{Value, json};

use agentic_api::ops::{OperationCall, dispatch};

use crate::fake_seller::{Behaviour, product, seller};
use crate::helpers::*;
use crate::mcp::open_at;

const CMP: &str = "/api/v2/buyer/campaigns";
const AUDIT: &str = "/api/v2/buyer/audit-logs";

fn body(adv: &str) -> Value {
    json!({
        "advertiserId": adv,
        "name": "Spring launch",
        "flightDates": {"startDate": "2027-03-01T00:00:00Z", "endDate": "2027-03-31T23:59:59Z"},
        "budget": {"total": 50000}
    })
}

fn with(adv: &str, extra: Value) -> Value {
    let mut v = body(adv);
    for (k, x) in extra.as_object().unwrap() {
        v[k] = x.clone();
    }
    v
}

async fn create(app: &TestApp, t: &Tenant, b: Value) -> Value {
    let res = app.post(CMP, &t.key, &b).await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["campaign"].clone()
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
    app.get(CMP, &t.key).await.body["meta"]["pagination"]["total"]
        .as_i64()
        .unwrap()
}

/// Campaigns become ACTIVE by launching, which arrives with media buys;
/// the tests put one there directly.
async fn set_status(app: &TestApp, id: &str, status: &str) {
    let row = entity::campaign::Entity::find_by_id(id.to_string())
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    let mut row: entity::campaign::ActiveModel = row.into();
    row.status = Set(status.to_string());
    row.update(&app.db).await.unwrap();
}

fn path(id: &str, action: &str) -> String {
    format!("{CMP}/{id}/{action}")
}

#[actix_web::test]
async fn create_makes_a_draft_in_the_advertisers_currency_with_defaults() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let c = create(&app, &t, body(&adv)).await;
    let id = c["campaignId"].as_str().unwrap();
    assert!(id.starts_with("cmp_") && id.len() == 36, "{id}");
    assert_eq!(c["status"], "DRAFT");
    assert_eq!(c["advertiserId"], adv.as_str());
    assert_eq!(c["name"], "Spring launch");
    assert_eq!(
        c["flightDates"],
        json!({"startDate": "2027-03-01T00:00:00Z", "endDate": "2027-03-31T23:59:59Z"})
    );
    assert_eq!(
        c["budget"],
        json!({"total": 50000.0, "currency": "USD", "pacing": "even"})
    );
    assert_eq!(c["autonomy"], json!({"inventorySelection": "manual"}));
    assert_eq!(c["storefrontIds"], json!([]));
    assert_eq!(c["constraints"], json!({}));
    assert_eq!(c["performanceConfig"], Value::Null);
    assert_eq!(c["catalogId"], Value::Null);
    assert_eq!(c["discoveryId"], Value::Null);
    assert!(c.get("geo_metro_names").is_none());

    // The same record from get and list; the audit log has the creation.
    let got = app.get(&format!("{CMP}/{id}"), &t.key).await;
    assert_eq!(got.status, 200, "{}", got.body);
    assert_eq!(got.data()["campaign"], c);
    let listed = app.get(CMP, &t.key).await;
    assert_eq!(listed.data()[0], c);
    let audit = app.get(AUDIT, &t.key).await;
    let entry = &audit.data()[0];
    assert_eq!(entry["action"], "campaign.created", "{entry}");
    assert_eq!(entry["resourceId"], id, "{entry}");
}

#[actix_web::test]
async fn every_field_rule_has_a_passing_and_a_failing_case() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_s, sf) = seller(&app, "Seller", Behaviour::default()).await;

    // Passing: every optional field, kept as sent.
    let brief = "  Reach parents of toddlers in Ohio.\n\nKeep it   warm. ".repeat(50);
    let goals = json!({"optimizationGoals": [
        {"kind": "event", "eventSources": [{"eventSourceId": "px-1", "eventType": "purchase", "valueField": "value"}],
         "target": {"kind": "per_ad_spend", "value": 4.0},
         "attributionWindow": {"postClick": {"interval": 7, "unit": "days"}, "postView": {"interval": 1, "unit": "days"}},
         "priority": 1},
        {"kind": "metric", "metric": "clicks", "target": {"kind": "cost_per", "value": 0.5}, "priority": 2},
        {"kind": "metric", "metric": "completed_views", "target": {"kind": "threshold_rate", "value": 0.7}}
    ]});
    let c = create(
        &app,
        &t,
        with(
            &adv,
            json!({"brief": brief, "storefrontIds": [sf],
                   "autonomy": {"inventorySelection": "automatic"},
                   "performanceConfig": goals,
                   "budget": {"total": 1000.5, "currency": "usd", "dailyCap": 100, "pacing": "front_loaded"},
                   "flightDates": {"startDate": "2027-03-01T09:00:00+02:00", "endDate": "2027-03-02T00:00:00Z"}}),
        ),
    )
    .await;
    assert_eq!(c["brief"], brief.as_str(), "the brief is kept whole");
    assert_eq!(c["storefrontIds"], json!([sf]));
    assert_eq!(c["autonomy"]["inventorySelection"], "automatic");
    assert_eq!(c["performanceConfig"], goals);
    assert_eq!(
        c["budget"],
        json!({"total": 1000.5, "currency": "USD", "dailyCap": 100.0, "pacing": "front_loaded"})
    );
    assert_eq!(c["flightDates"]["startDate"], "2027-03-01T07:00:00Z");

    // Failing: one case per rule, each at its path, nothing written.
    let before = count(&app, &t).await;
    let cases: Vec<(Value, &str)> = vec![
        (json!({"name": ""}), "name"),
        (json!({"name": "x".repeat(256)}), "name"),
        (
            json!({"flightDates": {"startDate": "2027-03-01", "endDate": "2027-03-02T00:00:00Z"}}),
            "flightDates.startDate",
        ),
        (
            json!({"flightDates": {"startDate": "2027-03-01T00:00:00Z"}}),
            "flightDates.endDate",
        ),
        (
            json!({"flightDates": {"startDate": "2027-03-02T00:00:00Z", "endDate": "2027-03-01T00:00:00Z"}}),
            "flightDates.endDate",
        ),
        (
            json!({"flightDates": {"startDate": "2027-03-01T00:00:00Z", "endDate": "2027-03-01T00:00:00Z"}}),
            "flightDates.endDate",
        ),
        (json!({"startDate": "2027-03-01T00:00:00Z"}), "startDate"),
        (json!({"endDate": "2027-03-01T00:00:00Z"}), "endDate"),
        (json!({"budget": {"total": 0}}), "budget.total"),
        (json!({"budget": {"total": -5}}), "budget.total"),
        (json!({"budget": {}}), "budget.total"),
        (
            json!({"budget": {"total": 10, "dailyCap": 11}}),
            "budget.dailyCap",
        ),
        (
            json!({"budget": {"total": 10, "dailyCap": 0}}),
            "budget.dailyCap",
        ),
        (
            json!({"budget": {"total": 10, "pacing": "whenever"}}),
            "budget.pacing",
        ),
        (
            json!({"budget": {"total": 10, "currency": "DOLLARS"}}),
            "budget.currency",
        ),
        (
            json!({"budget": {"total": 10, "currency": "XYZ"}}),
            "budget.currency",
        ),
        (json!({"brief": "b".repeat(100_001)}), "brief"),
        (json!({"storefrontIds": [sf, sf]}), "storefrontIds[1]"),
        (json!({"storefrontIds": [999_999]}), "storefrontIds[0]"),
        (json!({"storefrontIds": [0]}), "storefrontIds[0]"),
        (
            json!({"autonomy": {"inventorySelection": "yolo"}}),
            "autonomy.inventorySelection",
        ),
        (json!({"discoveryId": "disc_nope"}), "discoveryId"),
        (json!({"catalogId": "cat_nope"}), "catalogId"),
        (json!({"constraints": []}), "constraints"),
        (
            json!({"performanceConfig": {"optimizationGoals": []}}),
            "performanceConfig.optimizationGoals",
        ),
        (
            json!({"performanceConfig": {}}),
            "performanceConfig.optimizationGoals",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "vibes"}]}}),
            "performanceConfig.optimizationGoals[0].kind",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "event", "eventSources": []}]}}),
            "performanceConfig.optimizationGoals[0].eventSources",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "event", "eventSources": [{"eventSourceId": "px", "eventType": "teleport"}]}]}}),
            "performanceConfig.optimizationGoals[0].eventSources[0].eventType",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "event", "eventSources": [{"eventType": "lead"}]}]}}),
            "performanceConfig.optimizationGoals[0].eventSources[0].eventSourceId",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "event", "eventSources": [{"eventSourceId": "px", "eventType": "purchase"}], "target": {"kind": "per_ad_spend", "value": 4}}]}}),
            "performanceConfig.optimizationGoals[0].target.kind",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "event", "eventSources": [{"eventSourceId": "px", "eventType": "lead"}], "target": {"kind": "cost_per", "value": 0}}]}}),
            "performanceConfig.optimizationGoals[0].target.value",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "event", "eventSources": [{"eventSourceId": "px", "eventType": "lead"}], "attributionWindow": {"postClick": {"interval": 7, "unit": "fortnights"}}}]}}),
            "performanceConfig.optimizationGoals[0].attributionWindow.postClick.unit",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "metric", "metric": "vibes"}]}}),
            "performanceConfig.optimizationGoals[0].metric",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "metric", "metric": "clicks", "target": {"kind": "per_ad_spend", "value": 2}}]}}),
            "performanceConfig.optimizationGoals[0].target.kind",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "metric", "metric": "views", "target": {"kind": "threshold_rate", "value": 1.5}}]}}),
            "performanceConfig.optimizationGoals[0].target.value",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "metric", "metric": "clicks", "priority": 1}, {"kind": "metric", "metric": "views", "priority": 1}]}}),
            "performanceConfig.optimizationGoals[1].priority",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "metric", "metric": "clicks", "priority": 0}]}}),
            "performanceConfig.optimizationGoals[0].priority",
        ),
        (
            json!({"performanceConfig": {"optimizationGoals": [{"kind": "metric", "metric": "clicks", "colour": "red"}]}}),
            "performanceConfig.optimizationGoals[0].colour",
        ),
    ];
    for (extra, field) in cases {
        let res = app.post(CMP, &t.key, &with(&adv, extra.clone())).await;
        assert_field(&res, field);
    }
    // Required fields, all reported at once.
    let res = app.post(CMP, &t.key, &json!({})).await;
    for field in ["advertiserId", "name", "flightDates", "budget"] {
        assert_field(&res, field);
    }
    let res = app
        .post(CMP, &t.key, &with("not-a-uuid", json!({"name": ""})))
        .await;
    assert_field(&res, "advertiserId");
    assert_field(&res, "name");
    // Unknown fields are refused by the schema.
    app.post(CMP, &t.key, &with(&adv, json!({"colour": "red"})))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    assert_eq!(count(&app, &t).await, before, "nothing was written");
}

#[actix_web::test]
async fn currency_mismatch_and_the_advertiser_lock() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let adv_path = format!("/api/v2/buyer/advertisers/{adv}");

    let res = app
        .post(
            CMP,
            &t.key,
            &with(&adv, json!({"budget": {"total": 10, "currency": "EUR"}})),
        )
        .await;
    res.assert_error(400, "CURRENCY_MISMATCH");
    assert_eq!(res.body["error"]["field"], "budget.currency");
    assert_eq!(count(&app, &t).await, 0);

    // Before any campaign the currency and brand may still change.
    let res = app
        .put(&adv_path, &t.key, &json!({"primaryCurrency": "EUR"}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let c = create(
        &app,
        &t,
        with(&adv, json!({"budget": {"total": 10, "currency": "EUR"}})),
    )
    .await;
    assert_eq!(c["budget"]["currency"], "EUR");

    // Now both are locked.
    for change in [
        json!({"primaryCurrency": "USD"}),
        json!({"brand": "other.example"}),
    ] {
        let res = app.put(&adv_path, &t.key, &change).await;
        res.assert_error(409, "CONFLICT");
        assert_eq!(
            res.body["error"]["details"]["reason"], "campaign_created",
            "{}",
            res.body
        );
    }
    // The same values are not a change.
    let res = app
        .put(
            &adv_path,
            &t.key,
            &json!({"primaryCurrency": "EUR", "name": "Renamed"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);

    // Update: a mismatched currency is refused the same way.
    let id = c["campaignId"].as_str().unwrap();
    let res = app
        .put(
            &format!("{CMP}/{id}"),
            &t.key,
            &json!({"budget": {"currency": "USD"}}),
        )
        .await;
    res.assert_error(400, "CURRENCY_MISMATCH");
    assert_eq!(res.body["error"]["field"], "budget.currency");
}

#[actix_web::test]
async fn update_changes_what_is_sent_and_null_clears_performance_config() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let goals = json!({"optimizationGoals": [{"kind": "metric", "metric": "clicks"}]});
    let c = create(
        &app,
        &t,
        with(&adv, json!({"performanceConfig": goals, "brief": "first"})),
    )
    .await;
    let id = c["campaignId"].as_str().unwrap();
    let url = format!("{CMP}/{id}");

    let res = app
        .put(
            &url,
            &t.key,
            &json!({"name": "Renamed", "budget": {"total": 75000}, "flightDates": {"endDate": "2027-04-30T00:00:00Z"}}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let u = &res.data()["campaign"];
    assert_eq!(u["name"], "Renamed");
    assert_eq!(u["budget"]["total"], 75000.0);
    assert_eq!(u["budget"]["currency"], "USD");
    assert_eq!(u["flightDates"]["startDate"], "2027-03-01T00:00:00Z");
    assert_eq!(u["flightDates"]["endDate"], "2027-04-30T00:00:00Z");
    assert_eq!(u["performanceConfig"], goals, "absent leaves it");
    assert_eq!(u["brief"], "first");

    // An end before the kept start is refused.
    let res = app
        .put(
            &url,
            &t.key,
            &json!({"flightDates": {"endDate": "2027-01-01T00:00:00Z"}}),
        )
        .await;
    assert_field(&res, "flightDates.endDate");
    // A dailyCap above the kept total is refused.
    let res = app
        .put(&url, &t.key, &json!({"budget": {"dailyCap": 80000}}))
        .await;
    assert_field(&res, "budget.dailyCap");
    // A campaign never moves to another advertiser.
    let other = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &json!({"name": "Other", "brand": "other.example", "primaryCurrency": "USD"}),
        )
        .await
        .data()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app.put(&url, &t.key, &json!({"advertiserId": other})).await;
    assert_field(&res, "advertiserId");

    let res = app
        .put(&url, &t.key, &json!({"performanceConfig": null}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["campaign"]["performanceConfig"], Value::Null);
    assert_eq!(res.data()["campaign"]["name"], "Renamed");

    let audit = app.get(AUDIT, &t.key).await;
    let entry = &audit.data()[0];
    assert_eq!(entry["action"], "campaign.updated");
    assert_eq!(
        entry["changes"]["performanceConfig"]["to"],
        Value::Null,
        "{entry}"
    );
}

#[actix_web::test]
async fn status_transitions_follow_the_table_and_illegal_ones_conflict() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let c = create(&app, &t, body(&adv)).await;
    let id = c["campaignId"].as_str().unwrap().to_string();
    let status = |r: &Resp| r.data()["campaign"]["status"].as_str().unwrap().to_string();

    // A DRAFT is neither running nor paused.
    for action in ["pause", "resume"] {
        let res = app.post(&path(&id, action), &t.key, &json!({})).await;
        res.assert_error(409, "CONFLICT");
        assert_eq!(res.body["error"]["details"]["reason"], "illegal_transition");
    }
    // Archive and restore a draft.
    let res = app.post(&path(&id, "archive"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "ARCHIVED", "{}", res.body);
    // Archived campaigns are frozen.
    app.put(&format!("{CMP}/{id}"), &t.key, &json!({"name": "x"}))
        .await
        .assert_error(409, "CONFLICT");
    let res = app.post(&path(&id, "restore"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "DRAFT");

    // A running campaign pauses and resumes; repeats are no-ops.
    set_status(&app, &id, "ACTIVE").await;
    let res = app.post(&path(&id, "pause"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "PAUSED");
    let audits = app.get(AUDIT, &t.key).await.body["meta"]["pagination"]["total"].clone();
    let res = app.post(&path(&id, "pause"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "PAUSED");
    assert_eq!(
        app.get(AUDIT, &t.key).await.body["meta"]["pagination"]["total"],
        audits,
        "a repeat writes nothing"
    );
    let res = app.post(&path(&id, "resume"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "ACTIVE");
    // Restoring never restarts spend: an archived running campaign comes back paused.
    let res = app.post(&path(&id, "archive"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "ARCHIVED");
    let res = app.post(&path(&id, "restore"), &t.key, &json!({})).await;
    assert_eq!(status(&res), "PAUSED");

    // A completed campaign cannot pause or resume, nor change.
    set_status(&app, &id, "COMPLETED").await;
    for action in ["pause", "resume"] {
        app.post(&path(&id, action), &t.key, &json!({}))
            .await
            .assert_error(409, "CONFLICT");
    }
    app.put(&format!("{CMP}/{id}"), &t.key, &json!({"name": "x"}))
        .await
        .assert_error(409, "CONFLICT");

    let actions: Vec<String> = app
        .get(AUDIT, &t.key)
        .await
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["action"].as_str().unwrap().to_string())
        .collect();
    for a in [
        "campaign.created",
        "campaign.archived",
        "campaign.restored",
        "campaign.paused",
        "campaign.resumed",
    ] {
        assert!(actions.iter().any(|x| x == a), "{a} in {actions:?}");
    }
    // Unknown and malformed ids are 404.
    for bad in ["cmp_00000000000000000000000000000000", "nope"] {
        app.post(&path(bad, "pause"), &t.key, &json!({}))
            .await
            .assert_error(404, "NOT_FOUND");
        app.get(&format!("{CMP}/{bad}"), &t.key)
            .await
            .assert_error(404, "NOT_FOUND");
    }
}

#[actix_web::test]
async fn list_pages_and_filters_by_advertiser_and_status() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = advertiser(&app, &t).await;
    let b = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &json!({"name": "B", "brand": "b.example", "primaryCurrency": "USD"}),
        )
        .await
        .data()["id"]
        .as_str()
        .unwrap()
        .to_string();
    for i in 0..3 {
        create(&app, &t, with(&a, json!({"name": format!("A{i}")}))).await;
    }
    let cb = create(&app, &t, with(&b, json!({"name": "B0"}))).await;
    let id = cb["campaignId"].as_str().unwrap();
    app.post(&path(id, "archive"), &t.key, &json!({})).await;

    let res = app.get(&format!("{CMP}?take=2"), &t.key).await;
    assert_eq!(res.data().as_array().unwrap().len(), 2);
    assert_eq!(
        res.body["meta"]["pagination"],
        json!({"skip": 0, "take": 2, "total": 4, "hasMore": true})
    );
    assert_eq!(res.data()[0]["name"], "B0", "newest first");
    let res = app.get(&format!("{CMP}?advertiserId={a}"), &t.key).await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 3);
    let res = app.get(&format!("{CMP}?status=archived"), &t.key).await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 1);
    assert_eq!(res.data()[0]["campaignId"], id);
    let res = app
        .get(&format!("{CMP}?status=DRAFT&advertiserId={b}"), &t.key)
        .await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 0);

    assert_field(
        &app.get(&format!("{CMP}?status=LIVE"), &t.key).await,
        "status",
    );
    assert_field(
        &app.get(&format!("{CMP}?advertiserId=x"), &t.key).await,
        "advertiserId",
    );
    assert_field(&app.get(&format!("{CMP}?take=101"), &t.key).await, "take");
    assert_field(
        &app.get(&format!("{CMP}?fields=everything"), &t.key).await,
        "fields",
    );
    let res = app
        .get(&format!("{CMP}?fields=geo_metro_names"), &t.key)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(
        res.data()[0].get("geo_metro_names").is_some(),
        "{}",
        res.body
    );
}

#[actix_web::test]
async fn another_accounts_campaigns_and_advertisers_are_invisible() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let c = create(&app, &t, body(&adv)).await;
    let id = c["campaignId"].as_str().unwrap();
    let stranger = app.tenant().await;

    app.get(&format!("{CMP}/{id}"), &stranger.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.put(
        &format!("{CMP}/{id}"),
        &stranger.key,
        &json!({"name": "mine"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    for action in ["pause", "resume", "archive", "restore"] {
        app.post(&path(id, action), &stranger.key, &json!({}))
            .await
            .assert_error(404, "NOT_FOUND");
    }
    assert_eq!(count(&app, &stranger).await, 0);
    // Nor can a stranger create a campaign for the advertiser.
    let res = app.post(CMP, &stranger.key, &body(&adv)).await;
    res.assert_error(404, "NOT_FOUND");
    assert_eq!(res.body["error"]["field"], "advertiserId");
    assert_eq!(count(&app, &t).await, 1);
    assert_eq!(
        app.get(&format!("{CMP}/{id}"), &t.key).await.data()["campaign"]["name"],
        "Spring launch"
    );

    // A read-only member reads but cannot write.
    let reader = app
        .user_in(&t.account_id, "admin", &["platform:read"])
        .await;
    assert_eq!(
        app.get(&format!("{CMP}/{id}"), &reader.key).await.status,
        200
    );
    app.post(CMP, &reader.key, &body(&adv))
        .await
        .assert_error(403, "FORBIDDEN");
    app.post(&path(id, "archive"), &reader.key, &json!({}))
        .await
        .assert_error(403, "FORBIDDEN");
    app.get(CMP, "not-a-key")
        .await
        .assert_error(401, "UNAUTHORIZED");
}

#[actix_web::test]
async fn a_discovery_session_attaches_and_the_storefront_pin_is_discoverys_fallback() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let fast = Behaviour {
        delay: Duration::from_millis(0),
        products: json!([product("p-1", 10.0)]),
        ..Behaviour::default()
    };
    let (_a, a) = seller(&app, "Pinned", fast.clone()).await;
    let (_b, _) = seller(&app, "Other", fast).await;
    let c = create(&app, &t, with(&adv, json!({"storefrontIds": [a]}))).await;
    let id = c["campaignId"].as_str().unwrap();

    let disc = "/api/v2/buyer/discovery/discover-products";
    let res = app
        .post(
            disc,
            &t.key,
            &json!({"advertiserId": adv, "campaignId": id, "storefrontIds": []}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data()["summary"]["storefrontsQueried"],
        1,
        "{}",
        res.body
    );
    let discovery = res.data()["discoveryId"].as_str().unwrap().to_string();
    // Sent storefronts win over the pin.
    let res = app.post(disc, &t.key, &json!({"advertiserId": adv})).await;
    assert_eq!(
        res.data()["summary"]["storefrontsQueried"],
        2,
        "{}",
        res.body
    );

    // The session attaches to the campaign; another account's does not.
    let res = app
        .put(
            &format!("{CMP}/{id}"),
            &t.key,
            &json!({"discoveryId": discovery}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["campaign"]["discoveryId"], discovery.as_str());
    let stranger = app.tenant().await;
    let sadv = advertiser(&app, &stranger).await;
    let res = app
        .post(
            CMP,
            &stranger.key,
            &with(&sadv, json!({"discoveryId": discovery})),
        )
        .await;
    assert_field(&res, "discoveryId");
    // A stranger's campaign is not a pin either.
    let res = app
        .post(
            disc,
            &stranger.key,
            &json!({"advertiserId": sadv, "campaignId": id}),
        )
        .await;
    res.assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn named_operations_and_v3_save_campaign_run_the_same_code_as_rest() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let caller = app.state.auth.authenticate(&t.key).await.unwrap().unwrap();
    let call = |v: Value| serde_json::from_value::<OperationCall>(v).unwrap();

    let created = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "create_campaign", "body": body(&adv)})),
    )
    .await
    .unwrap();
    let id = created.data["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    let rest = app.get(&format!("{CMP}/{id}"), &t.key).await;
    assert_eq!(rest.data(), &created.data);
    let err = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "create_campaign",
                     "body": with(&adv, json!({"budget": {"total": 5, "currency": "GBP"}}))})),
    )
    .await
    .unwrap_err();
    assert_eq!(err.code(), "CURRENCY_MISMATCH");
    let listed = dispatch(
        &app.state.ctx,
        caller.clone(),
        call(json!({"operation": "list_campaigns", "params": {"status": "DRAFT", "take": 1}})),
    )
    .await
    .unwrap();
    assert_eq!(listed.data.as_array().unwrap().len(), 1);

    // /mcp/v3: save_campaign creates, updates, archives and restores.
    let mut s = open_at(&app, "/mcp/v3", &t.key).await;
    let made = s.call(&app, "save_campaign", body(&adv)).await;
    assert_ne!(made["isError"], true, "{made}");
    let v3id = made["structuredContent"]["data"]["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    let renamed = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": v3id, "name": "Via v3", "isArchived": true}),
        )
        .await;
    let c = &renamed["structuredContent"]["data"]["campaign"];
    assert_eq!(c["name"], "Via v3", "{renamed}");
    assert_eq!(c["status"], "ARCHIVED", "{renamed}");
    // Restore and rename in one call: the restore runs first.
    let back = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": v3id, "name": "Back", "isArchived": false}),
        )
        .await;
    let c = &back["structuredContent"]["data"]["campaign"];
    assert_eq!(
        (c["status"].as_str(), c["name"].as_str()),
        (Some("DRAFT"), Some("Back")),
        "{back}"
    );
    set_status(&app, &v3id, "ACTIVE").await;
    let paused = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": v3id, "isPaused": true}),
        )
        .await;
    assert_eq!(
        paused["structuredContent"]["data"]["campaign"]["status"], "PAUSED",
        "{paused}"
    );
    let resumed = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": v3id, "isPaused": false}),
        )
        .await;
    assert_eq!(
        resumed["structuredContent"]["data"]["campaign"]["status"], "ACTIVE",
        "{resumed}"
    );
    // A new campaign has no cart to launch; nothing is written by the attempt.
    let before = count(&app, &t).await;
    let launch = s
        .call(
            &app,
            "save_campaign",
            with(&adv, json!({"desiredPhase": "active"})),
        )
        .await;
    assert_eq!(launch["isError"], true);
    assert_eq!(launch["structuredContent"]["code"], "CONFLICT", "{launch}");
    assert_eq!(count(&app, &t).await, before);
    let bad = s
        .call(
            &app,
            "save_campaign",
            with(&adv, json!({"budget": {"total": -1}})),
        )
        .await;
    assert_eq!(bad["structuredContent"]["field"], "budget.total", "{bad}");
    // search and get know campaigns.
    let got = s
        .call(&app, "get", json!({"type": "campaign", "id": v3id}))
        .await;
    let rest = app.get(&format!("{CMP}/{v3id}"), &t.key).await;
    assert_eq!(&got["structuredContent"]["data"], rest.data());
    let found = s.call(&app, "search", json!({"type": "campaign"})).await;
    assert_eq!(
        found["structuredContent"]["meta"]["pagination"]["total"], 2,
        "{found}"
    );
    let status = s.call(&app, "get_status", json!({})).await;
    assert_eq!(
        status["structuredContent"]["data"]["counts"]["campaigns"], 2,
        "{status}"
    );
    // A stranger's tool cannot see it.
    let stranger = app.tenant().await;
    let mut other = open_at(&app, "/mcp/v3", &stranger.key).await;
    let hidden = other
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": v3id, "name": "mine"}),
        )
        .await;
    assert_eq!(hidden["structuredContent"]["code"], "NOT_FOUND", "{hidden}");
}

/// `save_campaign`'s steps are one transaction: when a later step fails,
/// the earlier ones (and their audit entries) are undone.
#[actix_web::test]
async fn a_v3_save_campaign_whose_later_step_fails_changes_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let id = create(&app, &t, body(&adv)).await["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app.post(&path(&id, "archive"), &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let before = app.get(&format!("{CMP}/{id}"), &t.key).await;
    let audits =
        || async { app.get(AUDIT, &t.key).await.body["meta"]["pagination"]["total"].clone() };
    let audited = audits().await;

    // Restore (a DRAFT again), rename, then pause: a DRAFT cannot be paused.
    let mut s = open_at(&app, "/mcp/v3", &t.key).await;
    let failed = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": id, "isArchived": false, "name": "Renamed", "isPaused": true}),
        )
        .await;
    assert_eq!(failed["isError"], true, "{failed}");
    assert_eq!(failed["structuredContent"]["code"], "CONFLICT", "{failed}");
    let after = app.get(&format!("{CMP}/{id}"), &t.key).await;
    assert_eq!(after.data(), before.data(), "nothing of the call stays");
    assert_eq!(after.data()["campaign"]["status"], "ARCHIVED");
    assert_eq!(
        audits().await,
        audited,
        "no audit entry of the undone steps"
    );

    // An invalid field after a restore: the restore is undone too.
    let failed = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": id, "isArchived": false, "budget": {"total": -1}}),
        )
        .await;
    assert_eq!(
        failed["structuredContent"]["field"], "budget.total",
        "{failed}"
    );
    let after = app.get(&format!("{CMP}/{id}"), &t.key).await;
    assert_eq!(after.data(), before.data());

    // Without the failing step, the same call applies both, with their entries.
    let saved = s
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": id, "isArchived": false, "name": "Renamed"}),
        )
        .await;
    let c = &saved["structuredContent"]["data"]["campaign"];
    assert_eq!(
        (c["status"].as_str(), c["name"].as_str()),
        (Some("DRAFT"), Some("Renamed")),
        "{saved}"
    );
    assert_eq!(
        audits().await.as_u64().unwrap(),
        audited.as_u64().unwrap() + 2,
        "campaign.restored and campaign.updated"
    );
    // A read-only key may not run the steps.
    let reader = app
        .user_in(&t.account_id, "admin", &["platform:read"])
        .await;
    let mut r = open_at(&app, "/mcp/v3", &reader.key).await;
    let refused = r
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": id, "isArchived": true}),
        )
        .await;
    assert_eq!(
        refused["structuredContent"]["code"], "FORBIDDEN",
        "{refused}"
    );
}

#[actix_web::test]
async fn constraints_go_through_the_targeting_vocabularies() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let constraints = json!({
        "countries": ["us"],
        "geo_countries_exclude": ["CA"],
        "geo_regions": ["US-NY", "US-CA"],
        "geo_regions_exclude": ["US-CA"],
        "geo_metros": [{"system": "nielsen_dma", "values": ["501", "803"]}],
        "geo_metros_exclude": [{"system": "nielsen_dma", "values": ["803"]}],
        "geo_postal_areas": [{"country": "US", "system": "zip", "values": ["10001"]}],
        "language": ["en"],
        "device_type": ["mobile", "ctv"],
        "device_platform": ["ios"]
    });
    let c = create(&app, &t, with(&adv, json!({"constraints": constraints}))).await;
    let stored = &c["constraints"];
    // The deprecated alias is stored under its current name, upper-cased.
    assert_eq!(stored["geo_countries"], json!(["US"]), "{stored}");
    assert!(stored.get("countries").is_none(), "{stored}");
    let e = &c["effectiveTargeting"];
    assert_eq!(
        e["geo_regions"],
        json!(["US-NY"]),
        "excludes come off includes: {e}"
    );
    assert_eq!(e["geo_countries"], json!(["US"]), "{e}");

    // Metro names on request, from the DMA vocabulary.
    let id = c["campaignId"].as_str().unwrap();
    let got = app
        .get(&format!("{CMP}/{id}?fields=geo_metro_names"), &t.key)
        .await;
    let g = &got.data()["campaign"];
    let names = g["geo_metro_names"].as_array().unwrap();
    assert_eq!(names.len(), 2, "{g}");
    assert_eq!(names[0]["code"], "501");
    assert_eq!(names[0]["name"], "New York, NY");
    assert_eq!(g["geo_metro_names_exclude"][0]["code"], "803");
    assert!(g["geo_metro_names_exclude"][0]["name"].is_string(), "{g}");

    // Failing cases, each at its path under `constraints`, nothing written.
    let before = count(&app, &t).await;
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"geo_countries": ["XX"]}),
            "constraints.geo_countries[0]",
        ),
        (
            json!({"geo_regions": ["US-ZZ"]}),
            "constraints.geo_regions[0]",
        ),
        (
            json!({"geo_metros": [{"system": "nielsen_dma", "values": ["New York"]}]}),
            "constraints.geo_metros[0].values[0]",
        ),
        (
            json!({"geo_postal_areas": [{"country": "GB", "system": "zip", "values": ["SW1A"]}]}),
            "constraints.geo_postal_areas[0].system",
        ),
        (json!({"language": ["english"]}), "constraints.language[0]"),
        (
            json!({"device_type": ["toaster"]}),
            "constraints.device_type[0]",
        ),
        (json!({"colour": ["red"]}), "constraints.colour"),
    ];
    for (bad, field) in cases {
        let res = app
            .post(CMP, &t.key, &with(&adv, json!({"constraints": bad})))
            .await;
        assert_field(&res, field);
    }
    assert_eq!(count(&app, &t).await, before);

    // Update replaces the constraints; `{}` clears them.
    let res = app
        .put(&format!("{CMP}/{id}"), &t.key, &json!({"constraints": {}}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["campaign"]["constraints"], json!({}));
}

#[actix_web::test]
async fn a_catalog_of_the_campaigns_advertiser_attaches_and_no_other() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let item = json!({"item_id": "sku-1", "title": "Shoe", "price": {"amount": 10.0, "currency": "USD"},
                      "url": "https://shop.example/sku-1"});
    let synced = app
        .post(
            &format!("/api/v2/buyer/advertisers/{adv}/catalogs/sync"),
            &t.key,
            &json!({"catalogs": [{"name": "Shoes", "items": [item]}]}),
        )
        .await;
    assert_eq!(synced.status, 200, "{}", synced.body);
    let cat = synced.data()["catalogs"][0]["catalogId"]
        .as_str()
        .unwrap()
        .to_string();
    let c = create(&app, &t, with(&adv, json!({"catalogId": cat}))).await;
    assert_eq!(c["catalogId"], cat.as_str());
    let id = c["campaignId"].as_str().unwrap();
    let res = app
        .put(&format!("{CMP}/{id}"), &t.key, &json!({"catalogId": null}))
        .await;
    assert_eq!(
        res.data()["campaign"]["catalogId"],
        Value::Null,
        "{}",
        res.body
    );

    // Another advertiser's catalog, even of the same account, is refused.
    let other = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &json!({"name": "B", "brand": "b.example", "primaryCurrency": "USD"}),
        )
        .await
        .data()["id"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app
        .post(CMP, &t.key, &with(&other, json!({"catalogId": cat})))
        .await;
    assert_field(&res, "catalogId");
    // And another account's.
    let stranger = app.tenant().await;
    let sadv = advertiser(&app, &stranger).await;
    let res = app
        .post(CMP, &stranger.key, &with(&sadv, json!({"catalogId": cat})))
        .await;
    assert_field(&res, "catalogId");
}
