//! The seller client against fake seller agents over real HTTP.

use std::time::{Duration, Instant};

use serde_json::json;

use agentic_api::discovery::seller::{
    AuthToken, BuyingMode, PricingModel, ProductQuery, Refinement, SellerClient, SellerError,
    SellerOptions, StorefrontTarget,
};
use agentic_api::types::{OutboundUrl, UrlPolicy};

use crate::fake_seller::{Behaviour, FakeSeller, product};

const INSECURE: UrlPolicy = UrlPolicy {
    allow_insecure: true,
};

fn client_with(timeout: Duration) -> SellerClient {
    SellerClient::start(
        INSECURE,
        SellerOptions {
            call_timeout: timeout,
            ..SellerOptions::default()
        },
    )
    .unwrap()
}

fn client() -> SellerClient {
    client_with(Duration::from_secs(10))
}

fn target(seller: &FakeSeller) -> StorefrontTarget {
    StorefrontTarget {
        id: 1,
        name: "Fake".into(),
        url: OutboundUrl::parse(&seller.url(), INSECURE).unwrap(),
        auth_token: None,
    }
}

fn brief() -> ProductQuery {
    let mut q = ProductQuery::brief("CTV in France, Q3, sports fans");
    q.brand = Some("nike.com".into());
    q.filters.channels = vec!["ctv".into()];
    q.filters.countries = vec!["FR".into()];
    q
}

#[actix_web::test]
async fn a_fast_seller_answers_with_validated_products_over_json() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let answer = client()
        .get_products(&target(&seller), &brief())
        .await
        .unwrap();
    let ids: Vec<&str> = answer
        .products
        .iter()
        .map(|p| p.product_id.as_str())
        .collect();
    assert_eq!(ids, ["ctv-1", "olv-2"]);
    assert!(answer.dropped.is_empty());
    // The text content mirrors the payload as JSON: not a message.
    assert_eq!(answer.message, None);
    // Output is the seller's JSON, unchanged.
    assert_eq!(
        serde_json::to_value(&answer.products[0]).unwrap(),
        product("ctv-1", 30.0)
    );

    // The handshake, in order, with the session and version on every later request.
    assert_eq!(
        seller.methods(),
        ["initialize", "notifications/initialized", "tools/call"]
    );
    let seen = seller.seen();
    assert!(seen[0].session.is_none());
    let session = seen[1].session.clone().expect("session id kept");
    assert_eq!(seen[2].session.as_deref(), Some(session.as_str()));
    assert_eq!(seen[2].protocol_version.as_deref(), Some("2025-06-18"));
    assert_eq!(
        seen[2].accept.as_deref(),
        Some("application/json, text/event-stream")
    );
    assert!(seen[2].authorization.is_none(), "no token, no header");
    assert!(
        seen[0]
            .user_agent
            .as_deref()
            .unwrap()
            .starts_with("agentic-api/"),
        "{:?}",
        seen[0].user_agent
    );
    // The AdCP 3.1 request.
    let args = &seen[2].body["params"]["arguments"];
    assert_eq!(seen[2].body["params"]["name"], "get_products");
    assert_eq!(args["buying_mode"], "brief");
    assert_eq!(args["brief"], "CTV in France, Q3, sports fans");
    assert_eq!(args["brand"], json!({"domain": "nike.com"}));
    assert_eq!(
        args["filters"],
        json!({"channels": ["ctv"], "countries": ["FR"]})
    );
    assert_eq!(args["adcp_version"], "3.1");
    assert_eq!(
        args["time_budget"],
        json!({"interval": 10, "unit": "seconds"})
    );
}

#[actix_web::test]
async fn the_session_is_reused_across_calls() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let c = client();
    let sf = target(&seller);
    c.get_products(&sf, &brief()).await.unwrap();
    c.clone().get_products(&sf, &brief()).await.unwrap();
    assert_eq!(
        seller.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call"
        ]
    );
}

#[actix_web::test]
async fn an_sse_answer_is_read_up_to_the_response_with_the_matching_id() {
    let seller = FakeSeller::start(Behaviour {
        sse: true,
        ..Behaviour::default()
    })
    .await;
    // The fake keeps its streams open: the client must stop at the response.
    let started = Instant::now();
    let answer = client_with(Duration::from_secs(5))
        .get_products(&target(&seller), &brief())
        .await
        .unwrap();
    assert_eq!(answer.products.len(), 2);
    assert!(started.elapsed() < Duration::from_secs(3));
}

#[actix_web::test]
async fn a_slow_seller_is_waited_for_within_the_timeout() {
    let seller = FakeSeller::start(Behaviour {
        delay: Duration::from_millis(400),
        ..Behaviour::default()
    })
    .await;
    let answer = client_with(Duration::from_secs(5))
        .get_products(&target(&seller), &brief())
        .await
        .unwrap();
    assert_eq!(answer.products.len(), 2);
}

#[actix_web::test]
async fn a_seller_slower_than_the_timeout_is_a_timeout() {
    let seller = FakeSeller::start(Behaviour {
        delay: Duration::from_secs(3),
        ..Behaviour::default()
    })
    .await;
    let err = client_with(Duration::from_millis(600))
        .get_products(&target(&seller), &brief())
        .await
        .unwrap_err();
    assert!(matches!(err, SellerError::Timeout(_)), "{err:?}");
    assert_eq!(err.code(), "SELLER_TIMEOUT");
    assert!(err.is_transient());
}

#[actix_web::test]
async fn a_hanging_seller_times_out_on_time() {
    let seller = FakeSeller::start(Behaviour {
        hang: true,
        sse: true,
        ..Behaviour::default()
    })
    .await;
    let started = Instant::now();
    let err = client_with(Duration::from_millis(700))
        .get_products(&target(&seller), &brief())
        .await
        .unwrap_err();
    assert!(matches!(err, SellerError::Timeout(_)), "{err:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(600) && took < Duration::from_secs(3),
        "{took:?}"
    );
}

#[actix_web::test]
async fn a_tool_error_is_a_typed_seller_error() {
    let seller = FakeSeller::start(Behaviour {
        error: Some(json!({
            "code": "RATE_LIMITED", "message": "Too many discovery calls",
            "recovery": "transient", "retry_after": 30
        })),
        ..Behaviour::default()
    })
    .await;
    let err = client()
        .get_products(&target(&seller), &brief())
        .await
        .unwrap_err();
    let SellerError::Rejected(e) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(e.code, "RATE_LIMITED");
    assert_eq!(e.message, "Too many discovery calls");
    assert_eq!(e.retry_after, Some(30.0));
    assert!(err.is_transient());
}

#[actix_web::test]
async fn one_malformed_product_is_dropped_and_reported_not_fatal() {
    let mut bad = product("bad-3", 5.0);
    bad["pricing_options"][0]["currency"] = json!("euros");
    let seller = FakeSeller::start(Behaviour {
        products: json!([
            product("ctv-1", 30.0),
            bad,
            {"name": "no id"},
            product("olv-2", 12.5)
        ]),
        ..Behaviour::default()
    })
    .await;
    let answer = client()
        .get_products(&target(&seller), &brief())
        .await
        .unwrap();
    let ids: Vec<&str> = answer
        .products
        .iter()
        .map(|p| p.product_id.as_str())
        .collect();
    assert_eq!(ids, ["ctv-1", "olv-2"]);
    assert_eq!(answer.dropped.len(), 2);
    assert_eq!(answer.dropped[0].index, 1);
    assert_eq!(answer.dropped[0].product_id.as_deref(), Some("bad-3"));
    assert_eq!(
        answer.dropped[0].reason,
        "pricing_options[0].currency: 'euros' is not an ISO 4217 code"
    );
    assert_eq!(answer.dropped[1].index, 2);
    assert_eq!(answer.dropped[1].product_id, None);
    assert_eq!(answer.dropped[1].reason, "product_id: missing");
}

#[actix_web::test]
async fn zero_products_come_with_the_sellers_explanation() {
    let seller = FakeSeller::start(Behaviour {
        products: json!([]),
        message: Some("No CTV inventory in France for these dates".into()),
        ..Behaviour::default()
    })
    .await;
    let answer = client()
        .get_products(&target(&seller), &brief())
        .await
        .unwrap();
    assert!(answer.products.is_empty());
    assert_eq!(
        answer.message.as_deref(),
        Some("No CTV inventory in France for these dates")
    );
}

#[actix_web::test]
async fn json_in_the_text_content_is_read_when_there_is_no_structured_content() {
    let seller = FakeSeller::start(Behaviour {
        structured: false,
        sessions: false,
        ..Behaviour::default()
    })
    .await;
    let answer = client()
        .get_products(&target(&seller), &brief())
        .await
        .unwrap();
    assert_eq!(answer.products.len(), 2);
    // A stateless server: no session id is ever sent.
    assert!(seller.seen().iter().all(|s| s.session.is_none()));
}

#[actix_web::test]
async fn an_expired_session_is_initialized_again_once_and_the_call_retried() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let c = client();
    let sf = target(&seller);
    c.get_products(&sf, &brief()).await.unwrap();
    seller.set(|b| b.expire_session_once = true);
    let answer = c.get_products(&sf, &brief()).await.unwrap();
    assert_eq!(answer.products.len(), 2);
    assert_eq!(
        seller.methods(),
        [
            "initialize",
            "notifications/initialized",
            "tools/call",
            "tools/call", // 404: session forgotten
            "initialize",
            "notifications/initialized",
            "tools/call",
        ]
    );
    let seen = seller.seen();
    assert_ne!(seen[3].session, seen[6].session, "a new session");
}

#[actix_web::test]
async fn a_session_that_keeps_expiring_is_retried_only_once() {
    let seller = FakeSeller::start(Behaviour {
        always_expire: true,
        ..Behaviour::default()
    })
    .await;
    let err = client()
        .get_products(&target(&seller), &brief())
        .await
        .unwrap_err();
    assert_eq!(err, SellerError::Http { status: 404 });
    let calls = seller
        .methods()
        .into_iter()
        .filter(|m| m == "tools/call")
        .count();
    assert_eq!(calls, 2);
}

#[actix_web::test]
async fn the_storefront_token_is_sent_as_a_bearer_credential() {
    let seller = FakeSeller::start(Behaviour {
        token: Some("s3cret-token".into()),
        ..Behaviour::default()
    })
    .await;
    let mut sf = target(&seller);
    let c = client();
    let err = c.get_products(&sf, &brief()).await.unwrap_err();
    assert_eq!(err, SellerError::Http { status: 401 });

    sf.auth_token = Some(AuthToken::new("s3cret-token"));
    let answer = c.get_products(&sf, &brief()).await.unwrap();
    assert_eq!(answer.products.len(), 2);
    let last = seller.seen().pop().unwrap();
    assert_eq!(last.authorization.as_deref(), Some("Bearer s3cret-token"));
    assert!(
        !format!("{sf:?}").contains("s3cret"),
        "Debug redacts the token"
    );
}

#[actix_web::test]
async fn pricing_model_filters_apply_to_the_answer_and_refine_needs_no_brief() {
    let mut auction = product("auction-9", 0.0);
    auction["pricing_options"] = json!([{"pricing_option_id": "a", "pricing_model": "cpcv",
                                          "currency": "USD", "floor_price": 0.01}]);
    let seller = FakeSeller::start(Behaviour {
        products: json!([product("ctv-1", 30.0), auction]),
        ..Behaviour::default()
    })
    .await;
    let mut q = ProductQuery {
        mode: BuyingMode::Refine(vec![Refinement::Request {
            ask: "more video".into(),
        }]),
        brand: None,
        filters: Default::default(),
    };
    q.filters.pricing_models = vec![PricingModel::Cpcv];
    let answer = client().get_products(&target(&seller), &q).await.unwrap();
    let ids: Vec<&str> = answer
        .products
        .iter()
        .map(|p| p.product_id.as_str())
        .collect();
    assert_eq!(ids, ["auction-9"]);
    let args = &seller.seen().pop().unwrap().body["params"]["arguments"];
    assert_eq!(args["buying_mode"], "refine");
    assert!(args.get("brief").is_none());
    assert_eq!(
        args["refine"],
        json!([{"scope": "request", "ask": "more video"}])
    );
}

#[actix_web::test]
async fn an_invalid_query_is_refused_before_anything_is_sent() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let err = client()
        .get_products(&target(&seller), &ProductQuery::brief(" "))
        .await
        .unwrap_err();
    assert!(matches!(err, SellerError::InvalidQuery(_)), "{err:?}");
    assert!(seller.seen().is_empty());
}

#[actix_web::test]
async fn http_and_protocol_failures_are_typed() {
    // Not an MCP endpoint: 404 without a session is an HTTP error.
    let seller = FakeSeller::start(Behaviour::default()).await;
    let mut sf = target(&seller);
    sf.url = OutboundUrl::parse(&format!("{}/nope", seller.base), INSECURE).unwrap();
    let err = client().get_products(&sf, &brief()).await.unwrap_err();
    assert_eq!(err, SellerError::Http { status: 404 });

    // A redirect is not followed.
    sf.url = OutboundUrl::parse(&format!("{}/redirect", seller.base), INSECURE).unwrap();
    let err = client().get_products(&sf, &brief()).await.unwrap_err();
    assert_eq!(err, SellerError::Http { status: 302 });

    // Nobody listening.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    sf.url = OutboundUrl::parse(&format!("http://127.0.0.1:{port}/mcp"), INSECURE).unwrap();
    let err = client().get_products(&sf, &brief()).await.unwrap_err();
    assert!(matches!(err, SellerError::Unreachable(_)), "{err:?}");
}

#[actix_web::test]
async fn the_client_is_usable_from_send_tasks_and_as_a_trait_object() {
    use agentic_api::discovery::seller::Seller;
    let seller = FakeSeller::start(Behaviour::default()).await;
    let sf = target(&seller);
    let boxed: std::sync::Arc<dyn Seller> = std::sync::Arc::new(client());
    // `tokio::spawn` demands a Send future.
    let answer = tokio::spawn(async move { boxed.get_products(&sf, &brief()).await })
        .await
        .unwrap()
        .unwrap();
    assert_eq!(answer.products.len(), 2);
}
