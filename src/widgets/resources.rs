//! The widgets as MCP resources and in tool definitions and results (the
//! MCP Apps extension): `resources/list` names each widget once, by its
//! slug; `resources/read` also answers the compatibility aliases' URIs. A
//! tool whose results a widget shows declares `_meta.ui.resourceUri`, and
//! so does each of its results, whose `content` is then a compact line for
//! the model while the widget reads `structuredContent`.

use rmcp::model::{
    CallToolResult, ContentBlock, JsonObject, MetaObject, ReadResourceResult, Resource,
    ResourceContents, Tool,
};
use serde_json::{Value, json};

use super::{WIDGETS, Widget};

/// A resource's UI metadata: the widgets load nothing and connect nowhere
/// (all their data comes through the host's bridge), so every CSP list is
/// empty; `domain` is left to the host's default sandbox origin, since a
/// widget needs no stable origin.
fn ui_meta() -> MetaObject {
    meta(json!({"ui": {
        "csp": {"connectDomains": [], "resourceDomains": [], "frameDomains": [], "baseUriDomains": []},
        "prefersBorder": true,
    }}))
}

fn meta(value: Value) -> MetaObject {
    match value {
        Value::Object(map) => MetaObject(map),
        _ => MetaObject(JsonObject::new()),
    }
}

/// `resources/list`.
pub fn list() -> Vec<Resource> {
    WIDGETS
        .iter()
        .map(|w| {
            let mut r = Resource::new(w.uri(), w.slug)
                .with_title(w.title)
                .with_description(w.description)
                .with_mime_type(super::MIME_TYPE)
                .with_size(w.html.len() as u64);
            r.meta = Some(ui_meta());
            r
        })
        .collect()
}

/// `resources/read` of a widget's URI (or an alias's); `None` if it names
/// no widget.
pub fn read(uri: &str) -> Option<ReadResourceResult> {
    let widget = super::from_uri(uri)?;
    let contents = ResourceContents::text(widget.html, uri)
        .with_mime_type(super::MIME_TYPE)
        .with_meta(ui_meta());
    Some(ReadResourceResult::new(vec![contents]))
}

/// Marks the tools whose results a widget shows.
pub fn declare(tools: &mut [Tool], widget_of: fn(&str) -> Option<&'static Widget>) {
    for tool in tools {
        if let Some(w) = widget_of(&tool.name) {
            tool.meta = Some(meta(json!({"ui": {"resourceUri": w.uri()}})));
        }
    }
}

/// A successful result shown by `widget`: the resource in `_meta`, and a
/// compact line for the model in place of the generic summary.
pub fn show(result: &mut CallToolResult, tool: &str, widget: &Widget) {
    let data = result
        .structured_content
        .as_ref()
        .and_then(|s| s.get("data"))
        .unwrap_or(&Value::Null);
    result.content = vec![ContentBlock::text(summary(tool, widget, data))];
    result.meta = Some(meta(json!({"ui": {"resourceUri": widget.uri()}})));
}

/// The identifying fields and the sizes of the lists, e.g. `get_campaign:
/// id cmp_..., name "Spring", status DRAFT, 2 packages (shown in the
/// Campaign summary widget)`: what the model may quote, nothing more.
fn summary(tool: &str, widget: &Widget, data: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(obj) = data.as_object() {
        for key in ["id", "discoveryId", "campaignId", "name", "status"] {
            match obj.get(key) {
                Some(Value::String(s)) if key == "name" => parts.push(format!("name {s:?}")),
                Some(Value::String(s)) => parts.push(format!("{key} {s}")),
                Some(Value::Number(n)) => parts.push(format!("{key} {n}")),
                _ => {}
            }
        }
        for (key, value) in obj {
            if let Value::Array(items) = value {
                parts.push(format!("{} {key}", items.len()));
            }
        }
    } else if let Value::Array(items) = data {
        parts.push(format!("{} item(s)", items.len()));
    }
    format!(
        "{tool}: {} (shown in the {} widget)",
        if parts.is_empty() {
            "done".to_string()
        } else {
            parts.join(", ")
        },
        widget.title
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_slugs_and_aliases_only() {
        assert_eq!(list().len(), WIDGETS.len());
        assert!(read("ui://agentic-api/campaign/mcp-app.html").is_some());
        assert!(read("ui://agentic-api/Campaign/mcp-app.html").is_none());
        assert!(read("ui://agentic-api/nothing/mcp-app.html").is_none());
    }

    #[test]
    fn summary_names_ids_and_counts() {
        let w = &WIDGETS[1];
        let s = summary(
            "get_campaign",
            w,
            &json!({"id": "c1", "name": "Spring", "status": "DRAFT", "packages": [1, 2]}),
        );
        assert_eq!(
            s,
            "get_campaign: id c1, name \"Spring\", status DRAFT, 2 packages (shown in the Campaign summary widget)"
        );
    }
}
