//! Each widget in a real headless Chromium, hosted the way an MCP Apps
//! host does it (tests/browser/widget_driver.py on widgets/dist-test/host.html):
//! the HTML fetched from `GET /api/v2/mcp-apps/{view}/mcp-app.html` goes
//! into a sandboxed iframe as `srcdoc`, the SDK's `AppBridge` connects to
//! it, and a real tool result from `/mcp/buyer` of a demo account (a
//! discovery over the demo sellers and a launched campaign) is handed
//! over. The widget must show the payload's values, raise no console
//! error, CSP violation or network request; the discovery widget's Choose
//! asks the host for `add_discovery_products`, which the test then runs
//! for real. Screenshots go to `target/browser-artifacts/widget-*.png`.

use serde_json::{Value, json};

use agentic_api::demo;

use crate::browser::{Browser, browser_available};
use crate::helpers::*;
use crate::mcp::open_at;

const DRIVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/browser/widget_driver.py"
);
const HOST: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/widgets/dist-test/host.html");

fn artifact(name: &str) -> String {
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").to_string());
    let dir = format!("{target}/browser-artifacts");
    let _ = std::fs::create_dir_all(&dir);
    format!("{dir}/{name}")
}

async fn ok(b: &mut Browser, cmd: Value) -> Value {
    let res = b.send(cmd.clone()).await;
    assert_eq!(res["ok"], json!(true), "{}: {}", cmd["cmd"], res);
    res
}

/// The widget's HTML as an iframe host fetches it.
async fn widget_html(app: &TestApp, key: &str, uri: &str) -> String {
    let view = uri
        .strip_prefix("ui://agentic-api/")
        .and_then(|v| v.strip_suffix("/mcp-app.html"))
        .unwrap_or_else(|| panic!("not a widget URI: {uri}"));
    let res = app
        .send_raw(
            actix_web::http::Method::GET,
            &format!("/api/v2/mcp-apps/{view}/mcp-app.html"),
            Some(key),
            None,
            Vec::new(),
        )
        .await;
    assert_eq!(res.status, 200);
    String::from_utf8(res.raw.to_vec()).unwrap()
}

/// Hosts `result` in its widget and returns what the widget shows.
async fn show(b: &mut Browser, app: &TestApp, key: &str, result: &Value, input: Value) -> String {
    let uri = result["_meta"]["ui"]["resourceUri"]
        .as_str()
        .unwrap_or_else(|| panic!("a widget result: {result}"))
        .to_string();
    let html = widget_html(app, key, &uri).await;
    let hosted = ok(
        b,
        json!({"cmd": "host", "hostPage": HOST, "html": html, "result": result,
               "input": input, "timeoutMs": 30_000}),
    )
    .await;
    assert_eq!(hosted["state"], "rendered", "{uri}: {hosted}");
    let text = ok(b, json!({"cmd": "text"})).await["value"]
        .as_str()
        .unwrap()
        .to_string();
    let slug = uri.split('/').nth(3).unwrap_or("widget").to_string();
    ok(
        b,
        json!({"cmd": "screenshot", "path": artifact(&format!("widget-{slug}.png"))}),
    )
    .await;
    text
}

#[actix_web::test]
async fn each_widget_renders_a_real_tool_result_in_a_sandboxed_iframe() {
    if !browser_available() {
        return;
    }
    let app = spawn_app_with(|c| {
        c.demo_seller_delay_scale = 0.0;
        c.media_buy_poll_seconds = 1;
    })
    .await;
    let key = demo::seed(&app.db).await.unwrap().api_key;
    let mut s = open_at(&app, "/mcp/buyer", &key).await;

    let adv = s
        .call(
            &app,
            "create_advertiser",
            json!({"body": {"name": "Widget Shoes", "brand": "widget-shoes.example",
                "primaryCurrency": "USD", "preferredTimezone": "America/New_York"}}),
        )
        .await;
    let adv_id = adv["structuredContent"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let found = s
        .call(
            &app,
            "discover_products",
            json!({"body": {"advertiserId": adv_id, "brief": "Live sports on connected TV and podcasts in the US", "waitSeconds": 10}}),
        )
        .await;
    let discovery = found["structuredContent"]["data"]["discoveryId"]
        .as_str()
        .unwrap()
        .to_string();
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let bought = s
        .call(
            &app,
            "create_media_buys",
            json!({"body": {
                "productQueryId": discovery,
                "campaign": {"create": {"name": "Widget launch", "budget": {"total": 50000},
                    "flightDates": {"startDate": start.to_rfc3339(),
                        "endDate": (start + chrono::Duration::days(30)).to_rfc3339()}}},
                "mode": "execute",
                "selections": [{"kind": "product", "productId": "lm_ctv_premium", "budget": 20000.0}],
            }}),
        )
        .await;
    assert_ne!(bought["isError"], true, "{bought}");
    let campaign = bought["structuredContent"]["data"]["campaignId"]
        .as_str()
        .unwrap()
        .to_string();

    let mut b = Browser::spawn(DRIVER, &[]).await;

    let got = s
        .call(
            &app,
            "get_advertiser",
            json!({"pathParams": {"advertiserId": adv_id}}),
        )
        .await;
    let text = show(&mut b, &app, &key, &got, json!({})).await;
    for want in [
        "Widget Shoes",
        "widget-shoes.example",
        "USD",
        "America/New_York",
    ] {
        assert!(
            text.contains(want),
            "advertiser card lacks {want:?}: {text}"
        );
    }

    let got = s
        .call(
            &app,
            "get_campaign",
            json!({"pathParams": {"campaignId": campaign}}),
        )
        .await;
    let text = show(&mut b, &app, &key, &got, json!({})).await;
    assert!(text.contains("Widget launch"), "campaign summary: {text}");
    assert!(
        text.contains("50,000") || text.contains("50000"),
        "the budget: {text}"
    );

    let got = s
        .call(
            &app,
            "get_media_buy_status",
            json!({"pathParams": {"campaignId": campaign}}),
        )
        .await;
    let buys = got["structuredContent"]["data"]["media_buys"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!buys.is_empty(), "{got}");
    let text = show(&mut b, &app, &key, &got, json!({})).await;
    for buy in &buys {
        let status = buy["internal_status"].as_str().unwrap().replace('_', " ");
        assert!(
            text.to_lowercase().contains(&status),
            "media-buy status lacks {status:?}: {text}"
        );
    }

    let got = s
        .call(
            &app,
            "browse_discovery",
            json!({"pathParams": {"discoveryId": discovery}}),
        )
        .await;
    let groups = got["structuredContent"]["data"]["productGroups"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!groups.is_empty(), "{got}");
    let text = show(
        &mut b,
        &app,
        &key,
        &got,
        json!({"pathParams": {"discoveryId": discovery}}),
    )
    .await;
    let product = &groups[0]["products"][0];
    let product_id = product["productId"]
        .as_str()
        .or_else(|| product["id"].as_str())
        .unwrap_or_else(|| panic!("a product id: {product}"))
        .to_string();
    let name = product["name"].as_str().unwrap();
    assert!(
        text.contains(name),
        "discovery results lack {name:?}: {text}"
    );

    // Choose: the widget asks the host, and the host's call works for real.
    ok(
        &mut b,
        json!({"cmd": "click", "text": format!("button[data-product-id=\"{product_id}\"]")}),
    )
    .await;
    let mut calls = Value::Null;
    for _ in 0..100 {
        calls = ok(&mut b, json!({"cmd": "toolCalls"})).await["value"].clone();
        if calls.as_array().is_some_and(|c| !c.is_empty()) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let call = &calls[0];
    assert_eq!(call["name"], "add_discovery_products", "{calls}");
    assert_eq!(
        call["arguments"]["pathParams"]["discoveryId"],
        discovery.as_str()
    );
    let chosen = s
        .call(&app, "add_discovery_products", call["arguments"].clone())
        .await;
    assert_ne!(chosen["isError"], true, "{chosen}");

    let errors = ok(&mut b, json!({"cmd": "errors"})).await["value"].clone();
    assert_eq!(
        errors,
        json!([]),
        "console errors, CSP violations or requests"
    );
    b.quit().await;
}
