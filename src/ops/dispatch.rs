//! The operation dispatcher: `{operation, pathParams, params, body}` runs any
//! registered operation with the same parsing, permission check and tenancy
//! as its REST route. Agent tool calls go through it.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::{Ctx, RawInput};
use crate::caller::CallerInfo;
use crate::error::ApiError;

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

pub async fn dispatch(
    ctx: &Ctx,
    caller: Arc<CallerInfo>,
    call: OperationCall,
) -> Result<OperationOutput, ApiError> {
    let Some(def) = ctx.operations.find(&call.operation) else {
        let known: Vec<&str> = ctx.operations.iter().map(|d| d.name).collect();
        return Err(ApiError::invalid(
            "operation",
            format!(
                "unknown operation {:?}; known: {}",
                call.operation,
                known.join(", ")
            ),
        ));
    };
    let body = match call.body {
        None | Some(Value::Null) => None,
        Some(v) => Some(serde_json::to_vec(&v).map_err(ApiError::internal)?.into()),
    };
    let raw = RawInput {
        path: call.path_params,
        query: query_string(&call.params)?,
        body,
    };
    let reply = (def.call)(ctx.clone(), caller, raw).await?;
    let data = serde_json::from_slice(&reply.data).map_err(ApiError::internal)?;
    Ok(OperationOutput {
        data,
        meta: reply.pagination.map(|p| json!({ "pagination": p })),
    })
}
