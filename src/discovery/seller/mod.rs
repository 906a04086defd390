//! Asking one seller agent for products: AdCP 3.1 `get_products` over MCP
//! Streamable HTTP.
//!
//! The surface discovery builds on:
//!
//! ```ignore
//! let client = SellerClient::start(policy, SellerOptions::default())?; // once
//! let answer = client.get_products(&storefront, &ProductQuery::brief("CTV in France")).await?;
//! answer.products;  // validated products (each serializes as the seller's JSON)
//! answer.dropped;   // malformed products left out: index, product_id, reason
//! answer.message;   // the seller's own summary, e.g. why nothing matched
//! ```
//!
//! - [`Seller`] is the object-safe interface (`Box<dyn Seller>`); the MCP
//!   [`SellerClient`] implements it, and built-in demo sellers can too.
//! - [`SellerClient`] is cheap to clone and `Send + Sync`. It holds the
//!   guarded outbound client ([`crate::net::Outbound`]: no redirects, SSRF
//!   guard at connect time, body size limit) and the MCP session of each
//!   storefront. Every call is bounded by [`SellerOptions::call_timeout`]
//!   (handshake included); dropping its future cancels it.
//! - The wire: `initialize` → `notifications/initialized` → `tools/call`
//!   `get_products`, JSON or SSE answers, `Mcp-Session-Id` kept and, on a
//!   404 for it, one re-initialization and retry (see [`mcp`]).
//!   `Authorization: Bearer` is sent when the storefront has a token.
//! - The answer: `structuredContent`, else JSON in the first text content.
//!   `isError`, `adcp_error`, `errors[]` without products, JSON-RPC errors,
//!   HTTP statuses, timeouts and refused addresses are [`SellerError`]s. A
//!   malformed product never fails the call: it is in `dropped`.

pub mod error;
pub mod mcp;
pub mod product;
pub mod query;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicI64;
use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::{CallToolResult, JsonObject};
use serde_json::Value;

use crate::net::{GuardedResolve, Outbound, OutboundOptions, SystemResolver};
use crate::types::{OutboundUrl, UrlPolicy};

pub use error::{AdcpError, SellerError};
pub use product::{
    DeliveryType, DroppedProduct, FormatId, Placement, PlacementMode, Price, PricingModel,
    PricingOption, Product,
};
pub use query::{
    BuyingMode, ProductAction, ProductFilters, ProductQuery, ProposalAction, Refinement,
};

/// The AdCP tool asked.
pub const GET_PRODUCTS: &str = "get_products";

/// A storefront's bearer token: never printed, never serialized.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthToken(String);

impl AuthToken {
    pub fn new(token: impl Into<String>) -> Self {
        AuthToken(token.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for AuthToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AuthToken(redacted)")
    }
}

/// The seller agent to ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorefrontTarget {
    pub id: i64,
    pub name: String,
    pub url: OutboundUrl,
    pub auth_token: Option<AuthToken>,
}

/// One storefront's answer.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct SellerAnswer {
    pub products: Vec<Product>,
    pub dropped: Vec<DroppedProduct>,
    /// The seller's explanation; when no product is left and the seller
    /// said nothing, a sentence saying so.
    pub message: Option<String>,
    /// AdCP `incomplete[].scope`: what the seller could not finish.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incomplete_scopes: Vec<String>,
    /// AdCP `proposals[]`: the seller's media plans over its products, each
    /// executable by `proposal_id` with a total budget; kept as sent (an
    /// entry without a string `proposal_id` is left out).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub proposals: Vec<Value>,
}

/// Anything that answers `get_products` (the MCP client, demo sellers).
pub trait Seller: Send + Sync {
    fn get_products<'a>(
        &'a self,
        storefront: &'a StorefrontTarget,
        query: &'a ProductQuery,
    ) -> BoxFuture<'a, Result<SellerAnswer, SellerError>>;

    /// Another AdCP task (`create_media_buy`, `get_media_buys`,
    /// `update_media_buy`): the answer's payload object, `errors[]`
    /// included (the caller reads the task's own shapes). A seller that
    /// does not take the task says so.
    fn call_task<'a>(
        &'a self,
        _storefront: &'a StorefrontTarget,
        task: &'static str,
        _arguments: JsonObject,
    ) -> BoxFuture<'a, Result<Value, SellerError>> {
        Box::pin(async move {
            Err(SellerError::Rejected(Box::new(AdcpError {
                code: "UNSUPPORTED_FEATURE".into(),
                message: format!("this seller does not take {task}"),
                field: None,
                suggestion: None,
                recovery: Some("terminal".into()),
                retry_after: None,
            })))
        })
    }
}

#[derive(Debug, Clone)]
pub struct SellerOptions {
    /// Whole call, handshake included; also sent as AdCP `time_budget`.
    pub call_timeout: Duration,
    pub connect_timeout: Duration,
    /// Largest answer read (JSON body or event stream).
    pub max_body: usize,
}

impl Default for SellerOptions {
    fn default() -> Self {
        SellerOptions {
            call_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(5),
            max_body: 8 * 1024 * 1024,
        }
    }
}

/// The MCP seller client. Cheap to clone; clones share sessions and the
/// outbound worker.
#[derive(Clone)]
pub struct SellerClient {
    outbound: Outbound,
    sessions: mcp::Sessions,
    ids: Arc<AtomicI64>,
    options: Arc<SellerOptions>,
}

impl fmt::Debug for SellerClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SellerClient")
            .field("options", &self.options)
            .finish()
    }
}

impl SellerClient {
    /// Starts the client (and its outbound worker thread).
    pub fn start(policy: UrlPolicy, options: SellerOptions) -> std::io::Result<Self> {
        Self::start_with(policy, options, || SystemResolver)
    }

    /// [`SellerClient::start`] with another name resolver (tests).
    pub fn start_with<R, F>(
        policy: UrlPolicy,
        options: SellerOptions,
        resolver: F,
    ) -> std::io::Result<Self>
    where
        R: GuardedResolve + 'static,
        F: FnOnce() -> R + Send + 'static,
    {
        let outbound = Outbound::start_with(
            policy,
            OutboundOptions {
                request_timeout: options.call_timeout,
                connect_timeout: options.connect_timeout,
                max_body: options.max_body,
                ..OutboundOptions::default()
            },
            resolver,
        )?;
        Ok(SellerClient {
            outbound,
            sessions: Arc::new(parking_lot::Mutex::new(HashMap::new())),
            ids: Arc::new(AtomicI64::new(1)),
            options: Arc::new(options),
        })
    }

    pub fn options(&self) -> &SellerOptions {
        &self.options
    }

    /// Asks one storefront for products.
    #[tracing::instrument(skip_all, fields(storefront.id = storefront.id, storefront.url = %storefront.url))]
    pub async fn get_products(
        &self,
        storefront: &StorefrontTarget,
        query: &ProductQuery,
    ) -> Result<SellerAnswer, SellerError> {
        query.validate().map_err(SellerError::InvalidQuery)?;
        let timeout = self.options.call_timeout;
        let result = self
            .call_tool(storefront, GET_PRODUCTS, query.arguments(timeout))
            .await?;
        let answer = read_answer(result, query)?;
        if !answer.dropped.is_empty() {
            tracing::info!(
                dropped = answer.dropped.len(),
                "seller answer had malformed products"
            );
        }
        Ok(answer)
    }

    /// One `tools/call`, bounded by the call timeout.
    async fn call_tool(
        &self,
        storefront: &StorefrontTarget,
        tool: &'static str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, SellerError> {
        let timeout = self.options.call_timeout;
        let token = storefront
            .auth_token
            .as_ref()
            .map(|t| t.expose().to_string());
        let digest = token
            .as_ref()
            .map(|t| <sha2::Sha256 as sha2::Digest>::digest(t.as_bytes()).into());
        let call = mcp::ToolCall {
            url: storefront.url.as_str().to_string(),
            token,
            key: (storefront.id, storefront.url.as_str().to_string(), digest),
            sessions: Arc::clone(&self.sessions),
            ids: Arc::clone(&self.ids),
            max_body: self.options.max_body,
            timeout,
            tool,
            arguments,
        };
        let work = self.outbound.run(move |client| call.run(client));
        match tokio::time::timeout(timeout, work).await {
            Err(_) => Err(SellerError::Timeout(timeout)),
            Ok(Err(net)) => Err(SellerError::from_net(net, timeout)),
            Ok(Ok(outcome)) => outcome,
        }
    }

    /// Any other AdCP task: see [`Seller::call_task`]. The version fields
    /// are added as for `get_products`, so a seller answers in 3.1's shapes.
    #[tracing::instrument(skip_all, fields(storefront.id = storefront.id, task))]
    pub async fn call_task(
        &self,
        storefront: &StorefrontTarget,
        task: &'static str,
        mut arguments: JsonObject,
    ) -> Result<Value, SellerError> {
        arguments
            .entry("adcp_version")
            .or_insert_with(|| Value::from(query::ADCP_VERSION));
        arguments
            .entry("adcp_major_version")
            .or_insert_with(|| Value::from(3));
        let result = self.call_tool(storefront, task, arguments).await?;
        read_task_answer(result)
    }
}

impl Seller for SellerClient {
    fn get_products<'a>(
        &'a self,
        storefront: &'a StorefrontTarget,
        query: &'a ProductQuery,
    ) -> BoxFuture<'a, Result<SellerAnswer, SellerError>> {
        Box::pin(SellerClient::get_products(self, storefront, query))
    }

    fn call_task<'a>(
        &'a self,
        storefront: &'a StorefrontTarget,
        task: &'static str,
        arguments: JsonObject,
    ) -> BoxFuture<'a, Result<Value, SellerError>> {
        Box::pin(SellerClient::call_task(self, storefront, task, arguments))
    }
}

/// A task's payload: `structuredContent`, else the JSON object in the first
/// text content. An error answer with `errors[]` is returned as its
/// payload (the task's caller reads it); one without is an error here.
pub fn read_task_answer(result: CallToolResult) -> Result<Value, SellerError> {
    let text = result
        .content
        .iter()
        .find_map(|c| c.as_text())
        .map(|t| t.text.clone());
    let payload = match result.structured_content {
        Some(v) if v.is_object() => Some(v),
        _ => text
            .as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .filter(Value::is_object),
    };
    match payload {
        Some(p) if p.get("errors").is_some_and(Value::is_array) => Ok(p),
        Some(p) => match p.get("adcp_error").and_then(AdcpError::from_value) {
            Some(e) => Err(SellerError::Rejected(Box::new(e))),
            None if result.is_error == Some(true) => {
                Err(SellerError::Rejected(Box::new(AdcpError {
                    code: "TOOL_ERROR".into(),
                    message: "the seller's tool failed".into(),
                    field: None,
                    suggestion: None,
                    recovery: None,
                    retry_after: None,
                })))
            }
            None => Ok(p),
        },
        None if result.is_error == Some(true) => Err(SellerError::Rejected(Box::new(AdcpError {
            code: "TOOL_ERROR".into(),
            message: text.unwrap_or_else(|| "the seller's tool failed".into()),
            field: None,
            suggestion: None,
            recovery: None,
            retry_after: None,
        }))),
        None => Err(SellerError::Protocol(
            "no structuredContent and no JSON object in the text content".into(),
        )),
    }
}

/// Turns a `get_products` tool result into an answer or an error.
pub fn read_answer(
    result: CallToolResult,
    query: &ProductQuery,
) -> Result<SellerAnswer, SellerError> {
    let text = result
        .content
        .iter()
        .find_map(|c| c.as_text())
        .map(|t| t.text.clone());
    let from_text = || {
        text.as_deref()
            .and_then(|t| serde_json::from_str::<Value>(t).ok())
            .filter(Value::is_object)
    };
    let (payload, text_is_payload) = match result.structured_content {
        Some(v) if v.is_object() => (Some(v), false),
        _ => {
            let p = from_text();
            let used = p.is_some();
            (p, used)
        }
    };
    // A human summary beside the structured payload; a JSON text is the
    // payload mirrored (as the reference SDKs do), not a message.
    let summary = text
        .clone()
        .filter(|t| !text_is_payload && serde_json::from_str::<Value>(t).is_err());

    if result.is_error == Some(true) {
        let error = payload
            .as_ref()
            .and_then(payload_error)
            .unwrap_or_else(|| AdcpError {
                code: "TOOL_ERROR".into(),
                message: summary.unwrap_or_else(|| "the seller's tool failed".into()),
                field: None,
                suggestion: None,
                recovery: None,
                retry_after: None,
            });
        return Err(SellerError::Rejected(Box::new(error)));
    }
    let Some(payload) = payload else {
        return Err(SellerError::Protocol(
            "no structuredContent and no JSON object in the text content".into(),
        ));
    };
    if let Some(e) = payload.get("adcp_error").and_then(AdcpError::from_value) {
        return Err(SellerError::Rejected(Box::new(e)));
    }
    let items = match payload.get("products") {
        Some(Value::Array(items)) => items.as_slice(),
        Some(_) => {
            return Err(SellerError::Protocol("products: must be an array".into()));
        }
        None => {
            if let Some(e) = payload_error(&payload) {
                return Err(SellerError::Rejected(Box::new(e)));
            }
            if let Some(status @ ("submitted" | "working" | "input-required")) =
                payload.get("status").and_then(Value::as_str)
            {
                return Err(SellerError::Protocol(format!(
                    "the seller answered asynchronously (status {status}); async tasks are not supported"
                )));
            }
            return Err(SellerError::Protocol("products: missing".into()));
        }
    };
    let (mut products, dropped) = product::parse_products(items);
    products.retain(|p| p.offers(&query.filters.pricing_models));
    let mut message = payload
        .get("message")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or(summary)
        .filter(|m| !m.trim().is_empty());
    if products.is_empty() && message.is_none() {
        message = Some(if dropped.is_empty() {
            "The seller returned no products for this request.".into()
        } else {
            format!(
                "The seller returned {} product(s), none of them valid.",
                dropped.len()
            )
        });
    }
    let incomplete_scopes = payload
        .get("incomplete")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i.get("scope").and_then(Value::as_str))
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let proposals = payload
        .get("proposals")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter(|p| p.get("proposal_id").is_some_and(Value::is_string))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    Ok(SellerAnswer {
        products,
        dropped,
        message,
        incomplete_scopes,
        proposals,
    })
}

/// `adcp_error`, else the first of `errors[]`.
fn payload_error(payload: &Value) -> Option<AdcpError> {
    payload
        .get("adcp_error")
        .and_then(AdcpError::from_value)
        .or_else(|| {
            payload
                .get("errors")
                .and_then(Value::as_array)
                .and_then(|e| e.first())
                .and_then(AdcpError::from_value)
        })
}
