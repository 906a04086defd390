//! JSON bodies as every transport reads them: an object, parsed with serde,
//! and a data error turned into a validation error that names the field.

use crate::error::{ApiError, Issue};

/// Deserialize a body, turning serde's error into a field-level validation error.
pub fn parse_json<'de, T: serde::Deserialize<'de>>(body: &'de [u8]) -> Result<T, ApiError> {
    if body.is_empty() {
        return Err(ApiError::invalid(
            "",
            "request body is empty; a JSON object is required",
        ));
    }
    // Every body of this API is an object; serde would also read a struct
    // from an array, which no client means.
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{')
        && serde_json::from_slice::<serde_json::Value>(body).is_ok()
    {
        return Err(ApiError::invalid(
            "",
            "the request body must be a JSON object",
        ));
    }
    // Well-formed bodies are read without path tracking (it costs a
    // string per field); a body that fails is read again with it, for the
    // exact path of its error.
    // The text is checked as UTF-8 once, not string by string.
    if first == Some(&b'{')
        && let Ok(text) = std::str::from_utf8(body)
        && let Ok(value) = serde_json::from_str::<T>(text)
    {
        return Ok(value);
    }
    let mut de = serde_json::Deserializer::from_slice(body);
    let value: T = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if inner.is_syntax() || inner.is_eof() || inner.is_io() {
            return ApiError::Validation {
                message: format!("malformed JSON: {}", strip_position(&inner.to_string())),
                field: None,
                issues: vec![Issue {
                    path: String::new(),
                    message: "malformed JSON".into(),
                }],
            };
        }
        let msg = strip_position(&inner.to_string());
        schema_error(&path, &msg)
    })?;
    de.end().map_err(|_| {
        ApiError::invalid("", "malformed JSON: trailing characters after the value")
    })?;
    Ok(value)
}

/// Map a serde data error at `path` to a validation error naming the field.
pub fn schema_error(path: &str, msg: &str) -> ApiError {
    let base = if path == "." || path.is_empty() {
        ""
    } else {
        path
    };
    // serde reports missing/unknown fields at the parent: name the field itself.
    let named = ["missing field `", "unknown field `"]
        .iter()
        .find_map(|p| msg.strip_prefix(p))
        .and_then(|rest| rest.split('`').next());
    let field = match named {
        // serde_path_to_error already ends the path with an unknown field's name.
        Some(name) if base == name || base.ends_with(&format!(".{name}")) => base.to_string(),
        Some(name) if base.is_empty() => name.to_string(),
        Some(name) => format!("{base}.{name}"),
        None => base.to_string(),
    };
    let message = if msg.starts_with("unknown field") {
        "unknown field".to_string()
    } else if msg.starts_with("missing field") {
        "is required".to_string()
    } else {
        msg.to_string()
    };
    ApiError::invalid(field, message)
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg.to_string(),
    }
}
