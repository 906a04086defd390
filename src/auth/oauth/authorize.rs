//! The browser side: `GET /authorize` (RFC 6749 section 4.1.1 with PKCE),
//! the login form (`POST /auth/login`) and the consent form
//! (`POST /auth/consent`).
//!
//! CSRF: `GET /authorize` opens a short-lived request row and answers the
//! login page with a random CSRF token in a hidden field and a second
//! random secret in a cookie named after the request (`HttpOnly`,
//! `SameSite=Strict`, path `/auth/`, `Secure` behind https). Both forms
//! must carry the token and come with the cookie; only their SHA-256 are
//! stored, compared in constant time. The user signs in for this one
//! request (there is no session), so a consent can only follow a login in
//! the same browser.

use actix_web::cookie::{Cookie, SameSite, time::Duration as CookieDuration};
use actix_web::http::{StatusCode, header};
use actix_web::{HttpRequest, HttpResponse, web};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};

use entity::{account, oauth_request, user};

use super::console;
use super::form::{self, FormError, Params};
use super::model::{CodeChallenge, Resource, SUPPORTED_SCOPES, Scopes, redirect_host};
use super::pages::{self, AccessChoice, ConsentPage, FormAction, LoginPage};
use super::store::{self, Client, NewRequest, Refusal};
use crate::error::ApiError;
use crate::ops::Ctx;
use crate::types::Email;

/// `state` is echoed back; bounded so a request row stays small.
const MAX_STATE_LEN: usize = 2048;

fn cookie_name(request_id: &str) -> String {
    format!("agentic_authz_{request_id}")
}

/// Why an authorization request is refused, and how the refusal travels.
#[derive(Debug)]
enum Rejection {
    /// No trustworthy redirect URI (unknown client, unregistered URI): an
    /// error page, never a redirect (RFC 6749 section 4.1.2.1).
    Page(String),
    /// Back to the client with an error code.
    Redirect {
        redirect_uri: String,
        state: Option<String>,
        error: &'static str,
        description: String,
    },
}

/// `redirect_uri` with `params` added to its query.
fn with_params(redirect_uri: &str, params: &[(&str, &str)]) -> String {
    match url::Url::parse(redirect_uri) {
        Ok(mut url) => {
            url.query_pairs_mut().extend_pairs(params);
            url.to_string()
        }
        // Registered URIs are absolute URLs; kept whole if not.
        Err(_) => redirect_uri.to_string(),
    }
}

/// A redirect back to the client: 302 after a GET, 303 after a form POST.
fn back_to_client(status: StatusCode, location: &str) -> HttpResponse {
    HttpResponse::build(status)
        .insert_header((header::LOCATION, location))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .finish()
}

/// Parses and checks an authorization request in the order RFC 6749
/// requires: client and redirect URI first (they decide whether an error
/// may be redirected), then the rest.
async fn parse_request(
    state: &Ctx,
    params: &Params,
) -> Result<Result<(Client, NewRequest), Rejection>, ApiError> {
    let page = |m: String| Ok(Err(Rejection::Page(m)));
    let client_id = match params.get("client_id") {
        Err(e) => return page(e.message()),
        Ok(None) => return page("client_id is missing.".into()),
        Ok(Some(c)) => c,
    };
    let client = if console::is_console(client_id) {
        Some(console::client(&state.db, &state.public_url).await?)
    } else {
        store::find_client(&state.db, client_id).await?
    };
    let Some(client) = client else {
        return page("This application is not registered here (unknown client_id).".into());
    };
    let redirect_uri = match params.get("redirect_uri") {
        Err(e) => return page(e.message()),
        Ok(None) => return page("redirect_uri is missing.".into()),
        Ok(Some(r)) => r,
    };
    if !client.allows_redirect(redirect_uri) {
        return page(
            "redirect_uri is not one of the addresses this application registered.".into(),
        );
    }
    let redirect_uri = redirect_uri.to_string();
    let redirect = |state: Option<String>, error: &'static str, description: String| {
        Ok(Err(Rejection::Redirect {
            redirect_uri: redirect_uri.clone(),
            state,
            error,
            description,
        }))
    };
    let st = match params.get("state") {
        Err(e) => return redirect(None, "invalid_request", e.message()),
        Ok(s) if s.is_some_and(|s| s.len() > MAX_STATE_LEN) => {
            return redirect(
                None,
                "invalid_request",
                format!("state exceeds {MAX_STATE_LEN} characters"),
            );
        }
        Ok(s) => s.map(str::to_string),
    };
    let get = |name: &str| params.get(name).map_err(|e| e.message());
    match get("response_type") {
        Err(m) => return redirect(st, "invalid_request", m),
        Ok(None) => return redirect(st, "invalid_request", "response_type is missing".into()),
        Ok(Some("code")) => {}
        Ok(Some(_)) => {
            return redirect(
                st,
                "unsupported_response_type",
                "only response_type=code is supported".into(),
            );
        }
    }
    match get("code_challenge_method") {
        Err(m) => return redirect(st, "invalid_request", m),
        Ok(Some("S256")) => {}
        // RFC 7636 makes a missing method mean `plain`, refused as well.
        Ok(_) => {
            return redirect(
                st,
                "invalid_request",
                "code_challenge_method must be S256 (plain is not supported)".into(),
            );
        }
    }
    let challenge = match get("code_challenge") {
        Err(m) => return redirect(st, "invalid_request", m),
        Ok(None) => {
            return redirect(
                st,
                "invalid_request",
                "code_challenge is required (PKCE with S256)".into(),
            );
        }
        Ok(Some(c)) => match CodeChallenge::parse(c) {
            Ok(c) => c,
            Err(m) => return redirect(st, "invalid_request", m),
        },
    };
    let scopes = match get("scope") {
        Err(m) => return redirect(st, "invalid_request", m),
        Ok(raw) => match Scopes::parse(raw) {
            Ok(s) => s,
            Err(name) => {
                return redirect(
                    st,
                    "invalid_scope",
                    format!(
                        "unknown scope '{name}' (supported: {})",
                        SUPPORTED_SCOPES.join(" ")
                    ),
                );
            }
        },
    };
    let resource = match get("resource") {
        Err(m) => return redirect(st, "invalid_request", m),
        Ok(None) => None,
        Ok(Some(r)) => match Resource::parse(r, &state.public_url) {
            Ok(r) => Some(r),
            Err(m) => return redirect(st, "invalid_target", m),
        },
    };
    Ok(Ok((
        client.clone(),
        NewRequest {
            client_id: client.id,
            redirect_uri,
            scopes,
            state: st,
            challenge,
            resource,
        },
    )))
}

fn client_label(client: &Client) -> String {
    client
        .name
        .clone()
        .unwrap_or_else(|| format!("Unnamed application ({})", client.id))
}

/// A page handler's failure of ours: logged, and a page rather than JSON.
fn or_error_page(res: Result<HttpResponse, ApiError>) -> HttpResponse {
    res.unwrap_or_else(|e| {
        tracing::error!(error = %e, "oauth page failed");
        pages::error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "Something went wrong",
            "Internal error; it is safe to try once more.",
        )
    })
}

/// `GET /authorize`: checks the request, then shows the login page.
pub async fn authorize(req: HttpRequest, state: web::Data<Ctx>) -> HttpResponse {
    or_error_page(authorize_page(req, state).await)
}

async fn authorize_page(req: HttpRequest, state: web::Data<Ctx>) -> Result<HttpResponse, ApiError> {
    let params = Params::parse(req.query_string().as_bytes());
    let (client, new) = match parse_request(&state, &params).await? {
        Ok(parsed) => parsed,
        Err(Rejection::Page(message)) => {
            return Ok(pages::error(
                StatusCode::BAD_REQUEST,
                "This connection cannot continue",
                &message,
            ));
        }
        Err(Rejection::Redirect {
            redirect_uri,
            state: st,
            error,
            description,
        }) => {
            let mut params = vec![
                ("error", error),
                ("error_description", description.as_str()),
            ];
            if let Some(s) = &st {
                params.push(("state", s));
            }
            params.push(("iss", &state.public_url));
            return Ok(back_to_client(
                StatusCode::FOUND,
                &with_params(&redirect_uri, &params),
            ));
        }
    };
    let host = redirect_host(&new.redirect_uri);
    let opened = store::open_request(&state.db, state.config.oauth.request_ttl, new).await?;
    let cookie = Cookie::build(cookie_name(&opened.id), opened.browser.clone())
        .path("/auth/")
        .http_only(true)
        .same_site(SameSite::Strict)
        .secure(state.public_url.starts_with("https://"))
        .max_age(CookieDuration::seconds(
            i64::try_from(state.config.oauth.request_ttl.as_secs()).unwrap_or(600),
        ))
        .finish();
    let page = LoginPage {
        client_name: &client_label(&client),
        redirect_host: &host,
        request: &opened.id,
        csrf: &opened.csrf,
        email: "",
        error: None,
    };
    let mut res = pages::html(StatusCode::OK, &page, FormAction::OnlySelf);
    res.add_cookie(&cookie).map_err(ApiError::internal)?;
    Ok(res)
}

/// The request a form continues, or the page that says why not.
async fn continued(
    req: &HttpRequest,
    state: &Ctx,
    params: &Params,
) -> Result<Result<(oauth_request::Model, String), HttpResponse>, ApiError> {
    let bad = |m: String| {
        Ok(Err(pages::error(
            StatusCode::BAD_REQUEST,
            "This form cannot be used",
            &m,
        )))
    };
    let (id, csrf) = match (params.get("request"), params.get("csrf")) {
        (Err(e), _) | (_, Err(e)) => return bad(e.message()),
        (Ok(None), _) => return bad("The form does not say which request it continues.".into()),
        (Ok(Some(id)), Ok(csrf)) => (id, csrf),
    };
    let browser = req.cookie(&cookie_name(id));
    let found =
        store::find_request(&state.db, id, csrf, browser.as_ref().map(|c| c.value())).await?;
    match found {
        Ok(row) => Ok(Ok((row, csrf.unwrap_or_default().to_string()))),
        Err(Refusal::Gone) => bad(
            "This sign-in expired or was already completed. Start again from the application."
                .into(),
        ),
        Err(Refusal::Forged) => Ok(Err(pages::error(
            StatusCode::FORBIDDEN,
            "This form cannot be used",
            "The form's security token is missing or does not match this browser.",
        ))),
    }
}

fn form_error_page(e: FormError) -> HttpResponse {
    pages::error(
        StatusCode::BAD_REQUEST,
        "This form cannot be used",
        &e.message(),
    )
}

/// A form the pages post (login, consent): its fields, the request it
/// continues and its CSRF token, once both the token and the browser cookie
/// check out; else the error page to answer.
async fn posted_form(
    req: &HttpRequest,
    state: &Ctx,
    payload: web::Payload,
) -> Result<Result<(Params, oauth_request::Model, String), HttpResponse>, ApiError> {
    let params = match form::read(req, payload).await {
        Ok(p) => p,
        Err(e) => return Ok(Err(form_error_page(e))),
    };
    Ok(continued(req, state, &params)
        .await?
        .map(|(row, csrf)| (params, row, csrf)))
}

async fn client_of(state: &Ctx, row: &oauth_request::Model) -> Result<Client, ApiError> {
    store::find_client(&state.db, &row.client_id)
        .await?
        .ok_or_else(|| ApiError::internal("oauth request without its client"))
}

/// `POST /auth/login`: checks the password, then shows the consent page.
pub async fn login(req: HttpRequest, state: web::Data<Ctx>, payload: web::Payload) -> HttpResponse {
    or_error_page(login_page(req, state, payload).await)
}

async fn login_page(
    req: HttpRequest,
    state: web::Data<Ctx>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (params, row, csrf) = match posted_form(&req, &state, payload).await? {
        Ok(form) => form,
        Err(page) => return Ok(page),
    };
    let client = client_of(&state, &row).await?;
    let email = params.get("email").ok().flatten().unwrap_or_default();
    let password = params.get("password").ok().flatten().unwrap_or_default();
    let candidate = match Email::parse(email) {
        Ok(email) if !password.is_empty() => {
            user::Entity::find()
                .filter(user::Column::Email.eq(email.as_str()))
                .one(&state.db)
                .await?
        }
        _ => None,
    };
    let stored = candidate.as_ref().and_then(|u| u.password_hash.clone());
    let ok = super::password::verify(stored, password.to_string()).await?;
    let host = redirect_host(&row.redirect_uri);
    let (Some(user), true) = (candidate, ok) else {
        let page = LoginPage {
            client_name: &client_label(&client),
            redirect_host: &host,
            request: &row.id,
            csrf: &csrf,
            email,
            error: Some("The email or password is incorrect."),
        };
        return Ok(pages::html(StatusCode::OK, &page, FormAction::OnlySelf));
    };
    let Some(account) = account::Entity::find_by_id(user.account_id.clone())
        .one(&state.db)
        .await?
    else {
        return Err(ApiError::internal(format!(
            "user {} has no account",
            user.id
        )));
    };
    let asked = Scopes::from_stored(&row.scope);
    if console::is_console(&client.id) {
        // This server's own console: its code can only come back here (see
        // `console`), so there is nothing to consent to.
        return answer(&state, &row, user.id, Some(asked)).await;
    }
    store::sign_in(&state.db, &row.id, user.id).await?;
    let page = ConsentPage {
        client_name: &client_label(&client),
        redirect_host: &host,
        user_name: &user.name,
        user_email: &user.email,
        account_name: &account.name,
        scopes: pages::scope_meanings(&asked),
        access: AccessChoice::for_request(&asked),
        request: &row.id,
        csrf: &csrf,
    };
    Ok(pages::html(
        StatusCode::OK,
        &page,
        FormAction::redirecting_to(&row.redirect_uri),
    ))
}

/// `POST /auth/consent`: Allow issues a code, Deny says `access_denied`;
/// either way the browser goes back to the client. `decision=allow` grants
/// the scopes asked for (`platform:read` alone stays read-only);
/// `decision=read` grants them read-only (`platform:read` in place of
/// `platform:write`). The code carries the granted scopes.
pub async fn consent(
    req: HttpRequest,
    state: web::Data<Ctx>,
    payload: web::Payload,
) -> HttpResponse {
    or_error_page(decide(req, state, payload).await)
}

async fn decide(
    req: HttpRequest,
    state: web::Data<Ctx>,
    payload: web::Payload,
) -> Result<HttpResponse, ApiError> {
    let (params, row, _) = match posted_form(&req, &state, payload).await? {
        Ok(form) => form,
        Err(page) => return Ok(page),
    };
    let Some(user_id) = row.user_id else {
        return Ok(pages::error(
            StatusCode::BAD_REQUEST,
            "This form cannot be used",
            "Sign in before allowing access.",
        ));
    };
    let asked = Scopes::from_stored(&row.scope);
    let granted = match params.get("decision") {
        Ok(Some("allow")) => Some(asked),
        Ok(Some("read")) => Some(asked.read_only()),
        Ok(Some("deny")) => None,
        _ => {
            return Ok(pages::error(
                StatusCode::BAD_REQUEST,
                "This form cannot be used",
                "Choose Allow or Deny.",
            ));
        }
    };
    answer(&state, &row, user_id, granted).await
}

/// Ends a signed-in request: a code with the `granted` scopes (or
/// `access_denied` without) and the browser sent back to the client.
async fn answer(
    state: &Ctx,
    row: &oauth_request::Model,
    user_id: i64,
    granted: Option<Scopes>,
) -> Result<HttpResponse, ApiError> {
    let txn = crate::db::begin_write(&state.db).await?;
    // One answer per request, even if the form is sent twice.
    if !store::finish_request(&txn, &row.id).await? {
        txn.rollback().await?;
        return Ok(pages::error(
            StatusCode::BAD_REQUEST,
            "This form cannot be used",
            "This sign-in expired or was already completed. Start again from the application.",
        ));
    }
    let code = match &granted {
        Some(scopes) => {
            Some(store::issue_code(&txn, state.config.oauth.code_ttl, row, user_id, scopes).await?)
        }
        None => None,
    };
    txn.commit().await?;
    let mut params: Vec<(&str, &str)> = match &code {
        Some(code) => vec![("code", code)],
        None => vec![
            ("error", "access_denied"),
            ("error_description", "the user denied access"),
        ],
    };
    if let Some(s) = &row.state {
        params.push(("state", s));
    }
    params.push(("iss", &state.public_url));
    let mut res = back_to_client(
        StatusCode::SEE_OTHER,
        &with_params(&row.redirect_uri, &params),
    );
    let mut gone = Cookie::build(cookie_name(&row.id), "")
        .path("/auth/")
        .finish();
    gone.make_removal();
    res.add_cookie(&gone).map_err(ApiError::internal)?;
    Ok(res)
}
