//! Media buys over real fake sellers (MCP Streamable HTTP on 127.0.0.1):
//! the cart (stage), execution at the sellers, status, pause and resume,
//! callbacks, the poller, and every error code of the money path.

use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use crate::fake_seller::{Behaviour, BuyOutcome, FakeSeller, product, seller};
use crate::helpers::*;

pub const BUYS: &str = "/api/v2/buyer/media-buys";

pub fn status_path(campaign: &str) -> String {
    format!("/api/v2/buyer/campaigns/{campaign}/media-buy-status")
}

/// An advertiser in EUR (the fake sellers price in EUR).
pub async fn eur_advertiser(app: &TestApp, t: &Tenant, sandbox: bool) -> String {
    let res = app
        .post(
            "/api/v2/buyer/advertisers",
            &t.key,
            &json!({"name": "Acme", "brand": "acme.example", "primaryCurrency": "EUR", "sandbox": sandbox}),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["id"].as_str().unwrap().to_string()
}

/// A finished discovery session of `adv` over every registered storefront.
pub async fn discover(app: &TestApp, t: &Tenant, adv: &str) -> String {
    let res = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &t.key,
            &json!({"advertiserId": adv, "brief": "video", "waitSeconds": 10}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["resultsComplete"], true, "{}", res.body);
    res.data()["discoveryId"].as_str().unwrap().to_string()
}

/// A campaign.create body: a month from tomorrow, `total` EUR.
pub fn new_campaign(total: f64) -> Value {
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let end = start + chrono::Duration::days(30);
    json!({"create": {
        "name": "Spring",
        "flightDates": {"startDate": start.to_rfc3339(), "endDate": end.to_rfc3339()},
        "budget": {"total": total},
        "constraints": {"geo_countries": ["FR", "DE"], "device_type": ["ctv"]},
    }})
}

pub fn pick(product_id: &str, budget: f64) -> Value {
    json!({"kind": "product", "productId": product_id, "budget": budget})
}

/// One seller with `ctv-1` and `olv-2` (fixed CPM, EUR), an EUR advertiser
/// and a finished session.
pub struct Setup {
    pub seller: FakeSeller,
    pub storefront: i64,
    pub session: String,
}

pub async fn setup(app: &TestApp, t: &Tenant, b: Behaviour) -> Setup {
    let (seller, storefront) = seller(app, "Northwind", b).await;
    let adv = eur_advertiser(app, t, false).await;
    let session = discover(app, t, &adv).await;
    Setup {
        seller,
        storefront,
        session,
    }
}

pub async fn buy_count(app: &TestApp) -> u64 {
    entity::media_buy::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

fn creates(s: &FakeSeller) -> usize {
    s.seen()
        .iter()
        .filter(|r| r.method == "tools/call" && r.body["params"]["name"] == "create_media_buy")
        .count()
}

#[actix_web::test]
async fn staging_writes_draft_buys_merges_repeats_and_contacts_no_seller() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let s = setup(&app, &t, Behaviour::default()).await;

    let body = json!({
        "productQueryId": s.session,
        "campaign": new_campaign(10_000.0),
        "mode": "stage",
        "selections": [pick("ctv-1", 4000.0), pick("olv-2", 3000.0)],
    });
    let res = app.post(BUYS, &t.key, &body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data();
    assert_eq!(d["campaignCreated"], true);
    assert_eq!(d["mode"], "stage");
    let campaign = d["campaignId"].as_str().unwrap().to_string();
    let buys = d["mediaBuys"].as_array().unwrap();
    assert_eq!(buys.len(), 2, "{d}");
    for b in buys {
        assert_eq!(b["status"], "draft");
        assert!(b["adcpMediaBuyId"].is_null());
        assert_eq!(b["storefrontId"], s.storefront);
        assert_eq!(b["budget"]["currency"], "EUR");
        assert_eq!(b["pricingModel"], "cpm");
        let p = &b["package"];
        // The campaign's effective targeting is the package's overlay.
        assert_eq!(
            p["targeting_overlay"]["geo_countries"],
            json!(["FR", "DE"]),
            "{p}"
        );
        assert_eq!(p["targeting_overlay"]["device_type"], json!(["ctv"]));
        // utm macros resolved for this buy and package.
        let utm = &p["ext"]["platform"]["utm_parameters"];
        assert_eq!(utm["utm_campaign"], campaign.as_str());
        assert_eq!(utm["utm_media_buy"], b["mediaBuyId"]);
        assert!(utm["utm_package"].as_str().unwrap().starts_with("pkg_"));
        assert_eq!(
            utm["utm_content"], "{CREATIVE_ID}",
            "the creative's macro stays"
        );
    }
    let mut ids: Vec<Value> = buys.iter().map(|b| b["mediaBuyId"].clone()).collect();
    ids.sort_by_key(|v| v.to_string());
    let olv_id = buy_of(buys, "olv-2")["mediaBuyId"].clone();
    // The campaign is a DRAFT and nothing reached the seller.
    let c = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &t.key)
        .await;
    assert_eq!(c.data()["campaign"]["status"], "DRAFT");
    assert_eq!(creates(&s.seller), 0);

    // A repeat into the same campaign merges: same buys, new budgets.
    let again = json!({
        "productQueryId": s.session,
        "campaign": {"campaignId": campaign},
        "mode": "stage",
        "selections": [pick("ctv-1", 5000.0), pick("olv-2", 3000.0)],
    });
    let res = app.post(BUYS, &t.key, &again).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let buys = res.data()["mediaBuys"].as_array().unwrap().clone();
    assert_eq!(
        buys.iter()
            .map(|b| b["mediaBuyId"].clone())
            .collect::<Vec<_>>(),
        ids
    );
    assert_eq!(buy_of(&buys, "ctv-1")["budget"]["amount"], 5000.0);
    assert_eq!(res.data()["campaignCreated"], false);

    // replace: true makes the batch the whole cart.
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({
                "productQueryId": s.session,
                "campaign": {"campaignId": campaign},
                "mode": "stage",
                "replace": true,
                "selections": [pick("olv-2", 3000.0)],
            }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let buys = res.data()["mediaBuys"].as_array().unwrap().clone();
    assert_eq!(buys.len(), 1);
    assert_eq!(buys[0]["productId"], "olv-2");
    assert_eq!(buys[0]["mediaBuyId"], olv_id);
    // Staged buys are not a status yet.
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(st.status, 200, "{}", st.body);
    assert_eq!(st.data()["media_buys"], json!([]));
    assert_eq!(creates(&s.seller), 0);
}

#[actix_web::test]
async fn bad_carts_get_their_code_and_write_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut auction = product("auc-1", 0.0);
    auction["pricing_options"] = json!([{"pricing_option_id": "po-a", "pricing_model": "cpm", "currency": "EUR", "floor_price": 5.0}]);
    let mut usd = product("usd-1", 10.0);
    usd["pricing_options"][0]["currency"] = json!("USD");
    let mut cpa = product("cpa-1", 10.0);
    cpa["pricing_options"] = json!([{"pricing_option_id": "po-c", "pricing_model": "cpa", "currency": "EUR", "fixed_price": 3.0}]);
    let mut bare = product("bare-1", 10.0);
    bare.as_object_mut().unwrap().remove("placements");
    let products = json!([product("ctv-1", 30.0), auction, usd, cpa, bare]);
    let s = setup(
        &app,
        &t,
        Behaviour {
            products,
            ..Behaviour::default()
        },
    )
    .await;
    let cart = |selections: Value| json!({"productQueryId": s.session, "campaign": new_campaign(10_000.0), "mode": "stage", "selections": selections});
    let cases: Vec<(Value, u16, &str, Option<&str>)> = vec![
        (
            cart(json!([pick("nope", 10.0)])),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].productId"),
        ),
        (
            cart(json!([pick("ctv-1", -1.0)])),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].budget"),
        ),
        (
            cart(json!([pick("ctv-1", 10.0), pick("ctv-1", 20.0)])),
            400,
            "VALIDATION_ERROR",
            Some("selections[1]"),
        ),
        (cart(json!([])), 400, "VALIDATION_ERROR", Some("selections")),
        (
            cart(json!([{"kind": "product", "productId": "ctv-1", "budget": 10, "bidPrice": 3}])),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].bidPrice"),
        ),
        (
            cart(json!([{"kind": "product", "productId": "auc-1", "budget": 10, "bidPrice": 3}])),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].bidPrice"),
        ),
        (
            cart(
                json!([{"kind": "product", "productId": "ctv-1", "budget": 10, "placementIds": ["nowhere"]}]),
            ),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].placementIds[0]"),
        ),
        (
            cart(json!([pick("cpa-1", 10.0)])),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].productId"),
        ),
        (
            cart(json!([pick("usd-1", 10.0)])),
            400,
            "CURRENCY_MISMATCH",
            Some("selections[0].pricingOptionId"),
        ),
        (
            cart(json!([pick("ctv-1", 10_001.0)])),
            409,
            "INSUFFICIENT_MEDIA_BUDGET",
            None,
        ),
        (
            cart(json!([{"kind": "proposal", "proposalId": "p-1", "totalBudget": 100}])),
            400,
            "VALIDATION_ERROR",
            Some("selections[0].proposalId"),
        ),
        (
            cart(
                json!([{"kind": "product", "productId": "bare-1", "budget": 10, "placementIds": ["home"]}]),
            ),
            422,
            "CAPABILITY_NOT_SUPPORTED",
            None,
        ),
        (
            json!({"productQueryId": "disc_nothere", "campaign": new_campaign(10.0), "mode": "stage", "selections": [pick("ctv-1", 1.0)]}),
            404,
            "NOT_FOUND",
            Some("productQueryId"),
        ),
        (
            json!({"productQueryId": s.session, "campaign": {"campaignId": "cmp_00000000000000000000000000000000"}, "mode": "stage", "selections": [pick("ctv-1", 1.0)]}),
            404,
            "NOT_FOUND",
            Some("campaign.campaignId"),
        ),
        (
            json!({"productQueryId": s.session, "campaign": {}, "mode": "stage", "selections": [pick("ctv-1", 1.0)]}),
            400,
            "VALIDATION_ERROR",
            Some("campaign"),
        ),
        (
            json!({"productQueryId": s.session, "campaign": new_campaign(10.0), "mode": "buy", "selections": []}),
            400,
            "VALIDATION_ERROR",
            None,
        ),
        (
            json!({"productQueryId": s.session, "campaign": {"create": {"name": "x"}}, "mode": "stage", "selections": [pick("ctv-1", 1.0)]}),
            400,
            "VALIDATION_ERROR",
            Some("campaign.create.flightDates"),
        ),
    ];
    for (body, status, code, field) in cases {
        let res = app.post(BUYS, &t.key, &body).await;
        assert_eq!(res.status, status, "{body} -> {}", res.body);
        assert_eq!(res.code(), code, "{body} -> {}", res.body);
        if let Some(f) = field {
            assert_eq!(res.body["error"]["field"], f, "{body} -> {}", res.body);
        }
        assert_eq!(buy_count(&app).await, 0, "{body} wrote a buy");
        let campaigns = entity::campaign::Entity::find()
            .count(&app.db)
            .await
            .unwrap();
        assert_eq!(campaigns, 0, "{body} left a campaign");
    }
    // Another account's session and campaign are not visible.
    let other = app.tenant().await;
    let res = app
        .post(BUYS, &other.key, &cart(json!([pick("ctv-1", 10.0)])))
        .await;
    res.assert_error(404, "NOT_FOUND");
    assert_eq!(creates(&s.seller), 0);
}

fn buy_of<'a>(buys: &'a [Value], product: &str) -> &'a Value {
    buys.iter()
        .find(|b| b["productId"] == product)
        .unwrap_or_else(|| panic!("no buy of {product}: {buys:?}"))
}

/// Polls the campaign's status until `done` holds (the poller and
/// callbacks work in the background).
pub async fn status_until(
    app: &TestApp,
    t: &Tenant,
    campaign: &str,
    done: impl Fn(&Value) -> bool,
) -> Value {
    for _ in 0..150 {
        let st = app.get(&status_path(campaign), &t.key).await;
        assert_eq!(st.status, 200, "{}", st.body);
        if done(st.data()) {
            return st.data().clone();
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("status never settled");
}

fn internal(d: &Value, id: &Value) -> String {
    d["media_buys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| &b["media_buy_id"] == id)
        .map(|b| b["internal_status"].as_str().unwrap().to_string())
        .unwrap_or_default()
}

#[actix_web::test]
async fn the_whole_path_from_discovery_to_live_buys_then_pause_and_resume() {
    let app = spawn_app_with(|c| c.media_buy_poll_seconds = 1).await;
    let t = app.tenant().await;
    let mut b = Behaviour::default();
    b.buys.insert(
        "olv-2".into(),
        BuyOutcome::Accept {
            status: "pending_creatives",
        },
    );
    let s = setup(&app, &t, b).await;
    // A webhook subscriber of media_buy.status.
    let receiver = crate::receiver::Receiver::start().await;
    let sub = app
        .post(
            "/api/v2/buyer/webhook-subscriptions",
            &t.key,
            &json!({"url": receiver.url("/hook"), "secret": "0123456789abcdef-secret", "eventTypes": ["media_buy.status"]}),
        )
        .await;
    assert_eq!(sub.status, 201, "{}", sub.body);
    let body = json!({
        "productQueryId": s.session,
        "campaign": new_campaign(10_000.0),
        "mode": "execute",
        "selections": [pick("ctv-1", 4000.0), pick("olv-2", 3000.0)],
    });
    let res = app.post(BUYS, &t.key, &body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data().clone();
    let campaign = d["campaignId"].as_str().unwrap().to_string();
    let buys = d["mediaBuys"].as_array().unwrap();
    let ctv = buy_of(buys, "ctv-1");
    let olv = buy_of(buys, "olv-2");
    assert_eq!(ctv["status"], "active", "{d}");
    assert_eq!(olv["status"], "pending_creatives", "{d}");
    assert!(ctv["adcpMediaBuyId"].as_str().unwrap().starts_with("sb_"));
    assert_eq!(s.seller.created_count(), 2);

    // What the seller was sent: AdCP 3.1 create_media_buy, one package.
    let sent = s.seller.buys();
    let args = &sent
        .iter()
        .find(|b| b.product_id == "ctv-1")
        .unwrap()
        .arguments;
    assert_eq!(args["packages"][0]["product_id"], "ctv-1");
    assert_eq!(args["packages"][0]["budget"], 4000.0);
    assert_eq!(args["packages"][0]["pricing_option_id"], "po-1");
    assert_eq!(
        args["packages"][0]["targeting_overlay"]["geo_countries"],
        json!(["FR", "DE"])
    );
    assert_eq!(args["brand"]["domain"], "acme.example");
    assert_eq!(args["account"]["operator"], "acme.example");
    let key = args["idempotency_key"].as_str().unwrap();
    assert!(key.len() >= 16, "{key}");
    let push = &args["push_notification_config"];
    assert!(
        push["url"]
            .as_str()
            .unwrap()
            .ends_with(&format!("/adcp/callbacks/{}", s.storefront))
    );
    assert_eq!(push["authentication"]["schemes"], json!(["HMAC-SHA256"]));
    assert!(
        push["authentication"]["credentials"]
            .as_str()
            .unwrap()
            .len()
            >= 32
    );
    assert_eq!(push["operation_id"], ctv["mediaBuyId"]);

    // Every buy is live: the campaign launched.
    let c = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &t.key)
        .await;
    assert_eq!(c.data()["campaign"]["status"], "ACTIVE", "{}", c.body);
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(st.status, 200, "{}", st.body);
    let rows = st.data()["media_buys"].as_array().unwrap();
    assert_eq!(rows.len(), 2);
    let row = rows
        .iter()
        .find(|r| r["media_buy_id"] == olv["mediaBuyId"])
        .unwrap();
    assert_eq!(row["internal_status"], "pending_creatives");
    assert_eq!(row["adcp_status"], "pending_creatives");
    assert_eq!(row["previous_internal_status"], "dispatching");
    assert_eq!(row["adcp_media_buy_id"], olv["adcpMediaBuyId"]);
    assert_eq!(
        st.data()["agents_queried"][0]["storefront_id"],
        s.storefront
    );
    assert_eq!(st.data()["errors"], json!([]));
    // Each buy's change went to the webhook subscriber, signed.
    let hits = receiver.wait_for(2).await;
    let mut seen: Vec<String> = hits
        .iter()
        .map(|h| {
            assert_eq!(h.event_type.as_deref(), Some("media_buy.status"));
            assert!(h.signature.is_some());
            let e = h.json();
            assert_eq!(e["campaignId"], campaign.as_str());
            assert_eq!(e["previousInternalStatus"], "dispatching");
            e["internalStatus"].as_str().unwrap().to_string()
        })
        .collect();
    seen.sort();
    assert_eq!(seen, ["active", "pending_creatives"]);

    // The poller follows the seller (pending_creatives keeps polling).
    let seller_id = olv["adcpMediaBuyId"].as_str().unwrap().to_string();
    s.seller.set_buy_status(&seller_id, "pending_start");
    let d = status_until(&app, &t, &campaign, |d| {
        internal(d, &olv["mediaBuyId"]) == "pending_start"
    })
    .await;
    assert!(s.seller.status_calls(&seller_id) >= 1, "{d}");

    // Pause and resume reach the seller.
    let p = act(&app, &t, &campaign, "pause").await;
    assert_eq!(p.status, 200, "{}", p.body);
    assert_eq!(p.data()["campaign"]["status"], "PAUSED");
    let ctv_seller = ctv["adcpMediaBuyId"].as_str().unwrap();
    assert_eq!(s.seller.buy(ctv_seller).unwrap().status, "paused");
    assert_eq!(s.seller.buy(&seller_id).unwrap().status, "paused");
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(internal(st.data(), &ctv["mediaBuyId"]), "paused");
    let r = act(&app, &t, &campaign, "resume").await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.data()["campaign"]["status"], "ACTIVE");
    assert_eq!(s.seller.buy(ctv_seller).unwrap().status, "active");
    assert_eq!(s.seller.buy(&seller_id).unwrap().status, "pending_start");
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(internal(st.data(), &ctv["mediaBuyId"]), "active");

    // The same request again sends nothing: no second buy at the seller.
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({
                "productQueryId": s.session,
                "campaign": {"campaignId": campaign},
                "mode": "execute",
                "selections": [pick("ctv-1", 4000.0), pick("olv-2", 3000.0)],
            }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(s.seller.created_count(), 2);
    assert_eq!(creates(&s.seller), 2);
}

/// The one row of `d` for buy `id`.
fn row_of<'a>(d: &'a Value, id: &Value) -> &'a Value {
    d["media_buys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| &r["media_buy_id"] == id)
        .unwrap()
}

#[actix_web::test]
async fn delivery_is_pulled_stored_and_read_and_ends_with_the_buy() {
    let app = spawn_app_with(|c| {
        c.media_buy_poll_seconds = 1;
        c.media_buy_delivery_seconds = 1;
    })
    .await;
    let t = app.tenant().await;
    let s = setup(&app, &t, Behaviour::default()).await;
    let body = json!({
        "productQueryId": s.session,
        "campaign": new_campaign(10_000.0),
        "mode": "execute",
        "selections": [pick("ctv-1", 4000.0)],
    });
    let res = app.post(BUYS, &t.key, &body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data().clone();
    let campaign = d["campaignId"].as_str().unwrap().to_string();
    let buy = d["mediaBuys"][0].clone();
    assert_eq!(buy["status"], "active", "{d}");
    let at_seller = buy["adcpMediaBuyId"].as_str().unwrap().to_string();
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(
        row_of(st.data(), &buy["mediaBuyId"])["delivery"],
        Value::Null
    );

    // The poller pulls the seller's report; a read answers it from the database.
    let d = status_until(&app, &t, &campaign, |d| {
        row_of(d, &buy["mediaBuyId"])["delivery"]["impressions"]
            .as_u64()
            .is_some_and(|n| n >= 2_000)
    })
    .await;
    let delivery = &row_of(&d, &buy["mediaBuyId"])["delivery"];
    let n = delivery["impressions"].as_u64().unwrap() / 1_000;
    assert_eq!(delivery["spend"], 5.0 * n as f64, "{delivery}");
    assert_eq!(delivery["clicks"], n, "{delivery}");
    assert_eq!(delivery["currency"], "USD");
    assert_eq!(
        delivery["reporting_period"]["start"],
        "2026-12-01T00:00:00Z"
    );
    let package = &delivery["by_package"][0];
    assert_eq!(
        package["package_id"],
        format!("{at_seller}_p1"),
        "{delivery}"
    );
    assert_eq!(package["pacing_index"], 1.0);
    assert_eq!(delivery["daily"][0]["date"], "2026-12-01");
    assert!(delivery["pulled_at"].is_string(), "{delivery}");
    // An active buy is done with status polling: only its report is asked for.
    assert_eq!(s.seller.status_calls(&at_seller), 0);

    // The report says the buy completed: the status follows, the final
    // figures are kept, and pulls stop.
    s.seller.set_buy_status(&at_seller, "completed");
    let d = status_until(&app, &t, &campaign, |d| {
        internal(d, &buy["mediaBuyId"]) == "completed"
    })
    .await;
    assert_eq!(
        row_of(&d, &buy["mediaBuyId"])["previous_internal_status"],
        "active"
    );
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let calls = s.seller.delivery_calls(&at_seller);
    tokio::time::sleep(std::time::Duration::from_millis(2_500)).await;
    assert_eq!(s.seller.delivery_calls(&at_seller), calls);
    let st = app.get(&status_path(&campaign), &t.key).await;
    let last = &row_of(st.data(), &buy["mediaBuyId"])["delivery"];
    assert_eq!(last["impressions"], 1_000 * calls as u64, "{last}");
    let row = buy_row(&app.db, buy["mediaBuyId"].as_str().unwrap()).await;
    assert_eq!(row.delivery_next_at, None);
    assert_eq!(row.next_poll_at, None);

    // Over MCP, get_delivery answers the same.
    let mut v3 = crate::mcp::open_at(&app, "/mcp/v3", &t.key).await;
    let got = v3
        .call(&app, "get_delivery", json!({"campaignId": campaign}))
        .await;
    let rows = &got["structuredContent"]["data"]["media_buys"];
    assert_eq!(
        rows[0]["delivery"]["impressions"],
        1_000 * calls as u64,
        "{got}"
    );
}

#[actix_web::test]
async fn sellers_that_accept_reject_submit_time_out_or_fail_on_the_second_buy() {
    let app = spawn_app_with(|c| {
        c.media_buy_poll_seconds = 1;
        c.discovery_timeout = Some(2);
    })
    .await;
    let t = app.tenant().await;
    let mut b = Behaviour {
        products: json!([
            product("ok-1", 10.0),
            product("no-1", 10.0),
            product("later-1", 10.0)
        ]),
        ..Behaviour::default()
    };
    b.buys.insert(
        "no-1".into(),
        BuyOutcome::Reject {
            code: "PRODUCT_UNAVAILABLE",
            message: "sold out",
        },
    );
    b.buys.insert(
        "later-1".into(),
        BuyOutcome::submitted(
            BuyOutcome::Accept { status: "active" },
            std::time::Duration::from_secs(4),
        ),
    );
    let (main, _) = seller(&app, "Main", b).await;
    let second = Behaviour {
        products: json!([product("s-1", 10.0), product("s-2", 10.0)]),
        default_buy: BuyOutcome::FailOnSecond,
        ..Behaviour::default()
    };
    let (fails, _) = seller(&app, "Second", second).await;
    let slow_b = Behaviour {
        products: json!([product("slow-1", 10.0)]),
        ..Behaviour::default()
    };
    let (slow, _) = seller(&app, "Slow", slow_b).await;
    let adv = eur_advertiser(&app, &t, false).await;
    let session = discover(&app, &t, &adv).await;
    // The slow seller makes the buy, but its answer comes after the call's
    // 2 s limit: the outcome is unknown.
    slow.set(|b| b.delay = std::time::Duration::from_secs(3));

    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({
                "productQueryId": session,
                "campaign": new_campaign(10_000.0),
                "mode": "execute",
                "selections": [pick("ok-1", 100.0), pick("no-1", 100.0), pick("later-1", 100.0),
                               pick("s-1", 100.0), pick("s-2", 100.0), pick("slow-1", 100.0)],
            }),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data().clone();
    let campaign = d["campaignId"].as_str().unwrap().to_string();
    let buys = d["mediaBuys"].as_array().unwrap();
    assert_eq!(buy_of(buys, "ok-1")["status"], "active");
    let no = buy_of(buys, "no-1");
    assert_eq!(no["status"], "failed");
    assert_eq!(no["errors"][0]["code"], "PRODUCT_UNAVAILABLE", "{no}");
    let later = buy_of(buys, "later-1");
    assert_eq!(later["status"], "submitted", "{later}");
    assert!(later["taskId"].is_string());
    let s_statuses: Vec<&str> = ["s-1", "s-2"]
        .iter()
        .map(|p| buy_of(buys, p)["status"].as_str().unwrap())
        .collect();
    assert!(
        s_statuses.contains(&"active") && s_statuses.contains(&"failed"),
        "{s_statuses:?}"
    );
    let slow_buy = buy_of(buys, "slow-1");
    assert_eq!(slow_buy["status"], "dispatching", "{slow_buy}");
    assert_eq!(slow_buy["errors"][0]["code"], "SELLER_TIMEOUT");
    // The campaign waits for the submitted and unknown buys.
    let c = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &t.key)
        .await;
    assert_eq!(c.data()["campaign"]["status"], "DRAFT");

    // The submitted buy completes by the seller's signed callback; the
    // unknown one is asked again with its key and found, not made twice.
    let later_id = later["mediaBuyId"].clone();
    let slow_id = slow_buy["mediaBuyId"].clone();
    slow.set(|b| b.delay = std::time::Duration::ZERO);
    let d = status_until(&app, &t, &campaign, |d| {
        internal(d, &later_id) == "active" && internal(d, &slow_id) == "active"
    })
    .await;
    assert_eq!(main.callbacks().len(), 1, "{d}");
    assert_eq!(main.callbacks()[0].status, Some(200));
    assert_eq!(
        slow.created_count(),
        1,
        "the retry found the buy the lost answer made"
    );
    assert_eq!(fails.created_count(), 1);
    let c = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &t.key)
        .await;
    assert_eq!(
        c.data()["campaign"]["status"],
        "ACTIVE",
        "launched once settled"
    );
}

/// A campaign with one submitted buy at a seller that never calls back;
/// (campaign id, our buy id, the seller's task id, storefront id, secret).
async fn submitted_buy(app: &TestApp, t: &Tenant) -> (String, String, String, i64, String, Setup) {
    let b = Behaviour {
        default_buy: BuyOutcome::submitted(BuyOutcome::Hang, std::time::Duration::from_secs(3600)),
        ..Behaviour::default()
    };
    let s = setup(app, t, b).await;
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "campaign": new_campaign(1000.0), "mode": "execute",
                    "selections": [pick("ctv-1", 100.0)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let buy = res.data()["mediaBuys"][0].clone();
    assert_eq!(buy["status"], "submitted", "{buy}");
    let secret = agentic_api::media_buys::secrets::read(&app.db, &app.state.config, s.storefront)
        .await
        .unwrap()
        .expect("a secret was made with the first buy");
    (
        res.data()["campaignId"].as_str().unwrap().to_string(),
        buy["mediaBuyId"].as_str().unwrap().to_string(),
        buy["taskId"].as_str().unwrap().to_string(),
        s.storefront,
        secret,
        s,
    )
}

#[actix_web::test]
async fn signed_callbacks_complete_buys_and_bad_stale_or_replayed_ones_do_not() {
    use crate::fake_seller::{post_callback, webhook_payload};
    // A key, as every instance on PostgreSQL shares (SQLite makes its own).
    let app = spawn_app_with(|c| {
        c.webhook_secret_key =
            Some(agentic_api::config::webhooks::SecretKey::from_hex(&"ab".repeat(32)).unwrap())
    })
    .await;
    let t = app.tenant().await;
    let (campaign, buy, task, storefront, secret, _s) = submitted_buy(&app, &t).await;
    // The stored secret is sealed, never the plain value.
    let row = entity::storefront_callback_secret::Entity::find_by_id(storefront)
        .one(&app.db)
        .await
        .unwrap()
        .unwrap();
    assert!(agentic_api::webhooks::secret::is_encrypted(&row.secret));
    assert!(!row.secret.contains(&secret));
    let stored = buy_row(&app.db, &buy).await.adcp_request.unwrap();
    assert!(stored.contains("push_notification_config") && !stored.contains(&secret));
    let url = app.url(&format!("/adcp/callbacks/{storefront}"));
    let now = chrono::Utc::now().timestamp();
    let done = webhook_payload(
        &buy,
        &task,
        "completed",
        json!({"status": "completed", "media_buy_id": "sb_77", "media_buy_status": "active", "revision": 1, "confirmed_at": "2026-11-28T00:00:00Z", "packages": []}),
    );
    let body = serde_json::to_vec(&done).unwrap();

    // Bad signature, stale, unsigned, unknown storefront: 401, nothing changes.
    assert_eq!(
        post_callback(&url, "not-the-secret-not-the-secret-000", &body, now).await,
        401
    );
    assert_eq!(post_callback(&url, &secret, &body, now - 301).await, 401);
    assert_eq!(post_callback(&url, &secret, &body, now + 301).await, 401);
    let unsigned = app
        .client
        .post(&url)
        .insert_header(("content-type", "application/json"))
        .send_body(body.clone())
        .await
        .unwrap();
    assert_eq!(unsigned.status(), 401);
    assert_eq!(
        post_callback(&app.url("/adcp/callbacks/999"), &secret, &body, now).await,
        401
    );
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(internal(st.data(), &json!(buy)), "submitted");

    // A good one completes the buy and launches the campaign.
    assert_eq!(post_callback(&url, &secret, &body, now).await, 200);
    let st = app.get(&status_path(&campaign), &t.key).await;
    let row = &st.data()["media_buys"][0];
    assert_eq!(row["internal_status"], "active", "{row}");
    assert_eq!(row["adcp_media_buy_id"], "sb_77");
    assert_eq!(row["previous_internal_status"], "submitted");
    let c = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &t.key)
        .await;
    assert_eq!(c.data()["campaign"]["status"], "ACTIVE");

    // A replay of an applied event is accepted and ignored, even one that
    // would otherwise move the buy.
    let mut failed = webhook_payload(
        &buy,
        &task,
        "failed",
        json!({"errors": [{"code": "X", "message": "y"}]}),
    );
    failed["idempotency_key"] = done["idempotency_key"].clone();
    let replay = serde_json::to_vec(&failed).unwrap();
    assert_eq!(post_callback(&url, &secret, &replay, now).await, 200);
    assert_eq!(post_callback(&url, &secret, &body, now).await, 200);
    let st = app.get(&status_path(&campaign), &t.key).await;
    assert_eq!(st.data()["media_buys"][0]["internal_status"], "active");
    let events = entity::adcp_callback_event::Entity::find()
        .count(&app.db)
        .await
        .unwrap();
    assert_eq!(events, 1);
    // Not JSON: refused after the signature.
    assert_eq!(post_callback(&url, &secret, b"not json", now).await, 400);
}

#[actix_web::test]
async fn executing_needs_prices_and_credit_and_refusals_write_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut auction = product("auc-1", 0.0);
    auction["pricing_options"] = json!([{"pricing_option_id": "po-a", "pricing_model": "cpm", "currency": "EUR", "floor_price": 5.0}]);
    let s = setup(
        &app,
        &t,
        Behaviour {
            products: json!([product("ctv-1", 30.0), auction]),
            ..Behaviour::default()
        },
    )
    .await;
    let exec = |selections: Value| json!({"productQueryId": s.session, "campaign": new_campaign(10_000.0), "mode": "execute", "selections": selections});
    // An auction product without a bid can be staged, not executed.
    let res = app
        .post(
            BUYS,
            &t.key,
            &exec(json!([pick("ctv-1", 10.0), pick("auc-1", 10.0)])),
        )
        .await;
    res.assert_error(409, "PRICING_NOT_CONFIGURED");
    assert_eq!(
        res.body["error"]["details"]["unpricedSelections"],
        json!([1])
    );
    assert_eq!(buy_count(&app).await, 0);
    let staged = app
        .post(BUYS, &t.key, &json!({"productQueryId": s.session, "campaign": new_campaign(10_000.0), "mode": "stage", "selections": [pick("auc-1", 10.0)]}))
        .await;
    assert_eq!(staged.status, 200, "{}", staged.body);
    let campaign = staged.data()["campaignId"].as_str().unwrap().to_string();
    let unpriced = staged.data()["mediaBuys"][0]["mediaBuyId"].clone();
    let launch = act(&app, &t, &campaign, "execute").await;
    launch.assert_error(409, "PRICING_NOT_CONFIGURED");
    assert_eq!(
        launch.body["error"]["details"]["unpricedBuyIds"],
        json!([unpriced])
    );
    // Nor can the budget change while a buy's fee terms are unknown.
    let path = format!("/api/v2/buyer/campaigns/{campaign}");
    let res = app
        .put(&path, &t.key, &json!({"budget": {"total": 9000}}))
        .await;
    res.assert_error(409, "PRICING_NOT_CONFIGURED");
    assert_eq!(
        res.body["error"]["details"]["unpricedBuyIds"],
        json!([unpriced])
    );
    // With a bid it executes.
    let res = app
        .post(BUYS, &t.key, &json!({"productQueryId": s.session, "campaign": {"campaignId": campaign}, "mode": "execute",
                                    "selections": [{"kind": "product", "productId": "auc-1", "budget": 10, "bidPrice": 6}]}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data()["mediaBuys"][0]["status"],
        "active",
        "{}",
        res.body
    );
    assert_eq!(
        s.seller.buys()[0].arguments["packages"][0]["bid_price"],
        6.0
    );
    // A budget below the buys is refused; one above them is taken.
    let res = app
        .put(&path, &t.key, &json!({"budget": {"total": 5}}))
        .await;
    res.assert_error(409, "INSUFFICIENT_MEDIA_BUDGET");
    assert_eq!(res.body["error"]["details"]["mediaBuysTotal"], 10.0);
    let res = app
        .put(&path, &t.key, &json!({"budget": {"total": 9000}}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);

    // A credit limit: committed real spend may not pass it (402), and a
    // refused execution stages nothing.
    assert!(credit_limit(&app, &t, "EUR", &["--amount", "500"]));
    let before = buy_count(&app).await;
    let res = app
        .post(BUYS, &t.key, &exec(json!([pick("ctv-1", 495.0)])))
        .await;
    res.assert_error(402, "CREDIT_LIMIT_EXCEEDED");
    let details = &res.body["error"]["details"];
    assert_eq!(details["creditLimit"], 500.0);
    assert_eq!(details["committed"], 10.0);
    assert_eq!(details["requested"], 495.0);
    assert_eq!(buy_count(&app).await, before);
    let res = app
        .post(BUYS, &t.key, &exec(json!([pick("ctv-1", 490.0)])))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    // A sandbox advertiser's buys never spend: sent as sandbox, not counted.
    let sandbox = eur_advertiser(&app, &t, true).await;
    let session = discover(&app, &t, &sandbox).await;
    let res = app
        .post(BUYS, &t.key, &json!({"productQueryId": session, "campaign": new_campaign(10_000.0), "mode": "execute", "selections": [pick("ctv-1", 5000.0)]}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["mediaBuys"][0]["sandbox"], true);
    let sent = s
        .seller
        .buys()
        .into_iter()
        .find(|b| b.arguments["packages"][0]["budget"] == 5000.0)
        .unwrap();
    assert_eq!(sent.arguments["account"]["sandbox"], true);
    // Bad operator input is refused, writing nothing.
    assert!(!credit_limit(&app, &t, "EURO", &["--amount", "5"]));
    // Clearing the limit makes spend unlimited again.
    assert!(credit_limit(&app, &t, "EUR", &["--clear"]));
    let res = app
        .post(BUYS, &t.key, &exec(json!([pick("ctv-1", 5000.0)])))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);

    // Launching needs a cart and a campaign that can still run.
    let empty = app
        .post("/api/v2/buyer/campaigns", &t.key, &{
            let mut c = new_campaign(100.0)["create"].clone();
            c["advertiserId"] = json!(s_adv(&app, &t).await);
            c
        })
        .await;
    assert_eq!(empty.status, 201, "{}", empty.body);
    let empty_id = empty.data()["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    let res = act(&app, &t, &empty_id, "execute").await;
    res.assert_error(409, "CONFLICT");
    let res = app
        .post(
            "/api/v2/buyer/campaigns/cmp_00000000000000000000000000000000/execute",
            &t.key,
            &json!({}),
        )
        .await;
    res.assert_error(404, "NOT_FOUND");
}

/// `admin set-credit-limit` for `t`'s account with `tail` (`--amount N` or
/// `--clear`); whether it succeeded.
fn credit_limit(app: &TestApp, t: &Tenant, currency: &str, tail: &[&str]) -> bool {
    let mut args = vec![
        "admin",
        "set-credit-limit",
        "--account",
        &t.account_id,
        "--currency",
        currency,
    ];
    args.extend_from_slice(tail);
    let out = cli(&app.database_url, &args);
    out.status.success()
}

/// `POST /api/v2/buyer/campaigns/{campaign}/{action}` (pause, resume,
/// execute).
async fn act(app: &TestApp, t: &Tenant, campaign: &str, action: &str) -> Resp {
    app.post(
        &format!("/api/v2/buyer/campaigns/{campaign}/{action}"),
        &t.key,
        &json!({}),
    )
    .await
}

/// The first advertiser of `t`'s account.
async fn s_adv(app: &TestApp, t: &Tenant) -> String {
    let res = app.get("/api/v2/buyer/advertisers", &t.key).await;
    res.data()[0]["id"].as_str().unwrap().to_string()
}

/// Stops the in-process app, so only the binary works the database.
async fn hand_over(app: &TestApp) -> sea_orm::DatabaseConnection {
    app.state.shutdown.cancel();
    app.handle.stop(true).await;
    sea_orm::Database::connect(&app.database_url).await.unwrap()
}

async fn buy_row(db: &sea_orm::DatabaseConnection, id: &str) -> entity::media_buy::Model {
    entity::media_buy::Entity::find_by_id(id.to_string())
        .one(db)
        .await
        .unwrap()
        .unwrap()
}

#[actix_web::test]
async fn a_kill_9_during_execute_never_makes_a_second_buy_at_the_seller() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let s = setup(&app, &t, Behaviour::default()).await;
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "campaign": new_campaign(1000.0), "mode": "stage",
                                    "selections": [pick("ctv-1", 100.0)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let campaign = res.data()["campaignId"].as_str().unwrap().to_string();
    let buy = res.data()["mediaBuys"][0]["mediaBuyId"]
        .as_str()
        .unwrap()
        .to_string();
    let db = hand_over(&app).await;

    // The seller makes the buy, then answers slowly: the server dies before
    // it hears back.
    s.seller
        .set(|b| b.delay = std::time::Duration::from_secs(5));
    let envs = [
        ("AGENTIC_ALLOW_INSECURE_URLS", "true"),
        ("AGENTIC_DISCOVERY_TIMEOUT", "3"),
        ("AGENTIC_MEDIA_BUY_POLL_SECONDS", "1"),
    ];
    let mut first = serve(&app.database_url, &envs, std::process::Stdio::null());
    let url = format!("{}/api/v2/buyer/campaigns/{campaign}/execute", first.base);
    let key = t.key.clone();
    let execute = actix_rt::spawn(async move {
        awc::Client::default()
            .post(url)
            .bearer_auth(key)
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    for _ in 0..100 {
        if s.seller.created_count() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(s.seller.created_count(), 1);
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    assert!(
        execute.await.unwrap().is_err(),
        "the execute never answered"
    );
    assert_eq!(buy_row(&db, &buy).await.status, "dispatching");

    // The next start asks again with the buy's key and finds it.
    s.seller.set(|b| b.delay = std::time::Duration::ZERO);
    let _second = serve(&app.database_url, &envs, std::process::Stdio::null());
    let mut row = buy_row(&db, &buy).await;
    for _ in 0..200 {
        if row.status == "active" {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        row = buy_row(&db, &buy).await;
    }
    assert_eq!(row.status, "active", "{row:?}");
    assert_eq!(s.seller.created_count(), 1, "one buy at the seller");
    assert_eq!(creates(&s.seller), 2, "asked twice, with one key");
    let keys: Vec<String> = s.seller.buys().iter().map(|b| b.key.clone()).collect();
    assert_eq!(keys.len(), 1, "{keys:?}");
    assert_eq!(
        row.adcp_media_buy_id.as_deref(),
        s.seller.buys()[0].id.as_deref()
    );
}

#[actix_web::test]
#[ignore = "needs PostgreSQL (AGENTIC_TEST_DATABASE_URL)"]
async fn two_instances_poll_each_buy_once() {
    assert!(
        std::env::var("AGENTIC_TEST_DATABASE_URL").is_ok_and(|v| !v.is_empty()),
        "needs PostgreSQL: run the PostgreSQL pass with -- --include-ignored"
    );
    let fast = |c: &mut agentic_api::Config| {
        c.media_buy_poll_seconds = 1;
        c.media_buy_delivery_seconds = 1;
    };
    let a = spawn_app_with(fast).await;
    let b = spawn_on(&a.database_url, fast).await;
    let t = a.tenant().await;
    let products: Vec<Value> = (0..20).map(|i| product(&format!("p-{i}"), 10.0)).collect();
    let behaviour = Behaviour {
        default_buy: BuyOutcome::Accept {
            status: "pending_start",
        },
        products: Value::Array(products),
        ..Behaviour::default()
    };
    let s = setup(&a, &t, behaviour).await;
    let selections: Vec<Value> = (0..20).map(|i| pick(&format!("p-{i}"), 10.0)).collect();
    let res = b
        .post(BUYS, &t.key, &json!({"productQueryId": s.session, "campaign": new_campaign(1000.0), "mode": "execute",
                                    "selections": selections}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let ids: Vec<String> = s
        .seller
        .buys()
        .iter()
        .filter_map(|b| b.id.clone())
        .collect();
    assert_eq!(ids.len(), 20);
    // pending_start keeps polling: over ~5 s at 1 s (+ up to 10 % jitter)
    // one poller asks each buy at most 5 times; two pollers sharing a buy
    // would ask it about twice as often. Delivery pulls likewise.
    let started = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_secs(5)).await;
    let elapsed = started.elapsed().as_secs_f64();
    let mut total = 0;
    for id in &ids {
        let n = s.seller.status_calls(id);
        assert!(n >= 2, "{id} polled {n} times in {elapsed:.1} s");
        assert!(
            n as f64 <= elapsed + 1.0,
            "{id} polled {n} times in {elapsed:.1} s: more than one poller"
        );
        total += n;
        let pulls = s.seller.delivery_calls(id);
        assert!(
            pulls >= 2,
            "{id}'s delivery pulled {pulls} times in {elapsed:.1} s"
        );
        assert!(
            pulls as f64 <= elapsed + 1.0,
            "{id}'s delivery pulled {pulls} times in {elapsed:.1} s: more than one poller"
        );
    }
    // Both instances took part (each buy's lease goes to whoever is first).
    let rows = entity::media_buy::Entity::find().all(&a.db).await.unwrap();
    assert!(rows.iter().all(|r| r.last_polled_at.is_some()));
    assert!(total >= 40, "{total}");
}

#[actix_web::test]
async fn auto_selection_allocates_the_budget_and_an_automatic_campaign_launches_with_it() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut cheap = product("cheap-1", 4.0);
    cheap["reporting_capabilities"] = json!({"available_metrics": ["impressions", "clicks", "completed_views"], "supports_placement_breakdown": true});
    let mut auction = product("auc-1", 0.0);
    auction["pricing_options"] = json!([{"pricing_option_id": "po-a", "pricing_model": "cpm", "currency": "EUR", "floor_price": 2.0}]);
    auction.as_object_mut().unwrap().remove("brief_relevance");
    let mut usd = product("usd-1", 1.0);
    usd["pricing_options"][0]["currency"] = json!("USD");
    let s = setup(
        &app,
        &t,
        Behaviour {
            products: json!([
                product("ctv-1", 30.0),
                product("olv-2", 12.5),
                cheap,
                auction,
                usd
            ]),
            ..Behaviour::default()
        },
    )
    .await;
    // A campaign attached to the session, on automatic selection.
    let adv = s_adv(&app, &t).await;
    let mut body = new_campaign(1000.0)["create"].clone();
    body["advertiserId"] = json!(adv);
    body["discoveryId"] = json!(s.session);
    body["autonomy"] = json!({"inventorySelection": "automatic"});
    let c = app.post("/api/v2/buyer/campaigns", &t.key, &body).await;
    assert_eq!(c.status, 201, "{}", c.body);
    let campaign = c.data()["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();

    let path = format!("/api/v2/buyer/discovery/{}/auto-select", s.session);
    let res = app.post(&path, &t.key, &json!(null)).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data();
    assert_eq!(d["selectionMethod"], "scoring");
    assert_eq!(
        d["productCount"], 4,
        "the USD product cannot be bought in EUR: {d}"
    );
    assert_eq!(d["budgetContext"]["campaignId"], campaign.as_str());
    assert_eq!(d["budgetContext"]["total"], 1000.0);
    assert_eq!(d["testBudgetPerProduct"], 25.0);
    let picked = d["selectedProducts"].as_array().unwrap();
    let sum: f64 = picked.iter().map(|p| p["budget"].as_f64().unwrap()).sum();
    assert!(sum <= 1000.0 && sum > 999.0, "{sum}");
    assert_eq!(
        picked.last().unwrap()["productId"],
        "auc-1",
        "no brief relevance scores lowest: {d}"
    );
    assert!(d["selectionRationale"].as_str().unwrap().contains("score"));
    // It replaced the session's chosen products.
    let chosen = app
        .get(
            &format!("/api/v2/buyer/discovery/{}/products", s.session),
            &t.key,
        )
        .await;
    assert_eq!(chosen.data()["products"].as_array().unwrap().len(), 4);

    let cheapest = app
        .post(
            &format!("{path}?method=cpm_heuristic"),
            &t.key,
            &json!(null),
        )
        .await;
    assert_eq!(cheapest.status, 200, "{}", cheapest.body);
    assert_eq!(
        cheapest.data()["selectedProducts"][0]["productId"],
        "auc-1",
        "floor 2 is cheapest"
    );
    let measured = app
        .post(
            &format!("{path}?method=measurability"),
            &t.key,
            &json!(null),
        )
        .await;
    assert_eq!(
        measured.data()["selectedProducts"][0]["productId"],
        "cheap-1"
    );
    let bad = app
        .post(&format!("{path}?method=dice"), &t.key, &json!(null))
        .await;
    bad.assert_error(400, "VALIDATION_ERROR");

    // Launching the automatic campaign with an empty cart buys the
    // auto-selection (auction options at their floor).
    let launch = act(&app, &t, &campaign, "execute").await;
    assert_eq!(launch.status, 200, "{}", launch.body);
    let buys = launch.data()["mediaBuys"].as_array().unwrap();
    assert_eq!(buys.len(), 4, "{}", launch.body);
    assert!(
        buys.iter().all(|b| b["status"] == "active"),
        "{}",
        launch.body
    );
    assert_eq!(buy_of(buys, "auc-1")["bidPrice"], 2.0);
    assert_eq!(launch.data()["campaign"]["status"], "ACTIVE");
    assert_eq!(s.seller.created_count(), 4);
}

#[actix_web::test]
async fn agents_stage_execute_launch_and_read_buys_over_mcp() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let s = setup(&app, &t, Behaviour::default()).await;
    // /mcp/buyer: every media-buy operation is a tool from the registry.
    let mut buyer = crate::mcp::open_at(&app, "/mcp/buyer", &t.key).await;
    let staged = buyer
        .call(
            &app,
            "create_media_buys",
            json!({"body": {"productQueryId": s.session, "campaign": new_campaign(1000.0), "mode": "stage",
                            "selections": [pick("ctv-1", 100.0)]}}),
        )
        .await;
    assert_ne!(staged["isError"], true, "{staged}");
    let campaign = staged["structuredContent"]["data"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    // /mcp/v3: save_campaign desiredPhase active launches; get_delivery reads.
    let mut v3 = crate::mcp::open_at(&app, "/mcp/v3", &t.key).await;
    let launched = v3
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": campaign, "desiredPhase": "active"}),
        )
        .await;
    assert_ne!(launched["isError"], true, "{launched}");
    let d = &launched["structuredContent"]["data"];
    assert_eq!(d["campaign"]["status"], "ACTIVE", "{launched}");
    assert_eq!(d["mediaBuys"][0]["status"], "active");
    let more = v3
        .call(
            &app,
            "save_media_buy",
            json!({"productQueryId": s.session, "campaign": {"campaignId": campaign}, "mode": "execute",
                   "selections": [pick("olv-2", 100.0)]}),
        )
        .await;
    assert_ne!(more["isError"], true, "{more}");
    let delivery = v3
        .call(&app, "get_delivery", json!({"campaignId": campaign}))
        .await;
    assert_ne!(delivery["isError"], true, "{delivery}");
    assert_eq!(
        delivery["structuredContent"]["data"]["media_buys"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let paused = v3
        .call(
            &app,
            "save_campaign",
            json!({"campaignId": campaign, "isPaused": true}),
        )
        .await;
    assert_ne!(paused["isError"], true, "{paused}");
    assert!(
        s.seller.buys().iter().all(|b| b.status == "paused"),
        "the sellers heard the pause"
    );
    // A read-only key cannot spend.
    let reader = app
        .user_in(&t.account_id, "admin", &["platform:read"])
        .await;
    let mut ro = crate::mcp::open_at(&app, "/mcp/v3", &reader.key).await;
    let refused = ro
        .call(&app, "save_media_buy", json!({"productQueryId": s.session, "campaign": {"campaignId": campaign}, "mode": "execute", "selections": [pick("olv-2", 100.0)]}))
        .await;
    assert_eq!(refused["isError"], true, "{refused}");
    assert_eq!(
        refused["structuredContent"]["code"], "FORBIDDEN",
        "{refused}"
    );
}

#[actix_web::test]
async fn a_sellers_proposal_is_bought_by_its_id_with_a_total_budget() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let proposals = json!([{
        "proposal_id": "prop-ctv-mix",
        "name": "CTV and video mix",
        "allocations": [
            {"product_id": "ctv-1", "allocation_percentage": 60},
            {"product_id": "olv-2", "allocation_percentage": 40}
        ],
    }]);
    let s = setup(
        &app,
        &t,
        Behaviour {
            proposals,
            ..Behaviour::default()
        },
    )
    .await;
    // The session shows the seller's proposals beside its products.
    let browse = app
        .get(
            &format!("/api/v2/buyer/discovery/{}/discover-products", s.session),
            &t.key,
        )
        .await;
    assert_eq!(
        browse.data()["productGroups"][0]["proposals"][0]["proposal_id"],
        "prop-ctv-mix",
        "{}",
        browse.body
    );
    let bad = app
        .post(BUYS, &t.key, &json!({"productQueryId": s.session, "campaign": new_campaign(5000.0), "mode": "stage",
                                    "selections": [{"kind": "proposal", "proposalId": "nope", "totalBudget": 100}]}))
        .await;
    bad.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(bad.body["error"]["field"], "selections[0].proposalId");
    let res = app
        .post(BUYS, &t.key, &json!({"productQueryId": s.session, "campaign": new_campaign(5000.0), "mode": "execute",
                                    "selections": [{"kind": "proposal", "proposalId": "prop-ctv-mix", "totalBudget": 3000}]}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let buy = &res.data()["mediaBuys"][0];
    assert_eq!(buy["kind"], "proposal");
    assert_eq!(buy["proposalId"], "prop-ctv-mix");
    assert_eq!(buy["status"], "active", "{buy}");
    let sent = &s.seller.buys()[0].arguments;
    assert_eq!(sent["proposal_id"], "prop-ctv-mix");
    assert_eq!(
        sent["total_budget"],
        json!({"amount": 3000.0, "currency": "EUR"})
    );
    assert!(sent.get("packages").is_none(), "{sent}");
}
