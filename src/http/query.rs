//! `ApiQuery<T>`: query-string extractor reporting the offending parameter.

use actix_web::{FromRequest, HttpRequest, dev::Payload};
use futures_util::future::{Ready, ready};
use serde::de::DeserializeOwned;

use crate::error::ApiError;
use crate::ops::json::schema_error;

pub struct ApiQuery<T>(pub T);

pub fn parse_query<T: DeserializeOwned>(qs: &str) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(form_urlencoded_parse(qs));
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        schema_error(&path, &err.into_inner().to_string())
    })
}

fn form_urlencoded_parse(qs: &str) -> url::form_urlencoded::Parse<'_> {
    url::form_urlencoded::parse(qs.as_bytes())
}

impl<T: DeserializeOwned> FromRequest for ApiQuery<T> {
    type Error = ApiError;
    type Future = Ready<Result<Self, ApiError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(parse_query(req.query_string()).map(ApiQuery))
    }
}
