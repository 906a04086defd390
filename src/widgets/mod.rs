//! MCP-App widgets: the built single-file HTML views of `widgets/dist/`
//! (built from `widgets/src/` with the MCP Apps SDK; embedded at compile
//! time, so the server builds without Node), the slugs and compatibility
//! aliases they answer to, and which tools' results each one shows.
//!
//! They are served over REST for iframe hosts ([`routes`]) and as MCP
//! resources `ui://agentic-api/{slug}/mcp-app.html` ([`resources`]).

pub mod resources;
pub mod routes;

use std::sync::OnceLock;

use sha2::{Digest, Sha256};

/// The MIME type of an MCP App's HTML (the MCP Apps extension's).
pub const MIME_TYPE: &str = "text/html;profile=mcp-app";

/// One built widget.
#[derive(Debug)]
pub struct Widget {
    pub slug: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub html: &'static str,
    /// The `/mcp/buyer` tools (registry operations) whose results it shows.
    pub operations: &'static [&'static str],
    /// The `/mcp/v3` tools whose results it shows.
    pub v3_tools: &'static [&'static str],
}

pub static WIDGETS: &[Widget] = &[
    Widget {
        slug: "discovery-results",
        title: "Discovery results",
        description: "Products found at the storefronts, grouped by storefront, with their \
                      pricing; a product can be chosen for the discovery's selection.",
        html: include_str!("../../widgets/dist/discovery-results.html"),
        operations: &["discover_products", "browse_discovery", "get_products"],
        v3_tools: &[],
    },
    Widget {
        slug: "campaign-summary",
        title: "Campaign summary",
        description: "A campaign's budget, flight, targeting and media buys.",
        html: include_str!("../../widgets/dist/campaign-summary.html"),
        operations: &[
            "get_campaign",
            "create_campaign",
            "update_campaign",
            "pause_campaign",
            "resume_campaign",
            "archive_campaign",
            "restore_campaign",
            "execute_campaign",
        ],
        v3_tools: &["save_campaign"],
    },
    Widget {
        slug: "media-buy-status",
        title: "Media-buy status",
        description: "Each media buy's status at its seller and its latest delivery.",
        html: include_str!("../../widgets/dist/media-buy-status.html"),
        operations: &["get_media_buy_status", "create_media_buys"],
        v3_tools: &["save_media_buy", "get_delivery"],
    },
    Widget {
        slug: "advertiser-card",
        title: "Advertiser",
        description: "An advertiser's brand, currency, time zone, channels and accounts.",
        html: include_str!("../../widgets/dist/advertiser-card.html"),
        operations: &["get_advertiser", "create_advertiser", "update_advertiser"],
        v3_tools: &["save_advertiser"],
    },
];

/// Compatibility aliases: slugs that messages persisted by hosts may still
/// name, each answered with the widget it became.
pub static ALIASES: &[(&str, &str)] = &[
    ("discovery", "discovery-results"),
    ("product-results", "discovery-results"),
    ("campaign", "campaign-summary"),
    ("media-buys", "media-buy-status"),
    ("advertiser", "advertiser-card"),
];

/// The slug rule of the spec: lowercase letters, digits and hyphens.
pub fn valid_slug(view: &str) -> bool {
    !view.is_empty()
        && view
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The widget a slug or a compatibility alias names.
pub fn find(view: &str) -> Option<&'static Widget> {
    let slug = ALIASES
        .iter()
        .find(|(alias, _)| *alias == view)
        .map_or(view, |(_, slug)| *slug);
    WIDGETS.iter().find(|w| w.slug == slug)
}

/// The widget showing a `/mcp/buyer` tool's results.
pub fn for_operation(name: &str) -> Option<&'static Widget> {
    WIDGETS.iter().find(|w| w.operations.contains(&name))
}

/// The widget showing a `/mcp/v3` tool's results.
pub fn for_v3_tool(name: &str) -> Option<&'static Widget> {
    WIDGETS.iter().find(|w| w.v3_tools.contains(&name))
}

impl Widget {
    /// `ui://agentic-api/{slug}/mcp-app.html`.
    pub fn uri(&self) -> String {
        uri(self.slug)
    }

    /// A strong validator of the built file (quoted, for `ETag`).
    pub fn etag(&self) -> &'static str {
        static TAGS: OnceLock<Vec<String>> = OnceLock::new();
        let tags = TAGS.get_or_init(|| {
            WIDGETS
                .iter()
                .map(|w| {
                    let digest = Sha256::digest(w.html.as_bytes());
                    format!("\"{}\"", hex::encode(&digest[..16]))
                })
                .collect()
        });
        let i = WIDGETS
            .iter()
            .position(|w| std::ptr::eq(w, self))
            .unwrap_or_default();
        tags.get(i).map(String::as_str).unwrap_or("\"\"")
    }
}

pub fn uri(slug: &str) -> String {
    format!("ui://agentic-api/{slug}/mcp-app.html")
}

/// The widget a `ui://agentic-api/{view}/mcp-app.html` URI names (aliases too).
pub fn from_uri(uri: &str) -> Option<&'static Widget> {
    let view = uri
        .strip_prefix("ui://agentic-api/")?
        .strip_suffix("/mcp-app.html")?;
    if valid_slug(view) { find(view) } else { None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_aliases_and_uris() {
        for w in WIDGETS {
            assert!(valid_slug(w.slug), "{}", w.slug);
            assert_eq!(from_uri(&w.uri()).map(|f| f.slug), Some(w.slug));
            assert!(w.etag().len() > 2);
        }
        for (alias, slug) in ALIASES {
            assert!(valid_slug(alias));
            assert_eq!(find(alias).map(|w| w.slug), Some(*slug));
        }
        assert!(!valid_slug("Campaign"));
        assert!(!valid_slug("a_b"));
        assert!(!valid_slug(""));
        assert!(find("nothing-here").is_none());
        assert!(from_uri("ui://other/campaign-summary/mcp-app.html").is_none());
        // Each tool names one widget at most.
        let mut seen = std::collections::HashSet::new();
        for w in WIDGETS {
            for t in w.operations.iter().chain(w.v3_tools) {
                assert!(seen.insert((w.v3_tools.contains(t), *t)), "{t}");
            }
        }
    }
}
