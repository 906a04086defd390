//! The server-rendered pages of the authorization flow. Plain HTML forms,
//! no script, no external asset; askama escapes every value. Each page
//! forbids framing (clickjacking) and caching, sends no referrer, and lets
//! forms post only here (and, from the consent page, redirect to the
//! client, which CSP `form-action` also governs in Chromium).

use actix_web::HttpResponse;
use actix_web::http::{StatusCode, header};
use askama::Template;

use super::model::{PLATFORM_WRITE, Scopes};

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
    /// The identity scopes asked for, with their meaning.
    pub scopes: Vec<(&'static str, &'static str)>,
    pub access: AccessChoice,
    pub request: &'a str,
    pub csrf: &'a str,
}

/// Which levels of access the consent page offers (`decision=read` grants
/// read-only, `decision=allow` what the client asked for).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessChoice {
    /// No platform scope asked: read-only comes first, writing as the user
    /// (everything the role allows) second.
    ReadFirst,
    /// `platform:write` asked: writing (with the permission) comes first,
    /// read-only second.
    WriteFirst,
    /// `platform:read` asked: read-only is the only choice.
    ReadOnly,
}

impl AccessChoice {
    pub fn for_request(scopes: &Scopes) -> Self {
        if scopes.contains(PLATFORM_WRITE) {
            AccessChoice::WriteFirst
        } else if scopes.may_write() {
            AccessChoice::ReadFirst
        } else {
            AccessChoice::ReadOnly
        }
    }
}

#[derive(Template)]
#[template(path = "oauth/error.html")]
pub struct ErrorPage<'a> {
    pub title: &'a str,
    pub message: &'a str,
}

/// What each identity scope means, as the consent page says it (the
/// platform scopes are the access choice below them).
pub fn scope_meanings(scopes: &Scopes) -> Vec<(&'static str, &'static str)> {
    scopes
        .iter()
        .filter_map(|s| {
            let meaning = match s {
                "openid" => "confirm who you are",
                "profile" => "see your name",
                "email" => "see your email address",
                _ => return None,
            };
            Some((s, meaning))
        })
        .collect()
}

/// Where a page's form may lead (CSP `form-action`, which Chromium also
/// applies to the redirect that answers the form).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormAction {
    /// Only this server.
    OnlySelf,
    /// This server, and a client's origin the answer redirects to.
    AlsoTo(String),
    /// Not restricted: the client's origin cannot be written as a CSP
    /// source (an IPv6 literal), and restricting would block the redirect.
    Anywhere,
}

impl FormAction {
    /// The form of a page whose answer redirects to `redirect_uri`.
    pub fn redirecting_to(redirect_uri: &str) -> FormAction {
        let Ok(url) = url::Url::parse(redirect_uri) else {
            return FormAction::Anywhere;
        };
        match url.host() {
            Some(url::Host::Domain(_)) | Some(url::Host::Ipv4(_)) => {
                FormAction::AlsoTo(url.origin().ascii_serialization())
            }
            _ => FormAction::Anywhere,
        }
    }
}

/// An HTML answer with the pages' security headers.
pub fn html(status: StatusCode, page: &impl Template, form: FormAction) -> HttpResponse {
    let body = match page.render() {
        Ok(body) => body,
        Err(e) => {
            tracing::error!(error = %e, "oauth page did not render");
            return HttpResponse::InternalServerError()
                .content_type("text/plain; charset=utf-8")
                .body("internal error; safe to retry once");
        }
    };
    let form_action = match form {
        FormAction::OnlySelf => " form-action 'self';".to_string(),
        FormAction::AlsoTo(origin) => format!(" form-action 'self' {origin};"),
        FormAction::Anywhere => String::new(),
    };
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header((header::X_FRAME_OPTIONS, "DENY"))
        .insert_header((
            header::CONTENT_SECURITY_POLICY,
            format!(
                "default-src 'none'; style-src 'unsafe-inline';{form_action} \
                 frame-ancestors 'none'; base-uri 'none'"
            ),
        ))
        .insert_header((header::CACHE_CONTROL, "no-store"))
        .insert_header((header::REFERRER_POLICY, "no-referrer"))
        .insert_header((header::X_CONTENT_TYPE_OPTIONS, "nosniff"))
        .body(body)
}

pub fn error(status: StatusCode, title: &str, message: &str) -> HttpResponse {
    html(status, &ErrorPage { title, message }, FormAction::OnlySelf)
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

    #[test]
    fn a_consent_form_may_lead_to_the_clients_origin() {
        assert_eq!(
            FormAction::redirecting_to("https://agent.example.com:8443/cb?x=1"),
            FormAction::AlsoTo("https://agent.example.com:8443".into())
        );
        assert_eq!(
            FormAction::redirecting_to("http://127.0.0.1:9/cb"),
            FormAction::AlsoTo("http://127.0.0.1:9".into())
        );
        // CSP has no syntax for IPv6 literals.
        assert_eq!(
            FormAction::redirecting_to("http://[::1]:9/cb"),
            FormAction::Anywhere
        );
    }
}
