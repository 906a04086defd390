//! The server-rendered pages of the authorization flow. Plain HTML forms,
//! no script, no external asset; askama escapes every value. Each page
//! forbids framing (clickjacking) and caching, sends no referrer, and lets
//! forms post only here (and, from the consent page, redirect to the
//! client, which CSP `form-action` also governs in Chromium).

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header};
use askama::Template;

use super::model::Scopes;

#[derive(Template)]
#[template(path = "oauth/login.html")]
pub struct LoginPage<'a> {
    pub client_name: &'a str,
    pub redirect_host: &'a str,
    pub request: &'a str,
    pub csrf: &'a str,
    /// Kept after a failed attempt.
    pub email: &'a str,
    pub error: Option<&'a str>,
}

#[derive(Template)]
#[template(path = "oauth/consent.html")]
pub struct ConsentPage<'a> {
    pub client_name: &'a str,
    pub redirect_host: &'a str,
    pub user_name: &'a str,
    pub user_email: &'a str,
    pub account_name: &'a str,
    pub scopes: Vec<(&'static str, &'static str)>,
    pub request: &'a str,
    pub csrf: &'a str,
}

#[derive(Template)]
#[template(path = "oauth/error.html")]
pub struct ErrorPage<'a> {
    pub title: &'a str,
    pub message: &'a str,
}

/// What each scope means, as the consent page says it.
pub fn scope_meanings(scopes: &Scopes) -> Vec<(&'static str, &'static str)> {
    scopes
        .iter()
        .map(|s| {
            let meaning = match s {
                "openid" => "confirm who you are",
                "profile" => "see your name",
                "email" => "see your email address",
                _ => "",
            };
            (s, meaning)
        })
        .collect()
}

/// An HTML answer with the pages' security headers; `form_target` is an
/// origin the page's form may end up at besides this server.
pub fn html(status: StatusCode, page: &impl Template, form_target: Option<&str>) -> HttpResponse {
    let body = match page.render() {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "oauth page did not render");
            return HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("internal error; safe to retry once");
        }
    };
    let form_action = match form_target {
        Some(origin) => format!("'self' {origin}"),
        None => "'self'".into(),
    };
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'none'; style-src 'unsafe-inline'; form-action {form_action}; \
                 frame-ancestors 'none'; base-uri 'none'"
            ),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(body)
}

pub fn error(status: StatusCode, title: &str, message: &str) -> HttpResponse {
    html(status, &ErrorPage { title, message }, None)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_echoed_value_is_escaped() {
        let page = LoginPage {
            client_name: "<script>alert(1)</script>",
            redirect_host: "a\"b",
            request: "r",
            csrf: "c",
            email: "\"><img src=x>",
            error: Some("<b>"),
        }
        .render()
        .unwrap();
        assert!(!page.contains("<script>alert"), "{page}");
        assert!(
            page.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{page}"
        );
        assert!(!page.contains("\"><img"), "{page}");
        assert!(!page.contains("<b>"), "{page}");
    }
}
