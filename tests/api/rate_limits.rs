use actix_web::http::Method;

use crate::helpers::*;

#[actix_web::test]
async fn the_general_bucket_limits_per_ip_with_ietf_headers() {
    let app = spawn_app_with(|c| c.rate_limit_per_minute = 3).await;
    let t = app.tenant().await;
    let mut remaining = Vec::new();
    for _ in 0..3 {
        let res = app.get("/api/v2/me", &t.key).await;
        assert_eq!(res.status, 200);
        assert_eq!(res.header("ratelimit-limit"), Some("3"));
        remaining.push(
            res.header("ratelimit-remaining")
                .unwrap()
                .parse::<u32>()
                .unwrap(),
        );
        assert!(
            res.header("ratelimit-reset")
                .unwrap()
                .parse::<u64>()
                .unwrap()
                <= 60
        );
    }
    assert_eq!(remaining, vec![2, 1, 0]);
    let limited = app.get("/api/v2/me", &t.key).await;
    limited.assert_error(429, "RATE_LIMITED");
    let retry: u64 = limited.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=20).contains(&retry), "retry-after {retry}");
    assert_eq!(limited.header("ratelimit-limit"), Some("3"));
    assert_eq!(limited.header("ratelimit-remaining"), Some("0"));
    assert_eq!(
        limited.header("ratelimit-reset"),
        Some(retry.to_string().as_str())
    );
    // Unauthenticated and unknown routes count too; probes never do.
    app.request(Method::GET, "/api/v2/nope", None, None)
        .await
        .assert_error(429, "RATE_LIMITED");
    assert_eq!(
        app.request(Method::GET, "/healthz", None, None)
            .await
            .status,
        200
    );
    assert_eq!(
        app.request(Method::GET, "/readyz", None, None).await.status,
        200
    );
}

#[actix_web::test]
async fn auth_routes_draw_from_their_own_bucket() {
    let app = spawn_app_with(|c| {
        c.rate_limit_per_minute = 100;
        c.auth_rate_limit = 2;
    })
    .await;
    for _ in 0..2 {
        let res = app.request(Method::POST, "/auth/token", None, None).await;
        assert_ne!(res.status, 429);
        assert_eq!(res.header("ratelimit-limit"), Some("2"));
    }
    let limited = app.request(Method::POST, "/auth/token", None, None).await;
    limited.assert_error(429, "RATE_LIMITED");
    assert!(
        limited
            .header("retry-after")
            .unwrap()
            .parse::<u64>()
            .unwrap()
            > 60,
        "15-minute window"
    );
    // The general bucket is untouched.
    let t = app.tenant().await;
    let res = app.get("/api/v2/me", &t.key).await;
    assert_eq!(res.status, 200);
    assert_eq!(res.header("ratelimit-limit"), Some("100"));
}
