//! `GET /fax-media/{token}`: a reply's PDF, for the carrier to fetch when it
//! sends the reply (as every carrier fetches fax media by URL). The token is
//! 43 random base62 characters, made for one reply; the file is served for
//! a day after the fax arrived and never once it expired. No credential: the
//! carrier has none of ours, so the token is the only key.

use actix_web::{HttpResponse, web};
use chrono::Utc;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use entity::inbound_fax;

use super::pipeline::{Pipeline, REPLY_MEDIA_TTL};
use crate::http::AppState;

pub const PATH: &str = "/fax-media";

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.route(&format!("{PATH}/{{token}}"), web::get().to(serve));
}

fn not_found() -> HttpResponse {
    HttpResponse::NotFound().json(serde_json::json!({
        "data": null, "error": { "code": "NOT_FOUND", "message": "no such fax media" }
    }))
}

async fn serve(state: web::Data<AppState>, token: web::Path<String>) -> HttpResponse {
    let token = token.into_inner();
    if token.len() != 43 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return not_found();
    }
    let oldest = Utc::now() - chrono::Duration::from_std(REPLY_MEDIA_TTL).unwrap_or_default();
    let found = inbound_fax::Entity::find()
        .filter(inbound_fax::Column::ReplyToken.eq(token.as_str()))
        .filter(inbound_fax::Column::Stage.is_in(["rendered", "sent"]))
        .filter(inbound_fax::Column::CreatedAt.gt(oldest))
        .one(&state.db)
        .await;
    let (Ok(Some(fax)), Ok(p)) = (found, state.get::<Pipeline>()) else {
        return not_found();
    };
    let Some(path) = fax.reply_path else {
        return not_found();
    };
    match p.storage.read(&path).await {
        Ok(bytes) => HttpResponse::Ok()
            .content_type("application/pdf")
            .insert_header(("cache-control", "no-store"))
            .insert_header(("x-content-type-options", "nosniff"))
            .body(bytes),
        Err(_) => not_found(),
    }
}
