//! Media buys over real fake sellers (MCP Streamable HTTP on 127.0.0.1):
//! the cart (stage), execution at the sellers, status, pause and resume,
//! callbacks, the poller, and every error code of the money path.

use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use crate::fake_seller::{Behaviour, FakeSeller, product, seller};
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
    pub adv: String,
    pub session: String,
}

pub async fn setup(app: &TestApp, t: &Tenant, b: Behaviour) -> Setup {
    let (seller, storefront) = seller(app, "Northwind", b).await;
    let adv = eur_advertiser(app, t, false).await;
    let session = discover(app, t, &adv).await;
    Setup {
        seller,
        storefront,
        adv,
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
    let ids: Vec<Value> = buys.iter().map(|b| b["mediaBuyId"].clone()).collect();
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
    assert_eq!(buys[0]["budget"]["amount"], 5000.0);
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
    assert_eq!(buys[0]["mediaBuyId"], ids[1]);
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
            422,
            "CAPABILITY_NOT_SUPPORTED",
            None,
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
