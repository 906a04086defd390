//! Storefronts: registered by the operator, listed to buyers without their
//! credentials, and called with them.

use serde_json::{Value, json};

use agentic_api::auth::tenancy::{self, NewStorefront};
use agentic_api::discovery::seller::{ProductQuery, SellerClient, SellerOptions};
use agentic_api::discovery::storefronts;

use crate::fake_seller::{Behaviour, FakeSeller};
use crate::helpers::*;

const LIST: &str = "/api/v2/buyer/storefronts";

async fn register(app: &TestApp, name: &str, token: Option<&str>) -> i64 {
    tenancy::register_storefront_with(
        &app.db,
        NewStorefront {
            name: name.into(),
            url: format!("https://{}.example.com/mcp", name.to_lowercase()),
            auth_token: token.map(str::to_string),
        },
        app.config.url_policy(),
    )
    .await
    .unwrap()
}

#[actix_web::test]
async fn storefronts_are_listed_in_pages_without_their_credentials() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let a = register(&app, "Alpha", None).await;
    let b = register(&app, "Bravo", Some("tok-bravo-secret")).await;
    let c = register(&app, "Charlie", None).await;

    let page = app.get(&format!("{LIST}?take=2"), &t.key).await;
    assert_eq!(page.status, 200, "{}", page.body);
    let ids: Vec<i64> = page
        .data()
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_i64().unwrap())
        .collect();
    assert_eq!(ids, [a, b]);
    assert_eq!(
        page.body["meta"]["pagination"],
        json!({"skip": 0, "take": 2, "total": 3, "hasMore": true})
    );
    assert!(page.body["error"].is_null());
    let first = &page.data()[1];
    assert_eq!(first["name"], "Bravo");
    assert_eq!(first["url"], "https://bravo.example.com/mcp");
    assert!(first["createdAt"].is_string());
    let keys: Vec<&String> = first.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 4, "{first}");
    assert!(!String::from_utf8_lossy(&page.raw).contains("tok-bravo-secret"));

    let rest = app.get(&format!("{LIST}?take=2&skip=2"), &t.key).await;
    assert_eq!(rest.data().as_array().unwrap().len(), 1);
    assert_eq!(rest.data()[0]["id"], Value::from(c));
    assert_eq!(rest.body["meta"]["pagination"]["hasMore"], false);

    // The same list through the operation dispatcher's registry entry.
    assert!(
        agentic_api::app::OPERATIONS
            .find("list_storefronts")
            .is_some()
    );
}

#[actix_web::test]
async fn listing_storefronts_needs_a_credential_and_valid_paging() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    app.request(actix_web::http::Method::GET, LIST, None, None)
        .await
        .assert_error(401, "UNAUTHORIZED");
    app.get(LIST, "agk_nope")
        .await
        .assert_error(401, "UNAUTHORIZED");
    let res = app.get(&format!("{LIST}?take=0"), &t.key).await;
    res.assert_error(400, "VALIDATION_ERROR");
    assert_eq!(res.body["error"]["field"], "take");
    let res = app.get(&format!("{LIST}?take=101"), &t.key).await;
    res.assert_error(400, "VALIDATION_ERROR");
    // Empty is fine.
    let empty = app.get(LIST, &t.key).await;
    assert_eq!(empty.data(), &json!([]));
    assert_eq!(empty.body["meta"]["pagination"]["total"], 0);
}

#[actix_web::test]
async fn a_read_only_key_may_list_storefronts() {
    let app = spawn_app().await;
    let t = app
        .tenant_with(
            tenancy::NewAccount::named("Reader"),
            "member",
            &["platform:read"],
        )
        .await;
    register(&app, "Alpha", None).await;
    let res = app.get(LIST, &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
}

#[actix_web::test]
async fn a_token_registered_with_the_cli_is_sent_to_the_seller() {
    let app = spawn_app().await;
    let seller = FakeSeller::start(Behaviour {
        token: Some("cli-token-123".into()),
        ..Behaviour::default()
    })
    .await;
    let out = cli(
        &app.database_url,
        &[
            "admin",
            "register-storefront",
            "--name",
            "Local Seller",
            "--url",
            &seller.url(),
            "--auth-token",
            "cli-token-123",
        ],
    );
    // The test database allows only secure URLs unless told otherwise.
    assert!(!out.status.success());
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_agentic-api"))
        .args([
            "admin",
            "register-storefront",
            "--name",
            "Local Seller",
            "--url",
            &seller.url(),
            "--auth-token",
            "cli-token-123",
        ])
        .env("AGENTIC_DATABASE_URL", &app.database_url)
        .env("AGENTIC_ALLOW_INSECURE_URLS", "true")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Value = serde_json::from_slice(&out.stdout).unwrap();
    let id = printed["storefrontId"].as_i64().unwrap();
    assert_eq!(printed.as_object().unwrap().len(), 1, "{printed}");

    let target = storefronts::target(&app.db, id, app.config.url_policy())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let client = SellerClient::start(app.config.url_policy(), SellerOptions::default()).unwrap();
    let answer = client
        .get_products(&target, &ProductQuery::brief("anything"))
        .await
        .unwrap();
    assert_eq!(answer.products.len(), 2);
    assert!(
        seller
            .seen()
            .iter()
            .all(|s| s.authorization.as_deref() == Some("Bearer cli-token-123"))
    );
    // The server's own client is registered for discovery.
    assert!(app.state.ctx.get::<SellerClient>().is_ok());
}
