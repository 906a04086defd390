//! The operation registry. Each named operation (`create_advertiser`, ...) is
//! declared once, in its own domain module, as a type implementing
//! [`Operation`]: name, description, input parts (with their JSON Schema from
//! the same Rust types), output, required [`Access`] and a handler over a
//! narrow [`Ctx`]. Everything else is derived from that declaration: the
//! REST route (`crate::http::operations`), the `{operation, pathParams,
//! params, body}` dispatcher ([`dispatch`]) and, next, the MCP tools.
//!
//! Nothing here knows about HTTP: the caller type lives in `auth`,
//! pagination is a domain type, and envelopes are made at the edge.

pub mod context;
pub mod dispatch;
pub mod input;
pub mod page;
pub mod progress;
pub mod schema;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::auth::CallerInfo;
use crate::error::ApiError;
use crate::types::Permission;

pub use context::Ctx;
pub use dispatch::{OperationCall, OperationOutput, dispatch};
pub use input::{Json, MaybeJson, Nothing, Params, Query, RawInput};
pub use page::{Filtered, OptionalPage, Page, Paged, Pagination};

/// What an operation needs from the credential. Checked in one place
/// ([`authorize`]) before any input is parsed or any row is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Any valid credential of the account.
    Read,
    /// Changes state: refused to read-only keys (whose every permission is
    /// a read permission, i.e. `platform:read` alone).
    Write,
    /// Needs this permission on the key itself (e.g. `platform:write` for
    /// phone lines); a key without permissions does not have it.
    Requires(Permission),
}

impl Access {
    pub fn is_write(self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// The one permission check of every operation (and of every write route
/// that is not an operation).
pub fn authorize(caller: &CallerInfo, access: Access) -> Result<(), ApiError> {
    match access {
        Access::Read => Ok(()),
        Access::Write if caller.is_read_only() => Err(ApiError::Forbidden(
            "this API key is read-only (platform:read); this operation writes".into(),
        )),
        Access::Write => Ok(()),
        Access::Requires(p) if caller.has(p) => Ok(()),
        Access::Requires(p) => Err(ApiError::Forbidden(format!(
            "this operation needs the permission {}",
            p.as_str()
        ))),
    }
}

/// The REST verb an operation is bound to (data, not a transport type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    Put,
    Patch,
    Delete,
}

impl Verb {
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::Put => "PUT",
            Verb::Patch => "PATCH",
            Verb::Delete => "DELETE",
        }
    }
}

/// An operation's parsed input.
pub struct Input<O: Operation + ?Sized> {
    pub path: O::Path,
    pub query: O::Query,
    pub body: O::Body,
}

/// A named operation, declared once.
pub trait Operation: Send + Sync + 'static {
    const NAME: &'static str;
    const DESCRIPTION: &'static str;
    const ACCESS: Access;
    /// REST binding: verb and path template under `/api/v2`.
    const VERB: Verb;
    const PATH: &'static str;
    /// Success status: 200, or 201 for creations.
    const STATUS: u16 = 200;

    type Path: input::Part;
    type Query: input::Part;
    type Body: input::BodyPart;
    /// What it answers; its schema is the tools' `outputSchema`.
    type Output: Serialize + Send + utoipa::ToSchema;

    fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> impl Future<Output = Result<Self::Output, ApiError>> + Send;

    /// A domain rule on the caller checked before the input is parsed (as
    /// the permission is), e.g. "admins only".
    fn admit(_caller: &CallerInfo) -> Result<(), ApiError> {
        Ok(())
    }

    /// Lists say where they are in the whole; the edge puts it in `meta`.
    fn pagination(_out: &Self::Output) -> Option<Pagination> {
        None
    }
}

/// A finished operation: serialized data plus list position.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub data: bytes::Bytes,
    pub pagination: Option<Pagination>,
}

pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Authorizes, parses and runs one operation.
pub type CallFn = fn(Ctx, Arc<CallerInfo>, RawInput) -> BoxFuture<Result<Reply, ApiError>>;

/// An operation with its types erased: what the transports iterate over.
pub struct OperationDef {
    pub name: &'static str,
    pub description: &'static str,
    pub access: Access,
    pub verb: Verb,
    pub path: &'static str,
    /// JSON Schema of `{pathParams, params, body}` (self-contained, 2020-12).
    pub input_schema: fn() -> Value,
    /// JSON Schema of the output (the REST envelope's `data`).
    pub output_schema: fn() -> Value,
    /// Authorizes, parses and runs.
    pub call: CallFn,
    /// Does it take a body, and may the body be omitted?
    pub body: BodyKind,
    /// Its OpenAPI description (a `#[utoipa::path]` in the domain module,
    /// whose path and operation id a test checks against this declaration).
    pub doc: &'static (dyn utoipa_actix_web::OpenApiFactory + Sync),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    None,
    Required,
    Optional,
}

impl std::fmt::Debug for OperationDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OperationDef")
            .field("name", &self.name)
            .field("verb", &self.verb)
            .field("path", &self.path)
            .field("access", &self.access)
            .finish()
    }
}

/// The type-erased declaration of `O`.
pub const fn def<O: Operation>(
    doc: &'static (dyn utoipa_actix_web::OpenApiFactory + Sync),
) -> OperationDef {
    OperationDef {
        name: O::NAME,
        description: O::DESCRIPTION,
        access: O::ACCESS,
        verb: O::VERB,
        path: O::PATH,
        input_schema: input_schema::<O>,
        output_schema: schema::of::<O::Output>,
        call: call::<O>,
        body: <O::Body as input::BodyPart>::KIND,
        doc,
    }
}

fn input_schema<O: Operation>() -> Value {
    use input::{BodyPart, Part};
    let parts = [
        ("pathParams", O::Path::schema(), O::Path::REQUIRED),
        ("params", O::Query::schema(), false),
        ("body", O::Body::schema(), !O::Body::OPTIONAL),
    ];
    schema::object(
        parts
            .into_iter()
            .filter_map(|(name, schema, needed)| Some((name, schema?, needed))),
    )
}

fn call<O: Operation>(
    ctx: Ctx,
    caller: Arc<CallerInfo>,
    raw: RawInput,
) -> BoxFuture<Result<Reply, ApiError>> {
    Box::pin(async move {
        use input::{BodyPart, Part};
        authorize(&caller, O::ACCESS)?;
        O::admit(&caller)?;
        let input = Input::<O> {
            path: O::Path::from_raw(&raw)?,
            query: O::Query::from_raw(&raw)?,
            body: O::Body::from_body(raw.body.as_ref())?,
        };
        let out = O::run(&ctx, &caller, input).await?;
        let pagination = O::pagination(&out);
        let data = serde_json::to_vec(&out).map_err(ApiError::internal)?;
        Ok(Reply {
            status: O::STATUS,
            data: data.into(),
            pagination,
        })
    })
}

/// Every registered operation, domain by domain. Adding an operation
/// touches its own domain's list only.
pub fn registry() -> impl Iterator<Item = &'static OperationDef> {
    [
        crate::buyer::advertisers::operations::OPERATIONS,
        crate::buyer::OPERATIONS,
        crate::buyer::campaigns::operations::OPERATIONS,
        crate::buyer::catalogs::operations::OPERATIONS,
        crate::buyer::targeting::operations::OPERATIONS,
        crate::conversations::OPERATIONS,
        crate::discovery::OPERATIONS,
        crate::webhooks::OPERATIONS,
        crate::phone::OPERATIONS,
    ]
    .into_iter()
    .flatten()
    .copied()
}

/// The operation named `name`.
pub fn find(name: &str) -> Option<&'static OperationDef> {
    registry().find(|d| d.name == name)
}
