//! Creatives (issue 39, item 2): the library (create, list with its
//! pagination, filters and tenancy, update), assignments to media buys,
//! and AdCP sync_creatives to real fake sellers, with each package's click
//! URL carrying its resolved utm parameters and the managed-storefront
//! linkage rule.

use sea_orm::{EntityTrait, PaginatorTrait};
use serde_json::{Value, json};

use agentic_api::accounts::admin;

use crate::accounts::{entry, managed};
use crate::fake_seller::{Behaviour, FakeSeller, seller};
use crate::helpers::*;
use crate::media_buys::{BUYS, discover, eur_advertiser, pick, setup};

const CREATIVES: &str = "/api/v2/buyer/creatives";
const SYNC: &str = "/api/v2/buyer/creatives/sync";
const FORMAT: &str = "https://creative.adcontextprotocol.org";

fn creative_body(adv: &str, name: &str) -> Value {
    json!({
        "advertiserId": adv,
        "name": name,
        "formatId": {"agentUrl": FORMAT, "id": "display_static", "width": 300, "height": 250},
        "assets": {"image": {"asset_type": "image", "url": "https://cdn.example/a.png", "width": 300, "height": 250}},
        "clickUrl": "https://shop.example/spring?ref=ad#top",
    })
}

async fn create(app: &TestApp, t: &Tenant, adv: &str, name: &str) -> String {
    let res = app.post(CREATIVES, &t.key, &creative_body(adv, name)).await;
    assert_eq!(res.status, 201, "{}", res.body);
    res.data()["creative"]["creativeId"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn creative_count(app: &TestApp) -> u64 {
    entity::creative::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

async fn assignment_count(app: &TestApp) -> u64 {
    entity::creative_assignment::Entity::find()
        .count(&app.db)
        .await
        .unwrap()
}

fn ids(res: &Resp) -> Vec<String> {
    res.data()
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["creativeId"].as_str().unwrap().to_string())
        .collect()
}

#[actix_web::test]
async fn the_library_pages_filters_and_never_shows_another_accounts_or_advertisers_rows() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = advertiser(&app, &t).await;
    let b = eur_advertiser(&app, &t, false).await;
    let mut of_a = Vec::new();
    for i in 0..3 {
        of_a.push(create(&app, &t, &a, &format!("A{i}")).await);
    }
    let mut of_b = Vec::new();
    for i in 0..2 {
        of_b.push(create(&app, &t, &b, &format!("B{i}")).await);
    }
    let other = app.tenant().await;
    let theirs_adv = advertiser(&app, &other).await;
    let theirs = create(&app, &other, &theirs_adv, "Theirs").await;

    // Pages, newest first, with exact totals.
    let res = app.get(&format!("{CREATIVES}?take=2"), &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.body["meta"]["pagination"],
        json!({"skip": 0, "take": 2, "total": 5, "hasMore": true})
    );
    assert_eq!(ids(&res), [of_b[1].clone(), of_b[0].clone()]);
    let res = app.get(&format!("{CREATIVES}?take=2&skip=4"), &t.key).await;
    assert_eq!(ids(&res), [of_a[0].clone()]);
    assert_eq!(res.body["meta"]["pagination"]["hasMore"], false);
    let res = app.get(&format!("{CREATIVES}?take=2&skip=9"), &t.key).await;
    assert!(ids(&res).is_empty());

    // By advertiser: each sees its own only; another account's advertiser
    // matches nothing.
    let res = app
        .get(&format!("{CREATIVES}?advertiserId={a}"), &t.key)
        .await;
    let mut got = ids(&res);
    got.sort();
    let mut want = of_a.clone();
    want.sort();
    assert_eq!(got, want);
    let res = app
        .get(&format!("{CREATIVES}?advertiserId={b}"), &t.key)
        .await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 2);
    let res = app
        .get(&format!("{CREATIVES}?advertiserId={theirs_adv}"), &t.key)
        .await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 0);

    // The other account sees its own creative only, and none of ours.
    let res = app.get(CREATIVES, &other.key).await;
    assert_eq!(ids(&res), vec![theirs.clone()]);
    let mine = &of_a[0];
    app.get(&format!("{CREATIVES}/{mine}"), &other.key)
        .await
        .assert_error(404, "NOT_FOUND");
    app.patch(
        &format!("{CREATIVES}/{mine}"),
        &other.key,
        &json!({"name": "x"}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    app.put(
        &format!("{CREATIVES}/{mine}/assignments"),
        &other.key,
        &json!({"assignments": []}),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    app.get(&format!("{CREATIVES}/{theirs}"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    // A creative of another account's advertiser cannot be made either.
    let res = app
        .post(CREATIVES, &t.key, &creative_body(&theirs_adv, "x"))
        .await;
    res.assert_error(404, "NOT_FOUND");
    assert_eq!(res.body["error"]["field"], "advertiserId");

    // Status: archive one; the filter sees it, the others stay active.
    let res = app
        .patch(
            &format!("{CREATIVES}/{mine}"),
            &t.key,
            &json!({"status": "archived"}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data()["creative"]["revision"],
        1,
        "a status is not content"
    );
    let res = app
        .get(&format!("{CREATIVES}?status=archived"), &t.key)
        .await;
    assert_eq!(ids(&res), vec![mine.clone()]);
    let res = app.get(&format!("{CREATIVES}?status=active"), &t.key).await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 4);

    // Bad query parameters are 400s naming them.
    for (q, field) in [
        ("take=0", "take"),
        ("take=101", "take"),
        ("skip=-1", "skip"),
        ("status=live", "status"),
        ("advertiserId=nope", "advertiserId"),
    ] {
        let res = app.get(&format!("{CREATIVES}?{q}"), &t.key).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], field, "{q}: {}", res.body);
    }
}

#[actix_web::test]
async fn bad_creatives_get_their_code_and_write_nothing() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let good = creative_body(&adv, "Spring");
    let with = |k: &str, v: Value| {
        let mut b = good.clone();
        b[k] = v;
        b
    };
    let cases = [
        (with("name", json!("  ")), "name"),
        (with("advertiserId", json!("nope")), "advertiserId"),
        (
            with(
                "formatId",
                json!({"agentUrl": "ftp://x", "id": "display_static"}),
            ),
            "formatId.agentUrl",
        ),
        (
            with("formatId", json!({"agentUrl": FORMAT, "id": "has space"})),
            "formatId.id",
        ),
        (
            with(
                "formatId",
                json!({"agentUrl": FORMAT, "id": "d", "width": 300}),
            ),
            "formatId",
        ),
        (with("assets", json!({})), "assets"),
        (
            with("assets", json!({"Image": {"asset_type": "image"}})),
            "assets.Image",
        ),
        (
            with("assets", json!({"image": {"url": "x"}})),
            "assets.image",
        ),
        (with("assets", json!({"image": []})), "assets.image"),
        (
            with("assets", json!({"click_url": {"asset_type": "url"}})),
            "assets.click_url",
        ),
        (with("clickUrl", json!("javascript:alert(1)")), "clickUrl"),
        (with("surprise", json!(1)), "surprise"),
    ];
    for (body, field) in cases {
        let res = app.post(CREATIVES, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], field, "{body}: {}", res.body);
    }
    let res = app.post(CREATIVES, &t.key, &json!({"name": "x"})).await;
    res.assert_error(400, "VALIDATION_ERROR");
    app.post(
        CREATIVES,
        &t.key,
        &creative_body("6f1c1f52-8d2c-4a53-9f0e-1d6c7e3b2a10", "x"),
    )
    .await
    .assert_error(404, "NOT_FOUND");
    assert_eq!(creative_count(&app).await, 0);

    // Updates: the same checks; a creative never moves; malformed ids 404.
    let id = create(&app, &t, &adv, "Spring").await;
    let path = format!("{CREATIVES}/{id}");
    for (body, field) in [
        (json!({"advertiserId": adv}), "advertiserId"),
        (json!({"status": "deleted"}), "status"),
        (json!({"clickUrl": "nope"}), "clickUrl"),
        (json!({"assets": {}}), "assets"),
        (json!({"name": ""}), "name"),
    ] {
        let res = app.patch(&path, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], field, "{body}: {}", res.body);
    }
    app.get(&format!("{CREATIVES}/cr_nope"), &t.key)
        .await
        .assert_error(404, "NOT_FOUND");
    let res = app.get(&path, &t.key).await;
    assert_eq!(res.data()["creative"]["revision"], 1);
    assert_eq!(res.data()["creative"]["name"], "Spring");
    // A content change adds one to the revision; clickUrl null removes it.
    let res = app
        .patch(&path, &t.key, &json!({"name": "Summer", "clickUrl": null}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["creative"]["revision"], 2);
    assert_eq!(res.data()["creative"]["clickUrl"], Value::Null);
    // A repeat changes nothing.
    let res = app.patch(&path, &t.key, &json!({"name": "Summer"})).await;
    assert_eq!(res.data()["creative"]["revision"], 2);

    // Assignments: unknown, repeated or weighted out of range; archived.
    let assign = format!("{path}/assignments");
    for (body, field) in [
        (
            json!({"assignments": [{"mediaBuyId": "mb_nope"}]}),
            "assignments[0].mediaBuyId",
        ),
        (
            json!({"assignments": [{"mediaBuyId": "mb_a"}, {"mediaBuyId": "mb_a"}]}),
            "assignments[1].mediaBuyId",
        ),
        (
            json!({"assignments": [{"mediaBuyId": "mb_a", "weight": 101}]}),
            "assignments[0].weight",
        ),
        (json!({"assignments": "all"}), "assignments"),
    ] {
        let res = app.put(&assign, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], field, "{body}: {}", res.body);
    }
    app.patch(&path, &t.key, &json!({"status": "archived"}))
        .await;
    app.put(
        &assign,
        &t.key,
        &json!({"assignments": [{"mediaBuyId": "mb_a"}]}),
    )
    .await
    .assert_error(409, "CONFLICT");
    assert_eq!(assignment_count(&app).await, 0);

    // Sync input.
    for (body, field) in [
        (json!({"creativeIds": []}), "creativeIds"),
        (json!({"creativeIds": ["nope"]}), "creativeIds[0]"),
        (json!({"advertiserId": "nope"}), "advertiserId"),
        (json!({"dryRun": "yes"}), "dryRun"),
    ] {
        let res = app.post(SYNC, &t.key, &body).await;
        res.assert_error(400, "VALIDATION_ERROR");
        assert_eq!(res.body["error"]["field"], field, "{body}: {}", res.body);
    }
    // Nothing assigned: nothing to send.
    let res = app.post(SYNC, &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["results"], json!([]));
}

/// Executes a cart of `products` for `adv`'s session; the campaign id and
/// the buys' ids by product.
async fn buys(
    app: &TestApp,
    t: &Tenant,
    session: &str,
    products: &[&str],
    utm: Value,
) -> (String, Vec<String>) {
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let end = start + chrono::Duration::days(30);
    let body = json!({
        "productQueryId": session, "mode": "execute",
        "campaign": {"create": {
            "name": "Spring",
            "flightDates": {"startDate": start.to_rfc3339(), "endDate": end.to_rfc3339()},
            "budget": {"total": 10_000.0},
            "utmConfig": utm,
        }},
        "selections": products.iter().map(|p| pick(p, 1000.0)).collect::<Vec<_>>(),
    });
    let res = app.post(BUYS, &t.key, &body).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let d = res.data();
    let buys = d["mediaBuys"].as_array().unwrap();
    let ids = products
        .iter()
        .map(|p| {
            let b = buys.iter().find(|b| b["productId"] == *p).unwrap();
            assert_eq!(b["status"], "active", "{b}");
            b["mediaBuyId"].as_str().unwrap().to_string()
        })
        .collect();
    (d["campaignId"].as_str().unwrap().to_string(), ids)
}

fn synced_creative<'a>(call: &'a Value, adcp_id: &str) -> &'a Value {
    call["creatives"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["creative_id"] == adcp_id)
        .unwrap_or_else(|| panic!("{adcp_id} not in {call}"))
}

#[actix_web::test]
async fn assigned_creatives_sync_with_each_packages_click_url_and_record_the_review() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let s = setup(&app, &t, Behaviour::default()).await;
    let (campaign, mb) = buys(
        &app,
        &t,
        &s.session,
        &["ctv-1", "olv-2"],
        json!([{"paramKey": "utm_source", "paramValue": "spring-{CAMPAIGN_ID}"},
               {"paramKey": "promo", "paramValue": "may"}]),
    )
    .await;
    // The campaign's utm parameters override the advertiser's in the
    // packages sent, too.
    let sent = s.seller.buys();
    let utm = &sent[0].arguments["packages"][0]["ext"]["platform"]["utm_parameters"];
    assert_eq!(utm["utm_source"], format!("spring-{campaign}"));
    assert_eq!(utm["utm_medium"], "agentic");
    assert_eq!(utm["promo"], "may");
    let res = app
        .get(&format!("/api/v2/buyer/campaigns/{campaign}"), &t.key)
        .await;
    assert_eq!(res.data()["campaign"]["utmConfig"][1]["paramKey"], "promo");

    let adv = res.data()["campaign"]["advertiserId"]
        .as_str()
        .unwrap()
        .to_string();
    let cr = create(&app, &t, &adv, "Spring 300x250").await;
    let unassigned = create(&app, &t, &adv, "Spare").await;
    let res = app
        .put(
            &format!("{CREATIVES}/{cr}/assignments"),
            &t.key,
            &json!({"assignments": [{"mediaBuyId": mb[0], "weight": 60}, {"mediaBuyId": mb[1]}]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let a = &res.data()["creative"]["assignments"];
    assert_eq!(a.as_array().unwrap().len(), 2);
    assert!(
        a.as_array()
            .unwrap()
            .iter()
            .all(|x| x["syncStatus"] == "pending")
    );
    // The listing's assignment filters.
    for q in [
        format!("mediaBuyId={}", mb[1]),
        format!("campaignId={campaign}"),
    ] {
        let res = app.get(&format!("{CREATIVES}?{q}"), &t.key).await;
        assert_eq!(ids(&res), vec![cr.clone()], "{q}");
    }
    let res = app
        .get(&format!("{CREATIVES}?mediaBuyId=mb_none"), &t.key)
        .await;
    assert_eq!(res.body["meta"]["pagination"]["total"], 0);
    // Another account cannot assign our buys to its creative.
    let other = app.tenant().await;
    let theirs_adv = advertiser(&app, &other).await;
    let theirs = create(&app, &other, &theirs_adv, "Theirs").await;
    let res = app
        .put(
            &format!("{CREATIVES}/{theirs}/assignments"),
            &other.key,
            &json!({"assignments": [{"mediaBuyId": mb[0]}]}),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "assignments[0].mediaBuyId");
    // Nor sync anything of ours.
    let res = app.post(SYNC, &other.key, &json!({})).await;
    assert_eq!(res.data()["results"], json!([]));
    assert!(s.seller.creative_syncs().is_empty());

    // Sync: one call (one storefront, one advertiser), one AdCP creative
    // per assignment with its own click URL, assigned to the seller's
    // package.
    let res = app
        .post(SYNC, &t.key, &json!({"campaignId": campaign}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let results = res.data()["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 2, "{}", res.body);
    assert!(
        results.iter().all(|r| r["syncStatus"] == "synced"
            && r["action"] == "created"
            && r["reviewStatus"] == "pending_review"),
        "{results:?}"
    );
    let calls = s.seller.creative_syncs();
    assert_eq!(calls.len(), 1);
    let call = &calls[0];
    assert_eq!(call["account"]["brand"]["domain"], "acme.example");
    let key = call["idempotency_key"].as_str().unwrap().to_string();
    assert!(key.len() >= 16, "{key}");
    for (i, buy) in mb.iter().enumerate() {
        let adcp_id = format!("{cr}.{buy}");
        let c = synced_creative(call, &adcp_id);
        let package = format!("pkg_{}", buy.trim_start_matches("mb_"));
        assert_eq!(
            c["assets"]["click_url"],
            json!({"asset_type": "url", "url_type": "clickthrough", "url": format!(
                "https://shop.example/spring?ref=ad&utm_source=spring-{campaign}&utm_medium=agentic\
                 &utm_campaign={campaign}&utm_content={cr}&utm_media_buy={buy}&utm_package={package}\
                 &promo=may#top"
            )})
        );
        assert_eq!(c["format_id"]["agent_url"], FORMAT);
        assert_eq!(c["format_id"]["width"], 300);
        assert_eq!(c["assets"]["image"]["asset_type"], "image");
        assert_eq!(c["name"], "Spring 300x250");
        let seller_buy = sent
            .iter()
            .find(|b| b.arguments["context"]["media_buy_id"] == buy.as_str())
            .unwrap();
        let seller_package = format!("{}_p1", seller_buy.id.clone().unwrap());
        let assignment = call["assignments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["creative_id"] == adcp_id.as_str())
            .unwrap();
        assert_eq!(assignment["package_id"], seller_package);
        if i == 0 {
            assert_eq!(assignment["weight"], 60.0);
        } else {
            assert!(assignment.get("weight").is_none());
        }
    }
    assert!(
        !call.to_string().contains(&unassigned),
        "an unassigned creative is not sent"
    );

    // Recorded on the creative.
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    let a = res.data()["creative"]["assignments"]
        .as_array()
        .unwrap()
        .clone();
    assert!(
        a.iter().all(|x| x["syncStatus"] == "synced"
            && x["reviewStatus"] == "pending_review"
            && x["clickUrl"].as_str().unwrap().contains("utm_content=")
            && x["syncedAt"].is_string()),
        "{a:?}"
    );

    // The same content again is the same request (same idempotency key).
    s.seller.set(|b| b.creative_status = "approved");
    let res = app.post(SYNC, &t.key, &json!({"creativeIds": [cr]})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let calls = s.seller.creative_syncs();
    assert_eq!(calls[1]["idempotency_key"], key.as_str());
    assert!(
        res.data()["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["action"] == "unchanged" && r["reviewStatus"] == "approved")
    );

    // A change makes the synced assignments outdated until the next sync.
    app.patch(
        &format!("{CREATIVES}/{cr}"),
        &t.key,
        &json!({"name": "Spring v2"}),
    )
    .await;
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    let a = &res.data()["creative"]["assignments"];
    assert!(
        a.as_array()
            .unwrap()
            .iter()
            .all(|x| x["syncStatus"] == "outdated"),
        "{a}"
    );
    // A dry run asks the seller to check, and records nothing.
    let res = app
        .post(SYNC, &t.key, &json!({"advertiserId": adv, "dryRun": true}))
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["dryRun"], true);
    let calls = s.seller.creative_syncs();
    assert_eq!(calls[2]["dry_run"], true);
    assert_ne!(calls[2]["idempotency_key"], key.as_str());
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    assert_eq!(
        res.data()["creative"]["assignments"][0]["syncStatus"],
        "outdated"
    );
    let res = app.post(SYNC, &t.key, &json!({"advertiserId": adv})).await;
    assert!(
        res.data()["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["action"] == "updated")
    );
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    assert_eq!(
        res.data()["creative"]["assignments"][0]["syncStatus"],
        "synced"
    );

    // A seller's refusal is recorded per assignment, with its errors.
    s.seller
        .set(|b| b.creative_error = Some(json!({"code": "POLICY_VIOLATION", "message": "no"})));
    app.patch(
        &format!("{CREATIVES}/{cr}"),
        &t.key,
        &json!({"name": "Spring v3"}),
    )
    .await;
    let res = app.post(SYNC, &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let r = &res.data()["results"][0];
    assert_eq!(r["syncStatus"], "failed");
    assert_eq!(r["errors"][0]["code"], "POLICY_VIOLATION", "{r}");
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    let a = &res.data()["creative"]["assignments"][0];
    assert_eq!(a["syncStatus"], "failed");
    assert_eq!(a["reviewStatus"], "approved", "the last review stands");

    // Unassigning removes them; a later sync sends nothing.
    let res = app
        .put(
            &format!("{CREATIVES}/{cr}/assignments"),
            &t.key,
            &json!({"assignments": []}),
        )
        .await;
    assert_eq!(res.data()["creative"]["assignments"], json!([]));
    let before = s.seller.creative_syncs().len();
    let res = app.post(SYNC, &t.key, &json!({})).await;
    assert_eq!(res.data()["results"], json!([]));
    assert_eq!(s.seller.creative_syncs().len(), before);
}

#[actix_web::test]
async fn a_draft_buy_is_skipped_until_the_seller_has_its_package() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let s = setup(&app, &t, Behaviour::default()).await;
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let end = start + chrono::Duration::days(30);
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": s.session, "mode": "stage",
                    "campaign": {"create": {"name": "Draft",
                        "flightDates": {"startDate": start.to_rfc3339(), "endDate": end.to_rfc3339()},
                        "budget": {"total": 5000.0}}},
                    "selections": [pick("ctv-1", 1000.0)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let mb = res.data()["mediaBuys"][0]["mediaBuyId"]
        .as_str()
        .unwrap()
        .to_string();
    let adv = res.data()["mediaBuys"][0]["advertiserId"]
        .as_str()
        .unwrap()
        .to_string();
    let cr = create(&app, &t, &adv, "Spring").await;
    let res = app
        .put(
            &format!("{CREATIVES}/{cr}/assignments"),
            &t.key,
            &json!({"assignments": [{"mediaBuyId": mb}]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let res = app.post(SYNC, &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["results"], json!([]));
    assert_eq!(res.data()["skipped"][0]["mediaBuyId"], mb.as_str());
    assert!(s.seller.creative_syncs().is_empty());
}

#[actix_web::test]
async fn a_managed_storefront_takes_creatives_only_under_an_accepted_linkage() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let m = managed(&app).await;
    admin::confirm_operator_identity(&app.db, &t.account_id, "agency.example")
        .await
        .unwrap();
    let adv = eur_advertiser(&app, &t, false).await;
    let session = discover(&app, &t, &adv).await;
    let (_campaign, mb) = buys(&app, &t, &session, &["ctv-1"], json!([])).await;
    let cr = create(&app, &t, &adv, "Spring").await;
    let res = app
        .put(
            &format!("{CREATIVES}/{cr}/assignments"),
            &t.key,
            &json!({"assignments": [{"mediaBuyId": mb[0]}]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);

    let refused = |res: &Resp, seller: &FakeSeller| {
        res.assert_error(409, "MANAGED_ACCOUNT_LINKAGE_REQUIRED");
        assert_eq!(
            res.body["error"]["details"]["missing"],
            json!([{"storefrontId": m.sf, "advertiserId": adv}])
        );
        assert!(seller.creative_syncs().is_empty(), "nothing is sent");
    };
    // No linkage at all.
    let res = app.post(SYNC, &t.key, &json!({})).await;
    refused(&res, &m.seller);
    // Synced, but pending the operator's review.
    let res = app
        .post(
            "/api/v2/buyer/storefront-accounts/sync",
            &t.key,
            &json!({"accounts": [entry(&adv, m.sf, "agency.example", "agent")]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let intake = res.data()["accounts"][0]["intakeId"]
        .as_str()
        .unwrap()
        .to_string();
    let res = app.post(SYNC, &t.key, &json!({"dryRun": true})).await;
    refused(&res, &m.seller);
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    assert_eq!(
        res.data()["creative"]["assignments"][0]["syncStatus"],
        "pending"
    );

    // Accepted: the creatives go, under the seller's account.
    let res = app
        .post(
            &format!("/api/v2/storefront/account-mappings/reviews/{intake}/accept"),
            &m.operator.key,
            &json!({}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let res = app.post(SYNC, &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(
        res.data()["results"][0]["syncStatus"],
        "synced",
        "{}",
        res.body
    );
    let calls = m.seller.creative_syncs();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        calls[0]["account"],
        json!({"account_id": "acc_acme_example_agency_example"})
    );
}

#[actix_web::test]
async fn campaign_utm_config_is_checked_and_cleared() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let adv = advertiser(&app, &t).await;
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let end = start + chrono::Duration::days(30);
    let body = |utm: Value| {
        json!({"advertiserId": adv, "name": "C",
               "flightDates": {"startDate": start.to_rfc3339(), "endDate": end.to_rfc3339()},
               "budget": {"total": 100.0}, "utmConfig": utm})
    };
    let res = app
        .post(
            "/api/v2/buyer/campaigns",
            &t.key,
            &body(json!([{"paramKey": "bad key", "paramValue": "x"}])),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "utmConfig[0].paramKey");
    let res = app
        .post(
            "/api/v2/buyer/campaigns",
            &t.key,
            &body(
                json!([{"paramKey": "k", "paramValue": "a"}, {"paramKey": "k", "paramValue": "b"}]),
            ),
        )
        .await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "utmConfig[1].paramKey");
    let res = app
        .post(
            "/api/v2/buyer/campaigns",
            &t.key,
            &body(json!([{"paramKey": "utm_medium", "paramValue": "ctv"}])),
        )
        .await;
    assert_eq!(res.status, 201, "{}", res.body);
    let id = res.data()["campaign"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(res.data()["campaign"]["utmConfig"][0]["paramValue"], "ctv");
    let res = app
        .put(
            &format!("/api/v2/buyer/campaigns/{id}"),
            &t.key,
            &json!({"utmConfig": []}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert_eq!(res.data()["campaign"]["utmConfig"], json!([]));
}

#[actix_web::test]
async fn a_seller_that_cannot_be_reached_fails_its_assignments_and_the_others_still_go() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let (gone, sf_gone) = seller(&app, "Gone", Behaviour::default()).await;
    let (here, sf_here) = seller(&app, "Here", Behaviour::default()).await;
    let adv = eur_advertiser(&app, &t, false).await;
    let session = discover(&app, &t, &adv).await;
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let end = start + chrono::Duration::days(30);
    let pick_at = |sf: i64| json!({"kind": "product", "productId": "ctv-1", "budget": 1000.0, "storefrontId": sf});
    let res = app
        .post(
            BUYS,
            &t.key,
            &json!({"productQueryId": session, "mode": "execute",
                    "campaign": {"create": {"name": "Two",
                        "flightDates": {"startDate": start.to_rfc3339(), "endDate": end.to_rfc3339()},
                        "budget": {"total": 5000.0}}},
                    "selections": [pick_at(sf_gone), pick_at(sf_here)]}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    let buys: Vec<(i64, String)> = res.data()["mediaBuys"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            assert_eq!(b["status"], "active", "{b}");
            (
                b["storefrontId"].as_i64().unwrap(),
                b["mediaBuyId"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let cr = create(&app, &t, &adv, "Spring").await;
    let res = app
        .put(
            &format!("{CREATIVES}/{cr}/assignments"),
            &t.key,
            &json!({"assignments": buys.iter().map(|(_, b)| json!({"mediaBuyId": b})).collect::<Vec<_>>()}),
        )
        .await;
    assert_eq!(res.status, 200, "{}", res.body);
    // One seller goes away.
    drop(gone);
    actix_rt::time::sleep(std::time::Duration::from_millis(200)).await;
    let res = app.post(SYNC, &t.key, &json!({})).await;
    assert_eq!(res.status, 200, "{}", res.body);
    let results = res.data()["results"].as_array().unwrap().clone();
    assert_eq!(results.len(), 2, "{results:?}");
    for r in &results {
        if r["storefrontId"] == sf_gone {
            assert_eq!(r["syncStatus"], "failed", "{r}");
            assert!(
                r["errors"][0]["code"]
                    .as_str()
                    .unwrap()
                    .starts_with("SELLER_"),
                "{r}"
            );
        } else {
            assert_eq!(r["storefrontId"], sf_here);
            assert_eq!(r["syncStatus"], "synced", "{r}");
        }
    }
    assert_eq!(here.creative_syncs().len(), 1);
    let res = app.get(&format!("{CREATIVES}/{cr}"), &t.key).await;
    for a in res.data()["creative"]["assignments"].as_array().unwrap() {
        let want = if a["storefrontId"] == sf_gone {
            "failed"
        } else {
            "synced"
        };
        assert_eq!(a["syncStatus"], want, "{a}");
    }
}
