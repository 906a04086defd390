//! Logs of the real binary, stderr piped (so not a terminal).

use std::io::Read;
use std::process::Stdio;

use serde_json::Value;

use crate::helpers::*;

/// Serves with `format`, sends a 404 (with a spoofed `X-Forwarded-For`)
/// and a 401, stops; returns stderr.
async fn stderr_after_client_errors(format: &str) -> String {
    let (db, _dir) = fresh_database().await;
    let mut served = serve(
        &db,
        &[
            ("AGENTIC_LOG_FORMAT", format),
            // Client errors are logged at DEBUG: show them, to see their level.
            ("AGENTIC_LOG", "info,agentic_api=debug"),
            // Without one, PostgreSQL starts with a warning (not a client error's).
            ("AGENTIC_WEBHOOK_SECRET_KEY", &"ab".repeat(32)),
        ],
        Stdio::piped(),
    );
    let client = awc::Client::default();
    let base = served.base.clone();
    let res = client
        .get(format!("{base}/api/v2/no-such-route"))
        // Spoofed: the peer is no trusted proxy, so logs must not believe it.
        .insert_header(("x-forwarded-for", "203.0.113.9"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
    let res = client
        .get(format!("{base}/api/v2/me"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 401);
    // The events are written before the response is sent.
    let mut stderr = served.child.stderr.take().unwrap();
    served.child.kill().unwrap();
    served.child.wait().unwrap();
    let mut text = String::new();
    stderr.read_to_string(&mut text).unwrap();
    text
}

#[actix_web::test]
async fn text_logs_have_no_colour_off_a_terminal_and_client_errors_stay_below_warn() {
    let text = stderr_after_client_errors("text").await;
    assert!(
        !text.contains("\x1b["),
        "ANSI codes in piped logs: {text:?}"
    );
    let rejected: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("request rejected"))
        .collect();
    assert_eq!(rejected.len(), 2, "{text}");
    assert!(rejected.iter().all(|l| l.contains("DEBUG")), "{text}");
    assert!(rejected.iter().any(|l| l.contains("status=404")), "{text}");
    assert!(
        rejected
            .iter()
            .all(|l| l.contains("http.client_ip=127.0.0.1 ")),
        "{text}"
    );
    assert!(
        !text.contains("203.0.113.9"),
        "spoofed address logged: {text}"
    );
    assert!(rejected.iter().any(|l| l.contains("status=401")), "{text}");
    for line in text.lines() {
        assert!(
            !line.contains(" WARN ") && !line.contains(" ERROR "),
            "client errors must not warn: {line}"
        );
    }
}

#[actix_web::test]
async fn json_logs_are_one_object_per_line() {
    let text = stderr_after_client_errors("json").await;
    assert!(!text.contains("\x1b["), "{text:?}");
    let lines: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    assert!(!lines.is_empty());
    for line in &lines {
        let level = line["level"].as_str().unwrap();
        assert!(level != "WARN" && level != "ERROR", "{line}");
    }
    let not_found = lines
        .iter()
        .find(|l| l["fields"]["status"] == 404)
        .unwrap_or_else(|| panic!("no 404 line: {text}"));
    assert_eq!(not_found["level"], Value::from("DEBUG"));
    assert_eq!(
        not_found["fields"]["message"],
        Value::from("request rejected")
    );
    // The request span travels with it (request id, route).
    assert!(not_found["span"]["request_id"].is_string(), "{not_found}");
    assert_eq!(
        not_found["span"]["http.client_ip"], "127.0.0.1",
        "{not_found}"
    );
    assert_eq!(not_found["span"]["http.route"], "default", "{not_found}");
}
