//! Named operations: each defined once (in its domain's service) and exposed
//! as REST and, through this dispatcher, as an agent tool call
//! `{operation, pathParams, params, body}` (the MCP surface reuses it).
//! Input goes through the same typed structs and validation as REST.

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::auth::CallerInfo;
use crate::buyer::advertisers::service;
use crate::error::ApiError;
use crate::http::Page;
use crate::http::json::parse_json;
use crate::state::AppState;

/// Every operation the dispatcher knows, in catalog order.
pub const OPERATIONS: &[&str] = &[
    "create_advertiser",
    "get_advertiser",
    "update_advertiser",
    "list_advertisers",
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationCall {
    pub operation: String,
    #[serde(default)]
    pub path_params: Map<String, Value>,
    #[serde(default)]
    pub params: Map<String, Value>,
    #[serde(default)]
    pub body: Option<Value>,
}

/// The same `{data, meta?}` a REST call returns.
#[derive(Debug)]
pub struct OperationOutput {
    pub data: Value,
    pub meta: Option<Value>,
}

fn path_param(call: &OperationCall, name: &str) -> Result<String, ApiError> {
    match call.path_params.get(name) {
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(ApiError::invalid(name, "must be a string")),
        None => Err(ApiError::invalid(name, "is required")),
    }
}

fn body<T: DeserializeOwned + Default>(call: &OperationCall) -> Result<T, ApiError> {
    match &call.body {
        None | Some(Value::Null) => parse_json(b"{}"),
        Some(v) => parse_json(v.to_string().as_bytes()),
    }
}

/// `params` as the query string REST would have received.
fn query_string(params: &Map<String, Value>) -> Result<String, ApiError> {
    let mut qs = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in params {
        let v = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            Value::Bool(b) => b.to_string(),
            _ => return Err(ApiError::invalid(k, "must be a string, number or boolean")),
        };
        qs.append_pair(k, &v);
    }
    Ok(qs.finish())
}

fn to_value<T: serde::Serialize>(v: T) -> Result<Value, ApiError> {
    serde_json::to_value(v).map_err(ApiError::internal)
}

pub async fn dispatch(
    state: &AppState,
    caller: &CallerInfo,
    call: OperationCall,
) -> Result<OperationOutput, ApiError> {
    let data = match call.operation.as_str() {
        "create_advertiser" => {
            to_value(service::create_advertiser(state, caller, body(&call)?).await?)?
        }
        "get_advertiser" => {
            let id = path_param(&call, "advertiserId")?;
            to_value(service::get_advertiser(state, caller, &id).await?)?
        }
        "update_advertiser" => {
            let id = path_param(&call, "advertiserId")?;
            to_value(service::update_advertiser(state, caller, &id, body(&call)?).await?)?
        }
        "list_advertisers" => {
            let page = Page::<20, 100>::parse(&query_string(&call.params)?)?;
            let (items, meta) = service::list_advertisers(state, caller, page).await?;
            return Ok(OperationOutput {
                data: to_value(items)?,
                meta: Some(json!({ "pagination": meta })),
            });
        }
        other => {
            return Err(ApiError::invalid(
                "operation",
                format!(
                    "unknown operation {other:?}; known: {}",
                    OPERATIONS.join(", ")
                ),
            ));
        }
    };
    Ok(OperationOutput { data, meta: None })
}
