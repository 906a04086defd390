//! Fetching URL feeds through the shared outbound client (`crate::net`):
//! the SSRF guard decides which addresses may be dialled, redirects are
//! never followed (a 3xx fails the feed, so it cannot lead to an inside
//! address), the whole fetch is bounded in time and the body in size.

use std::time::Duration;

use awc::http::header;

use super::model::{self, Checked, FeedError};
use crate::net::{NetError, Outbound, OutboundOptions};
use crate::types::UrlPolicy;

pub use crate::config::catalogs::FeedTuning;

/// The catalogs' handle: their outbound client and its bounds.
#[derive(Clone, Debug)]
pub struct Feeds {
    outbound: Outbound,
    tuning: FeedTuning,
}

impl Feeds {
    pub fn start(policy: UrlPolicy, tuning: FeedTuning) -> std::io::Result<Self> {
        let options = OutboundOptions {
            request_timeout: tuning.timeout,
            connect_timeout: tuning.timeout.min(Duration::from_secs(5)),
            max_body: tuning.max_bytes,
            user_agent: format!("agentic-api-catalogs/{}", env!("CARGO_PKG_VERSION")),
            ..Default::default()
        };
        Ok(Feeds {
            outbound: Outbound::start(policy, options)?,
            tuning,
        })
    }

    /// Fetches and parses a feed; `Err` fails the feed as a whole. Returns
    /// the format used (`json` or `csv`).
    pub async fn fetch(
        &self,
        url: &str,
        format: Option<&str>,
    ) -> Result<(Checked, &'static str), FeedError> {
        let timeout = self.tuning.timeout;
        let max = self.tuning.max_bytes;
        let target = url.to_string();
        let fetched = self
            .outbound
            .run(move |client| async move {
                let attempt = async {
                    let mut res = client
                        .get(target)
                        .timeout(timeout)
                        .insert_header((
                            header::ACCEPT,
                            "application/json, text/csv;q=0.9, */*;q=0.1",
                        ))
                        .send()
                        .await
                        .map_err(NetError::from)?;
                    let status = res.status();
                    let head = |name: header::HeaderName| {
                        res.headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(str::to_string)
                    };
                    let content_type = head(header::CONTENT_TYPE);
                    let location = head(header::LOCATION);
                    if !status.is_success() {
                        return Ok(Answer::Status(status.as_u16(), location));
                    }
                    let declared = head(header::CONTENT_LENGTH)
                        .and_then(|n| n.parse::<usize>().ok())
                        .unwrap_or(0);
                    if declared > max {
                        return Err(NetError::TooLarge { limit: max });
                    }
                    let body = crate::net::read_body(&mut res, max).await?;
                    Ok(Answer::Body(content_type, body))
                };
                tokio::time::timeout(timeout, attempt)
                    .await
                    .unwrap_or(Err(NetError::Timeout))
            })
            .await
            .and_then(|r| r);
        let (content_type, body) = match fetched {
            Ok(Answer::Body(ct, body)) => (ct, body),
            Ok(Answer::Status(status, location)) if (300..400).contains(&status) => {
                return Err(failure(
                    "FEED_HTTP_ERROR",
                    format!(
                        "the feed answered a redirect ({status}{}); redirects are not followed",
                        location.map(|l| format!(" to {l}")).unwrap_or_default()
                    ),
                ));
            }
            Ok(Answer::Status(status, _)) => {
                return Err(failure(
                    "FEED_HTTP_ERROR",
                    format!("the feed answered HTTP {status}"),
                ));
            }
            Err(e) => return Err(net_failure(&e, timeout, max)),
        };
        let format = match format {
            Some("csv") => "csv",
            Some(_) => "json",
            None => infer(content_type.as_deref(), url, &body),
        };
        model::parse_feed(&body, format)
            .map(|checked| (checked, format))
            .map_err(|m| failure("FEED_INVALID", m))
    }
}

enum Answer {
    Status(u16, Option<String>),
    Body(Option<String>, bytes::Bytes),
}

fn failure(code: &str, message: String) -> FeedError {
    FeedError {
        code: code.into(),
        message,
    }
}

fn net_failure(e: &NetError, timeout: Duration, max: usize) -> FeedError {
    match e {
        NetError::Timeout => failure(
            "FEED_TIMEOUT",
            format!(
                "the feed did not answer in full within {} ms",
                timeout.as_millis()
            ),
        ),
        NetError::TooLarge { .. } => failure(
            "FEED_TOO_LARGE",
            format!("the feed is larger than {max} bytes"),
        ),
        NetError::Refused(r) => failure("FEED_ADDRESS_REFUSED", r.to_string()),
        other => failure(
            "FEED_UNREACHABLE",
            format!("the feed cannot be fetched: {other}"),
        ),
    }
}

/// The answer's content type, else the URL's extension, else the first
/// byte (`[` or `{` is JSON).
fn infer(content_type: Option<&str>, url: &str, body: &[u8]) -> &'static str {
    let essence = content_type
        .and_then(|c| c.split(';').next())
        .map(|c| c.trim().to_ascii_lowercase())
        .unwrap_or_default();
    if essence == "text/csv" || essence == "application/csv" {
        return "csv";
    }
    if essence == "application/json" || essence.ends_with("+json") {
        return "json";
    }
    let path = url::Url::parse(url)
        .map(|u| u.path().to_ascii_lowercase())
        .unwrap_or_default();
    if path.ends_with(".csv") {
        return "csv";
    }
    if path.ends_with(".json") {
        return "json";
    }
    match body.iter().find(|b| !b.is_ascii_whitespace()) {
        Some(b'[') | Some(b'{') => "json",
        _ => "csv",
    }
}

#[cfg(test)]
mod tests {
    use super::infer;

    #[test]
    fn the_format_comes_from_the_content_type_then_the_path_then_the_body() {
        assert_eq!(
            infer(
                Some("text/csv; charset=utf-8"),
                "https://x.example/f",
                b"[]"
            ),
            "csv"
        );
        assert_eq!(
            infer(Some("application/json"), "https://x.example/f.csv", b"a"),
            "json"
        );
        assert_eq!(
            infer(Some("text/plain"), "https://x.example/f.CSV", b"[]"),
            "csv"
        );
        assert_eq!(infer(None, "https://x.example/f", b"  [1]"), "json");
        assert_eq!(infer(None, "https://x.example/f", b"id,title"), "csv");
    }
}
