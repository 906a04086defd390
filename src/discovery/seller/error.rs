//! What can go wrong asking a seller, typed so discovery can report it per
//! storefront and decide whether a retry makes sense.

use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::net::{NetError, Refused};

/// An AdCP error object (`adcp_error`, or an entry of `errors[]`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdcpError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<String>,
    /// `transient`, `correctable` or `terminal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery: Option<String>,
    /// Seconds, clamped to AdCP's 1..=3600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after: Option<f64>,
}

impl AdcpError {
    /// Reads an error object leniently: a missing code or message gets a
    /// placeholder rather than hiding that the seller failed.
    pub fn from_value(v: &Value) -> Option<AdcpError> {
        let obj = v.as_object()?;
        let text = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_string);
        Some(AdcpError {
            code: text("code").unwrap_or_else(|| "UNKNOWN".into()),
            message: text("message").unwrap_or_else(|| "the seller reported an error".into()),
            field: text("field"),
            suggestion: text("suggestion"),
            recovery: text("recovery"),
            retry_after: obj
                .get("retry_after")
                .and_then(Value::as_f64)
                .filter(|s| s.is_finite())
                .map(|s| s.clamp(1.0, 3600.0)),
        })
    }
}

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SellerError {
    /// The query breaks an AdCP rule (names the field); nothing was sent.
    #[error("invalid query: {0}")]
    InvalidQuery(String),
    /// The SSRF guard refused the storefront's address.
    #[error("{0}")]
    Refused(Refused),
    #[error("the seller did not answer within {} s", .0.as_secs_f64())]
    Timeout(Duration),
    /// Connection, TLS or transfer failure.
    #[error("cannot reach the seller: {0}")]
    Unreachable(String),
    #[error("the seller's answer is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// A non-success HTTP status (a redirect included: none is followed).
    #[error("the seller answered HTTP {status}")]
    Http { status: u16 },
    /// Not valid MCP or AdCP (unparseable, no response, wrong shape).
    #[error("the seller's answer is not valid MCP/AdCP: {0}")]
    Protocol(String),
    /// A JSON-RPC error response.
    #[error("the seller answered JSON-RPC error {code}: {message}")]
    Rpc { code: i32, message: String },
    /// The tool answered with an error (`isError`, `adcp_error` or
    /// `errors[]` without products).
    #[error("the seller reported {}: {}", .0.code, .0.message)]
    Rejected(Box<AdcpError>),
}

impl SellerError {
    /// A stable code for per-storefront results.
    pub fn code(&self) -> &'static str {
        match self {
            SellerError::InvalidQuery(_) => "INVALID_QUERY",
            SellerError::Refused(_) => "SELLER_ADDRESS_REFUSED",
            SellerError::Timeout(_) => "SELLER_TIMEOUT",
            SellerError::Unreachable(_) => "SELLER_UNREACHABLE",
            SellerError::TooLarge { .. } => "SELLER_RESPONSE_TOO_LARGE",
            SellerError::Http { .. } => "SELLER_HTTP_ERROR",
            SellerError::Protocol(_) => "SELLER_PROTOCOL_ERROR",
            SellerError::Rpc { .. } => "SELLER_RPC_ERROR",
            SellerError::Rejected(_) => "SELLER_ERROR",
        }
    }

    /// Whether asking again later may succeed.
    pub fn is_transient(&self) -> bool {
        match self {
            SellerError::Timeout(_) | SellerError::Unreachable(_) => true,
            SellerError::Http { status } => *status == 429 || *status >= 500,
            SellerError::Rejected(e) => e.recovery.as_deref() == Some("transient"),
            _ => false,
        }
    }

    pub(crate) fn from_net(e: NetError, timeout: Duration) -> Self {
        match e {
            NetError::Refused(r) => SellerError::Refused(r),
            NetError::Timeout => SellerError::Timeout(timeout),
            NetError::TooLarge { limit } => SellerError::TooLarge { limit },
            NetError::Transport(m) => SellerError::Unreachable(m),
            NetError::Tls(m) => SellerError::Unreachable(format!("TLS: {m}")),
            NetError::Stopped => SellerError::Unreachable("the server is shutting down".into()),
        }
    }
}
