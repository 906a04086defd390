//! The parts of an operation's input (path parameters, query parameters,
//! body) as wrapper types, each parsed from the transport-neutral
//! [`RawInput`] and each describing itself as JSON Schema, from the same
//! Rust type that parses it.

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use utoipa::ToSchema;

use super::json::{parse_json, schema_error};
use crate::error::ApiError;

/// What a transport hands to an operation before parsing.
#[derive(Debug, Clone, Default)]
pub struct RawInput {
    /// Path parameters by name, as strings.
    pub path: Map<String, Value>,
    /// The query string (`take=10&skip=0`).
    pub query: String,
    /// The body, absent when none was sent.
    pub body: Option<bytes::Bytes>,
}

/// A path or query part.
pub trait Part: Sized + Send {
    /// Is the part required in a dispatcher call?
    const REQUIRED: bool = false;
    /// Is it a page request (`take`/`skip`), answered with `meta.pagination`?
    const PAGINATED: bool = false;
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError>;
    fn schema() -> Option<Value>;
}

/// The body part.
pub trait BodyPart: Sized + Send {
    const OPTIONAL: bool;
    const KIND: super::BodyKind;
    fn from_body(body: Option<&bytes::Bytes>) -> Result<Self, ApiError>;
    fn schema() -> Option<Value>;
    /// The schema for the OpenAPI document ([`super::schema::component`]).
    fn doc_schema() -> Option<Value> {
        Self::schema()
    }
}

/// `T`'s self-contained schema ([`super::schema::of`]).
pub(crate) fn schema_of<T: ToSchema>() -> Option<Value> {
    Some(super::schema::of::<T>())
}

/// No such part.
#[derive(Debug, Clone, Copy, Default)]
pub struct Nothing;

impl Part for Nothing {
    fn from_raw(_: &RawInput) -> Result<Self, ApiError> {
        Ok(Nothing)
    }
    fn schema() -> Option<Value> {
        None
    }
}

impl BodyPart for Nothing {
    const OPTIONAL: bool = true;
    const KIND: super::BodyKind = super::BodyKind::None;
    fn from_body(_: Option<&bytes::Bytes>) -> Result<Self, ApiError> {
        Ok(Nothing)
    }
    fn schema() -> Option<Value> {
        None
    }
}

/// Path parameters, e.g. `Params<AdvertiserPath>`.
#[derive(Debug, Clone)]
pub struct Params<T>(pub T);

impl<T: DeserializeOwned + ToSchema + Send> Part for Params<T> {
    const REQUIRED: bool = true;
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError> {
        serde_path_to_error::deserialize(Value::Object(raw.path.clone()))
            .map(Params)
            .map_err(|err| {
                let path = err.path().to_string();
                schema_error(&path, &err.into_inner().to_string())
            })
    }
    fn schema() -> Option<Value> {
        schema_of::<T>()
    }
}

/// Query parameters; unknown ones are ignored.
#[derive(Debug, Clone)]
pub struct Query<T>(pub T);

/// Parses a query string, reporting the offending parameter.
pub fn parse_query<T: DeserializeOwned>(qs: &str) -> Result<T, ApiError> {
    let de = serde_urlencoded::Deserializer::new(url::form_urlencoded::parse(qs.as_bytes()));
    serde_path_to_error::deserialize(de).map_err(|err| {
        let path = err.path().to_string();
        schema_error(&path, &err.into_inner().to_string())
    })
}

impl<T: DeserializeOwned + ToSchema + Send> Part for Query<T> {
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError> {
        parse_query(&raw.query).map(Query)
    }
    fn schema() -> Option<Value> {
        schema_of::<T>()
    }
}

/// A required JSON object body.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: DeserializeOwned + ToSchema + Send> BodyPart for Json<T> {
    const OPTIONAL: bool = false;
    const KIND: super::BodyKind = super::BodyKind::Required;
    fn from_body(body: Option<&bytes::Bytes>) -> Result<Self, ApiError> {
        parse_json(body.map(|b| &b[..]).unwrap_or_default()).map(Json)
    }
    fn schema() -> Option<Value> {
        schema_of::<T>()
    }
    fn doc_schema() -> Option<Value> {
        Some(super::schema::component::<T>())
    }
}

/// A required JSON object body kept as its bytes, for an operation that
/// reads it into types borrowing from it ([`JsonBytes::parse`]); `S`
/// describes it in the schemas.
#[derive(Debug, Clone)]
pub struct JsonBytes<S>(pub bytes::Bytes, std::marker::PhantomData<S>);

impl<S> JsonBytes<S> {
    /// Reads the body as `T`, with the same errors as [`Json`].
    pub fn parse<'a, T: serde::Deserialize<'a>>(&'a self) -> Result<T, ApiError> {
        parse_json(&self.0)
    }
}

impl<S: ToSchema + Send> BodyPart for JsonBytes<S> {
    const OPTIONAL: bool = false;
    const KIND: super::BodyKind = super::BodyKind::Required;
    fn from_body(body: Option<&bytes::Bytes>) -> Result<Self, ApiError> {
        Ok(JsonBytes(
            body.cloned().unwrap_or_default(),
            std::marker::PhantomData,
        ))
    }
    fn schema() -> Option<Value> {
        schema_of::<S>()
    }
    fn doc_schema() -> Option<Value> {
        Some(super::schema::component::<S>())
    }
}

/// A JSON body that may be omitted (then `T::default()`).
#[derive(Debug, Clone)]
pub struct MaybeJson<T>(pub T);

impl<T: DeserializeOwned + ToSchema + Default + Send> BodyPart for MaybeJson<T> {
    const OPTIONAL: bool = true;
    const KIND: super::BodyKind = super::BodyKind::Optional;
    fn from_body(body: Option<&bytes::Bytes>) -> Result<Self, ApiError> {
        match body {
            None => Ok(MaybeJson(T::default())),
            Some(bytes) if bytes.is_empty() => Ok(MaybeJson(T::default())),
            Some(bytes) => parse_json(bytes).map(MaybeJson),
        }
    }
    fn schema() -> Option<Value> {
        schema_of::<T>()
    }
    fn doc_schema() -> Option<Value> {
        Some(super::schema::component::<T>())
    }
}
