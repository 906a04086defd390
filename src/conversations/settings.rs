//! Account-level conversation settings (admin or super-admin only).

use actix_web::{FromRequest, HttpRequest, HttpResponse, dev::Payload, get, patch, web};
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_actix_web::service_config::ServiceConfig;

use entity::conversation_settings;

use super::service;
use crate::error::{ApiError, ApiResult};
use crate::http::{ApiJson, Caller, Envelope, ErrorEnvelope, envelope};
use crate::state::AppState;

pub fn configure(cfg: &mut ServiceConfig) {
    cfg.service(get_settings).service(update_settings);
}

/// A caller allowed to manage settings: admin or super-admin of an account
/// with the assistant enabled. Checked before the body is read, so a
/// member gets 403 whatever they send.
pub struct SettingsAdmin(pub Caller);

impl FromRequest for SettingsAdmin {
    type Error = ApiError;
    type Future = LocalBoxFuture<'static, Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, payload: &mut Payload) -> Self::Future {
        let caller = Caller::from_request(req, payload);
        Box::pin(async move {
            let caller = caller.await?;
            if !caller.account.assistant_enabled {
                return Err(ApiError::Forbidden(
                    "the assistant is not enabled for this account".into(),
                ));
            }
            if !caller.is_admin() {
                return Err(ApiError::Forbidden(
                    "conversation settings need the admin or super-admin role".into(),
                ));
            }
            Ok(SettingsAdmin(caller))
        })
    }
}

#[derive(Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SettingsOut {
    /// Sharing of conversations created without an explicit value.
    pub default_sharing_enabled: bool,
}

impl From<conversation_settings::Model> for SettingsOut {
    fn from(m: conversation_settings::Model) -> Self {
        SettingsOut {
            default_sharing_enabled: m.default_sharing_enabled,
        }
    }
}

/// The account's conversation settings.
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    responses(
        (status = 200, body = Envelope<SettingsOut>),
        (status = 401, body = ErrorEnvelope),
        (status = 403, body = ErrorEnvelope),
    )
)]
#[get("/assistant/conversation-settings")]
pub async fn get_settings(
    state: web::Data<AppState>,
    admin: SettingsAdmin,
) -> ApiResult<HttpResponse> {
    let settings = service::settings(&state.db, admin.0.account_id()).await?;
    Ok(envelope::ok(SettingsOut::from(settings)))
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SettingsPatch {
    pub default_sharing_enabled: bool,
}

/// Change the default; conversations created before keep their sharing.
#[utoipa::path(
    tag = "conversations",
    security(("bearer" = [])),
    request_body = SettingsPatch,
    responses(
        (status = 200, body = Envelope<SettingsOut>),
        (status = 400, body = ErrorEnvelope),
        (status = 401, body = ErrorEnvelope),
        (status = 403, body = ErrorEnvelope),
    )
)]
#[patch("/assistant/conversation-settings")]
pub async fn update_settings(
    state: web::Data<AppState>,
    admin: SettingsAdmin,
    body: ApiJson<SettingsPatch>,
) -> ApiResult<HttpResponse> {
    let settings = service::update_settings(
        &state.db,
        admin.0.account_id(),
        body.0.default_sharing_enabled,
    )
    .await?;
    Ok(envelope::ok(SettingsOut::from(settings)))
}
