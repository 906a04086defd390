//! Discovery sessions over real fake sellers (MCP Streamable HTTP on
//! 127.0.0.1): progressive and waiting modes, revisions on the SSE stream,
//! browse windows, partial results, refine, restart recovery, isolation.

use std::time::Duration;

use serde_json::{Value, json};

use agentic_api::auth::tenancy;

use crate::fake_seller::{Behaviour, product, seller};
use crate::helpers::*;

const DISCOVER: &str = "/api/v2/buyer/discovery/discover-products";

fn browse(id: &str) -> String {
    format!("/api/v2/buyer/discovery/{id}/discover-products")
}

fn events(id: &str) -> String {
    format!("/api/v2/buyer/discovery/{id}/events")
}

async fn open(app: &TestApp, path: &str, key: &str, last: Option<&str>) -> SseStream {
    match app.sse(path, key, last).await {
        Ok(s) => s,
        Err(r) => panic!("stream refused: {} {}", r.status, r.body),
    }
}

async fn refused(app: &TestApp, path: &str, key: &str, last: Option<&str>) -> Resp {
    match app.sse(path, key, last).await {
        Ok(_) => panic!("stream opened"),
        Err(r) => r,
    }
}

fn delayed(ms: u64, products: Value) -> Behaviour {
    Behaviour {
        delay: Duration::from_millis(ms),
        products,
        ..Behaviour::default()
    }
}

fn group_ids(v: &Value) -> Vec<String> {
    v["productGroups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["groupId"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn a_progressive_discovery_streams_one_revision_per_seller_then_completes() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_fast, fast) = seller(&app, "Fast News", delayed(0, json!([product("n-1", 10.0)]))).await;
    let (_mid, mid) = seller(
        &app,
        "Mid CTV",
        delayed(400, json!([product("c-1", 30.0), product("c-2", 31.0)])),
    )
    .await;
    let (_slow, slow) = seller(
        &app,
        "Slow Audio",
        delayed(1200, json!([product("a-1", 5.0)])),
    )
    .await;

    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "brief": "CTV and news in France", "progressive": true}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data().clone();
    let id = d["discoveryId"].as_str().unwrap().to_string();
    assert!(id.starts_with("disc_"));
    assert_eq!(d["resultsComplete"], false, "{d}");
    assert!(d["summary"]["storefrontsQueried"] == 3, "{d}");

    let mut stream = open(&app, &events(&id), &t.key, None).await;
    assert_eq!(
        stream.expect("ready").await.data,
        json!({"discoveryId": id})
    );
    let mut seen_groups = Vec::new();
    let mut last_rev = -1;
    let mut final_rev = None;
    while final_rev.is_none() {
        let ev = stream
            .next_event(Duration::from_secs(10))
            .await
            .expect("an event");
        match ev.event.as_str() {
            "revision" => {
                let r = ev.data["revision"].as_i64().unwrap();
                assert!(r > last_rev, "revisions increase: {r} after {last_rev}");
                assert_eq!(ev.id.as_deref(), Some(r.to_string().as_str()));
                last_rev = r;
                // Only the groups landed by this revision.
                let landed = group_ids(&ev.data);
                assert!(landed.len() <= 1, "{}", ev.data);
                seen_groups.extend(landed);
                let pending = ev.data["pendingAgents"].as_array().unwrap().len();
                if ev.data["resultsComplete"] == true {
                    assert_eq!(pending, 0);
                    final_rev = Some(r);
                }
            }
            other => panic!("unexpected {other}: {}", ev.data),
        }
    }
    let done = stream.expect("complete").await;
    assert_eq!(done.data["revision"], final_rev.unwrap());
    assert_eq!(done.data["incompleteAgents"], json!([]));
    assert!(
        stream.ended(Duration::from_secs(5)).await,
        "the stream ends after complete"
    );
    // The fastest seller landed first, the slowest last.
    assert_eq!(
        seen_groups,
        [
            format!("sf_{fast}"),
            format!("sf_{mid}"),
            format!("sf_{slow}")
        ]
    );

    let all = app.get(&browse(&id), &t.key).await;
    assert_eq!(all.status, 200, "{}", all.body);
    let d = all.data();
    assert_eq!(d["resultsComplete"], true);
    assert_eq!(d["summary"]["totalProducts"], 4);
    assert_eq!(d["totalGroups"], 3);
    assert_eq!(d["hasMoreGroups"], false);
    let ctv = &d["productGroups"][1];
    assert_eq!(ctv["groupName"], "Mid CTV");
    assert_eq!(ctv["products"][0]["productId"], "c-1");
    assert_eq!(ctv["products"][0]["storefrontId"], mid);
    assert_eq!(ctv["products"][0]["pricingModels"], json!(["cpm"]));
    assert_eq!(ctv["products"][0]["adcp"]["product_id"], "c-1");
    assert!(ctv["products"][0]["briefRelevance"].is_string());
}

#[actix_web::test]
async fn a_waiting_discovery_returns_everything_and_what_the_sellers_said() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (a, _) = seller(&app, "Alpha", delayed(100, json!([product("x-1", 9.0)]))).await;
    let mut bad = product("bad", 1.0);
    bad["pricing_options"] = json!("nope");
    let (_b, _) = seller(&app, "Bravo", delayed(0, json!([product("y-1", 2.0), bad]))).await;
    let (_c, c) = seller(
        &app,
        "Charlie",
        Behaviour {
            products: json!([]),
            message: Some("Nothing in market for that brief.".into()),
            ..Behaviour::default()
        },
    )
    .await;
    let (_e, e) = seller(
        &app,
        "Echo",
        Behaviour {
            error: Some(json!({"code": "INVALID_REQUEST", "message": "brief too vague"})),
            ..Behaviour::default()
        },
    )
    .await;

    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "brief": "Sneakers", "channels": ["ctv"], "countries": ["fr"], "waitSeconds": 10}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data();
    assert_eq!(d["resultsComplete"], true, "{d}");
    assert_eq!(
        d["summary"]["totalProducts"], 2,
        "the malformed product is dropped: {d}"
    );
    assert_eq!(d["pendingAgents"], json!([]));
    let results = d["storefrontResults"].as_array().unwrap();
    let of = |id: i64| results.iter().find(|r| r["agentId"] == id).unwrap().clone();
    assert_eq!(of(c)["status"], "answered");
    assert_eq!(of(c)["message"], "Nothing in market for that brief.");
    assert_eq!(of(e)["status"], "failed");
    let incomplete = d["incompleteAgents"].as_array().unwrap();
    assert_eq!(incomplete.len(), 1, "{d}");
    assert_eq!(incomplete[0]["agentId"], e);
    assert_eq!(incomplete[0]["retryWithLongerWaitAvailable"], false);
    // The seller was asked with the request's filters and brand.
    let call = a
        .seen()
        .into_iter()
        .find(|s| s.method == "tools/call")
        .unwrap();
    let args = &call.body["params"]["arguments"];
    assert_eq!(args["buying_mode"], "brief");
    assert_eq!(args["brief"], "Sneakers");
    assert_eq!(args["brand"]["domain"], "acme.example");
    assert_eq!(args["filters"]["channels"], json!(["ctv"]));
    assert_eq!(args["filters"]["countries"], json!(["FR"]));
}

#[actix_web::test]
async fn a_wait_limit_returns_partial_results_and_the_timeout_completes_the_session() {
    let app = spawn_app_with(|c| c.discovery.storefront_timeout = Duration::from_secs(2)).await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_a, _) = seller(&app, "Quick", delayed(0, json!([product("q-1", 3.0)]))).await;
    let (_h, h) = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;

    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 1}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data().clone();
    assert_eq!(d["resultsComplete"], false);
    assert_eq!(d["summary"]["totalProducts"], 1);
    assert_eq!(
        d["pendingAgents"],
        json!([{"agentId": h, "agentName": "Hangs"}])
    );
    let inc = &d["incompleteAgents"][0];
    assert_eq!(inc["agentId"], h);
    assert_eq!(inc["reason"], "pending");
    assert_eq!(inc["retryWithLongerWaitAvailable"], true);
    assert_eq!(inc["incompleteScopes"], json!(["products"]));

    // Waiting again on the same session returns once the timeout settles it.
    let id = d["discoveryId"].as_str().unwrap();
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"discoveryId": id, "waitSeconds": 10}),
        )
        .await;
    let d = res.data();
    assert_eq!(d["resultsComplete"], true, "{d}");
    assert_eq!(d["incompleteAgents"][0]["reason"], "timed_out");
    assert_eq!(
        d["incompleteAgents"][0]["retryWithLongerWaitAvailable"],
        false
    );
}

#[actix_web::test]
async fn browse_pages_groups_and_products_and_filters_by_revision() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let many: Vec<Value> = (0..5)
        .map(|i| product(&format!("p-{i}"), 1.0 + i as f64))
        .collect();
    let (_a, a) = seller(&app, "A", delayed(0, Value::Array(many))).await;
    let (_b, b) = seller(&app, "B", delayed(300, json!([product("b-1", 1.0)]))).await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();

    let page = app
        .get(
            &format!(
                "{}?groupLimit=1&productsPerGroup=2&productOffset=1",
                browse(&id)
            ),
            &t.key,
        )
        .await;
    assert_eq!(page.status, 200, "{}", page.body);
    let d = page.data();
    assert_eq!(group_ids(d), [format!("sf_{a}")]);
    assert_eq!(d["hasMoreGroups"], true);
    assert_eq!(d["totalGroups"], 2);
    let g = &d["productGroups"][0];
    assert_eq!(g["totalProducts"], 5);
    let ids: Vec<&str> = g["products"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["productId"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["p-1", "p-2"]);

    let second = app
        .get(
            &format!("{}?groupLimit=1&groupOffset=1", browse(&id)),
            &t.key,
        )
        .await;
    assert_eq!(group_ids(second.data()), [format!("sf_{b}")]);
    assert_eq!(second.data()["hasMoreGroups"], false);

    // Only what landed after the first group's revision.
    let first_rev = d["productGroups"][0]["revision"].as_i64().unwrap();
    let since = app
        .get(
            &format!("{}?sinceRevision={first_rev}", browse(&id)),
            &t.key,
        )
        .await;
    assert_eq!(group_ids(since.data()), [format!("sf_{b}")]);

    for bad in [
        "groupLimit=0",
        "productsPerGroup=101",
        "sinceRevision=-1",
        "groupLimit=x",
    ] {
        let r = app.get(&format!("{}?{bad}", browse(&id)), &t.key).await;
        r.assert_error(400, "VALIDATION_ERROR");
    }
}

#[actix_web::test]
async fn a_late_subscriber_gets_every_revision_then_complete_and_can_resume() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_a, _) = seller(&app, "A", delayed(0, json!([product("a", 1.0)]))).await;
    let (_b, _) = seller(&app, "B", delayed(0, json!([product("b", 1.0)]))).await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    let last = res.data()["revision"].as_i64().unwrap();
    assert_eq!(last, 2, "revision 0, then one per seller");

    let mut s = open(&app, &events(&id), &t.key, None).await;
    s.expect("ready").await;
    for r in 0..=last {
        let ev = s.expect("revision").await;
        assert_eq!(ev.data["revision"], r);
    }
    s.expect("complete").await;
    assert!(s.ended(Duration::from_secs(5)).await);

    // Resuming after revision 1 gets only revision 2 and complete.
    let mut s = open(&app, &events(&id), &t.key, Some("1")).await;
    s.expect("ready").await;
    assert_eq!(s.expect("revision").await.data["revision"], 2);
    s.expect("complete").await;
    assert!(s.ended(Duration::from_secs(5)).await);

    let beyond = refused(&app, &events(&id), &t.key, Some("9")).await;
    beyond.assert_error(400, "VALIDATION_ERROR");
}

#[actix_web::test]
async fn a_session_past_its_grace_is_not_active_and_other_accounts_see_nothing() {
    let app = spawn_app_with(|c| c.discovery.complete_grace = Duration::ZERO).await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_a, _) = seller(&app, "A", delayed(0, json!([product("a", 1.0)]))).await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    tokio::time::sleep(Duration::from_millis(20)).await;
    refused(&app, &events(&id), &t.key, None)
        .await
        .assert_error(400, "VALIDATION_ERROR");

    refused(&app, &events(&id), &other.key, None)
        .await
        .assert_error(404, "NOT_FOUND");
    refused(&app, &events("disc_unknown"), &t.key, None)
        .await
        .assert_error(404, "NOT_FOUND");
    refused(&app, &events(&id), "nope", None)
        .await
        .assert_error(401, "UNAUTHORIZED");
    app.get(&browse(&id), &other.key)
        .await
        .assert_error(404, "NOT_FOUND");
    let refine = app
        .post(
            DISCOVER,
            &other.key,
            &json!({"discoveryId": id, "refine": [{"scope": "request", "ask": "more"}]}),
        )
        .await;
    refine.assert_error(404, "NOT_FOUND");
    // Another account's advertiser is not found either.
    let res = app
        .post(DISCOVER, &other.key, &json!({"advertiserId": adv}))
        .await;
    res.assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn bad_requests_are_refused_with_their_field_and_start_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (s, _) = seller(&app, "A", Behaviour::default()).await;
    let cases = [
        (json!({}), "advertiserId"),
        (json!({"advertiserId": "x"}), "advertiserId"),
        (
            json!({"advertiserId": adv, "channels": ["tv-ish"]}),
            "channels[0]",
        ),
        (
            json!({"advertiserId": adv, "countries": ["FR", "XX"]}),
            "countries[1]",
        ),
        (
            json!({"advertiserId": adv, "pricingModel": "cpa"}),
            "pricingModel",
        ),
        (
            json!({"advertiserId": adv, "waitSeconds": 31}),
            "waitSeconds",
        ),
        (
            json!({"advertiserId": adv, "waitMode": "long", "waitSeconds": 301}),
            "waitSeconds",
        ),
        (
            json!({"advertiserId": adv, "waitMode": "short"}),
            "waitMode",
        ),
        (
            json!({"advertiserId": adv, "progressive": true, "waitSeconds": 3}),
            "progressive",
        ),
        (
            json!({"advertiserId": adv, "refine": [{"scope": "request", "ask": "x"}]}),
            "refine",
        ),
        (
            json!({"advertiserId": adv, "storefrontIds": [999]}),
            "storefrontIds[0]",
        ),
        (
            json!({"advertiserId": adv, "publisherDomain": "not a domain"}),
            "publisherDomain",
        ),
        (
            json!({"advertiserId": adv, "storefrontNames": [" "]}),
            "storefrontNames[0]",
        ),
    ];
    for (body, field) in cases {
        let res = app.post(DISCOVER, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        let issues = &res.body["error"]["details"]["issues"];
        let at = |p: &str| {
            issues
                .as_array()
                .is_some_and(|a| a.iter().any(|i| i["path"] == p))
                || res.body["error"]["field"] == p
        };
        assert!(at(field), "{body} -> {}", res.body);
    }
    let unknown = app
        .post(DISCOVER, &t.key, &json!({"advertiserId": adv, "extra": 1}))
        .await;
    unknown.assert_error(400, "VALIDATION_ERROR");
    app.post(DISCOVER, "nope", &json!({"advertiserId": adv}))
        .await
        .assert_error(401, "UNAUTHORIZED");
    let reader = app
        .user_in(&t.account_id, "member", &["platform:read"])
        .await;
    app.post(DISCOVER, &reader.key, &json!({"advertiserId": adv}))
        .await
        .assert_error(403, "FORBIDDEN");
    let campaign = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "campaignId": "cmp_1"}),
        )
        .await;
    campaign.assert_error(404, "NOT_FOUND");
    assert!(
        s.methods().iter().all(|m| m != "tools/call"),
        "no seller was asked"
    );
}

#[actix_web::test]
async fn storefronts_are_chosen_by_id_and_name_and_empty_lists_mean_all() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_a, a) = seller(&app, "Daily News", delayed(0, json!([product("a", 1.0)]))).await;
    let (_b, b) = seller(&app, "StreamTV", delayed(0, json!([product("b", 1.0)]))).await;
    let ids = |d: &Value| -> Vec<i64> {
        d["storefrontResults"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["agentId"].as_i64().unwrap())
            .collect()
    };
    let by_name = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "storefrontNames": ["news"], "waitSeconds": 5}),
        )
        .await;
    assert_eq!(ids(by_name.data()), [a]);
    let by_id = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "storefrontIds": [b], "waitSeconds": 5}),
        )
        .await;
    assert_eq!(ids(by_id.data()), [b]);
    let empty = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "storefrontIds": [], "channels": [], "waitSeconds": 5}),
        )
        .await;
    assert_eq!(ids(empty.data()), [a, b]);
    // No storefront matches: a complete, empty, successful discovery.
    let none = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "publisherDomain": "nowhere.example"}),
        )
        .await;
    assert_eq!(none.status, 200, "{}", none.body);
    assert_eq!(none.data()["resultsComplete"], true);
    assert_eq!(none.data()["summary"]["totalProducts"], 0);
}

#[actix_web::test]
async fn refine_asks_again_in_refine_mode_and_replaces_groups() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (s, sid) = seller(
        &app,
        "A",
        delayed(0, json!([product("a-1", 1.0), product("a-2", 2.0)])),
    )
    .await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "brief": "shoes", "waitSeconds": 5}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    let first = res.data()["revision"].as_i64().unwrap();
    s.set(|b| b.products = json!([product("a-2", 2.0)]));
    let refined = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"discoveryId": id, "refine": [{"scope": "product", "product_id": "a-1", "action": "omit"}], "waitSeconds": 5}),
        )
        .await;
    assert_eq!(refined.status, 200, "{}", refined.body);
    let d = refined.data();
    assert_eq!(d["discoveryId"], id);
    assert_eq!(d["resultsComplete"], true);
    assert!(d["revision"].as_i64().unwrap() > first);
    assert_eq!(d["totalGroups"], 1);
    assert_eq!(d["productGroups"][0]["groupId"], format!("sf_{sid}"));
    assert_eq!(
        d["productGroups"][0]["products"].as_array().unwrap().len(),
        1
    );
    let calls: Vec<_> = s
        .seen()
        .into_iter()
        .filter(|x| x.method == "tools/call")
        .collect();
    let last = &calls.last().unwrap().body["params"]["arguments"];
    assert_eq!(last["buying_mode"], "refine");
    assert_eq!(last["refine"][0]["product_id"], "a-1");

    let bad = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"discoveryId": id, "refine": [{"scope": "nope"}]}),
        )
        .await;
    bad.assert_error(400, "VALIDATION_ERROR");
}

#[actix_web::test]
async fn a_session_in_flight_when_its_instance_shuts_down_completes_as_interrupted() {
    let tune = |c: &mut agentic_api::config::Config| {
        c.discovery.lease = Duration::from_millis(600);
        c.discovery.sweep = Duration::from_millis(200);
    };
    let app = spawn_app_with(tune).await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_a, _) = seller(&app, "Quick", delayed(0, json!([product("q", 1.0)]))).await;
    let (_h, h) = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 1}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    assert_eq!(res.data()["resultsComplete"], false);
    app.handle.stop(true).await;
    app.state.shutdown.cancel();

    // Default leases (30 s): only the shutdown itself can complete it within
    // 15 s (a loaded machine can take several seconds to stop an app).
    let next = spawn_on(&app.database_url, |_| {}).await;
    let mut done = Value::Null;
    for _ in 0..150 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = next.get(&browse(&id), &t.key).await;
        if r.data()["resultsComplete"] == true {
            done = r.data().clone();
            break;
        }
    }
    assert_eq!(
        done["resultsComplete"], true,
        "the abandoned session completes"
    );
    assert_eq!(done["incompleteAgents"][0]["agentId"], h);
    assert_eq!(done["incompleteAgents"][0]["reason"], "interrupted");
    assert_eq!(done["summary"]["totalProducts"], 1);
}

async fn finished(app: &TestApp, t: &Tenant, adv: &str) -> String {
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    assert_eq!(res.data()["resultsComplete"], true, "{}", res.body);
    res.data()["discoveryId"].as_str().unwrap().to_string()
}

#[actix_web::test]
async fn chosen_products_are_added_listed_and_removed_against_the_sessions_products() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_a, a) = seller(
        &app,
        "A",
        delayed(0, json!([product("a-1", 1.0), product("a-2", 2.0)])),
    )
    .await;
    let id = finished(&app, &t, &adv).await;
    let path = format!("/api/v2/buyer/discovery/{id}/products");

    let empty = app.get(&path, &t.key).await;
    assert_eq!(empty.status, 200, "{}", empty.body);
    assert_eq!(empty.data()["products"], json!([]));

    let added = app
        .post(&path, &t.key, &json!({"productIds": ["a-2", "a-1", "a-2"]}))
        .await;
    assert_eq!(added.status, 200, "{}", added.body);
    let chosen = added.data()["products"].as_array().unwrap().clone();
    assert_eq!(chosen.len(), 2);
    assert_eq!(chosen[0]["groupId"], format!("sf_{a}"));
    assert_eq!(chosen[0]["addedByUserId"], t.user_id);
    assert!(
        chosen
            .iter()
            .all(|c| c["product"]["productId"] == c["productId"])
    );

    let unknown = app
        .post(&path, &t.key, &json!({"productIds": ["a-1", "zz"]}))
        .await;
    unknown.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(unknown.body["error"]["field"], "productIds[1]");
    app.post(&path, &t.key, &json!({"productIds": []}))
        .await
        .assert_error(400, "VALIDATION_ERROR");
    app.post(&path, &other.key, &json!({"productIds": ["a-1"]}))
        .await
        .assert_error(404, "NOT_FOUND");
    app.get(&path, &other.key)
        .await
        .assert_error(404, "NOT_FOUND");

    let removed = app
        .request(
            awc::http::Method::DELETE,
            &path,
            Some(&t.key),
            Some(&json!({"productIds": ["a-1", "never-chosen"]})),
        )
        .await;
    assert_eq!(removed.status, 200, "{}", removed.body);
    let left: Vec<&str> = removed.data()["products"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["productId"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["a-2"]);
    assert_eq!(
        app.get(&path, &t.key).await.data()["products"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[actix_web::test]
async fn a_saved_proposal_code_returns_its_snapshot_whatever_the_session_does_next() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let other = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (s, _) = seller(&app, "A", delayed(0, json!([product("a-1", 1.0)]))).await;
    let id = finished(&app, &t, &adv).await;
    let saved = app
        .post(
            &format!("/api/v2/buyer/discovery/{id}/proposals"),
            &t.key,
            &json!(null),
        )
        .await;
    assert_eq!(saved.status, 201, "{}", saved.body);
    let code = saved.data()["proposalCode"].as_str().unwrap().to_string();
    assert!(code.starts_with("PRP-") && code.len() == 14, "{code}");
    let snapshot_rev = saved.data()["revision"].clone();

    s.set(|b| b.products = json!([product("a-9", 9.0)]));
    app.post(DISCOVER, &t.key, &json!({"discoveryId": id, "refine": [{"scope": "request", "ask": "other"}], "waitSeconds": 5}))
        .await;
    let back = app
        .post(DISCOVER, &t.key, &json!({"proposalCode": code.to_lowercase(), "advertiserId": "ignored", "channels": ["nope"]}))
        .await;
    assert_eq!(back.status, 200, "{}", back.body);
    assert_eq!(back.data()["revision"], snapshot_rev);
    assert_eq!(
        back.data()["productGroups"][0]["products"][0]["productId"],
        "a-1"
    );
    app.post(DISCOVER, &other.key, &json!({"proposalCode": code}))
        .await
        .assert_error(404, "NOT_FOUND");
    app.post(DISCOVER, &t.key, &json!({"proposalCode": "PRP-NOPE"}))
        .await
        .assert_error(404, "NOT_FOUND");
}

#[actix_web::test]
async fn the_multi_storefront_get_products_starts_polls_and_pages_a_session() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let many: Vec<Value> = (0..3).map(|i| product(&format!("f-{i}"), 1.0)).collect();
    let (_f, f) = seller(&app, "Fast", delayed(0, Value::Array(many))).await;
    let (_s, _) = seller(
        &app,
        "Empty",
        Behaviour {
            delay: Duration::from_millis(300),
            products: json!([]),
            message: Some("No CTV in that market.".into()),
            ..Behaviour::default()
        },
    )
    .await;
    const GP: &str = "/api/v2/buyer/discovery/get-products";
    let first = app
        .post(GP, &t.key, &json!({"buying_mode": "brief", "brief": "ctv", "ext": {"platform": {"advertiser_id": adv}}}))
        .await;
    assert_eq!(first.status, 200, "{}", first.body);
    let exec = first.data()["ext"]["platform"]["execution_id"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(first.data()["provisional"], true);

    let mut done = Value::Null;
    for _ in 0..50 {
        let poll = app
            .post(GP, &t.key, &json!({"buying_mode": "brief", "brief": "ctv", "pagination": {"max_results": 2}, "ext": {"platform": {"execution_id": exec}}}))
            .await;
        if poll.data()["results_complete"] == true {
            done = poll.data().clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(done["provisional"], false, "{done}");
    assert_eq!(done["pending_agents"], json!([]));
    assert_eq!(done["products"].as_array().unwrap().len(), 2);
    assert_eq!(done["products"][0]["ext"]["platform"]["storefront_id"], f);
    assert_eq!(
        done["pagination"],
        json!({"has_more": true, "max_results": 2, "cursor": "2"})
    );
    let empty = done["storefront_results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["agent_name"] == "Empty")
        .unwrap()
        .clone();
    assert_eq!(empty["message"], "No CTV in that market.");
    let next = app
        .post(GP, &t.key, &json!({"buying_mode": "brief", "brief": "ctv", "pagination": {"max_results": 2, "cursor": "2"}, "ext": {"platform": {"execution_id": exec}}}))
        .await;
    assert_eq!(next.data()["products"].as_array().unwrap().len(), 1);
    assert_eq!(next.data()["pagination"]["has_more"], false);
    let rev = done["revision"].as_i64().unwrap();
    let since = app
        .post(GP, &t.key, &json!({"buying_mode": "brief", "brief": "ctv", "ext": {"platform": {"execution_id": exec, "since_revision": rev}}}))
        .await;
    assert_eq!(since.data()["products"], json!([]));

    for (body, field) in [
        (json!({"buying_mode": "auction"}), "buying_mode"),
        (json!({"buying_mode": "brief"}), "brief"),
        (
            json!({"buying_mode": "refine", "refine": [{"scope": "request", "ask": "x"}]}),
            "ext.platform.execution_id",
        ),
        (
            json!({"buying_mode": "wholesale", "ext": {"platform": {}}}),
            "ext.platform.advertiser_id",
        ),
        (
            json!({"buying_mode": "wholesale", "filters": {"channels": ["x"]}, "ext": {"platform": {"advertiser_id": adv}}}),
            "filters.channels[0]",
        ),
        (
            json!({"buying_mode": "wholesale", "pagination": {"max_results": 0}}),
            "pagination.max_results",
        ),
        (
            json!({"buying_mode": "wholesale", "pagination": {"cursor": "abc"}, "ext": {"platform": {"execution_id": exec}}}),
            "pagination.cursor",
        ),
    ] {
        let r = app.post(GP, &t.key, &body).await;
        r.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(r.body["error"]["field"], field, "{body}: {}", r.body);
    }
}

#[actix_web::test]
async fn the_hard_cap_completes_a_round_whatever_is_pending() {
    let app = spawn_app_with(|c| {
        c.discovery.hard_cap = Duration::from_millis(800);
        c.discovery.storefront_timeout = Duration::from_secs(60);
    })
    .await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_h, h) = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;
    let (_q, _) = seller(&app, "Quick", delayed(0, json!([product("q", 1.0)]))).await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "waitSeconds": 10}),
        )
        .await;
    let d = res.data();
    assert_eq!(d["resultsComplete"], true, "{d}");
    assert_eq!(d["incompleteAgents"][0]["agentId"], h);
    assert_eq!(d["incompleteAgents"][0]["reason"], "timed_out");
    assert_eq!(d["summary"]["totalProducts"], 1);
}

#[actix_web::test]
async fn a_stream_past_its_maximum_duration_ends_with_an_error_and_resumes() {
    let app = spawn_app_with(|c| {
        c.discovery.max_stream_duration = Duration::from_millis(300);
        c.discovery.keepalive = Duration::from_millis(200);
    })
    .await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_h, _) = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "progressive": true}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    let mut s = open(&app, &events(&id), &t.key, None).await;
    s.expect("ready").await;
    assert_eq!(s.expect("revision").await.data["revision"], 0);
    let err = s.expect("error").await;
    assert_eq!(err.data["code"], "STREAM_MAX_DURATION");
    assert!(s.ended(Duration::from_secs(5)).await);
    // Resuming skips what it had.
    let mut again = open(&app, &events(&id), &t.key, Some("0")).await;
    again.expect("ready").await;
    let next = again.next_event(Duration::from_millis(150)).await;
    assert!(
        next.as_ref().is_none_or(|e| e.event != "revision"),
        "{next:?}"
    );
}

#[actix_web::test]
async fn after_a_refine_the_stream_replays_both_rounds_with_one_complete_at_the_end() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (s, _) = seller(&app, "A", delayed(0, json!([product("a-1", 1.0)]))).await;
    let id = finished(&app, &t, &adv).await;
    s.set(|b| {
        b.products = json!([product("a-2", 2.0)]);
        b.delay = Duration::from_millis(600);
    });
    let refined = app
        .post(DISCOVER, &t.key, &json!({"discoveryId": id, "refine": [{"scope": "request", "ask": "more video"}], "progressive": true}))
        .await;
    assert_eq!(refined.status, 200, "{}", refined.body);
    assert_eq!(refined.data()["resultsComplete"], false);
    let mut stream = open(&app, &events(&id), &t.key, None).await;
    stream.expect("ready").await;
    let mut names = Vec::new();
    loop {
        let ev = stream
            .next_event(Duration::from_secs(10))
            .await
            .expect("event");
        names.push(ev.event.clone());
        if ev.event == "complete" {
            break;
        }
    }
    assert!(stream.ended(Duration::from_secs(5)).await);
    // Round 0: revisions 0 and 1; round 1: 2 (opened) and 3; one complete.
    assert_eq!(
        names,
        ["revision", "revision", "revision", "revision", "complete"]
    );
}

#[actix_web::test]
async fn a_session_whose_driver_crashed_is_claimed_and_completed_when_its_lease_runs_out() {
    use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, sea_query::Expr};
    let app = spawn_app_with(|c| {
        c.discovery.lease = Duration::from_millis(600);
        c.discovery.sweep = Duration::from_millis(200);
    })
    .await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_h, h) = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "progressive": true}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();
    // As if another instance drove it and died: its lease is someone
    // else's and has run out (this instance only renews its own).
    entity::discovery_session::Entity::update_many()
        .col_expr(
            entity::discovery_session::Column::LeaseOwner,
            Expr::value("a-crashed-instance"),
        )
        .col_expr(
            entity::discovery_session::Column::LeaseUntil,
            Expr::value(chrono::Utc::now() - chrono::Duration::seconds(1)),
        )
        .filter(entity::discovery_session::Column::Id.eq(id.clone()))
        .exec(&app.db)
        .await
        .unwrap();
    let mut done = Value::Null;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let r = app.get(&browse(&id), &t.key).await;
        if r.data()["resultsComplete"] == true {
            done = r.data().clone();
            break;
        }
    }
    assert_eq!(
        done["resultsComplete"], true,
        "the abandoned session completes"
    );
    assert_eq!(done["incompleteAgents"][0]["agentId"], h);
    assert_eq!(done["incompleteAgents"][0]["reason"], "interrupted");
}

#[actix_web::test]
async fn a_revoked_key_loses_its_discovery_stream_at_once_or_within_a_tick() {
    let app = spawn_app_with(|c| c.discovery.keepalive = Duration::from_millis(200)).await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let (_h, _) = seller(
        &app,
        "Hangs",
        Behaviour {
            hang: true,
            ..Behaviour::default()
        },
    )
    .await;
    let res = app
        .post(
            DISCOVER,
            &t.key,
            &json!({"advertiserId": adv, "progressive": true}),
        )
        .await;
    let id = res.data()["discoveryId"].as_str().unwrap().to_string();

    // Revoked through the API: the event closes the stream.
    let second = app.user_in(&t.account_id, "admin", &[]).await;
    let mut s = open(&app, &events(&id), &second.key, None).await;
    s.expect("ready").await;
    s.expect("revision").await;
    let keys = app.get("/api/v2/api-keys", &second.key).await;
    let key_id = keys.data()[0]["id"].as_i64().unwrap();
    let other = tenancy::create_api_key(&app.db, second.user_id, &[])
        .await
        .unwrap();
    let del = app
        .delete(&format!("/api/v2/api-keys/{key_id}"), &other)
        .await;
    assert_eq!(del.status, 200, "{}", del.body);
    assert_eq!(s.expect("error").await.data["code"], "UNAUTHORIZED");
    assert!(s.ended(Duration::from_secs(5)).await);

    // Revoked by another process (no event on SQLite): within a tick.
    let mut s = open(&app, &events(&id), &t.key, None).await;
    s.expect("ready").await;
    agentic_api::auth::tenancy::revoke_api_key(&app.db, &t.key)
        .await
        .unwrap();
    assert_eq!(s.expect("error").await.data["code"], "UNAUTHORIZED");
    assert!(s.ended(Duration::from_secs(5)).await);
}
