use actix_web::http::Method;
use serde_json::json;

use crate::helpers::*;

#[actix_web::test]
async fn me_returns_the_caller_behind_the_key() {
    let app = spawn_app().await;
    let t = app.tenant().await;
    let res = app.get("/api/v2/me", &t.key).await;
    assert_eq!(res.status, 200, "{}", res.body);
    assert!(res.body["error"].is_null());
    assert_eq!(res.data()["account"]["id"], json!(t.account_id));
    assert_eq!(res.data()["user"]["id"], json!(t.user_id));
    assert_eq!(res.data()["user"]["role"], json!("admin"));
    assert_eq!(res.data()["permissions"], json!(["platform:write"]));
    let _ = Method::GET;
}
