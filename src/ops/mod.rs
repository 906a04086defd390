//! The operation registry. Each named operation (`create_advertiser`, ...) is
//! declared once, in its own domain module, as a type implementing
//! [`Operation`]: name, description, input parts (with their JSON Schema from
//! the same Rust types), output, required [`Access`] and a handler over a
//! narrow [`Ctx`]. Everything else is derived from that declaration: the
//! REST route (`crate::http::operations`), its OpenAPI description
//! (`crate::openapi`), the `{operation, pathParams, params, body}`
//! dispatcher ([`dispatch`]) and the MCP tools (`crate::mcp`).
//!
//! Nothing here knows about HTTP: the caller type lives in `auth`,
//! pagination is a domain type, and envelopes are made at the edge.

pub mod context;
pub mod dispatch;
pub mod input;
pub mod json;
pub mod page;
pub mod progress;
pub mod schema;
pub mod streams;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::types::Permission;

pub use context::Ctx;
pub use dispatch::{OperationCall, OperationOutput, dispatch, run_tool};
pub use input::{Json, MaybeJson, Nothing, Params, Query, RawInput};
pub use page::{Filtered, OptionalPage, Page, Paged, Pagination};
pub use streams::{KnownStream, StreamRoute, StreamRoutes};

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
            "this credential is read-only (platform:read); this operation writes".into(),
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
    /// Error statuses the OpenAPI description lists beyond those every
    /// operation of its shape can answer (401; 400 with input; 403 unless
    /// it only reads; 404 with path parameters; 413/415 with a body;
    /// 429/500), or a more precise description of one of those.
    const ERRORS: &'static [(u16, &'static str)] = &[];

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
    /// Success status.
    pub status: u16,
    /// Error statuses beyond the usual ones ([`Operation::ERRORS`]).
    pub errors: &'static [(u16, &'static str)],
    /// Does its query take `take`/`skip` (and its answer carry `meta`)?
    pub paginated: bool,
    /// The domain it belongs to (its module), the OpenAPI tag.
    pub domain: fn() -> &'static str,
    /// The body's and the output's schemas for the OpenAPI document: as
    /// [`schema::component`] makes them, the crate's own types by name.
    pub body_doc: fn() -> Option<Value>,
    pub output_doc: fn() -> Value,
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
pub const fn def<O: Operation>() -> OperationDef {
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
        status: O::STATUS,
        errors: O::ERRORS,
        paginated: <O::Query as input::Part>::PAGINATED,
        domain: domain::<O>,
        body_doc: <O::Body as input::BodyPart>::doc_schema,
        output_doc: schema::component::<O::Output>,
    }
}

/// The module under the crate root that declares `O` (`buyer`, `auth`, ...).
fn domain<O: Operation>() -> &'static str {
    std::any::type_name::<O>()
        .split("::")
        .nth(1)
        .unwrap_or("api")
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

/// The operations a server offers: the domains' lists, assembled at the
/// top (`crate::app::OPERATIONS`), so nothing below the app names a domain.
/// Adding an operation touches its own domain's list only.
#[derive(Clone, Copy)]
pub struct Registry(&'static [&'static [&'static OperationDef]]);

impl Registry {
    pub const fn new(lists: &'static [&'static [&'static OperationDef]]) -> Self {
        Registry(lists)
    }

    /// Every operation, list by list.
    pub fn iter(&self) -> impl Iterator<Item = &'static OperationDef> + use<> {
        self.0.iter().flat_map(|list| list.iter().copied())
    }

    /// The operation named `name`.
    pub fn find(&self, name: &str) -> Option<&'static OperationDef> {
        self.iter().find(|d| d.name == name)
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter().map(|d| d.name)).finish()
    }
}
