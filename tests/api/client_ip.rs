//! Rate limits behind a load balancer: which client a request counts against.
//! Every app here allows one request a minute per client, so a 429 on the
//! second request proves two requests shared a bucket.

use std::process::Stdio;

use crate::helpers::*;

async fn app_trusting(trusted: &[&str]) -> TestApp {
    let nets = agentic_api::http::client_ip::parse_trusted_proxies(&trusted.join(",")).unwrap();
    spawn_app_with(|c| {
        c.rate_limit_per_minute = 1;
        c.trusted_proxies = nets;
    })
    .await
}

/// Status of an unauthenticated request carrying `headers` (404 when let
/// through, 429 when the bucket is spent).
async fn status(app: &TestApp, headers: &[(&str, &str)]) -> u16 {
    let mut req = app.client.get(app.url("/api/v2/nothing"));
    for (k, v) in headers {
        req = req.insert_header((*k, *v));
    }
    let res = req.send().await.unwrap();
    res.status().as_u16()
}

const THROUGH: u16 = 404;
const LIMITED: u16 = 429;

#[actix_web::test]
async fn behind_a_trusted_proxy_each_forwarded_client_has_its_own_bucket() {
    let app = app_trusting(&["127.0.0.0/8", "10.0.0.0/8"]).await;
    let xff = "x-forwarded-for";
    assert_eq!(status(&app, &[(xff, "203.0.113.1")]).await, THROUGH);
    assert_eq!(status(&app, &[(xff, "203.0.113.1")]).await, LIMITED);
    assert_eq!(status(&app, &[(xff, "203.0.113.2")]).await, THROUGH);
    // Entries left of the client are the client's own words: no escape.
    assert_eq!(
        status(&app, &[(xff, "198.51.100.9, 203.0.113.1")]).await,
        LIMITED
    );
    // Trusted hops on the right are skipped.
    assert_eq!(
        status(&app, &[(xff, "203.0.113.3, 10.1.2.3")]).await,
        THROUGH
    );
    assert_eq!(status(&app, &[(xff, "203.0.113.3")]).await, LIMITED);
    // Without any header the proxy itself is the client.
    assert_eq!(status(&app, &[]).await, THROUGH);
    assert_eq!(status(&app, &[]).await, LIMITED);
}

#[actix_web::test]
async fn forwarding_headers_from_an_untrusted_peer_are_ignored() {
    let app = app_trusting(&[]).await;
    assert_eq!(
        status(&app, &[("x-forwarded-for", "203.0.113.1")]).await,
        THROUGH
    );
    assert_eq!(
        status(&app, &[("x-forwarded-for", "203.0.113.2")]).await,
        LIMITED
    );
    assert_eq!(
        status(&app, &[("forwarded", "for=203.0.113.3")]).await,
        LIMITED
    );
    // A trusted range that does not hold the peer is no better.
    let app = app_trusting(&["10.0.0.0/8", "::1/128"]).await;
    assert_eq!(
        status(&app, &[("x-forwarded-for", "203.0.113.1")]).await,
        THROUGH
    );
    assert_eq!(
        status(&app, &[("x-forwarded-for", "203.0.113.2")]).await,
        LIMITED
    );
}

#[actix_web::test]
async fn ipv6_clients_share_a_bucket_per_64() {
    let app = app_trusting(&["127.0.0.1"]).await;
    let xff = "x-forwarded-for";
    assert_eq!(status(&app, &[(xff, "2001:db8:1:2::a")]).await, THROUGH);
    assert_eq!(
        status(&app, &[(xff, "2001:db8:1:2:ffff:ffff:ffff:b")]).await,
        LIMITED
    );
    assert_eq!(status(&app, &[(xff, "2001:db8:1:3::a")]).await, THROUGH);
}

#[actix_web::test]
async fn the_forwarded_header_names_the_client_and_wins_over_x_forwarded_for() {
    let app = app_trusting(&["127.0.0.0/8"]).await;
    let fwd = "forwarded";
    assert_eq!(
        status(&app, &[(fwd, r#"for="[2001:db8::1]:4711";proto=https"#)]).await,
        THROUGH
    );
    // Right-most `for=`, quoted IPv6 with a port, same /64: same bucket.
    assert_eq!(
        status(
            &app,
            &[(fwd, r#"for=192.0.2.60;proto=http, For="[2001:db8::2]""#)]
        )
        .await,
        LIMITED
    );
    assert_eq!(status(&app, &[(fwd, "for=192.0.2.60")]).await, THROUGH);
    // Forwarded wins: the X-Forwarded-For address is not charged.
    assert_eq!(
        status(
            &app,
            &[(fwd, "for=192.0.2.61"), ("x-forwarded-for", "192.0.2.62")]
        )
        .await,
        THROUGH
    );
    assert_eq!(
        status(&app, &[("x-forwarded-for", "192.0.2.62")]).await,
        THROUGH
    );
    assert_eq!(status(&app, &[(fwd, "for=192.0.2.61")]).await, LIMITED);
}

#[actix_web::test]
async fn malformed_forwarding_headers_fall_back_to_the_peer() {
    let app = app_trusting(&["127.0.0.0/8"]).await;
    // The peer's own bucket is spent first...
    assert_eq!(status(&app, &[]).await, THROUGH);
    // ...so each malformed header, charged to the peer, is limited (not a 500).
    for headers in [
        [("x-forwarded-for", "not-an-ip")],
        [("x-forwarded-for", "203.0.113.1,")],
        [("forwarded", "for=[zzz")],
        [("forwarded", "for=\"[2001:db8::1]:notaport\"")],
        [("forwarded", "garbage")],
        [("forwarded", "for=unknown")],
        [("forwarded", "for=_hidden")],
    ] {
        assert_eq!(status(&app, &headers).await, LIMITED, "{headers:?}");
    }
}

#[actix_web::test]
async fn the_binary_reads_trusted_proxies_from_the_environment() {
    let (db, _dir) = fresh_database().await;
    let served = serve(
        &db,
        &[
            ("AGENTIC_TRUSTED_PROXIES", "10.0.0.0/8, 127.0.0.0/8,::1"),
            ("AGENTIC_RATE_LIMIT_PER_MINUTE", "1"),
        ],
        Stdio::null(),
    );
    let client = awc::Client::default();
    for (ip, want) in [
        ("203.0.113.1", THROUGH),
        ("203.0.113.2", THROUGH),
        ("203.0.113.1", LIMITED),
    ] {
        let res = client
            .get(format!("{}/api/v2/nothing", served.base))
            .insert_header(("x-forwarded-for", ip))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), want, "{ip}");
    }
}
