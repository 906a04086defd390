//! The web console in a real headless Chromium (tests/browser/console_driver.py):
//! a person signs in through the login page, creates a key and sees it once,
//! two people share a live room, a discovery lands seller by seller,
//! campaigns show their buys, and the API reference renders. Each test fails
//! on any console error or CSP violation in its pages, and keeps screenshots
//! under `target/browser-artifacts/` (`CARGO_TARGET_DIR` if set).
//!
//! The directed turn (asking the assistant and watching the answer stream)
//! is in `two_people_share_a_live_room_…` ([`direct_a_turn`]): it drives the
//! turn through the page whatever the server offers, and checks the
//! streamed answer on both pages when the OpenAPI document lists the turn
//! route, or the console's notice that the assistant is not there otherwise.
//! `the_room_shows_a_streamed_answer_…` checks the page's side of the
//! assistant's contract with the events handed to its own `EventSource`.

use std::time::Duration;

use serde_json::{Value, json};

use crate::browser::{Browser, browser_available};
use crate::console::{PASSWORD, person};
use crate::helpers::*;

const DRIVER: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/browser/console_driver.py"
);

/// Where screenshots are kept.
fn artifact(name: &str) -> String {
    let target = std::env::var("CARGO_TARGET_DIR")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/target").to_string());
    format!("{target}/browser-artifacts/{name}")
}

/// The console's driver: named pages, each its own browser context.
struct Chromium(Browser);

impl Chromium {
    async fn launch() -> Chromium {
        Chromium(Browser::spawn(DRIVER, &[]).await)
    }

    async fn send(&mut self, cmd: Value) -> Value {
        self.0.send(cmd).await
    }

    /// Sends a command that must succeed; returns its `value`.
    async fn ok(&mut self, cmd: Value) -> Value {
        let res = self.send(cmd.clone()).await;
        assert_eq!(res["ok"], json!(true), "{cmd}: {}", res["error"]);
        res["value"].clone()
    }

    async fn open(&mut self, page: &str) {
        self.ok(json!({"cmd": "open", "page": page})).await;
    }

    async fn goto(&mut self, page: &str, url: &str) {
        self.ok(json!({"cmd": "goto", "page": page, "url": url}))
            .await;
    }

    async fn click(&mut self, page: &str, selector: &str) {
        self.ok(json!({"cmd": "click", "page": page, "selector": selector}))
            .await;
    }

    async fn fill(&mut self, page: &str, selector: &str, value: &str) {
        self.ok(json!({"cmd": "fill", "page": page, "selector": selector, "value": value}))
            .await;
    }

    async fn select(&mut self, page: &str, selector: &str, value: &str) {
        self.ok(json!({"cmd": "select", "page": page, "selector": selector, "value": value}))
            .await;
    }

    /// A key where the focus is (`selector: None`) or on an element.
    async fn press(&mut self, page: &str, key: &str, selector: Option<&str>) {
        self.ok(json!({"cmd": "press", "page": page, "key": key, "selector": selector}))
            .await;
    }

    async fn focus(&mut self, page: &str, selector: &str) {
        self.ok(json!({"cmd": "focus", "page": page, "selector": selector}))
            .await;
    }

    /// Waits until `selector` is visible (and holds `text`).
    async fn wait_for(&mut self, page: &str, selector: &str, text: Option<&str>) {
        self.ok(json!({"cmd": "waitFor", "page": page, "selector": selector, "text": text, "timeoutMs": 30_000}))
            .await;
    }

    /// Waits until `js` is truthy in the page.
    async fn wait(&mut self, page: &str, js: &str) {
        self.ok(json!({"cmd": "wait", "page": page, "js": js, "timeoutMs": 30_000}))
            .await;
    }

    async fn eval(&mut self, page: &str, js: &str) -> Value {
        self.ok(json!({"cmd": "eval", "page": page, "js": js}))
            .await
    }

    /// The whole page as `target/browser-artifacts/{name}`.
    async fn screenshot(&mut self, page: &str, name: &str) {
        self.screenshot_with(page, name, true).await;
    }

    /// The visible part only, when `full` is false.
    async fn screenshot_with(&mut self, page: &str, name: &str, full: bool) {
        let path = artifact(name);
        self.ok(json!({"cmd": "screenshot", "page": page, "path": path, "full": full}))
            .await;
        eprintln!("screenshot: {path}");
    }

    /// Nothing went wrong in the page: no console error, no uncaught
    /// exception, no Content-Security-Policy violation.
    async fn assert_no_problems(&mut self, page: &str) {
        let seen = self.ok(json!({"cmd": "problems", "page": page})).await;
        assert_eq!(seen, json!([]), "page {page} reported problems");
    }

    /// Signs in through the console's button and the server's login page.
    async fn sign_in(&mut self, page: &str, base: &str, email: &str, password: &str) {
        self.goto(page, &format!("{base}/")).await;
        self.wait_for(page, "#sign-in", None).await;
        self.click(page, "#sign-in").await;
        // The server's own login page (a plain form, no script).
        self.wait_for(page, "form[action='/auth/login'] #email", None)
            .await;
        self.fill(page, "#email", email).await;
        self.fill(page, "#password", password).await;
        self.click(page, "form[action='/auth/login'] button[type=submit]")
            .await;
        // Back in the console, signed in (a locator wait outlives the
        // redirects); then the header names the person, and the address
        // keeps no code.
        self.wait_for(page, "#who button", Some("Sign out")).await;
        self.wait(
            page,
            "location.pathname === '/' && !location.search && document.getElementById('who-name').textContent.length > 0",
        )
        .await;
    }

    async fn quit(self) {
        self.0.quit().await;
    }
}

/// The server's OpenAPI document.
async fn openapi(app: &TestApp) -> Value {
    app.request(
        actix_web::http::Method::GET,
        "/api/v2/openapi.json",
        None,
        None,
    )
    .await
    .body
}

fn js_str(s: &str) -> String {
    json!(s).to_string()
}

#[actix_web::test]
async fn a_person_signs_in_creates_a_key_shown_once_and_revokes_it_by_keyboard() {
    if !browser_available() {
        return;
    }
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let pat = person(&app, &owner.account_id, &[]).await;
    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.sign_in("a", &app.address, &pat.email, PASSWORD).await;
    // No code or state left in the address bar after signing in.
    let url = b.ok(json!({"cmd": "url", "page": "a"})).await;
    assert!(!url.as_str().unwrap().contains("code="), "{url}");

    b.click("a", "nav a[href='#/keys']").await;
    b.wait_for("a", "#create-key", None).await;
    b.wait_for("a", "#keys-list", None).await;
    // By keyboard: a name, the second access choice, Enter.
    b.fill("a", "#create-key input[name=name]", "Nightly report")
        .await;
    b.focus("a", "#access-read").await;
    b.press("a", "ArrowDown", None).await;
    assert_eq!(
        b.eval("a", "document.querySelector('#access-write').checked")
            .await,
        json!(true)
    );
    b.press("a", "Enter", Some("#create-key input[name=name]"))
        .await;
    b.wait_for("a", "#new-key-value", None).await;
    let key = b
        .eval("a", "document.getElementById('new-key-value').value")
        .await
        .as_str()
        .unwrap()
        .to_string();
    assert!(key.starts_with("agk_"), "{key}");
    // The secret field has the focus, ready to copy.
    assert_eq!(
        b.eval("a", "document.activeElement.id").await,
        json!("new-key-value")
    );
    let prefix = key.split('_').nth(1).unwrap().to_string();
    let row = format!("#keys-table tr[data-prefix={}]", js_str(&prefix));
    b.wait_for("a", &row, Some("Nightly report")).await;
    assert!(
        b.eval("a", &format!("document.querySelector('{row}').textContent"))
            .await
            .as_str()
            .unwrap()
            .contains("Read and write")
    );
    b.screenshot("a", "console-keys.png").await;
    // The key works, as its person, with platform:write.
    let me = app.get("/api/v2/me", &key).await;
    assert_eq!(me.status, 200, "{}", me.body);
    assert_eq!(me.data()["user"]["id"], json!(pat.user_id));
    assert_eq!(me.data()["permissions"], json!(["platform:write"]));

    // Shown once: after a reload, only its prefix is anywhere on the page.
    b.ok(json!({"cmd": "reload", "page": "a"})).await;
    b.wait_for("a", &row, None).await;
    assert_eq!(
        b.eval("a", "document.getElementById('new-key-value') === null")
            .await,
        json!(true)
    );
    assert_eq!(
        b.eval(
            "a",
            &format!(
                "document.documentElement.outerHTML.includes({})",
                js_str(&key)
            )
        )
        .await,
        json!(false)
    );

    // Revoke by keyboard: the button, then the confirmation (focused).
    b.focus("a", &format!("{row} button.danger")).await;
    b.press("a", "Enter", None).await;
    b.wait_for("a", &format!("{row} button.confirm"), None)
        .await;
    assert_eq!(
        b.eval("a", "document.activeElement.textContent").await,
        json!("Confirm revoke")
    );
    b.press("a", "Enter", None).await;
    b.wait_for("a", &row, Some("Revoked")).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    app.get("/api/v2/me", &key)
        .await
        .assert_error(401, "UNAUTHORIZED");
    b.assert_no_problems("a").await;

    // Signing out ends the grant at the server.
    b.click("a", "#who button").await;
    b.wait_for("a", "#sign-in", None).await;
    let stored = b
        .eval("a", "sessionStorage.getItem('agentic.console.session')")
        .await;
    assert!(stored.is_null(), "{stored}");
    b.quit().await;
}

/// Asks the assistant from `page` and checks what the console shows: the
/// streamed answer in every page when the server has the turn route, the
/// console's notice otherwise.
async fn direct_a_turn(b: &mut Chromium, app: &TestApp, page: &str, others: &[&str]) {
    let doc = openapi(app).await;
    let has_turns = doc["paths"]
        .get("/api/v2/assistant/conversations/{conversationUid}/turns")
        .is_some_and(|p| p.get("post").is_some());
    b.fill(page, "#message", "List my advertisers").await;
    b.click(page, "#ask-assistant").await;
    if has_turns {
        // The turn shows for everyone, then the assistant's answer.
        for p in std::iter::once(&page).chain(others) {
            b.wait_for(p, "#messages li.to-assistant", Some("List my advertisers"))
                .await;
            b.wait_for(p, "#messages li[data-kind='answer'].from-assistant", None)
                .await;
            assert_eq!(
                b.eval(p, "document.querySelectorAll('#messages li.typing').length")
                    .await,
                json!(0),
                "the typing bubble gives way to the answer"
            );
        }
        b.screenshot(page, "console-room-assistant.png").await;
    } else {
        b.wait_for(page, "#composer .notice", Some("not available"))
            .await;
        // Nothing was lost: the text is still there to send to the room.
        assert_eq!(
            b.eval(page, "document.getElementById('message').value")
                .await,
            json!("List my advertisers")
        );
        assert_eq!(
            b.eval(page, "document.getElementById('ask-assistant').disabled")
                .await,
            json!(true)
        );
        b.screenshot(page, "console-room-assistant.png").await;
    }
}

#[actix_web::test]
async fn two_people_share_a_live_room_and_see_each_others_messages_and_presence() {
    if !browser_available() {
        return;
    }
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let ann = person(&app, &owner.account_id, &[]).await;
    let bob = person(&app, &owner.account_id, &[]).await;
    for (who, name) in [(&ann, "Ann Park"), (&bob, "Bob Okafor")] {
        let res = app
            .patch("/api/v2/me", &who.key, &json!({ "name": name }))
            .await;
        assert_eq!(res.status, 200, "{}", res.body);
    }
    let mut b = Chromium::launch().await;
    b.open("ann").await;
    b.open("bob").await;
    b.sign_in("ann", &app.address, &ann.email, PASSWORD).await;
    b.sign_in("bob", &app.address, &bob.email, PASSWORD).await;

    // Ann creates a shared conversation and lands in its room.
    b.wait_for("ann", "#create-conversation", None).await;
    b.fill(
        "ann",
        "#create-conversation input[name=title]",
        "Spring launch",
    )
    .await;
    b.select("ann", "#create-conversation select[name=sharing]", "true")
        .await;
    b.click("ann", "#create-conversation button[type=submit]")
        .await;
    b.wait_for("ann", "#room-status[data-state=live]", None)
        .await;
    b.wait_for("ann", "h1", Some("Spring launch")).await;
    let url = b.ok(json!({"cmd": "url", "page": "ann"})).await;
    let uid = url
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert!(uuid::Uuid::parse_str(&uid).is_ok(), "{url}");

    // Bob finds it in his list (shared) and opens it.
    b.goto("bob", &format!("{}/#/conversations", app.address))
        .await;
    b.wait_for(
        "bob",
        &format!("#conversations li[data-uid={}] a", js_str(&uid)),
        None,
    )
    .await;
    b.click(
        "bob",
        &format!("#conversations li[data-uid={}] a", js_str(&uid)),
    )
    .await;
    b.wait_for("bob", "#room-status[data-state=live]", None)
        .await;

    // Each sees both present.
    for p in ["ann", "bob"] {
        b.wait(
            p,
            &format!(
                "[...document.querySelectorAll('#presence li')].map(li => Number(li.dataset.userId)).sort((x, y) => x - y).join() === {}",
                js_str(&{
                    let mut ids = [ann.user_id, bob.user_id];
                    ids.sort();
                    format!("{},{}", ids[0], ids[1])
                })
            ),
        )
        .await;
    }

    // Ann writes (Ctrl+Enter), Bob sees it; Bob answers, Ann sees it.
    b.fill("ann", "#message", "Hello Bob, the brief is ready")
        .await;
    b.press("ann", "Control+Enter", Some("#message")).await;
    b.wait_for(
        "bob",
        "#messages li[data-kind=message]",
        Some("Hello Bob, the brief is ready"),
    )
    .await;
    b.fill("bob", "#message", "Thanks Ann, reading it now")
        .await;
    b.click("bob", "#send-room").await;
    b.wait_for(
        "ann",
        "#messages li[data-kind=message]",
        Some("Thanks Ann, reading it now"),
    )
    .await;
    // The same history, in the same order, on both pages.
    let order = "[...document.querySelectorAll('#messages li[data-sequence]')].map(li => li.dataset.sequence + ':' + li.querySelector('.content').textContent).join('|')";
    b.wait("ann", &format!("{order}.split('|').length === 2"))
        .await;
    assert_eq!(b.eval("ann", order).await, b.eval("bob", order).await);
    // Authors are named, the own messages marked.
    assert!(
        b.eval(
            "ann",
            "document.querySelector('#messages li[data-kind=message] .author').textContent"
        )
        .await
        .as_str()
        .unwrap()
        .ends_with("(you)")
    );

    b.screenshot("ann", "console-room.png").await;
    b.screenshot("bob", "console-room-second-person.png").await;

    direct_a_turn(&mut b, &app, "ann", &["bob"]).await;

    b.assert_no_problems("ann").await;
    b.assert_no_problems("bob").await;
    b.quit().await;
}

#[actix_web::test]
async fn a_discovery_started_in_the_console_lands_seller_by_seller_and_saves_a_proposal() {
    if !browser_available() {
        return;
    }
    // The built-in demo sellers, answering from 75 ms to 1.5 s.
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.5).await;
    let demo = agentic_api::demo::seed(&app.db).await.unwrap();
    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.sign_in("a", &app.address, &demo.email, &demo.password)
        .await;
    b.click("a", "nav a[href='#/discovery']").await;
    b.wait_for("a", "#new-advertiser", None).await;
    // A first advertiser, from the page.
    b.fill("a", "#adv-name", "Demo Shoes").await;
    b.fill("a", "#adv-brand", "demo-shoes.example").await;
    b.click("a", "#new-advertiser button[type=submit]").await;
    b.wait(
        "a",
        "[...document.querySelectorAll('#advertiser option')].some(o => o.value && o.textContent.startsWith('Demo Shoes'))",
    )
    .await;
    // Record how the groups arrive, across the route change.
    b.eval(
        "a",
        "window.landings = []; new MutationObserver(() => { const n = document.querySelectorAll('#groups section.group[data-group-id]').length; if (n && window.landings[window.landings.length - 1] !== n) window.landings.push(n); }).observe(document.body, {childList: true, subtree: true}); true",
    )
    .await;
    b.fill(
        "a",
        "#brief",
        "Live sports on connected TV and podcasts in the US",
    )
    .await;
    b.click("a", "#start-discovery").await;
    // While sellers are still answering (or, on a slow machine, once done).
    b.wait(
        "a",
        "(document.querySelector('#discovery-status[data-state=collecting]') && document.querySelectorAll('#groups section.group[data-group-id]').length >= 2) || document.querySelector('#discovery-status[data-state=complete]')",
    )
    .await;
    // Past the landing animation (0.4 s), for a picture that reads well.
    tokio::time::sleep(Duration::from_millis(400)).await;
    b.screenshot_with("a", "console-discovery-landing.png", false)
        .await;
    b.wait_for("a", "#discovery-status[data-state=complete]", None)
        .await;
    let groups = b
        .eval(
            "a",
            "document.querySelectorAll('#groups section.group[data-group-id]').length",
        )
        .await
        .as_u64()
        .unwrap();
    assert!(groups >= 4, "{groups} sellers' groups");
    let landings = b.eval("a", "window.landings").await;
    assert!(
        landings.as_array().unwrap().len() >= 2,
        "the groups arrived at once, not seller by seller: {landings}"
    );
    let id = b
        .ok(json!({"cmd": "url", "page": "a"}))
        .await
        .as_str()
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap()
        .to_string();
    assert!(id.starts_with("disc_"), "{id}");

    // Choose a product, then save a proposal.
    let first = b
        .eval(
            "a",
            "document.querySelector('#groups button.choose').dataset.productId",
        )
        .await
        .as_str()
        .unwrap()
        .to_string();
    b.click("a", "#groups button.choose").await;
    b.wait_for("a", "#chosen li", None).await;
    b.wait(
        "a",
        &format!(
            "document.querySelector('#groups button.choose[data-product-id={}]').getAttribute('aria-pressed') === 'true'",
            js_str(&first)
        ),
    )
    .await;
    b.click("a", "#save-proposal").await;
    b.wait_for("a", "#proposal-code", None).await;
    let code = b
        .eval("a", "document.getElementById('proposal-code').textContent")
        .await;
    assert!(code.as_str().unwrap().starts_with("PRP-"), "{code}");
    let chosen = app
        .get(
            &format!("/api/v2/buyer/discovery/{id}/products"),
            &demo.api_key,
        )
        .await;
    assert_eq!(chosen.data()["products"][0]["productId"], json!(first));
    b.screenshot_with("a", "console-discovery.png", false).await;
    b.screenshot("a", "console-discovery-full.png").await;
    b.assert_no_problems("a").await;
    b.quit().await;
}

#[actix_web::test]
async fn the_api_reference_renders_the_openapi_document_without_signing_in() {
    if !browser_available() {
        return;
    }
    let app = spawn_app().await;
    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.goto("a", &format!("{}/#/reference", app.address)).await;
    b.wait_for(
        "a",
        "details.operation[data-operation-id=create_api_key]",
        None,
    )
    .await;
    let operations = b
        .eval("a", "document.querySelectorAll('details.operation').length")
        .await
        .as_u64()
        .unwrap();
    let doc = openapi(&app).await;
    let documented: usize = doc["paths"]
        .as_object()
        .unwrap()
        .values()
        .map(|item| {
            ["get", "post", "put", "patch", "delete"]
                .iter()
                .filter(|m| item.get(**m).is_some())
                .count()
        })
        .sum();
    assert_eq!(
        operations as usize, documented,
        "every documented operation"
    );
    b.click(
        "a",
        "details.operation[data-operation-id=create_api_key] > summary",
    )
    .await;
    b.wait_for(
        "a",
        "details.operation[data-operation-id=create_api_key] h4",
        Some("Request body"),
    )
    .await;
    b.screenshot("a", "console-reference.png").await;
    b.fill("a", "#reference-filter", "revoke_api_key").await;
    b.wait(
        "a",
        &format!("document.querySelectorAll('details.operation').length < {documented}"),
    )
    .await;
    b.wait_for(
        "a",
        "details.operation[data-operation-id=revoke_api_key]",
        None,
    )
    .await;
    b.assert_no_problems("a").await;
    b.quit().await;
}

#[actix_web::test]
async fn campaigns_show_their_media_buys_with_each_sellers_status() {
    if !browser_available() {
        return;
    }
    let app = spawn_app_with(|c| c.demo_seller_delay_scale = 0.0).await;
    let demo = agentic_api::demo::seed(&app.db).await.unwrap();
    let key = demo.api_key.clone();
    let adv = app
        .post(
            "/api/v2/buyer/advertisers",
            &key,
            &json!({"name": "Demo Shoes", "brand": "demo-shoes.example", "primaryCurrency": "USD"}),
        )
        .await;
    assert_eq!(adv.status, 201, "{}", adv.body);
    let disc = app
        .post(
            "/api/v2/buyer/discovery/discover-products",
            &key,
            &json!({"advertiserId": adv.data()["id"], "brief": "Live sports on connected TV and podcasts in the US", "waitSeconds": 10}),
        )
        .await;
    assert_eq!(disc.status, 200, "{}", disc.body);
    let start = chrono::Utc::now() + chrono::Duration::days(1);
    let buys = app
        .post(
            "/api/v2/buyer/media-buys",
            &key,
            &json!({
                "productQueryId": disc.data()["discoveryId"],
                "campaign": {"create": {"name": "Spring sports push", "budget": {"total": 60000},
                    "flightDates": {"startDate": start.to_rfc3339(), "endDate": (start + chrono::Duration::days(30)).to_rfc3339()}}},
                "mode": "execute",
                "selections": [
                    {"kind": "product", "productId": "lm_ctv_premium", "budget": 20000.0},
                    {"kind": "product", "productId": "tw_podcast_host_read", "budget": 5000.0},
                ],
            }),
        )
        .await;
    assert_eq!(buys.status, 200, "{}", buys.body);
    let campaign = buys.data()["campaignId"].as_str().unwrap().to_string();

    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.sign_in("a", &app.address, &demo.email, &demo.password)
        .await;
    b.click("a", "nav a[href='#/campaigns']").await;
    let row = format!("#campaigns tr[data-campaign-id={}]", js_str(&campaign));
    b.wait_for("a", &row, Some("Spring sports push")).await;
    b.click("a", &format!("{row} button[aria-expanded]")).await;
    b.wait_for("a", "tr[data-media-buy-id]", Some("pending_creatives"))
        .await;
    b.wait_for("a", "tr[data-media-buy-id]", Some("Lumen CTV Network"))
        .await;
    assert_eq!(
        b.eval(
            "a",
            &format!("document.querySelector('{row} button[aria-expanded]').getAttribute('aria-expanded')")
        )
        .await,
        json!("true")
    );
    // The status filter narrows the list.
    b.select("a", "#campaign-status", "ARCHIVED").await;
    b.wait_for("a", "#campaign-list .empty", None).await;
    b.select("a", "#campaign-status", "").await;
    b.wait_for("a", &row, None).await;
    b.click("a", &format!("{row} button[aria-expanded]")).await;
    b.wait_for("a", "tr[data-media-buy-id]", None).await;
    b.screenshot("a", "console-campaigns.png").await;
    b.assert_no_problems("a").await;
    b.quit().await;
}

/// Records every EventSource the page opens, so a test can hand it events.
const RECORD_EVENT_SOURCES: &str = "(() => { const Native = window.EventSource; const sources = (window.__sources = []); window.EventSource = class extends Native { constructor(url, init) { super(url, init); sources.push(this); } }; })();";

/// JS: hands the room's newest stream a named event with `data`.
fn room_event(name: &str, data: &Value) -> String {
    format!(
        "(() => {{ const es = window.__sources.filter(s => s.url.includes('/events')).pop(); es.dispatchEvent(new MessageEvent({}, {{ data: {} }})); return true; }})()",
        js_str(name),
        js_str(&data.to_string())
    )
}

/// The assistant's side of the room as the console's contract describes it
/// (docs/api/console.md, "Directed turns"): the turn's answer, the stream's
/// `run.updated`, `message.delta` and assistant `message.created` events,
/// and the run and action routes, answered at the browser's edge, so what
/// the page does with each is checked whatever assistant the server runs.
#[actix_web::test]
async fn the_room_shows_a_streamed_answer_tool_calls_and_actions_as_the_contract_describes() {
    if !browser_available() {
        return;
    }
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let ann = person(&app, &owner.account_id, &[]).await;
    let uid = app.conversation(&owner, true).await;
    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.ok(json!({"cmd": "init", "page": "a", "js": RECORD_EVENT_SOURCES}))
        .await;
    let turn_message = json!({"sequence": 1, "audience": "assistant", "content": "List my advertisers",
        "author": {"userId": ann.user_id, "name": "Ann"}, "createdAt": "2026-12-01T10:00:00Z"});
    let run = |id: &str, status: &str| {
        json!({"runId": id, "conversationUid": uid, "status": status, "turnSequence": 1,
               "requestedBy": ann.user_id, "createdAt": "2026-12-01T10:00:00Z"})
    };
    for (pattern, status, body) in [
        (
            "**/turns".to_string(),
            202,
            json!({"data": {"message": turn_message, "run": run("run_1", "queued")}, "error": null}),
        ),
        (
            "**/runs/run_2/actions/act_1".to_string(),
            200,
            json!({"data": {"run": run("run_2", "running")}, "error": null}),
        ),
        (
            "**/runs/run_3/cancel".to_string(),
            200,
            json!({"data": {"run": run("run_3", "canceled")}, "error": null}),
        ),
    ] {
        b.ok(json!({"cmd": "route", "page": "a", "pattern": pattern, "method": "POST", "status": status, "body": body}))
            .await;
    }
    b.sign_in("a", &app.address, &ann.email, PASSWORD).await;
    b.goto("a", &format!("{}/#/conversations/{uid}", app.address))
        .await;
    b.wait_for("a", "#room-status[data-state=live]", None).await;

    // The turn: shown as the person's, and its run queued with Cancel.
    b.fill("a", "#message", "List my advertisers").await;
    b.click("a", "#ask-assistant").await;
    b.wait_for(
        "a",
        "#messages li.to-assistant",
        Some("List my advertisers"),
    )
    .await;
    b.wait_for("a", "#runs .run[data-run-status=queued]", Some("Cancel"))
        .await;
    let sent = b.ok(json!({"cmd": "routed", "page": "a"})).await;
    assert_eq!(
        serde_json::from_str::<Value>(sent[0]["body"].as_str().unwrap()).unwrap(),
        json!({"content": "List my advertisers"})
    );

    // Running, the answer grows (a repeated index is dropped), tools show
    // compactly, and the answer replaces the typing bubble.
    let ev = |name: &str, data: Value| room_event(name, &data);
    b.eval(
        "a",
        &ev(
            "run.updated",
            json!({"conversationUid": uid, "run": run("run_1", "running")}),
        ),
    )
    .await;
    b.wait_for("a", "#runs .run[data-run-status=running]", None)
        .await;
    for (index, delta) in [
        (0, "Here are "),
        (1, "your advertisers"),
        (1, "your advertisers"),
    ] {
        b.eval(
            "a",
            &ev(
                "message.delta",
                json!({"conversationUid": uid, "runId": "run_1", "index": index, "delta": delta}),
            ),
        )
        .await;
    }
    b.wait_for(
        "a",
        "#messages li.typing[data-run-id=run_1]",
        Some("Here are your advertisers"),
    )
    .await;
    assert_eq!(
        b.eval(
            "a",
            "document.querySelector('#messages li.typing .content').textContent"
        )
        .await,
        json!("Here are your advertisers")
    );
    let assistant = |seq: i64, kind: &str, content: &str, data: Value| {
        json!({"conversationUid": uid, "message": {"sequence": seq, "audience": "assistant", "content": content,
               "runId": "run_1", "kind": kind, "data": data, "createdAt": "2026-12-01T10:00:01Z"}})
    };
    b.eval(
        "a",
        &ev(
            "message.created",
            assistant(
                2,
                "tool_call",
                "",
                json!({"operation": "list_advertisers", "arguments": {}}),
            ),
        ),
    )
    .await;
    b.eval(
        "a",
        &ev("message.created", assistant(3, "tool_result", "", json!({"operation": "list_advertisers", "result": [{"id": "adv_1", "name": "Demo Shoes"}]}))),
    )
    .await;
    b.wait_for(
        "a",
        "#messages li[data-kind=tool_call] summary",
        Some("Tool call: list_advertisers"),
    )
    .await;
    b.wait_for(
        "a",
        "#messages li[data-kind=tool_result] summary",
        Some("Tool result"),
    )
    .await;
    b.eval(
        "a",
        &ev(
            "message.created",
            assistant(
                4,
                "answer",
                "Here are your advertisers: Demo Shoes.",
                json!({}),
            ),
        ),
    )
    .await;
    b.wait_for("a", "#messages li[data-kind=answer]", Some("Demo Shoes."))
        .await;
    assert_eq!(
        b.eval(
            "a",
            "document.querySelectorAll('#messages li.typing').length"
        )
        .await,
        json!(0)
    );
    b.eval(
        "a",
        &ev(
            "run.updated",
            json!({"conversationUid": uid, "run": run("run_1", "completed")}),
        ),
    )
    .await;
    b.wait("a", "document.querySelectorAll('#runs .run').length === 0")
        .await;

    // A proposed action, confirmed from its card.
    let mut proposed = assistant(
        5,
        "action_proposed",
        "I can create this advertiser.",
        json!({"actionId": "act_1", "operation": "create_advertiser", "arguments": {"name": "Acme", "brand": "acme.com"}}),
    );
    proposed["message"]["runId"] = json!("run_2");
    b.eval(
        "a",
        &ev(
            "run.updated",
            json!({"conversationUid": uid, "run": run("run_2", "awaiting_confirmation")}),
        ),
    )
    .await;
    b.eval("a", &ev("message.created", proposed)).await;
    b.wait_for(
        "a",
        "#messages li[data-kind=action_proposed] .action-card",
        Some("create_advertiser"),
    )
    .await;
    b.wait_for(
        "a",
        "#runs .run[data-run-status=awaiting_confirmation]",
        None,
    )
    .await;
    b.screenshot("a", "console-room-contract.png").await;
    b.click(
        "a",
        "#messages li[data-kind=action_proposed] button.primary",
    )
    .await;
    b.wait_for(
        "a",
        "#messages li[data-kind=action_proposed] .action-result",
        Some("Confirmed."),
    )
    .await;
    let sent = b.ok(json!({"cmd": "routed", "page": "a"})).await;
    let decision = sent
        .as_array()
        .unwrap()
        .iter()
        .find(|r| {
            r["url"]
                .as_str()
                .unwrap()
                .ends_with("/runs/run_2/actions/act_1")
        })
        .expect("the decision was sent");
    assert_eq!(
        serde_json::from_str::<Value>(decision["body"].as_str().unwrap()).unwrap(),
        json!({"decision": "confirm"})
    );

    // A queued run is canceled from the run bar.
    b.eval(
        "a",
        &ev(
            "run.updated",
            json!({"conversationUid": uid, "run": run("run_3", "queued")}),
        ),
    )
    .await;
    b.click("a", "#runs .run[data-run-id=run_3] button").await;
    b.wait(
        "a",
        "document.querySelector('#runs .run[data-run-id=run_3]') === null",
    )
    .await;
    b.assert_no_problems("a").await;
    b.quit().await;
}

/// With access tokens that last 3 seconds, the console refreshes before
/// each call (one refresh at a time: a spent refresh token presented again
/// would revoke the grant), and the room's stream, ended by the server when
/// its token expires, is reopened from the last message.
#[actix_web::test]
async fn a_session_outlives_its_access_tokens_and_the_room_stream_reopens() {
    if !browser_available() {
        return;
    }
    let app = spawn_app_with(|c| c.oauth.access_ttl = Duration::from_secs(3)).await;
    let owner = app.tenant().await;
    let ann = person(&app, &owner.account_id, &[]).await;
    let uid = app.conversation(&owner, true).await;
    app.say(&owner, &uid, "Before the token expires").await;
    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.sign_in("a", &app.address, &ann.email, PASSWORD).await;
    b.goto("a", &format!("{}/#/conversations/{uid}", app.address))
        .await;
    b.wait_for("a", "#messages li", Some("Before the token expires"))
        .await;
    let first = b
        .eval(
            "a",
            "JSON.parse(sessionStorage.getItem('agentic.console.session')).accessToken",
        )
        .await;
    // The stream's token expires; the server ends it; the console reopens it.
    tokio::time::sleep(Duration::from_secs(5)).await;
    app.say(&owner, &uid, "After the token expired").await;
    b.wait_for("a", "#messages li", Some("After the token expired"))
        .await;
    b.wait_for("a", "#room-status[data-state=live]", None).await;
    // Several calls at once (the page's own), each with a fresh token.
    b.click("a", "nav a[href='#/keys']").await;
    b.wait_for("a", "#keys-list", None).await;
    b.click("a", "nav a[href='#/campaigns']").await;
    b.wait_for("a", "#campaign-list .empty", None).await;
    let last = b
        .eval(
            "a",
            "JSON.parse(sessionStorage.getItem('agentic.console.session')).accessToken",
        )
        .await;
    assert_ne!(first, last, "the access token was refreshed");
    // The grant is whole: the newest token works.
    let me = app.get("/api/v2/me", last.as_str().unwrap()).await;
    assert_eq!(me.status, 200, "{}", me.body);
    b.assert_no_problems("a").await;
    b.quit().await;
}

#[actix_web::test]
async fn notifications_arrive_live_and_are_acknowledged_in_the_console() {
    if !browser_available() {
        return;
    }
    use agentic_api::notifications::topics;
    let app = spawn_app().await;
    let owner = app.tenant().await;
    let pat = person(&app, &owner.account_id, &[]).await;
    crate::notifications::notify(&app, &owner.account_id, topics::CATALOG_SYNC_FAILED, 1).await;
    let mut b = Chromium::launch().await;
    b.open("a").await;
    b.sign_in("a", &app.address, &pat.email, PASSWORD).await;
    b.click("a", "nav a[href='#/notifications']").await;
    b.wait_for("a", "#notifications li", Some("Title 1")).await;
    b.wait_for("a", "#notification-stream-state", Some("Live"))
        .await;
    // A new one arrives on the stream, without a reload, above the first.
    crate::notifications::notify(&app, &owner.account_id, topics::DISCOVERY_COMPLETED, 2).await;
    b.wait_for("a", "#notifications li", Some("Title 2")).await;
    assert_eq!(
        b.eval(
            "a",
            "Array.from(document.querySelectorAll('#notifications li')).map(li => li.dataset.topic).join(',')"
        )
        .await,
        json!("discovery.completed,catalog.sync_failed")
    );
    b.screenshot("a", "console-notifications.png").await;
    // Acknowledged from the page: the unread list empties, and the server
    // has both acknowledged for this person only.
    b.click("a", "#acknowledge-all").await;
    b.wait_for("a", "#notification-list", Some("Nothing unread."))
        .await;
    let unread = app.get("/api/v2/notifications?unread=true", &pat.key).await;
    assert_eq!(unread.status, 200, "{}", unread.body);
    assert_eq!(unread.data(), &json!([]), "{}", unread.body);
    let owners = app.get("/api/v2/notifications?unread=true", &owner.key).await;
    assert_eq!(owners.data().as_array().unwrap().len(), 2, "{}", owners.body);
    b.assert_no_problems("a").await;
    b.quit().await;
}
