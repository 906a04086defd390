//! Form-encoded parameters (query strings and `application/x-www-form-
//! urlencoded` bodies) as OAuth reads them: a parameter sent twice is an
//! error and one sent empty counts as absent (RFC 6749 section 3.1);
//! unknown parameters are ignored.

use actix_web::HttpRequest;
use actix_web::http::header;
use actix_web::web;
use futures_util::StreamExt;

/// Form bodies of the OAuth endpoints are small; this is generous.
pub const FORM_LIMIT: usize = 16 * 1024;

#[derive(Debug, Clone, Default)]
pub struct Params(Vec<(String, String)>);

/// Why parameters could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FormError {
    NotForm,
    TooLarge,
    Unreadable,
    Repeated(String),
}

impl FormError {
    pub fn message(&self) -> String {
        match self {
            FormError::NotForm => "the body must be application/x-www-form-urlencoded".into(),
            FormError::TooLarge => format!("the body exceeds {FORM_LIMIT} bytes"),
            FormError::Unreadable => "the body could not be read".into(),
            FormError::Repeated(name) => format!("parameter '{name}' is repeated"),
        }
    }
}

impl Params {
    pub fn parse(raw: &[u8]) -> Params {
        Params(
            url::form_urlencoded::parse(raw)
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The value of `name`, `None` when absent or empty.
    pub fn get(&self, name: &str) -> Result<Option<&str>, FormError> {
        let mut found = self.0.iter().filter(|(k, _)| k == name);
        let first = found.next();
        if found.next().is_some() {
            return Err(FormError::Repeated(name.to_string()));
        }
        Ok(first.map(|(_, v)| v.as_str()).filter(|v| !v.is_empty()))
    }
}

/// Reads a form body of at most `FORM_LIMIT` bytes.
pub async fn read(req: &HttpRequest, mut payload: web::Payload) -> Result<Params, FormError> {
    let is_form = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| {
            v.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        });
    if !is_form {
        return Err(FormError::NotForm);
    }
    let mut body = web::BytesMut::new();
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|_| FormError::Unreadable)?;
        if body.len() + chunk.len() > FORM_LIMIT {
            return Err(FormError::TooLarge);
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Params::parse(&body))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_are_refused_and_empty_ones_are_absent() {
        let p = Params::parse(b"a=1&b=&c=x%20y&a=2&d=%2B");
        assert_eq!(p.get("a"), Err(FormError::Repeated("a".into())));
        assert_eq!(p.get("b"), Ok(None));
        assert_eq!(p.get("c"), Ok(Some("x y")));
        assert_eq!(p.get("d"), Ok(Some("+")));
        assert_eq!(p.get("missing"), Ok(None));
    }
}
