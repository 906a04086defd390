//! Built MCP-App widgets: `GET /api/v2/mcp-apps/{view}/mcp-app.html` (the
//! spec's headers, every widget row of its Errors table, ETag and 304) and
//! the widgets as MCP resources and in tool definitions and results.

use actix_web::http::Method;
use serde_json::{Value, json};

use crate::helpers::*;
use crate::mcp::open_at;

const SLUGS: [&str; 4] = [
    "discovery-results",
    "campaign-summary",
    "media-buy-status",
    "advertiser-card",
];

fn path(view: &str) -> String {
    format!("/api/v2/mcp-apps/{view}/mcp-app.html")
}

fn built(slug: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/widgets/dist/{slug}.html",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

async fn get(app: &TestApp, view: &str, key: Option<&str>, if_none_match: Option<&str>) -> Resp {
    let mut req = app.client.get(app.url(&path(view)));
    if let Some(k) = key {
        req = req.insert_header(("Authorization", format!("Bearer {k}")));
    }
    if let Some(tag) = if_none_match {
        req = req.insert_header(("If-None-Match", tag));
    }
    let mut res = req.send().await.unwrap();
    let raw = res.body().limit(8 * 1024 * 1024).await.unwrap();
    Resp {
        status: res.status(),
        headers: res.headers().clone(),
        body: serde_json::from_slice(&raw).unwrap_or(Value::Null),
        raw,
    }
}

#[actix_web::test]
async fn each_widget_is_served_with_the_four_headers_and_an_etag() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for slug in SLUGS {
        let res = get(&app, slug, Some(&t.key), None).await;
        assert_eq!(res.status, 200, "{slug}");
        assert_eq!(
            res.header("content-type"),
            Some("text/html;profile=mcp-app")
        );
        assert_eq!(res.header("cache-control"), Some("private, max-age=300"));
        assert_eq!(res.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(
            res.header("content-security-policy"),
            Some(
                "sandbox; default-src 'none'; script-src 'none'; base-uri 'none'; frame-ancestors 'none'"
            )
        );
        assert_eq!(
            std::str::from_utf8(&res.raw).unwrap(),
            built(slug),
            "{slug}"
        );
        let etag = res.header("etag").unwrap().to_string();
        assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");

        // The current tag (strong, weak, in a list, or `*`): 304, no body.
        for tag in [
            etag.clone(),
            format!("W/{etag}"),
            format!("\"x\", {etag}"),
            "*".into(),
        ] {
            let again = get(&app, slug, Some(&t.key), Some(&tag)).await;
            assert_eq!(again.status, 304, "{slug} {tag}");
            assert!(again.raw.is_empty());
            assert_eq!(again.header("etag"), Some(etag.as_str()));
            assert_eq!(again.header("cache-control"), Some("private, max-age=300"));
        }
        // Another version's tag: the whole file.
        let stale = get(&app, slug, Some(&t.key), Some("\"0123\"")).await;
        assert_eq!(stale.status, 200);
        assert_eq!(stale.raw, res.raw);
    }
}

#[actix_web::test]
async fn compatibility_aliases_answer_with_the_widget_they_became() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for (alias, slug) in [
        ("campaign", "campaign-summary"),
        ("discovery", "discovery-results"),
        ("advertiser", "advertiser-card"),
        ("media-buys", "media-buy-status"),
    ] {
        let res = get(&app, alias, Some(&t.key), None).await;
        assert_eq!(res.status, 200, "{alias}");
        assert_eq!(std::str::from_utf8(&res.raw).unwrap(), built(slug));
        let canonical = get(&app, slug, Some(&t.key), None).await;
        assert_eq!(res.header("etag"), canonical.header("etag"));
    }
}

#[actix_web::test]
async fn every_widget_error_row() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    // 400: characters outside lowercase letters, digits and hyphens.
    for view in [
        "Campaign-Summary",
        "campaign_summary",
        "campaign.summary",
        "caf%C3%A9",
        "a%20b",
    ] {
        get(&app, view, Some(&t.key), None)
            .await
            .assert_error(400, "VALIDATION_ERROR");
    }
    // 404: a well-formed view with no built widget.
    for view in ["no-such-widget", "campaign-summary-2", "0"] {
        get(&app, view, Some(&t.key), None)
            .await
            .assert_error(404, "NOT_FOUND");
    }
    // 401: no credential, or a bad one, before anything else.
    for key in [None, Some("agk_not-a-key")] {
        for view in ["campaign-summary", "Bad_View"] {
            get(&app, view, key, None)
                .await
                .assert_error(401, "UNAUTHORIZED");
        }
    }
    // Only GET.
    let res = app
        .request(
            Method::POST,
            &path("campaign-summary"),
            Some(&t.key),
            Some(&json!({})),
        )
        .await;
    assert_eq!(res.status, 405, "{}", res.body);
}

fn result_of(msgs: &[Value]) -> &Value {
    &msgs.last().unwrap()["result"]
}

#[actix_web::test]
async fn mcp_endpoints_list_and_read_the_widgets_as_resources() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    for endpoint in ["/mcp/buyer", "/mcp/v3"] {
        let mut s = open_at(&app, endpoint, &t.key).await;
        let msgs = s.request(&app, "resources/list", json!({})).await;
        let list = result_of(&msgs)["resources"].as_array().unwrap().clone();
        let uris: Vec<&str> = list.iter().map(|r| r["uri"].as_str().unwrap()).collect();
        assert_eq!(
            uris,
            SLUGS
                .iter()
                .map(|s| format!("ui://agentic-api/{s}/mcp-app.html"))
                .collect::<Vec<_>>(),
            "{endpoint}"
        );
        for r in &list {
            assert_eq!(r["mimeType"], "text/html;profile=mcp-app");
            assert_eq!(r["_meta"]["ui"]["csp"]["connectDomains"], json!([]));
            assert_eq!(r["_meta"]["ui"]["csp"]["resourceDomains"], json!([]));
            assert_eq!(r["_meta"]["ui"]["prefersBorder"], true);
        }
        for slug in SLUGS.iter().chain(&["campaign"]) {
            let uri = format!("ui://agentic-api/{slug}/mcp-app.html");
            let msgs = s.request(&app, "resources/read", json!({"uri": uri})).await;
            let contents = &result_of(&msgs)["contents"][0];
            assert_eq!(contents["uri"], uri.as_str());
            assert_eq!(contents["mimeType"], "text/html;profile=mcp-app");
            let canonical = if *slug == "campaign" {
                "campaign-summary"
            } else {
                slug
            };
            assert_eq!(contents["text"].as_str().unwrap(), built(canonical));
            assert!(contents["_meta"]["ui"]["csp"].is_object());
        }
        for uri in [
            "ui://agentic-api/nothing/mcp-app.html",
            "ui://agentic-api/Campaign/mcp-app.html",
            "https://example.com/x",
        ] {
            let msgs = s.request(&app, "resources/read", json!({"uri": uri})).await;
            assert_eq!(
                msgs.last().unwrap()["error"]["code"],
                -32002,
                "{uri}: {msgs:?}"
            );
        }
    }
    // The storefront operator's endpoint shows no widget.
    let mut s = open_at(&app, "/mcp/storefront", &t.key).await;
    let msgs = s.request(&app, "tools/list", json!({})).await;
    for tool in result_of(&msgs)["tools"].as_array().unwrap() {
        assert!(tool["_meta"]["ui"].is_null(), "{tool}");
    }
}

#[actix_web::test]
async fn widget_bearing_tools_declare_the_resource_and_answer_for_it() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let mut s = open_at(&app, "/mcp/buyer", &t.key).await;
    let msgs = s.request(&app, "tools/list", json!({})).await;
    let tools = result_of(&msgs)["tools"].as_array().unwrap().clone();
    let uri_of = |name: &str| {
        tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["_meta"]["ui"]["resourceUri"].clone())
            .unwrap()
    };
    assert_eq!(
        uri_of("get_advertiser"),
        "ui://agentic-api/advertiser-card/mcp-app.html"
    );
    assert_eq!(
        uri_of("get_campaign"),
        "ui://agentic-api/campaign-summary/mcp-app.html"
    );
    assert_eq!(
        uri_of("browse_discovery"),
        "ui://agentic-api/discovery-results/mcp-app.html"
    );
    assert_eq!(
        uri_of("get_media_buy_status"),
        "ui://agentic-api/media-buy-status/mcp-app.html"
    );
    assert_eq!(uri_of("list_webhook_subscriptions"), Value::Null);

    let created = s
        .call(
            &app,
            "create_advertiser",
            json!({"body": {"name": "Widget Co", "brand": "widget.example", "primaryCurrency": "EUR"}}),
        )
        .await;
    let id = created["structuredContent"]["data"]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let got = s
        .call(
            &app,
            "get_advertiser",
            json!({"pathParams": {"advertiserId": id}}),
        )
        .await;
    assert_eq!(
        got["_meta"]["ui"]["resourceUri"],
        "ui://agentic-api/advertiser-card/mcp-app.html"
    );
    assert_eq!(got["structuredContent"]["data"]["name"], "Widget Co");
    let text = got["content"][0]["text"].as_str().unwrap();
    assert!(
        text.starts_with(&format!("get_advertiser: id {id}, name \"Widget Co\"")),
        "{text}"
    );
    assert!(text.len() < 300, "compact: {text}");
    // A failed call carries no widget.
    let missing = s
        .call(
            &app,
            "get_advertiser",
            json!({"pathParams": {"advertiserId": "00000000-0000-4000-8000-000000000000"}}),
        )
        .await;
    assert_eq!(missing["isError"], true);
    assert!(missing["_meta"]["ui"].is_null(), "{missing}");

    // /mcp/v3: by tool, and `get` by the kind of record.
    let mut v3 = open_at(&app, "/mcp/v3", &t.key).await;
    let msgs = v3.request(&app, "tools/list", json!({})).await;
    let v3_tools = result_of(&msgs)["tools"].as_array().unwrap().clone();
    let v3_uri = |name: &str| {
        v3_tools
            .iter()
            .find(|t| t["name"] == name)
            .map(|t| t["_meta"]["ui"]["resourceUri"].clone())
            .unwrap()
    };
    assert_eq!(
        v3_uri("save_advertiser"),
        "ui://agentic-api/advertiser-card/mcp-app.html"
    );
    assert_eq!(
        v3_uri("save_campaign"),
        "ui://agentic-api/campaign-summary/mcp-app.html"
    );
    assert_eq!(
        v3_uri("get_delivery"),
        "ui://agentic-api/media-buy-status/mcp-app.html"
    );
    assert_eq!(v3_uri("get"), Value::Null);
    let got = v3
        .call(&app, "get", json!({"type": "advertiser", "id": id}))
        .await;
    assert_eq!(
        got["_meta"]["ui"]["resourceUri"],
        "ui://agentic-api/advertiser-card/mcp-app.html"
    );
    let listed = v3.call(&app, "search", json!({"type": "advertiser"})).await;
    assert!(listed["_meta"]["ui"].is_null(), "{listed}");
}
