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

impl OperationCall {
    /// A tool call's arguments (`{pathParams?, params?, body?}`, as every
    /// tool's input schema says) as a call of `operation`; another key, or a
    /// part of the wrong type, is a validation error naming it.
    pub fn from_tool_arguments(
        operation: &str,
        args: &Map<String, Value>,
    ) -> Result<Self, ApiError> {
        if let Some(extra) = args
            .keys()
            .find(|k| !["pathParams", "params", "body"].contains(&k.as_str()))
        {
            return Err(ApiError::invalid(
                extra,
                "unknown argument; a tool takes pathParams, params and body",
            ));
        }
        let object = |name: &str| match args.get(name) {
            None | Some(Value::Null) => Ok(Map::new()),
            Some(Value::Object(m)) => Ok(m.clone()),
            Some(_) => Err(ApiError::invalid(name, "must be an object")),
        };
        Ok(OperationCall {
            operation: operation.to_string(),
            path_params: object("pathParams")?,
            params: object("params")?,
            body: args.get("body").cloned(),
        })
    }
}

/// Runs a tool call for an agent: `Ok` is the REST envelope's `{data,
/// meta?}`, `Err` is `{error: {code, message, ...}}`, both as the model is
/// shown them.
pub async fn run_tool(
    ctx: &Ctx,
    caller: Arc<CallerInfo>,
    operation: &str,
    args: &Map<String, Value>,
) -> Result<Value, Value> {
    let outcome = match OperationCall::from_tool_arguments(operation, args) {
        Ok(call) => dispatch(ctx, caller, call).await,
        Err(e) => Err(e),
    };
    match outcome {
        Ok(out) => {
            let mut v = json!({ "data": out.data });
            if let Some(meta) = out.meta {
                v["meta"] = meta;
            }
            Ok(v)
        }
        Err(e) => Err(json!({ "error": e.body() })),
    }
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
