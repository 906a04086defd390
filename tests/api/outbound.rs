//! The outbound HTTP guard: non-public addresses are refused when the
//! connection is made, whatever the URL looked like.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::time::Duration;

use futures_util::future::LocalBoxFuture;

use agentic_api::discovery::seller::{
    ProductQuery, SellerClient, SellerError, SellerOptions, StorefrontTarget,
};
use agentic_api::net::{self, GuardedResolve, NetError, Outbound, OutboundOptions};
use agentic_api::types::{OutboundUrl, UrlPolicy};

use crate::fake_seller::{Behaviour, FakeSeller};

const STRICT: UrlPolicy = UrlPolicy {
    allow_insecure: false,
};
const INSECURE: UrlPolicy = UrlPolicy {
    allow_insecure: true,
};

/// A resolver that answers from a table: a public-looking name pointing at
/// private addresses, as a rebinding attacker's DNS would.
#[derive(Clone)]
struct Table(HashMap<String, Vec<std::net::IpAddr>>);

impl GuardedResolve for Table {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> LocalBoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        let found = self.0.get(host).cloned().unwrap_or_default();
        Box::pin(async move {
            Ok(found
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect())
        })
    }
}

fn rebinding() -> Table {
    Table(HashMap::from([
        (
            "seller.example.com".to_string(),
            vec!["127.0.0.1".parse().unwrap()],
        ),
        (
            "metadata.example.com".to_string(),
            vec!["169.254.169.254".parse().unwrap()],
        ),
        (
            "intranet.example.com".to_string(),
            vec!["10.1.2.3".parse().unwrap(), "192.168.1.10".parse().unwrap()],
        ),
        (
            "nat64.example.com".to_string(),
            vec![
                "64:ff9b::a9fe:a9fe".parse().unwrap(),
                "2002:7f00:1::".parse().unwrap(),
                "2001:0:4136:e378:8000:63bf:3fff:fdd2".parse().unwrap(),
            ],
        ),
    ]))
}

async fn get(client: &awc::Client, url: &str) -> Result<u16, NetError> {
    let res = client.get(url).send().await.map_err(NetError::from)?;
    Ok(res.status().as_u16())
}

#[actix_web::test]
async fn loopback_is_refused_under_the_strict_policy_even_as_an_ip_literal() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let client = net::build_client(STRICT, &OutboundOptions::default());
    for url in [
        format!("http://127.0.0.1:{}/echo", seller.port),
        format!("http://[::1]:{}/echo", seller.port),
        format!("http://localhost:{}/echo", seller.port),
    ] {
        let err = get(&client, &url).await.unwrap_err();
        assert!(matches!(err, NetError::Refused(_)), "{url}: {err:?}");
        assert!(err.to_string().contains("not a public address"), "{err}");
    }
    assert!(seller.seen().is_empty(), "nothing reached the server");
}

#[actix_web::test]
async fn a_public_name_resolving_to_private_addresses_is_refused_at_connect_time() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    // The URL passes the parse-time check: the name looks public.
    let url = format!("https://seller.example.com:{}/echo", seller.port);
    OutboundUrl::parse(&url, STRICT).unwrap();

    let client = net::build_client_with(STRICT, &OutboundOptions::default(), rebinding());
    for (host, addrs) in [
        ("seller.example.com", vec!["127.0.0.1"]),
        ("metadata.example.com", vec!["169.254.169.254"]),
        ("intranet.example.com", vec!["10.1.2.3", "192.168.1.10"]),
        (
            "nat64.example.com",
            vec![
                "64:ff9b::a9fe:a9fe",
                "2002:7f00:1::",
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            ],
        ),
    ] {
        let err = get(&client, &format!("http://{host}:{}/echo", seller.port))
            .await
            .unwrap_err();
        let NetError::Refused(refused) = err else {
            panic!("{host}: {err:?}")
        };
        assert_eq!(refused.host, host);
        let got: Vec<String> = refused.addrs.iter().map(|a| a.to_string()).collect();
        assert_eq!(got, addrs);
    }
    assert!(seller.seen().is_empty());
}

#[actix_web::test]
async fn loopback_is_allowed_under_the_insecure_policy() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let client = net::build_client_with(INSECURE, &OutboundOptions::default(), rebinding());
    assert_eq!(
        get(
            &client,
            &format!("http://seller.example.com:{}/echo", seller.port)
        )
        .await
        .unwrap(),
        200
    );
    assert_eq!(
        get(&client, &format!("http://127.0.0.1:{}/echo", seller.port))
            .await
            .unwrap(),
        200
    );
    let seen = seller.seen();
    assert_eq!(seen.len(), 2);
    assert!(
        seen[0]
            .user_agent
            .as_deref()
            .unwrap()
            .starts_with("agentic-api/")
    );
}

#[actix_web::test]
async fn redirects_are_not_followed() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let client = net::build_client(INSECURE, &OutboundOptions::default());
    let status = get(&client, &format!("{}/redirect", seller.base))
        .await
        .unwrap();
    assert_eq!(status, 302);
    let paths: Vec<String> = seller.seen().into_iter().map(|s| s.path).collect();
    assert_eq!(paths, ["/redirect"], "the Location was never requested");
}

#[actix_web::test]
async fn bodies_over_the_limit_are_refused() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let client = net::build_client(INSECURE, &OutboundOptions::default());
    let mut res = client
        .get(format!("{}/big", seller.base))
        .send()
        .await
        .unwrap();
    let err = net::read_body(&mut res, 1024).await.unwrap_err();
    assert_eq!(err, NetError::TooLarge { limit: 1024 });
    let mut res = client
        .get(format!("{}/big", seller.base))
        .send()
        .await
        .unwrap();
    assert_eq!(
        net::read_body(&mut res, 64 * 1024).await.unwrap().len(),
        64 * 1024
    );
}

#[actix_web::test]
async fn the_shared_worker_runs_requests_for_send_tasks_and_applies_the_guard() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let strict = Outbound::start(STRICT, OutboundOptions::default()).unwrap();
    let insecure = Outbound::start(INSECURE, OutboundOptions::default()).unwrap();
    let url = format!("{}/echo", seller.base);
    let u = url.clone();
    let ok = tokio::spawn(insecure.run(move |c| async move { get(&c, &u).await }))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ok.unwrap(), 200);
    let refused = strict
        .run(move |c| async move { get(&c, &url).await })
        .await
        .unwrap();
    assert!(matches!(refused, Err(NetError::Refused(_))), "{refused:?}");
    assert_eq!(seller.seen().len(), 1);
}

#[actix_web::test]
async fn the_seller_client_refuses_a_storefront_that_rebinds_to_loopback() {
    let seller = FakeSeller::start(Behaviour::default()).await;
    let client = SellerClient::start_with(
        STRICT,
        SellerOptions {
            call_timeout: Duration::from_secs(5),
            ..SellerOptions::default()
        },
        rebinding,
    )
    .unwrap();
    let sf = StorefrontTarget {
        id: 9,
        name: "Rebinder".into(),
        url: OutboundUrl::parse(
            &format!("https://seller.example.com:{}/mcp", seller.port),
            STRICT,
        )
        .unwrap(),
        auth_token: None,
    };
    let err = client
        .get_products(&sf, &ProductQuery::brief("anything"))
        .await
        .unwrap_err();
    assert!(matches!(err, SellerError::Refused(_)), "{err:?}");
    assert_eq!(err.code(), "SELLER_ADDRESS_REFUSED");
    assert!(seller.seen().is_empty());
}
