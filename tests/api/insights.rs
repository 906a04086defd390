//! Insights over real HTTP: test cohorts (auto-selected products' test
//! budgets and their results from the delivery rows and conversions),
//! human feedback, and the measurement engine (event sources, batches
//! deduplicated by event id, conversions). Every listing's take/skip,
//! filters and tenancy; every error row with nothing written.

use sea_orm::{ActiveModelTrait, EntityTrait, PaginatorTrait, Set};
use serde_json::{Value, json};

use crate::fake_seller::{Behaviour, product};
use crate::helpers::*;
use crate::media_buys::{eur_advertiser, new_campaign, setup};

const COHORTS: &str = "/api/v2/buyer/test-cohorts";
const FEEDBACK: &str = "/api/v2/buyer/human-feedback";
const SOURCES: &str = "/api/v2/buyer/measurement-engine/event-sources";
const EVENTS: &str = "/api/v2/buyer/measurement-engine/events";
const CONVERSIONS: &str = "/api/v2/buyer/measurement-engine/conversions";

/// An event goal on `source` (AdCP performanceConfig).
fn event_goal(source: &str) -> Value {
    json!({"optimizationGoals": [{"kind": "event", "priority": 1,
        "eventSources": [{"eventSourceId": source, "eventType": "purchase"}]}]})
}

/// A campaign of `adv` (EUR), with `extra` fields.
async fn campaign(app: &TestApp, t: &Tenant, adv: &str, extra: Value) -> String {
    let mut body = new_campaign(1000.0)["create"].clone();
    body["advertiserId"] = json!(adv);
    for (k, v) in extra.as_object().unwrap() {
        body[k] = v.clone();
    }
    let c = app.post("/api/v2/buyer/campaigns", &t.key, &body).await;
    assert_eq!(c.status, 201, "{}", c.body);
    c.data()["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn source(app: &TestApp, t: &Tenant, adv: &str, id: &str) {
    let r = app
        .post(
            SOURCES,
            &t.key,
            &json!({"advertiserId": adv, "eventSourceId": id, "name": "Site tag"}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
}

fn event(id: &str, campaign: &str, value: f64) -> Value {
    json!({"eventId": id, "eventType": "purchase", "eventTime": chrono::Utc::now().to_rfc3339(),
           "campaignId": campaign, "value": value})
}

async fn sync(app: &TestApp, t: &Tenant, adv: &str, src: &str, events: Vec<Value>) -> Resp {
    app.post(
        EVENTS,
        &t.key,
        &json!({"advertiserId": adv, "eventSourceId": src, "events": events}),
    )
    .await
}

async fn conversion_rows(app: &TestApp) -> u64 {
    entity::conversion_event::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

fn ids(data: &Value, key: &str) -> Vec<String> {
    data.as_array()
        .unwrap()
        .iter()
        .map(|r| r[key].as_str().unwrap().to_string())
        .collect()
}

/// A package day of a buy, as the delivery pull writes it.
async fn delivery_row(
    app: &TestApp,
    t: &Tenant,
    adv: &str,
    campaign: &str,
    buy: &str,
    (date, placement, currency): (&str, &str, &str),
    (impressions, spend, clicks): (i64, f64, i64),
) {
    entity::delivery_daily::ActiveModel {
        account_id: Set(t.account_id.clone()),
        advertiser_id: Set(adv.to_string()),
        campaign_id: Set(campaign.to_string()),
        media_buy_id: Set(buy.to_string()),
        package_id: Set(format!("{buy}_p1")),
        placement_id: Set(placement.to_string()),
        date: Set(date.to_string()),
        impressions: Set(impressions),
        spend: Set(spend),
        clicks: Set(Some(clicks)),
        video_completions: Set(None),
        pricing_model: Set("cpm".into()),
        units: Set(Some(impressions as f64 / 1000.0)),
        currency: Set(currency.to_string()),
        pulled_at: Set(chrono::Utc::now()),
        ..Default::default()
    }
    .insert(&app.db)
    .await
    .unwrap();
}

#[actix_web::test]
async fn test_cohorts_show_each_auto_selected_products_test_budget_and_results() {
    let app = spawn_app_with(|c| {
        c.media_buy_poll_seconds = 1;
        c.media_buy_delivery_seconds = 1;
    })
    .await;
    let t = app.tenant().await;
    let s = setup(
        &app,
        &t,
        Behaviour {
            products: json!([product("ctv-1", 30.0), product("olv-2", 12.5)]),
            ..Behaviour::default()
        },
    )
    .await;
    let adv = app.get("/api/v2/buyer/advertisers", &t.key).await.data()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let goal = json!({"discoveryId": s.session, "autonomy": {"inventorySelection": "automatic"},
                      "performanceConfig": event_goal("site")});
    let first = campaign(&app, &t, &adv, goal.clone()).await;
    let second = campaign(&app, &t, &adv, goal).await;
    let select = format!("/api/v2/buyer/discovery/{}/auto-select", s.session);
    for c in [&first, &second] {
        let r = app
            .post(&format!("{select}?campaignId={c}"), &t.key, &json!(null))
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        assert_eq!(r.data()["testBudgetPerProduct"], 50.0, "{}", r.body);
    }
    // Before any buy: two cohorts per campaign, not bought.
    let q = format!("{COHORTS}?campaignId={first}");
    let r = app.get(&q, &t.key).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = r.data().as_array().unwrap().clone();
    assert_eq!(rows.len(), 2, "{}", r.body);
    assert_eq!(r.body["meta"]["pagination"]["total"], 2);
    assert!(rows.iter().all(|c| c["campaignId"] == first.as_str()));
    assert!(rows.iter().all(|c| c["status"] == "not_bought"));
    assert_eq!(rows[0]["rank"], 1);
    assert_eq!(rows[0]["testBudget"], 50.0);
    assert_eq!(rows[0]["currency"], "EUR");
    assert_eq!(rows[0]["selectionMethod"], "scoring");
    assert_eq!(rows[0]["performance"]["impressions"], 0);
    assert_eq!(rows[0]["performance"]["cpm"], Value::Null);
    // Selecting again replaces the campaign's cohorts (no duplicates).
    let again = app
        .post(
            &format!("{select}?campaignId={first}&method=cpm_heuristic"),
            &t.key,
            &json!(null),
        )
        .await;
    assert_eq!(again.status, 200, "{}", again.body);
    let r = app.get(&q, &t.key).await;
    assert_eq!(r.data().as_array().unwrap().len(), 2, "{}", r.body);
    assert_eq!(r.data()[0]["selectionMethod"], "cpm_heuristic");
    assert_eq!(r.data()[0]["productId"], "olv-2", "cheapest first");

    // Launch: the automatic campaign buys its selection.
    let launch = app
        .post(
            &format!("/api/v2/buyer/campaigns/{first}/execute"),
            &t.key,
            &json!({}),
        )
        .await;
    assert_eq!(launch.status, 200, "{}", launch.body);
    let buys = launch.data()["mediaBuys"].as_array().unwrap().clone();
    let buy = |p: &str| {
        buys.iter().find(|b| b["productId"] == p).unwrap()["mediaBuyId"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let (olv, ctv) = (buy("olv-2"), buy("ctv-1"));
    // ctv-1's delivery comes from its seller's report, pulled by the poller.
    let at = buys
        .iter()
        .find(|b| b["mediaBuyId"] == ctv.as_str())
        .unwrap()["adcpMediaBuyId"]
        .as_str()
        .unwrap()
        .to_string();
    s.seller.set_report(
        &at,
        json!({"currency": "EUR", "totals": {"impressions": 1000, "spend": 10.0},
               "by_package": [{"package_id": format!("{at}_p1"), "impressions": 1000, "spend": 10.0,
                 "daily_breakdown": [{"date": "2026-12-05", "impressions": 1000, "spend": 10.0, "clicks": 0}]}]}),
    );
    // Delivery rows as the pull writes them (on days the fake seller's
    // default report, 2026-12-01 in USD, does not touch): olv-2 spends past
    // its test budget over two days; its placement rows and a row in
    // another currency do not count.
    let c = |d, p, cur| (d, p, cur);
    delivery_row(
        &app,
        &t,
        &adv,
        &first,
        &olv,
        c("2026-12-05", "", "EUR"),
        (4000, 30.0, 40),
    )
    .await;
    delivery_row(
        &app,
        &t,
        &adv,
        &first,
        &olv,
        c("2026-12-06", "", "EUR"),
        (2000, 25.0, 10),
    )
    .await;
    delivery_row(
        &app,
        &t,
        &adv,
        &first,
        &olv,
        c("2026-12-06", "home", "EUR"),
        (2000, 25.0, 10),
    )
    .await;
    delivery_row(
        &app,
        &t,
        &adv,
        &first,
        &olv,
        c("2026-12-07", "", "USD"),
        (9999, 99.0, 9),
    )
    .await;
    // Conversions attributed to the olv-2 buy.
    source(&app, &t, &adv, "site").await;
    let mut e1 = event("o-1", &first, 20.0);
    e1["mediaBuyId"] = json!(olv);
    let mut e2 = event("o-2", &first, 35.0);
    e2["mediaBuyId"] = json!(olv);
    let e3 = event("o-3", &first, 5.0);
    let r = sync(&app, &t, &adv, "site", vec![e1, e2, e3]).await;
    assert_eq!(r.status, 200, "{}", r.body);

    let mut rows = Vec::new();
    for _ in 0..150 {
        let r = app.get(&q, &t.key).await;
        rows = r.data().as_array().unwrap().clone();
        let pulled = rows
            .iter()
            .any(|c| c["productId"] == "ctv-1" && c["performance"]["spend"] == 10.0);
        if pulled {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let of = |p: &str| rows.iter().find(|c| c["productId"] == p).unwrap().clone();
    let o = of("olv-2");
    assert_eq!(o["status"], "test_complete", "{o}");
    assert_eq!(o["mediaBuyIds"], json!([olv]));
    let perf = &o["performance"];
    assert_eq!(perf["impressions"], 6000, "{o}");
    assert_eq!(perf["spend"], 55.0);
    assert_eq!(perf["clicks"], 50);
    assert_eq!(perf["ctr"], 0.0083);
    assert_eq!(perf["cpm"], 9.166667);
    assert_eq!(perf["conversions"], 2);
    assert_eq!(perf["conversionValue"], 55.0);
    assert_eq!(perf["costPerConversion"], 27.5);
    assert_eq!(perf["testBudgetUsed"], 1.1);
    assert_eq!(perf["lastDeliveryDate"], "2026-12-06");
    let k = of("ctv-1");
    assert_eq!(k["status"], "testing", "{k}");
    assert_eq!(k["performance"]["spend"], 10.0);
    assert_eq!(k["performance"]["clicks"], 0);
    assert_eq!(k["performance"]["ctr"], 0.0);
    assert_eq!(k["performance"]["conversions"], 0);
    assert_eq!(k["performance"]["costPerConversion"], Value::Null);
    assert_eq!(k["performance"]["testBudgetUsed"], 0.2);

    // Pages: four cohorts in all, newest selection first.
    let all = app.get(COHORTS, &t.key).await;
    assert_eq!(all.body["meta"]["pagination"]["total"], 4, "{}", all.body);
    let every = ids(all.data(), "cohortId");
    let page = app.get(&format!("{COHORTS}?take=3&skip=1"), &t.key).await;
    assert_eq!(ids(page.data(), "cohortId"), every[1..4].to_vec());
    assert_eq!(page.body["meta"]["pagination"]["hasMore"], false);
    let page = app.get(&format!("{COHORTS}?take=2"), &t.key).await;
    assert_eq!(ids(page.data(), "cohortId"), every[0..2].to_vec());
    assert_eq!(page.body["meta"]["pagination"]["hasMore"], true);
    for bad in ["take=0", "take=101", "skip=-1", "take=x"] {
        app.get(&format!("{COHORTS}?{bad}"), &t.key)
            .await
            .assert_error(400, "VALIDATION_ERROR");
    }
    // Filters.
    let r = app
        .get(
            &format!("{COHORTS}?advertiserId={adv}&campaignId={second}"),
            &t.key,
        )
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 2);
    assert!(
        r.data()
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["campaignId"] == second.as_str())
    );
    let other_adv = eur_advertiser(&app, &t, false).await;
    let r = app
        .get(&format!("{COHORTS}?advertiserId={other_adv}"), &t.key)
        .await;
    assert_eq!(r.data(), &json!([]));
    let r = app
        .get(
            &format!("{COHORTS}?advertiserId={other_adv}&campaignId={first}"),
            &t.key,
        )
        .await;
    assert_eq!(
        r.data(),
        &json!([]),
        "the campaign is not that advertiser's"
    );

    // Tenancy: another account sees none of them, and its filters on
    // this account's advertiser or campaign are 404.
    let u = app.tenant().await;
    let r = app.get(COHORTS, &u.key).await;
    assert_eq!(r.data(), &json!([]));
    assert_eq!(r.body["meta"]["pagination"]["total"], 0);
    app.get(&format!("{COHORTS}?advertiserId={adv}"), &u.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&format!("{COHORTS}?campaignId={first}"), &u.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn human_feedback_rates_products_buys_and_proposals_per_account_and_advertiser() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let proposals = json!([{"proposal_id": "prop-mix", "name": "Mix",
        "allocations": [{"product_id": "ctv-1", "allocation_percentage": 100}]}]);
    let s = setup(
        &app,
        &t,
        Behaviour {
            proposals,
            ..Behaviour::default()
        },
    )
    .await;
    let adv = app.get("/api/v2/buyer/advertisers", &t.key).await.data()[0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let staged = app
        .post(
            crate::media_buys::BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "campaign": new_campaign(1000.0), "mode": "stage",
                    "selections": [crate::media_buys::pick("ctv-1", 100.0)]}),
        )
        .await;
    assert_eq!(staged.status, 200, "{}", staged.body);
    let buy = staged.data()["mediaBuys"][0]["mediaBuyId"]
        .as_str()
        .unwrap()
        .to_string();
    let campaign_id = staged.data()["campaignId"].as_str().unwrap().to_string();

    // One of each subject.
    let give = |body: Value| {
        let app = &app;
        let key = t.key.clone();
        async move { app.post(FEEDBACK, &key, &body).await }
    };
    let r = give(json!({"subject": {"type": "product", "id": "ctv-1", "discoveryId": s.session},
                        "rating": 5, "comment": "  Great reach  ", "tags": ["reach", "ctv", "reach"]}))
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let d = r.data();
    assert!(d["feedbackId"].as_str().unwrap().starts_with("hfb_"));
    assert_eq!(d["advertiserId"], adv.as_str());
    assert_eq!(
        d["subject"],
        json!({"type": "product", "id": "ctv-1", "discoveryId": s.session})
    );
    assert_eq!(d["comment"], "Great reach");
    assert_eq!(d["tags"], json!(["reach", "ctv"]));
    assert_eq!(d["campaignId"], Value::Null);
    assert_eq!(d["createdBy"], t.user_id);
    let r = give(json!({"subject": {"type": "media_buy", "id": buy}, "rating": 2})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.data()["campaignId"], campaign_id.as_str());
    assert_eq!(r.data()["tags"], json!([]));
    let r = give(
        json!({"subject": {"type": "proposal", "id": "prop-mix", "discoveryId": s.session},
                        "rating": 4, "tags": ["brand_safety"]}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Feedback on another advertiser's media buy of the same account.
    let other_adv = eur_advertiser(&app, &t, false).await;
    let session2 = crate::media_buys::discover(&app, &t, &other_adv).await;
    let r = give(
        json!({"subject": {"type": "product", "id": "olv-2", "discoveryId": session2},
                        "rating": 3}),
    )
    .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.data()["advertiserId"], other_adv.as_str());

    // Every error row: the right envelope, nothing written.
    let before = entity::human_feedback::Entity::find()
        .count(&app.db)
        .await
        .unwrap();
    let invalid = [
        (
            json!({"subject": {"type": "creative", "id": "x"}, "rating": 3}),
            "subject.type",
        ),
        (
            json!({"subject": {"type": "product", "id": "ctv-1"}, "rating": 3}),
            "subject.discoveryId",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": buy, "discoveryId": s.session}, "rating": 3}),
            "subject.discoveryId",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": ""}, "rating": 3}),
            "subject.id",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": buy}, "rating": 0}),
            "rating",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": buy}, "rating": 6}),
            "rating",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": buy}, "rating": 3, "comment": "x".repeat(2001)}),
            "comment",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": buy}, "rating": 3, "tags": ["Bad Tag"]}),
            "tags[0]",
        ),
        (
            json!({"subject": {"type": "media_buy", "id": buy}, "rating": 3, "tags": (0..11).map(|i| format!("t{i}")).collect::<Vec<_>>()}),
            "tags",
        ),
    ];
    for (body, field) in invalid {
        let r = give(body.clone()).await;
        r.assert_error(400, "VALIDATION_ERROR");
        let issues = r.body["error"]["details"]["issues"].as_array().unwrap();
        assert!(
            issues.iter().any(|i| i["path"] == field),
            "{field}: {}",
            r.body
        );
    }
    for body in [
        json!({"subject": {"type": "media_buy", "id": buy}, "rating": 3.5}),
        json!({"subject": {"type": "media_buy", "id": buy}}),
        json!({"subject": {"type": "media_buy", "id": buy}, "rating": 3, "userEmail": "a@b.c"}),
        json!("not an object"),
    ] {
        give(body).await.assert_error(400, "VALIDATION_ERROR");
    }
    let u = app.tenant().await;
    let theirs = |body: Value| {
        let app = &app;
        let key = u.key.clone();
        async move { app.post(FEEDBACK, &key, &body).await }
    };
    // Another account's buy, session, or a product or proposal not in the session: 404.
    theirs(json!({"subject": {"type": "media_buy", "id": buy}, "rating": 3}))
        .await
        .assert_error(404, "NOT_FOUND");
    theirs(json!({"subject": {"type": "product", "id": "ctv-1", "discoveryId": s.session}, "rating": 3}))
        .await
        .assert_error(404, "NOT_FOUND");
    give(json!({"subject": {"type": "product", "id": "nope-9", "discoveryId": s.session}, "rating": 3}))
        .await
        .assert_error(404, "NOT_FOUND");
    give(json!({"subject": {"type": "proposal", "id": "prop-none", "discoveryId": s.session}, "rating": 3}))
        .await
        .assert_error(404, "NOT_FOUND");
    give(json!({"subject": {"type": "product", "id": "ctv-1", "discoveryId": "disc_nope"}, "rating": 3}))
        .await
        .assert_error(404, "NOT_FOUND");
    let after = entity::human_feedback::Entity::find()
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(before, after, "no error wrote anything");

    // The listing: newest first, pages, filters.
    let all = app.get(FEEDBACK, &t.key).await;
    assert_eq!(all.status, 200, "{}", all.body);
    assert_eq!(all.body["meta"]["pagination"]["total"], 4);
    let every = ids(all.data(), "feedbackId");
    assert_eq!(
        all.data()[0]["advertiserId"],
        other_adv.as_str(),
        "newest first"
    );
    let page = app.get(&format!("{FEEDBACK}?take=2&skip=1"), &t.key).await;
    assert_eq!(ids(page.data(), "feedbackId"), every[1..3].to_vec());
    assert_eq!(page.body["meta"]["pagination"]["hasMore"], true);
    let page = app.get(&format!("{FEEDBACK}?take=2&skip=3"), &t.key).await;
    assert_eq!(ids(page.data(), "feedbackId"), every[3..4].to_vec());
    assert_eq!(page.body["meta"]["pagination"]["hasMore"], false);
    let r = app
        .get(&format!("{FEEDBACK}?advertiserId={adv}"), &t.key)
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 3);
    let r = app
        .get(
            &format!("{FEEDBACK}?advertiserId={adv}&subjectType=product"),
            &t.key,
        )
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 1);
    assert_eq!(r.data()[0]["subject"]["id"], "ctv-1");
    let r = app
        .get(&format!("{FEEDBACK}?subjectId={buy}"), &t.key)
        .await;
    assert_eq!(r.data().as_array().unwrap().len(), 1);
    assert_eq!(r.data()[0]["rating"], 2);
    app.get(&format!("{FEEDBACK}?subjectType=creative"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.get(&format!("{FEEDBACK}?take=101"), &t.key)
        .await
        .assert_error(400, "VALIDATION_ERROR");
    // Tenancy.
    let r = app.get(FEEDBACK, &u.key).await;
    assert_eq!(r.data(), &json!([]));
    app.get(&format!("{FEEDBACK}?advertiserId={adv}"), &u.key)
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn measurement_batches_are_deduplicated_by_event_id_and_counted_by_source_campaign_and_day() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = eur_advertiser(&app, &t, false).await;
    let goal = json!({"performanceConfig": event_goal("site")});
    let c1 = campaign(&app, &t, &adv, goal.clone()).await;
    let c2 = campaign(
        &app,
        &t,
        &adv,
        json!({"performanceConfig": {"optimizationGoals": [
        {"kind": "event", "priority": 1, "eventSources": [
            {"eventSourceId": "site", "eventType": "purchase"},
            {"eventSourceId": "crm", "eventType": "lead"}]}]}}),
    )
    .await;
    let plain = campaign(&app, &t, &adv, json!({})).await;
    let metric = campaign(
        &app,
        &t,
        &adv,
        json!({"performanceConfig": {"optimizationGoals": [
        {"kind": "metric", "metric": "clicks", "priority": 1}]}}),
    )
    .await;

    // Event sources: create, conflicts, errors, listing.
    source(&app, &t, &adv, "site").await;
    let r = app
        .post(
            SOURCES,
            &t.key,
            &json!({"advertiserId": adv, "eventSourceId": "crm", "name": " CRM upload ",
                    "eventTypes": ["lead", "qualify_lead", "lead"]}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.data()["name"], "CRM upload");
    assert_eq!(r.data()["eventTypes"], json!(["lead", "qualify_lead"]));
    let dup = app
        .post(
            SOURCES,
            &t.key,
            &json!({"advertiserId": adv, "eventSourceId": "site", "name": "Again"}),
        )
        .await;
    dup.assert_error(409, "CONFLICT");
    for (body, field) in [
        (
            json!({"advertiserId": adv, "eventSourceId": "bad id!", "name": "x"}),
            "eventSourceId",
        ),
        (
            json!({"advertiserId": adv, "eventSourceId": "", "name": "x"}),
            "eventSourceId",
        ),
        (
            json!({"advertiserId": adv, "eventSourceId": "ok", "name": "  "}),
            "name",
        ),
        (
            json!({"advertiserId": adv, "eventSourceId": "ok", "name": "x", "eventTypes": ["buy"]}),
            "eventTypes[0]",
        ),
    ] {
        let r = app.post(SOURCES, &t.key, &body).await;
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["field"], field, "{}", r.body);
    }
    let u = app.tenant().await;
    app.post(
        SOURCES,
        &u.key,
        &json!({"advertiserId": adv, "eventSourceId": "x", "name": "x"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    let adv2 = eur_advertiser(&app, &t, false).await;
    source(&app, &t, &adv2, "site").await; // the same id under another advertiser
    let r = app.get(SOURCES, &t.key).await;
    assert_eq!(r.body["meta"]["pagination"]["total"], 3, "{}", r.body);
    let r = app
        .get(
            &format!("{SOURCES}?advertiserId={adv}&take=1&skip=1"),
            &t.key,
        )
        .await;
    assert_eq!(ids(r.data(), "eventSourceId"), ["crm"]);
    assert_eq!(r.body["meta"]["pagination"]["total"], 2);
    assert_eq!(r.body["meta"]["pagination"]["hasMore"], false);
    let r = app
        .get(&format!("{SOURCES}?advertiserId={adv2}"), &t.key)
        .await;
    assert_eq!(ids(r.data(), "eventSourceId"), ["site"]);
    assert_eq!(app.get(SOURCES, &u.key).await.data(), &json!([]));
    app.get(&format!("{SOURCES}?advertiserId={adv}"), &u.key)
        .await
        .assert_error(404, "NOT_FOUND");

    // A batch, then the same batch again: nothing added.
    let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).to_rfc3339();
    let mut old = event("e-3", &c2, 7.5);
    old["eventTime"] = json!(yesterday);
    let batch = vec![
        event("e-1", &c1, 10.0),
        event("e-2", &c1, 5.25),
        old,
        event("e-1", &c1, 99.0), // repeated in the batch: the first counts
    ];
    let r = sync(&app, &t, &adv, "site", batch.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.data(),
        &json!({"eventSourceId": "site", "eventsReceived": 4, "eventsRecorded": 3, "duplicates": 1})
    );
    let r = sync(&app, &t, &adv, "site", batch).await;
    assert_eq!(r.data()["eventsRecorded"], 0, "{}", r.body);
    assert_eq!(r.data()["duplicates"], 4);
    let mut lead = event("e-1", &c2, 0.0);
    lead["eventType"] = json!("lead");
    lead["actionSource"] = json!("offline");
    lead.as_object_mut().unwrap().remove("value");
    let r = sync(&app, &t, &adv, "crm", vec![lead]).await;
    assert_eq!(
        r.data()["eventsRecorded"],
        1,
        "the same event id in another source: {}",
        r.body
    );
    assert_eq!(conversion_rows(&app).await, 4);

    // Every error row: the right envelope, nothing written.
    let now = chrono::Utc::now();
    let with = |k: &str, v: Value| {
        let mut e = event("new-1", &c1, 1.0);
        e[k] = v;
        e
    };
    let invalid: Vec<(Vec<Value>, &str)> = vec![
        (vec![], "events"),
        (
            (0..501)
                .map(|i| event(&format!("b-{i}"), &c1, 1.0))
                .collect(),
            "events",
        ),
        (vec![with("eventId", json!(""))], "events[0].eventId"),
        (vec![with("eventType", json!("buy"))], "events[0].eventType"),
        (
            vec![with("eventTime", json!("yesterday"))],
            "events[0].eventTime",
        ),
        (
            vec![with(
                "eventTime",
                json!((now + chrono::Duration::hours(1)).to_rfc3339()),
            )],
            "events[0].eventTime",
        ),
        (
            vec![with(
                "eventTime",
                json!((now - chrono::Duration::days(91)).to_rfc3339()),
            )],
            "events[0].eventTime",
        ),
        (vec![with("value", json!(-1))], "events[0].value"),
        (vec![with("currency", json!("eur"))], "events[0].currency"),
        (
            vec![with("actionSource", json!("tv"))],
            "events[0].actionSource",
        ),
        (
            vec![
                event("ok-1", &c1, 1.0),
                with("mediaBuyId", json!("mb_none")),
            ],
            "events[1].mediaBuyId",
        ),
    ];
    for (events, field) in invalid {
        let r = sync(&app, &t, &adv, "site", events).await;
        r.assert_error(400, "VALIDATION_ERROR");
        let issues = r.body["error"]["details"]["issues"].as_array().unwrap();
        assert!(
            issues.iter().any(|i| i["path"] == field),
            "{field}: {}",
            r.body
        );
    }
    // A type the source does not send.
    let r = sync(&app, &t, &adv, "crm", vec![event("p-1", &c2, 1.0)]).await;
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["field"], "events[0].eventType");
    // A campaign of another advertiser of the account.
    let c_other = campaign(&app, &t, &adv2, goal.clone()).await;
    let r = sync(&app, &t, &adv, "site", vec![event("x-1", &c_other, 1.0)]).await;
    r.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(r.body["error"]["field"], "events[0].campaignId");
    // Another currency than the advertiser's.
    let r = sync(&app, &t, &adv, "site", vec![with("currency", json!("USD"))]).await;
    r.assert_error(400, "CURRENCY_MISMATCH");
    assert_eq!(r.body["error"]["details"]["expected"], "EUR");
    // Campaigns without an event goal on this source: 422.
    for c in [&plain, &metric] {
        let r = sync(
            &app,
            &t,
            &adv,
            "site",
            vec![event("g-1", &c1, 1.0), event("g-2", c, 1.0)],
        )
        .await;
        r.assert_error(422, "CAPABILITY_NOT_SUPPORTED");
        assert_eq!(
            r.body["error"]["details"]["campaignIds"],
            json!([c]),
            "{}",
            r.body
        );
    }
    let r = sync(
        &app,
        &t,
        &adv,
        "crm",
        vec![{
            let mut e = event("g-3", &c1, 1.0);
            e["eventType"] = json!("lead");
            e
        }],
    )
    .await;
    r.assert_error(422, "CAPABILITY_NOT_SUPPORTED");
    // Unknown or another account's: 404.
    sync(&app, &t, &adv, "nope", vec![event("n-1", &c1, 1.0)])
        .await
        .assert_error(404, "NOT_FOUND");
    let r = sync(
        &app,
        &t,
        &adv,
        "site",
        vec![event("n-2", "cmp_00000000000000000000000000000000", 1.0)],
    )
    .await;
    r.assert_error(404, "NOT_FOUND");
    assert_eq!(
        r.body["error"]["details"]["missingCampaignIds"],
        json!(["cmp_00000000000000000000000000000000"])
    );
    sync(&app, &u, &adv, "site", vec![event("n-3", &c1, 1.0)])
        .await
        .assert_error(404, "NOT_FOUND");
    let u_adv = eur_advertiser(&app, &u, false).await;
    source(&app, &u, &u_adv, "site").await;
    sync(&app, &u, &u_adv, "site", vec![event("n-4", &c1, 1.0)])
        .await
        .assert_error(404, "NOT_FOUND");
    // Unknown fields (no user identifiers are taken) and a body over the limit.
    let r = sync(&app, &t, &adv, "site", vec![with("email", json!("a@b.c"))]).await;
    r.assert_error(400, "VALIDATION_ERROR");
    let big: Vec<Value> = (0..500)
        .map(|i| event(&format!("{i}-{}", "x".repeat(600)), &c1, 1.0))
        .collect();
    let r = sync(&app, &t, &adv, "site", big).await;
    r.assert_error(413, "PAYLOAD_TOO_LARGE");
    assert_eq!(conversion_rows(&app).await, 4, "no error wrote anything");

    // Conversions: per day, source, campaign and type.
    let r = app.get(CONVERSIONS, &t.key).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let rows = r.data().as_array().unwrap().clone();
    assert_eq!(rows.len(), 3, "{}", r.body);
    let today = chrono::Utc::now().date_naive().to_string();
    let day_before = (chrono::Utc::now() - chrono::Duration::days(1))
        .date_naive()
        .to_string();
    assert_eq!(
        rows[0],
        json!({"date": day_before, "advertiserId": adv, "eventSourceId": "site", "campaignId": c2,
               "eventType": "purchase", "conversions": 1, "value": 7.5, "currency": "EUR"})
    );
    let c1_row = rows
        .iter()
        .find(|r| r["campaignId"] == c1.as_str())
        .unwrap();
    assert_eq!(c1_row["date"], today.as_str());
    assert_eq!(c1_row["conversions"], 2);
    assert_eq!(c1_row["value"], 15.25);
    let lead_row = rows.iter().find(|r| r["eventSourceId"] == "crm").unwrap();
    assert_eq!(lead_row["eventType"], "lead");
    assert_eq!(lead_row["value"], 0.0);
    // Pages and filters.
    let page = app
        .get(&format!("{CONVERSIONS}?take=2&skip=1"), &t.key)
        .await;
    assert_eq!(page.data().as_array().unwrap().len(), 2);
    assert_eq!(page.data()[0], rows[1]);
    assert_eq!(page.body["meta"]["pagination"]["total"], 3);
    assert_eq!(page.body["meta"]["pagination"]["hasMore"], false);
    let count = |q: String| {
        let app = &app;
        let key = t.key.clone();
        async move {
            let r = app.get(&format!("{CONVERSIONS}?{q}"), &key).await;
            assert_eq!(r.status, 200, "{q}: {}", r.body);
            r.data().as_array().unwrap().len()
        }
    };
    assert_eq!(count(format!("campaignId={c1}")).await, 1);
    assert_eq!(
        count(format!("campaignId={c2}&advertiserId={adv}")).await,
        2
    );
    assert_eq!(count("eventSourceId=crm".into()).await, 1);
    assert_eq!(count("eventType=purchase".into()).await, 2);
    assert_eq!(count(format!("startDate={today}")).await, 2);
    assert_eq!(count(format!("endDate={day_before}")).await, 1);
    assert_eq!(count(format!("advertiserId={adv2}")).await, 0);
    assert_eq!(
        count(format!("advertiserId={adv2}&campaignId={c1}")).await,
        0
    );
    for bad in [
        "startDate=tomorrow",
        "startDate=2026-12-02&endDate=2026-12-01",
        "eventType=buy",
        "take=201",
    ] {
        app.get(&format!("{CONVERSIONS}?{bad}"), &t.key)
            .await
            .assert_error(400, "VALIDATION_ERROR");
    }
    // Tenancy.
    assert_eq!(app.get(CONVERSIONS, &u.key).await.data(), &json!([]));
    app.get(&format!("{CONVERSIONS}?advertiserId={adv}"), &u.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&format!("{CONVERSIONS}?campaignId={c1}"), &u.key)
        .await
        .assert_error(404, "NOT_FOUND");
}
