//! The built-in offline assistant: no model, no network. It reads the last
//! directed turn and the tool results that followed it, and understands a
//! handful of requests well enough to show the loop with the same tools a
//! model would call: listing advertisers, starting a discovery for a brief
//! (a write: it waits for a confirmation like any other), and summarising a
//! discovery. Deterministic: the same context gives the same reply.

use futures_util::future::BoxFuture;
use serde_json::{Value, json};

use super::{
    AgentError, Backend, ChatMessage, Deltas, Origin, Request, Role, ToolCall, Turn, Usage,
};

pub struct Offline;

const LIST: &str = "list_advertisers";
const DISCOVER: &str = "discover_products";
const BROWSE: &str = "browse_discovery";

const HELP: &str = "I am the built-in offline assistant (no language model is configured on this server). I can: \
list your advertisers (\"list advertisers\"); start a discovery for a brief (\"discover sports video inventory for Acme\"); \
and summarise a discovery (\"summarise the discovery\"). An operator can connect a real model with AGENTIC_ASSISTANT_URL.";

impl Backend for Offline {
    fn describe(&self) -> String {
        "the built-in offline assistant".to_string()
    }

    fn turn<'a>(
        &'a self,
        request: Request<'a>,
        deltas: Deltas,
    ) -> BoxFuture<'a, Result<Turn, AgentError>> {
        let next = decide(request.messages, request.tools);
        Box::pin(async move {
            let mut turn = Turn::default();
            match next {
                Next::Say(text) => {
                    // Word by word, as a model streams.
                    for piece in text.split_inclusive(' ') {
                        let _ = deltas.send(piece.to_string());
                    }
                    turn.usage = Usage {
                        prompt_tokens: 0,
                        completion_tokens: text.split_whitespace().count() as u64,
                    };
                    turn.text = text;
                }
                Next::Call(name, arguments) => {
                    let id = format!("offline_{}_{}", name, request.messages.len());
                    turn.tool_calls.push(ToolCall {
                        id,
                        name: name.to_string(),
                        arguments: arguments.to_string(),
                    });
                    turn.usage.completion_tokens = 1;
                }
            }
            Ok(turn)
        })
    }
}

enum Next {
    Say(String),
    Call(&'static str, Value),
}

/// The tool results since the last directed turn, by tool name (latest
/// last), and that turn's text.
struct Since<'a> {
    turn: String,
    results: Vec<(&'a str, Value)>,
}

impl Since<'_> {
    fn result(&self, tool: &str) -> Option<&Value> {
        self.results
            .iter()
            .rev()
            .find(|(name, _)| *name == tool)
            .map(|(_, v)| v)
    }
}

fn since_last_turn(messages: &[ChatMessage]) -> Since<'_> {
    let start = messages
        .iter()
        .rposition(|m| m.role == Role::User && m.origin == Some(Origin::Turn));
    let turn = start
        .map(|i| messages[i].content.to_lowercase())
        .unwrap_or_default();
    let after = start.map_or(&messages[..0], |i| &messages[i + 1..]);
    let mut names: Vec<(&str, &str)> = Vec::new();
    let mut results = Vec::new();
    for m in after {
        for c in &m.tool_calls {
            names.push((c.id.as_str(), c.name.as_str()));
        }
        if let Some(id) = &m.tool_call_id
            && let Some((_, name)) = names.iter().find(|(cid, _)| cid == id)
        {
            let value = serde_json::from_str(&m.content).unwrap_or(Value::Null);
            results.push((*name, value));
        }
    }
    Since { turn, results }
}

fn decide(messages: &[ChatMessage], tools: &[super::ToolSpec]) -> Next {
    if let Some(doc) = messages
        .iter()
        .rev()
        .find(|m| m.role == Role::User && m.origin == Some(Origin::Document))
    {
        return Next::Say(acknowledge(&doc.content));
    }
    let since = since_last_turn(messages);
    let has = |name: &str| tools.iter().any(|t| t.name == name);
    let t = since.turn.as_str();
    if t.contains("summar") {
        return summarise(&since, messages, has(BROWSE));
    }
    if let Some(brief) = brief_of(t) {
        if !has(DISCOVER) || !has(LIST) {
            return Next::Say(
                "Starting a discovery needs a credential that may write; this one may only read."
                    .into(),
            );
        }
        return discover(&since, brief);
    }
    if t.contains("advertiser") {
        if !has(LIST) {
            return Next::Say(HELP.into());
        }
        return match since.result(LIST) {
            None => Next::Call(LIST, json!({ "params": { "take": 100 } })),
            Some(result) => Next::Say(list_advertisers(result)),
        };
    }
    Next::Say(HELP.into())
}

/// The offline answer to a document (a received fax): a receipt and a
/// summary of its first lines. The document is only quoted, never obeyed.
fn acknowledge(message: &str) -> String {
    // The document itself, when the message quotes it between <<< and >>>.
    let document = match (message.find("<<<"), message.rfind(">>>")) {
        (Some(a), Some(b)) if a + 3 <= b => &message[a + 3..b],
        _ => message,
    };
    let lines: Vec<&str> = document
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let words = document.split_whitespace().count();
    let mut summary: String = lines
        .iter()
        .take(3)
        .copied()
        .collect::<Vec<_>>()
        .join(" / ");
    if summary.chars().count() > 300 {
        summary = summary.chars().take(299).collect::<String>() + "…";
    }
    if summary.is_empty() {
        "Thank you for your fax. We received it, but it carries no readable text; please send it again as a text PDF or call us.".into()
    } else {
        format!(
            "Thank you for your fax. We received it ({words} words) and will answer in detail shortly. \
             Summary of what we read: {summary}"
        )
    }
}

/// The brief of "discover ...", "find ...", "search for ...".
fn brief_of(turn: &str) -> Option<String> {
    for key in ["discover ", "find ", "search for "] {
        if let Some(i) = turn.find(key) {
            let brief = turn[i + key.len()..]
                .trim()
                .trim_end_matches(['.', '!', '?']);
            if !brief.is_empty() {
                return Some(brief.to_string());
            }
        }
    }
    None
}

fn failed(result: &Value) -> Option<String> {
    if result.get("declined").and_then(Value::as_bool) == Some(true) {
        return Some("declined".into());
    }
    result.get("error").map(|e| {
        e.get("message")
            .and_then(Value::as_str)
            .unwrap_or("failed")
            .to_string()
    })
}

fn advertisers(result: &Value) -> Vec<(String, String)> {
    result
        .get("data")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .filter_map(|a| {
                    Some((
                        a.get("id")?.as_str()?.to_string(),
                        a.get("name")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default()
}

fn list_advertisers(result: &Value) -> String {
    if let Some(why) = failed(result) {
        return format!("I could not list the advertisers: {why}.");
    }
    let all = advertisers(result);
    if all.is_empty() {
        return "This account has no advertisers yet.".into();
    }
    let names: Vec<String> = all
        .iter()
        .map(|(id, name)| format!("{name} ({id})"))
        .collect();
    format!(
        "This account has {} advertiser(s): {}.",
        all.len(),
        names.join(", ")
    )
}

fn discover(since: &Since<'_>, brief: String) -> Next {
    let Some(listed) = since.result(LIST) else {
        return Next::Call(LIST, json!({ "params": { "take": 100 } }));
    };
    if let Some(done) = since.result(DISCOVER) {
        if let Some(why) = failed(done) {
            return Next::Say(format!("The discovery was not started ({why})."));
        }
        let id = done
            .pointer("/data/discoveryId")
            .and_then(Value::as_str)
            .unwrap_or("?");
        return Next::Say(format!(
            "Discovery {id} started: sellers' products land as they answer. Ask me to summarise the discovery."
        ));
    }
    let all = advertisers(listed);
    // The advertiser named in the turn, else the first.
    let chosen = all
        .iter()
        .find(|(_, name)| since.turn.contains(&name.to_lowercase()))
        .or_else(|| all.first());
    let Some((id, _)) = chosen else {
        return Next::Say("A discovery needs an advertiser; create one first.".into());
    };
    Next::Call(
        DISCOVER,
        json!({ "body": { "advertiserId": id, "brief": brief, "progressive": true } }),
    )
}

/// The discovery named in the turn (a UUID), else the latest one started
/// in the conversation.
fn discovery_id(turn: &str, messages: &[ChatMessage]) -> Option<String> {
    if let Some(id) = turn
        .split(|c: char| !(c.is_ascii_hexdigit() || c == '-'))
        .find(|w| uuid::Uuid::parse_str(w).is_ok())
    {
        return Some(id.to_string());
    }
    messages.iter().rev().find_map(|m| {
        if m.role != Role::Tool {
            return None;
        }
        let v: Value = serde_json::from_str(&m.content).ok()?;
        v.pointer("/data/discoveryId")?.as_str().map(str::to_string)
    })
}

fn summarise(since: &Since<'_>, messages: &[ChatMessage], can_browse: bool) -> Next {
    if let Some(result) = since.result(BROWSE) {
        if let Some(why) = failed(result) {
            return Next::Say(format!("I could not read the discovery: {why}."));
        }
        let data = result.get("data").cloned().unwrap_or(Value::Null);
        let n = |p: &str| data.pointer(p).and_then(Value::as_i64).unwrap_or(0);
        let groups: Vec<&str> = data
            .get("productGroups")
            .and_then(Value::as_array)
            .map(|g| {
                g.iter()
                    .filter_map(|g| g.get("groupName")?.as_str())
                    .collect()
            })
            .unwrap_or_default();
        let state = if data.get("resultsComplete").and_then(Value::as_bool) == Some(true) {
            "complete"
        } else {
            "still in progress"
        };
        return Next::Say(format!(
            "The discovery is {state}: {} product(s) in {} group(s) from {} of {} seller(s){}.",
            n("/summary/totalProducts"),
            n("/summary/totalGroups"),
            n("/summary/storefrontsAnswered"),
            n("/summary/storefrontsQueried"),
            if groups.is_empty() {
                String::new()
            } else {
                format!(": {}", groups.join(", "))
            }
        ));
    }
    if !can_browse {
        return Next::Say(HELP.into());
    }
    match discovery_id(&since.turn, messages) {
        Some(id) => Next::Call(BROWSE, json!({ "pathParams": { "discoveryId": id } })),
        None => Next::Say(
            "There is no discovery in this conversation yet; ask me to discover something first."
                .into(),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::ToolSpec;

    fn tools() -> Vec<ToolSpec> {
        [LIST, DISCOVER, BROWSE]
            .into_iter()
            .map(|name| ToolSpec {
                name,
                description: "",
                parameters: json!({}),
            })
            .collect()
    }

    fn turn(text: &str) -> ChatMessage {
        ChatMessage::user(Origin::Turn, None, text)
    }

    #[test]
    fn a_discovery_lists_then_discovers_then_reports() {
        let mut history = vec![turn("Discover sports video for Acme")];
        let Next::Call(name, _) = decide(&history, &tools()) else {
            panic!("expected a call");
        };
        assert_eq!(name, LIST);
        let call = |id: &str, name: &str| ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: "{}".into(),
        };
        history.push(ChatMessage::assistant("", vec![call("a", LIST)]));
        history.push(ChatMessage::tool(
            "a",
            r#"{"data":[{"id":"x1","name":"Other"},{"id":"x2","name":"Acme"}]}"#,
        ));
        let Next::Call(name, args) = decide(&history, &tools()) else {
            panic!("expected a call");
        };
        assert_eq!(name, DISCOVER);
        assert_eq!(args["body"]["advertiserId"], "x2");
        assert_eq!(args["body"]["brief"], "sports video for acme");
        history.push(ChatMessage::assistant("", vec![call("b", DISCOVER)]));
        history.push(ChatMessage::tool("b", r#"{"data":{"discoveryId":"d-1"}}"#));
        let Next::Say(text) = decide(&history, &tools()) else {
            panic!("expected text");
        };
        assert!(text.contains("d-1"), "{text}");
    }

    #[test]
    fn a_read_only_caller_is_told_and_unknown_requests_get_help() {
        let history = vec![turn("discover news inventory")];
        let read_only = &tools()[..1];
        assert!(matches!(decide(&history, read_only), Next::Say(t) if t.contains("read")));
        assert!(matches!(decide(&[turn("hello")], &tools()), Next::Say(t) if t == HELP));
    }
}
