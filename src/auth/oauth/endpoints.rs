//! The endpoints clients call directly: registration (RFC 7591), the token
//! endpoint (RFC 6749 section 3.2) and revocation (RFC 7009). Bodies and
//! errors are the RFCs' (`OAuthError`), not the `/api/v2` envelope.

use actix_web::http::header;
use actix_web::{HttpRequest, HttpResponse, web};
use futures_util::StreamExt;
use serde_json::{Value, json};

use super::error::OAuthError;
use super::form::{self, Params};
use super::model::RedirectUri;
use super::store;
use super::tokens::{self, CodeExchange, RefreshRequest};
use crate::ops::Ctx;

/// Registration bodies are small JSON objects.
const REGISTRATION_LIMIT: usize = 64 * 1024;
const MAX_REDIRECT_URIS: usize = 10;
const MAX_CLIENT_NAME: usize = 200;
pub const GRANT_TYPES: [&str; 2] = ["authorization_code", "refresh_token"];

/// A validated registration request. Unknown metadata is ignored (RFC 7591
/// section 2); `token_endpoint_auth_method` is always `none`, whatever was
/// asked (section 3.2.1 lets the server substitute values).
#[derive(Debug)]
pub struct Registration {
    pub client_name: Option<String>,
    pub redirect_uris: Vec<RedirectUri>,
}

impl Registration {
    pub fn parse(body: &Value) -> Result<Registration, OAuthError> {
        let Some(obj) = body.as_object() else {
            return Err(OAuthError::invalid_client_metadata(
                "the body must be a JSON object",
            ));
        };
        let uris = match obj.get("redirect_uris") {
            Some(Value::Array(uris)) if !uris.is_empty() && uris.len() <= MAX_REDIRECT_URIS => uris,
            _ => {
                return Err(OAuthError::invalid_redirect_uri(format!(
                    "redirect_uris must be an array of 1 to {MAX_REDIRECT_URIS} URIs"
                )));
            }
        };
        let mut redirect_uris = Vec::new();
        for (i, uri) in uris.iter().enumerate() {
            let parsed = uri
                .as_str()
                .ok_or_else(|| "must be a string".to_string())
                .and_then(RedirectUri::parse)
                .map_err(|m| {
                    OAuthError::invalid_redirect_uri(format!("redirect_uris[{i}]: {m}"))
                })?;
            if !redirect_uris.contains(&parsed) {
                redirect_uris.push(parsed);
            }
        }
        let client_name = match obj.get("client_name") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => {
                let name = name.trim();
                if name.is_empty()
                    || name.chars().count() > MAX_CLIENT_NAME
                    || name.chars().any(char::is_control)
                {
                    return Err(OAuthError::invalid_client_metadata(format!(
                        "client_name must be 1 to {MAX_CLIENT_NAME} printable characters"
                    )));
                }
                Some(name.to_string())
            }
            Some(_) => {
                return Err(OAuthError::invalid_client_metadata(
                    "client_name must be a string",
                ));
            }
        };
        Self::check_list(obj, "grant_types", &GRANT_TYPES)?;
        Self::check_list(obj, "response_types", &["code"])?;
        Ok(Registration {
            client_name,
            redirect_uris,
        })
    }

    /// An optional array naming only supported values.
    fn check_list(
        obj: &serde_json::Map<String, Value>,
        field: &str,
        supported: &[&str],
    ) -> Result<(), OAuthError> {
        let Some(value) = obj.get(field) else {
            return Ok(());
        };
        let Some(items) = value.as_array() else {
            return Err(OAuthError::invalid_client_metadata(format!(
                "{field} must be an array of strings"
            )));
        };
        for item in items {
            match item.as_str() {
                Some(s) if supported.contains(&s) => {}
                _ => {
                    return Err(OAuthError::invalid_client_metadata(format!(
                        "{field}: only {} supported",
                        supported.join(" and ")
                    )));
                }
            }
        }
        Ok(())
    }
}

fn no_store(mut res: actix_web::HttpResponseBuilder) -> actix_web::HttpResponseBuilder {
    res.insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::PRAGMA, "no-cache"));
    res
}

/// `POST /auth/register`.
pub async fn register(
    req: HttpRequest,
    state: web::Data<Ctx>,
    mut payload: web::Payload,
) -> Result<HttpResponse, OAuthError> {
    let is_json = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"));
    if !is_json {
        return Err(OAuthError::invalid_client_metadata(
            "the body must be application/json",
        ));
    }
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| OAuthError::invalid_client_metadata("unreadable body"))?;
        if body.len() + chunk.len() > REGISTRATION_LIMIT {
            return Err(OAuthError::invalid_client_metadata(format!(
                "the body exceeds {REGISTRATION_LIMIT} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    let value: Value = serde_json::from_slice(&body)
        .map_err(|e| OAuthError::invalid_client_metadata(format!("malformed JSON: {e}")))?;
    let registration = Registration::parse(&value)?;
    let client = store::register_client(
        &state.db,
        registration.client_name,
        &registration.redirect_uris,
    )
    .await?;
    let mut out = json!({
        "client_id": client.id,
        "client_id_issued_at": client.created_at.timestamp(),
        "redirect_uris": client.redirect_uris,
        "token_endpoint_auth_method": "none",
        "grant_types": GRANT_TYPES,
        "response_types": ["code"],
    });
    if let Some(name) = client.name {
        out["client_name"] = Value::String(name);
    }
    Ok(no_store(HttpResponse::Created()).json(out))
}

fn param<'a>(params: &'a Params, name: &str) -> Result<Option<&'a str>, OAuthError> {
    params
        .get(name)
        .map_err(|e| OAuthError::invalid_request(e.message()))
}

fn required<'a>(params: &'a Params, name: &str) -> Result<&'a str, OAuthError> {
    param(params, name)?.ok_or_else(|| OAuthError::invalid_request(format!("{name} is required")))
}

fn owned(v: Option<&str>) -> Option<String> {
    v.map(str::to_string)
}

/// A token request, parsed.
#[derive(Debug)]
pub enum TokenRequest {
    Code(CodeExchange),
    Refresh(RefreshRequest),
}

impl TokenRequest {
    pub fn parse(params: &Params) -> Result<TokenRequest, OAuthError> {
        match required(params, "grant_type")? {
            "authorization_code" => Ok(TokenRequest::Code(CodeExchange {
                code: required(params, "code")?.into(),
                redirect_uri: required(params, "redirect_uri")?.into(),
                client_id: required(params, "client_id")?.into(),
                verifier: required(params, "code_verifier")?.into(),
                resource: owned(param(params, "resource")?),
            })),
            "refresh_token" => Ok(TokenRequest::Refresh(RefreshRequest {
                refresh_token: required(params, "refresh_token")?.into(),
                client_id: owned(param(params, "client_id")?),
                scope: owned(param(params, "scope")?),
                resource: owned(param(params, "resource")?),
            })),
            other => Err(OAuthError::unsupported_grant_type(format!(
                "grant_type '{other}' is not supported (authorization_code, refresh_token)"
            ))),
        }
    }
}

/// `POST /auth/token`.
pub async fn token(
    req: HttpRequest,
    state: web::Data<Ctx>,
    payload: web::Payload,
) -> Result<HttpResponse, OAuthError> {
    let params = form::read(&req, payload)
        .await
        .map_err(|e| OAuthError::invalid_request(e.message()))?;
    let tokens = match TokenRequest::parse(&params)? {
        TokenRequest::Code(x) => tokens::exchange_code(&state, &state.public_url, x).await?,
        TokenRequest::Refresh(r) => tokens::refresh(&state, &state.public_url, r).await?,
    };
    Ok(no_store(HttpResponse::Ok()).json(tokens))
}

/// `POST /auth/revoke`: 200 whether or not the token was known.
pub async fn revoke(
    req: HttpRequest,
    state: web::Data<Ctx>,
    payload: web::Payload,
) -> Result<HttpResponse, OAuthError> {
    let params = form::read(&req, payload)
        .await
        .map_err(|e| OAuthError::invalid_request(e.message()))?;
    let token = required(&params, "token")?;
    // `token_type_hint` only speeds up a lookup elsewhere; both kinds are
    // found by their prefix here.
    param(&params, "token_type_hint")?;
    tokens::revoke(&state, token, param(&params, "client_id")?).await?;
    Ok(no_store(HttpResponse::Ok()).finish())
}
