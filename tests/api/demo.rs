//! `serve --demo`'s storefronts: seeded once however often the demo starts,
//! listed like any storefront, and answered by the built-in demo sellers.

use std::collections::HashMap;

use agentic_api::auth::tenancy;
use agentic_api::demo;
use agentic_api::discovery::demo_sellers::{DEMO_HOST, STOREFRONTS};
use agentic_api::discovery::seller::{BuyingMode, ProductFilters, ProductQuery, StorefrontTarget};
use agentic_api::discovery::sellers::Sellers;
use agentic_api::discovery::storefronts;

use serde_json::json;

use crate::fake_seller::{Behaviour, FakeSeller};
use crate::helpers::*;

async fn target(app: &TestApp, id: i64) -> StorefrontTarget {
    storefronts::target(&app.db, id, app.config.url_policy())
        .await
        .unwrap()
        .unwrap()
        .unwrap()
}

#[actix_web::test]
async fn seeding_the_demo_twice_lists_each_demo_storefront_once() {
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.0).await;
    let first = demo::seed(&app.db).await.unwrap();
    let second = demo::seed(&app.db).await.unwrap();
    assert_eq!(first.storefront_ids, second.storefront_ids);
    assert_eq!(first.storefront_ids.len(), STOREFRONTS.len());

    let res = app
        .get("/api/v2/buyer/storefronts?take=100", &second.api_key)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let listed = res.data().as_array().unwrap();
    assert_eq!(listed.len(), STOREFRONTS.len(), "{}", res.body);
    let mut by_name: HashMap<&str, usize> = HashMap::new();
    for s in listed {
        *by_name.entry(s["name"].as_str().unwrap()).or_default() += 1;
    }
    for (demo, id) in STOREFRONTS.iter().zip(&first.storefront_ids) {
        assert_eq!(by_name.get(demo.name), Some(&1), "{}", demo.name);
        let row = listed.iter().find(|s| s["id"] == *id).unwrap();
        assert_eq!(row["name"], demo.name);
        assert_eq!(row["url"], demo.url());
        assert!(row["url"].as_str().unwrap().contains(DEMO_HOST));
    }
}

#[actix_web::test]
async fn a_demo_storefront_already_registered_under_another_case_is_kept() {
    let app = spawn_app().await;
    let name = STOREFRONTS[0].name.to_uppercase();
    let theirs = tenancy::register_storefront(
        &app.db,
        &name,
        "https://meridian.example.com/mcp",
        app.config.url_policy(),
    )
    .await
    .unwrap();
    let seeded = demo::seed(&app.db).await.unwrap();
    assert_eq!(seeded.storefront_ids[0], theirs);
    let t = app.tenant().await;
    let res = app.get("/api/v2/buyer/storefronts", &t.key).await;
    assert_eq!(res.body["meta"]["pagination"]["total"], STOREFRONTS.len());
}

#[actix_web::test]
async fn the_seller_directory_routes_demo_storefronts_in_process_and_others_to_mcp() {
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.0).await;
    let fake = FakeSeller::start(Behaviour::default()).await;
    let seeded = demo::seed(&app.db).await.unwrap();
    let other =
        tenancy::register_storefront(&app.db, "Real Seller", &fake.url(), app.config.url_policy())
            .await
            .unwrap();
    let sellers = app.state.get::<Sellers>().unwrap();
    let wholesale = ProductQuery {
        mode: BuyingMode::Wholesale,
        brand: None,
        filters: ProductFilters::default(),
    };

    for id in &seeded.storefront_ids {
        let t = target(&app, *id).await;
        assert!(sellers.is_built_in(&t), "{}", t.name);
        let answer = sellers
            .for_storefront(&t)
            .get_products(&t, &wholesale)
            .await
            .unwrap();
        assert!(answer.products.len() >= 4, "{}: {answer:?}", t.name);
        assert!(
            answer.dropped.is_empty(),
            "{}: {:?}",
            t.name,
            answer.dropped
        );
    }
    assert!(fake.seen().is_empty(), "no demo call went over the network");

    let t = target(&app, other).await;
    assert!(!sellers.is_built_in(&t));
    let answer = sellers
        .for_storefront(&t)
        .get_products(&t, &ProductQuery::brief("CTV"))
        .await
        .unwrap();
    let ids: Vec<&str> = answer
        .products
        .iter()
        .map(|p| p.product_id.as_str())
        .collect();
    assert_eq!(ids, ["ctv-1", "olv-2"]);
    assert!(!fake.seen().is_empty());
}

#[actix_web::test]
async fn a_discovery_over_the_demo_storefronts_lands_one_revision_per_seller() {
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.02).await;
    let seeded = demo::seed(&app.db).await.unwrap();
    let key = seeded.api_key.clone();
    let adv = demo_advertiser(&app, &key).await;
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &key,
            &serde_json::json!({"advertiserId": adv.data()["id"], "brief": "Live sports on connected TV and podcasts in the US", "progressive": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    let mut s = match app
        .sse(&format!("/api/v2/buyer/discovery/{id}/events"), &key, None)
        .await
    {
        Ok(s) => s,
        Err(r) => panic!("{}", r.body),
    };
    s.expect("ready").await;
    let mut landed = 0;
    loop {
        let ev = s
            .next_event(std::time::Duration::from_secs(10))
            .await
            .expect("event");
        match ev.event.as_str() {
            "revision" => landed += ev.data["productGroups"].as_array().unwrap().len(),
            "complete" => break,
            other => panic!("{other}"),
        }
    }
    assert!(
        landed >= 4,
        "most demo sellers have something for this brief: {landed}"
    );
    let all = app
        .get(
            &format!("/api/v2/buyer/discovery/{id}/discover-products"),
            &key,
        )
        .await;
    assert_eq!(all.data()["summary"]["storefrontsQueried"], 5);
    assert_eq!(all.data()["summary"]["storefrontsAnswered"], 5);
    assert!(
        all.data()["summary"]["totalProducts"].as_i64().unwrap() > 5,
        "{}",
        all.body
    );
}

#[actix_web::test]
async fn publisher_domain_and_pricing_model_narrow_a_discovery() {
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.0).await;
    let seeded = demo::seed(&app.db).await.unwrap();
    let key = seeded.api_key.clone();
    let adv = demo_advertiser(&app, &key).await.data()["id"].clone();
    let discover = |body: serde_json::Value| {
        let app = &app;
        let key = key.clone();
        async move {
            let res = app
                .post("/api/v2/buyer/discovery/discover-products", &key, &body)
                .await;
            assert_eq!(res.status, 200, "{}", res.body);
            res.data().clone()
        }
    };
    // The demo storefronts live under agentic.invalid: a domain-component match.
    let all = discover(serde_json::json!({"advertiserId": adv, "publisherDomain": "agentic.invalid", "pricingModel": "cpcv", "waitSeconds": 10})).await;
    assert_eq!(all["summary"]["storefrontsQueried"], 5, "{all}");
    let products: Vec<&serde_json::Value> = all["productGroups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["products"].as_array().unwrap())
        .collect();
    assert!(!products.is_empty());
    assert!(
        products.iter().all(|p| p["pricingModels"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("cpcv"))),
        "{all}"
    );
    // A suffix that is not a whole label matches nothing.
    let none =
        discover(serde_json::json!({"advertiserId": adv, "publisherDomain": "c.invalid"})).await;
    assert_eq!(none["summary"]["storefrontsQueried"], 0);
    assert_eq!(none["resultsComplete"], true);
}

#[actix_web::test]
async fn a_demo_campaign_goes_from_discovery_to_live_buys_offline() {
    let app = spawn_app_with(|c| {
        c.demo_seller_delay_scale = 0.0;
        c.media_buy_poll_seconds = 1;
        c.media_buy_delivery_seconds = 1;
    })
    .await;
    let seeded = demo::seed(&app.db).await.unwrap();
    let key = seeded.api_key.clone();
    let adv = demo_advertiser(&app, &key).await;
    let advertiser = adv.data()["id"].as_str().unwrap().to_string();
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &key,
            &serde_json::json!({"advertiserId": adv.data()["id"], "brief": "Live sports on connected TV, podcasts and news homepages in the US", "waitSeconds": 10}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let session = res.data()["discoveryId"].as_str().unwrap().to_string();
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let pick = |id: &str, budget: f64| serde_json::json!({"kind": "product", "productId": id, "budget": budget});
    let res = app
        .post(
            "/api/v2/buyer/media-buys",
            &key,
            &serde_json::json!({
                "productQueryId": session,
                "campaign": {"create": {"name": "Demo launch", "budget": {"total": 100000},
                    "flightDates": {"startDate": start.to_rfc3339(), "endDate": (start + chrono::Duration::days(30)).to_rfc3339()}}},
                "mode": "execute",
                "selections": [pick("lm_ctv_premium", 20000.0), serde_json::json!({"kind": "product", "productId": "lm_ctv_live_sports", "budget": 30000.0, "bidPrice": 30.0}), pick("tw_podcast_host_read", 5000.0)],
            }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let buys = res.data()["mediaBuys"].as_array().unwrap();
    let status = |p: &str| {
        buys.iter()
            .find(|b| b["productId"] == p)
            .map(|b| b["status"].as_str().unwrap().to_string())
            .unwrap()
    };
    assert_eq!(
        status("lm_ctv_premium"),
        "pending_creatives",
        "{}",
        res.body
    );
    assert_eq!(status("lm_ctv_live_sports"), "submitted");
    assert_eq!(status("tw_podcast_host_read"), "failed");
    // The poller asks the approving seller again and finds the buy made.
    let campaign = res.data()["campaignId"].as_str().unwrap().to_string();
    let mut live = false;
    for _ in 0..100 {
        let st = app
            .get(
                &format!("/api/v2/buyer/campaigns/{campaign}/media-buy-status"),
                &key,
            )
            .await;
        let rows = st.data()["media_buys"].as_array().unwrap().clone();
        if rows.iter().all(|r| r["internal_status"] != "submitted") {
            live = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(live, "the submitted buy was approved");
    let c = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &key)
        .await;
    assert_eq!(c.data()["campaign"]["status"], "ACTIVE", "{}", c.body);
    // The demo account also operates these storefronts: it sees the buys
    // sent to them, as their seller would; another account sees none.
    let sold = app.get("/api/v2/storefront/media-buys", &key).await;
    assert_eq!(sold.status, 200, "{}", sold.body);
    assert_eq!(sold.body["meta"]["pagination"]["total"], 3, "{}", sold.body);
    assert!(sold.data()[0]["budget"].is_number());
    assert!(
        sold.data()[0].get("campaignId").is_none(),
        "no buyer-internal ids"
    );
    let other = app.tenant().await;
    let none = app.get("/api/v2/storefront/media-buys", &other.key).await;
    assert_eq!(none.body["meta"]["pagination"]["total"], 0);

    // After the launch the demo sellers report delivery (today's, at
    // least), so the report has figures, per campaign and per buy.
    let mut report = serde_json::Value::Null;
    for _ in 0..100 {
        let r = app
            .get(
                &format!(
                    "/api/v2/buyer/reporting/metrics?advertiserId={advertiser}&groupBy=media_buy"
                ),
                &key,
            )
            .await;
        assert_eq!(r.status, 200, "{}", r.body);
        if r.data().as_array().is_some_and(|rows| rows.len() == 2) {
            report = r.body;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let rows = report["data"].as_array().expect("two buys report delivery");
    for row in rows {
        assert_eq!(row["campaignId"], campaign.as_str(), "{report}");
        assert!(row["impressions"].as_u64().unwrap() >= 8_000, "{report}");
        assert!(row["spend"].as_f64().unwrap() > 0.0, "{report}");
        assert_eq!(row["units"][0]["pricingModel"], "cpm", "{report}");
    }
    // And the launch is in the demo user's notifications: the failed buy
    // and the approved one, each once.
    let notes = app.get("/api/v2/notifications?take=100", &key).await;
    assert_eq!(notes.status, 200, "{}", notes.body);
    let status_changes: Vec<&serde_json::Value> = notes
        .data()
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["topic"] == "media_buy.status_changed")
        .collect();
    assert!(!status_changes.is_empty(), "{}", notes.body);
    let mut subjects: Vec<String> = status_changes
        .iter()
        .map(|n| format!("{}", n["data"]))
        .collect();
    subjects.sort();
    let n = subjects.len();
    subjects.dedup();
    assert_eq!(subjects.len(), n, "each change once: {}", notes.body);
}

/// A USD advertiser of the demo account.
async fn demo_advertiser(app: &TestApp, key: &str) -> Resp {
    let adv = app
        .post(
            "/api/v2/buyer/advertisers",
            key,
            &serde_json::json!({"name": "Demo Shoes", "brand": "demo-shoes.example", "primaryCurrency": "USD"}),
        )
        .await;
    assert_eq!(adv.status, 201, "{}", adv.body);
    adv
}

#[actix_web::test]
async fn the_demo_shows_the_account_flow_offline() {
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.0).await;
    demo::seed(&app.db).await.unwrap();
    // Seeding again changes nothing of the account side (and mints a new key).
    let seeded = demo::seed(&app.db).await.unwrap();
    let key = seeded.api_key.clone();
    let adv = demo_advertiser(&app, &key).await;
    let adv = adv.data()["id"].as_str().unwrap().to_string();
    let id_of = |name: &str| {
        let i = STOREFRONTS.iter().position(|s| s.name == name).unwrap();
        seeded.storefront_ids[i]
    };
    let (meridian, atlas, cartwheel) = (
        id_of("Meridian Daily"),
        id_of("Atlas Outdoor"),
        id_of("Cartwheel Retail Media"),
    );

    // Cartwheel's seats need the buyer's credential.
    let sources = app
        .get(
            &format!("/api/v2/buyer/storefronts/{cartwheel}/account-sources"),
            &key,
        )
        .await;
    assert_eq!(
        sources.data()["sources"][0]["capabilities"]["requiresCredentials"],
        json!(true),
        "{}",
        sources.body
    );
    let res = app
        .post(
            "/api/v2/buyer/source-credentials",
            &key,
            &json!({"storefrontId": cartwheel, "sourceId": "agent", "secret": "demo-seat-login"}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let res = app
        .get(&format!("/api/v2/buyer/advertisers/{adv}/accounts/available?storefrontId={cartwheel}&sourceId=agent"), &key)
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let seats: Vec<&str> = res.data()["accounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["accountId"].as_str().unwrap())
        .collect();
    assert_eq!(seats, ["cartwheel_seat_1", "cartwheel_seat_2"]);

    // Atlas bills only the agent; Meridian takes operator billing, and the
    // demo account reviews its own intake.
    let entry = |sf: i64, billing: &str| {
        json!({"advertiserId": adv, "storefrontId": sf, "operator": demo::DEMO_OPERATOR, "billing": billing,
               "billing_entity": {"legal_name": "Demo Agency LLC"}})
    };
    let res = app
        .post(
            "/api/v2/buyer/storefront-accounts/sync",
            &key,
            &json!({"accounts": [entry(atlas, "operator")]}),
        )
        .await;
    res.assert_error(400, "BILLING_NOT_SUPPORTED");
    assert_eq!(
        res.body["error"]["details"]["supportedBilling"],
        json!(["agent"])
    );
    let res = app
        .post(
            "/api/v2/buyer/storefront-accounts/sync",
            &key,
            &json!({"accounts": [entry(meridian, "operator"), entry(atlas, "agent")]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    for r in res.data()["accounts"].as_array().unwrap() {
        assert_eq!(r["action"], json!("created"), "{r}");
        assert_eq!(r["reviewStatus"], json!("pending_review"), "{r}");
    }
    let reviews = app
        .get(
            "/api/v2/storefront/account-mappings/reviews?status=pending_review",
            &key,
        )
        .await;
    assert_eq!(
        reviews.body["meta"]["pagination"]["total"],
        json!(2),
        "{}",
        reviews.body
    );
    let intake = res.data()["accounts"][0]["intakeId"].as_str().unwrap();
    let res = app
        .post(
            &format!("/api/v2/storefront/account-mappings/reviews/{intake}/accept"),
            &key,
            &json!({}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let bound = app
        .get("/api/v2/buyer/advertiser-accounts?status=active", &key)
        .await;
    assert_eq!(
        bound.data()[0]["storefrontId"],
        json!(meridian),
        "{}",
        bound.body
    );
}
