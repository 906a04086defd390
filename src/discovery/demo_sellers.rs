//! Built-in sellers for `serve --demo`: five storefronts with distinct,
//! realistic AdCP 3.1 inventory that answer in-process, each after its own
//! delay, so a demo discovery shows revisions arriving one by one.
//!
//! They live under a reserved host, [`DEMO_HOST`] (`.invalid` never resolves,
//! RFC 2606), so no real seller can answer at their URLs, and the
//! [`super::sellers::Sellers`] directory routes those URLs here.
//!
//! Each seller behaves like the reference seller (`scripts/adcp-seller`): its
//! products are AdCP JSON, and the answer goes through the same
//! [`read_answer`] as an MCP seller's, so every product is validated by
//! [`super::seller::Product::parse`]. It honours the buying modes (brief:
//! keyword matching with a `brief_relevance` sentence; wholesale: the filtered
//! catalogue; refine: include / omit / more_like_this) and every
//! [`ProductFilters`] field. Country coverage has no field on a 3.1 product,
//! so it is kept beside each product, as the reference seller does.
//!
//! Through [`Seller::call_task`] each also takes media buys
//! ([`super::demo_buys`]) and accounts (`list_accounts`, `sync_accounts`:
//! [`super::demo_accounts`]; [`DemoStorefront::account_capabilities`] says
//! how each storefront takes them).

use std::time::Duration;

use futures_util::future::BoxFuture;
use rmcp::model::CallToolResult;
use serde_json::{Map, Value, json};

use super::seller::{
    BuyingMode, DeliveryType, PricingModel, ProductAction, ProductFilters, ProductQuery,
    Refinement, Seller, SellerAnswer, SellerError, StorefrontTarget, read_answer,
};

/// The reserved host of every built-in seller.
pub const DEMO_HOST: &str = "demo-sellers.agentic.invalid";

/// The standard creative agent's catalogue (ids buyers' tools can project).
const STANDARD_FORMATS: &str = "https://creative.adcontextprotocol.org";

/// A built-in storefront as registered: its name, URL slug and answer delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoStorefront {
    pub name: &'static str,
    pub slug: &'static str,
    /// How long it takes to answer at delay scale 1.
    pub delay: Duration,
}

impl DemoStorefront {
    /// `https://demo-sellers.agentic.invalid/<slug>/mcp`
    pub fn url(&self) -> String {
        format!("https://{DEMO_HOST}/{}/mcp", self.slug)
    }

    /// How its seller takes accounts: whether `list_accounts` needs the
    /// buyer's credential, and which billing parties `sync_accounts` accepts
    /// (see [`super::demo_accounts`]).
    pub fn account_capabilities(&self) -> super::demo_accounts::DemoAccountCapabilities {
        super::demo_accounts::demo_account_capabilities(self.slug)
    }
}

/// The built-in storefronts, fastest first.
pub const STOREFRONTS: [DemoStorefront; 5] = [
    DemoStorefront {
        name: "Meridian Daily",
        slug: "meridian-daily",
        delay: Duration::from_millis(150),
    },
    DemoStorefront {
        name: "Lumen CTV Network",
        slug: "lumen-ctv",
        delay: Duration::from_millis(400),
    },
    DemoStorefront {
        name: "Tidewave Audio",
        slug: "tidewave-audio",
        delay: Duration::from_millis(900),
    },
    DemoStorefront {
        name: "Cartwheel Retail Media",
        slug: "cartwheel-retail",
        delay: Duration::from_millis(1800),
    },
    DemoStorefront {
        name: "Atlas Outdoor",
        slug: "atlas-outdoor",
        delay: Duration::from_millis(3000),
    },
];

/// One product with what the wire object cannot say.
struct Entry {
    /// ISO 3166-1 alpha-2 codes the product delivers in.
    countries: &'static [&'static str],
    /// Words of a brief that make the product relevant (besides its
    /// channels and countries).
    keywords: &'static [&'static str],
    product: Value,
}

/// A built-in seller. Answers in-process after its (scaled) delay.
pub struct DemoSeller {
    storefront: DemoStorefront,
    delay: Duration,
    catalogue: Vec<Entry>,
    /// When set, a brief matching none of its products gets no products and
    /// this explanation (a specialist seller declining an off-topic brief).
    off_brief: Option<&'static str>,
    /// Its media buys (`super::demo_buys`).
    buys: super::demo_buys::DemoBuys,
    /// Its accounts (`super::demo_accounts`).
    accounts: super::demo_accounts::DemoAccounts,
}

impl std::fmt::Debug for DemoSeller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoSeller")
            .field("storefront", &self.storefront)
            .field("delay", &self.delay)
            .finish()
    }
}

impl DemoSeller {
    /// `delay_scale` multiplies the storefront's delay (0 answers at once;
    /// tests use it). A negative or non-finite scale counts as 0.
    pub fn new(storefront: DemoStorefront, delay_scale: f64) -> Self {
        let (catalogue, off_brief) = catalogue(storefront.slug);
        let delay = if delay_scale.is_finite() && delay_scale > 0.0 {
            Duration::try_from_secs_f64(storefront.delay.as_secs_f64() * delay_scale.min(1000.0))
                .unwrap_or(Duration::ZERO)
        } else {
            Duration::ZERO
        };
        let currencies = catalogue
            .iter()
            .flat_map(|e| {
                e.product["pricing_options"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter_map(|o| {
                Some((
                    o["pricing_option_id"].as_str()?.to_string(),
                    o["currency"].as_str()?.to_string(),
                ))
            })
            .collect();
        let prefix = storefront.slug.split('-').next().unwrap_or("demo");
        DemoSeller {
            storefront,
            delay,
            catalogue,
            off_brief,
            buys: super::demo_buys::DemoBuys::new(prefix, delay_scale, currencies),
            accounts: super::demo_accounts::DemoAccounts::new(storefront.name, storefront.slug),
        }
    }

    /// Every built-in seller, in [`STOREFRONTS`] order.
    pub fn all(delay_scale: f64) -> Vec<DemoSeller> {
        STOREFRONTS
            .iter()
            .map(|s| DemoSeller::new(*s, delay_scale))
            .collect()
    }

    pub fn storefront(&self) -> &DemoStorefront {
        &self.storefront
    }

    /// The scaled delay before each answer.
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The `get_products` response object this seller sends for a query
    /// (already validated).
    fn respond(&self, query: &ProductQuery) -> Value {
        let entries: Vec<&Entry> = self
            .catalogue
            .iter()
            .filter(|e| passes(e, &query.filters))
            .collect();
        if entries.is_empty() {
            return json!({
                "products": [],
                "message": format!(
                    "No {} product matches the filters ({}).",
                    self.storefront.name,
                    describe(&query.filters)
                ),
            });
        }
        match &query.mode {
            BuyingMode::Wholesale => json!({
                "products": entries.iter().map(|e| &e.product).collect::<Vec<_>>(),
            }),
            BuyingMode::Brief(brief) => self.brief(&entries, brief),
            BuyingMode::Refine(changes) => refine(&entries, changes),
        }
    }

    fn brief(&self, entries: &[&Entry], brief: &str) -> Value {
        let text = Text::new(brief);
        let mut scored: Vec<(Vec<String>, &Entry)> =
            entries.iter().map(|e| (matches(e, &text), *e)).collect();
        let any = scored.iter().any(|(m, _)| !m.is_empty());
        if !any && let Some(why) = self.off_brief {
            return json!({ "products": [], "message": why });
        }
        let mut out = Map::new();
        if any {
            scored.retain(|(m, _)| !m.is_empty());
            // Stable: equally good products keep catalogue order.
            scored.sort_by_key(|(m, _)| std::cmp::Reverse(m.len()));
        } else {
            out.insert(
                "message".into(),
                json!(format!(
                    "Nothing in the brief names what {} sells; the whole catalogue is offered as general inventory.",
                    self.storefront.name
                )),
            );
        }
        let products: Vec<Value> = scored
            .into_iter()
            .map(|(m, e)| {
                let mut p = e.product.clone();
                p["brief_relevance"] = json!(relevance(&m, &e.product));
                p
            })
            .collect();
        out.insert("products".into(), Value::Array(products));
        Value::Object(out)
    }
}

impl Seller for DemoSeller {
    fn get_products<'a>(
        &'a self,
        _storefront: &'a StorefrontTarget,
        query: &'a ProductQuery,
    ) -> BoxFuture<'a, Result<SellerAnswer, SellerError>> {
        Box::pin(async move {
            query.validate().map_err(SellerError::InvalidQuery)?;
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            // The same reading as an MCP seller's answer: products are
            // validated and the pricing-model filter applied there.
            read_answer(CallToolResult::structured(self.respond(query)), query)
        })
    }

    fn call_task<'a>(
        &'a self,
        storefront: &'a StorefrontTarget,
        task: &'static str,
        arguments: Map<String, Value>,
    ) -> BoxFuture<'a, Result<Value, SellerError>> {
        Box::pin(async move {
            let authenticated = storefront
                .auth_token
                .as_ref()
                .is_some_and(|t| !t.expose().trim().is_empty());
            let answer = self
                .buys
                .answer(task, &arguments)
                .or_else(|| self.accounts.answer(task, authenticated, &arguments));
            match answer {
                Some(payload) => Ok(payload),
                None => Err(SellerError::Rpc {
                    code: -32602,
                    message: format!("unknown tool {task}"),
                }),
            }
        })
    }
}

fn passes(entry: &Entry, f: &ProductFilters) -> bool {
    let p = &entry.product;
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let options = p["pricing_options"].as_array().cloned().unwrap_or_default();
    let channels = strings(&p["channels"]);
    (f.channels.is_empty() || f.channels.iter().any(|c| channels.contains(c)))
        && (f.countries.is_empty()
            || f.countries
                .iter()
                .any(|c| entry.countries.contains(&c.as_str())))
        && f.delivery_type.is_none_or(|d| {
            let wanted = match d {
                DeliveryType::Guaranteed => "guaranteed",
                DeliveryType::NonGuaranteed => "non_guaranteed",
            };
            p["delivery_type"] == wanted
        })
        && (f.pricing_currencies.is_empty()
            || options.iter().any(|o| {
                o["currency"]
                    .as_str()
                    .is_some_and(|c| f.pricing_currencies.iter().any(|w| w == c))
            }))
        && (f.pricing_models.is_empty()
            || options.iter().any(|o| {
                o["pricing_model"]
                    .as_str()
                    .and_then(PricingModel::parse)
                    .is_some_and(|m| f.pricing_models.contains(&m))
            }))
}

/// The active filters in words, for "nothing matches" messages.
fn describe(f: &ProductFilters) -> String {
    let mut parts = Vec::new();
    if !f.channels.is_empty() {
        parts.push(format!("channels {}", f.channels.join(", ")));
    }
    if !f.countries.is_empty() {
        parts.push(format!("countries {}", f.countries.join(", ")));
    }
    if let Some(d) = f.delivery_type {
        parts.push(match d {
            DeliveryType::Guaranteed => "guaranteed delivery".to_string(),
            DeliveryType::NonGuaranteed => "non-guaranteed delivery".to_string(),
        });
    }
    if !f.pricing_currencies.is_empty() {
        parts.push(format!("currencies {}", f.pricing_currencies.join(", ")));
    }
    if !f.pricing_models.is_empty() {
        let models: Vec<&str> = f.pricing_models.iter().map(|m| m.as_str()).collect();
        parts.push(format!("pricing models {}", models.join(", ")));
    }
    parts.join("; ")
}

/// A brief (or an ask) as words: lower case, punctuation as spaces, padded
/// so `" word "` finds whole words and phrases.
struct Text {
    padded: String,
    /// The original tokens, for case-sensitive abbreviations ("US").
    tokens: Vec<String>,
}

impl Text {
    fn new(s: &str) -> Self {
        Text {
            padded: format!(" {} ", normalize(s)),
            tokens: s
                .split(|c: char| !c.is_alphanumeric())
                .filter(|t| !t.is_empty())
                .map(str::to_string)
                .collect(),
        }
    }

    /// The phrase as a whole word, or its plural.
    fn has(&self, phrase: &str) -> bool {
        let p = normalize(phrase);
        !p.is_empty()
            && (self.padded.contains(&format!(" {p} ")) || self.padded.contains(&format!(" {p}s ")))
    }
}

fn normalize(s: &str) -> String {
    s.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words naming a country in a brief. "US" counts only in capitals, so "help
/// us" is not the United States.
fn country_words(code: &str) -> &'static [&'static str] {
    match code {
        "US" => &["united states", "usa", "america", "american"],
        "CA" => &["canada", "canadian"],
        "GB" => &["uk", "united kingdom", "britain", "british", "england"],
        "IE" => &["ireland", "irish"],
        "DE" => &["germany", "german"],
        "AT" => &["austria", "austrian"],
        "CH" => &["switzerland", "swiss"],
        "FR" => &["france", "french"],
        "ES" => &["spain", "spanish"],
        "IT" => &["italy", "italian"],
        "NL" => &["netherlands", "dutch"],
        "JP" => &["japan", "japanese"],
        "AU" => &["australia", "australian"],
        "SG" => &["singapore"],
        _ => &[],
    }
}

/// What in the text points at this product: its channels, keywords and
/// countries, each once, in that order.
fn matches(entry: &Entry, text: &Text) -> Vec<String> {
    let mut hits: Vec<String> = Vec::new();
    let mut hit = |w: String| {
        if !hits.contains(&w) {
            hits.push(w);
        }
    };
    let channels = entry.product["channels"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in channels.iter().filter_map(Value::as_str) {
        if text.has(c) {
            hit(normalize(c));
        }
    }
    for k in entry.keywords {
        if text.has(k) {
            hit(normalize(k));
        }
    }
    for code in entry.countries {
        if *code == "US" && text.tokens.iter().any(|t| t == "US") {
            hit("US".into());
        }
        for w in country_words(code) {
            if text.has(w) {
                hit(normalize(w));
            }
        }
    }
    hits
}

fn relevance(hits: &[String], product: &Value) -> String {
    let name = product["name"].as_str().unwrap_or_default();
    if hits.is_empty() {
        format!("No direct match for the brief; offered as general inventory: {name}.")
    } else {
        let quoted: Vec<String> = hits.iter().map(|h| format!("'{h}'")).collect();
        format!("Matches {} in the brief: {name}.", quoted.join(", "))
    }
}

/// AdCP refine: product-scoped include / omit / more_like_this narrow or
/// widen the filtered catalogue; a request-scoped ask adds the products its
/// words match; proposals are acknowledged as unable (no proposals here).
/// Every change gets its `refinement_applied` entry, in order.
fn refine(entries: &[&Entry], changes: &[Refinement]) -> Value {
    let id = |e: &Entry| {
        e.product["product_id"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    let find = |pid: &str| entries.iter().find(|e| id(e) == pid).copied();
    let mut included: Vec<String> = Vec::new();
    let mut omitted: Vec<String> = Vec::new();
    let mut applied = Vec::new();
    for change in changes {
        match change {
            Refinement::Product {
                product_id, action, ..
            } => {
                let Some(entry) = find(product_id) else {
                    applied.push(json!({
                        "scope": "product", "product_id": product_id, "status": "unable",
                        "notes": "unknown product or excluded by the filters",
                    }));
                    continue;
                };
                match action {
                    ProductAction::Omit => omitted.push(product_id.clone()),
                    ProductAction::Include => included.push(product_id.clone()),
                    ProductAction::MoreLikeThis => {
                        // The product itself first, then those sharing a channel.
                        included.push(product_id.clone());
                        let channels = &entry.product["channels"];
                        let shared = |e: &Entry| {
                            e.product["channels"].as_array().is_some_and(|cs| {
                                cs.iter().any(|c| {
                                    channels.as_array().is_some_and(|mine| mine.contains(c))
                                })
                            })
                        };
                        included.extend(entries.iter().filter(|e| shared(e)).map(|e| id(e)));
                    }
                }
                applied.push(json!({
                    "scope": "product", "product_id": product_id, "status": "applied",
                }));
            }
            Refinement::Request { ask } => {
                let text = Text::new(ask);
                let hits: Vec<String> = entries
                    .iter()
                    .filter(|e| !matches(e, &text).is_empty())
                    .map(|e| id(e))
                    .collect();
                if hits.is_empty() {
                    applied.push(json!({
                        "scope": "request", "status": "unable",
                        "notes": "nothing in the catalogue matches the ask; use product changes or filters",
                    }));
                } else {
                    applied.push(json!({
                        "scope": "request", "status": "applied",
                        "notes": format!("added {} matching product(s)", hits.len()),
                    }));
                    included.extend(hits);
                }
            }
            Refinement::Proposal { proposal_id, .. } => applied.push(json!({
                "scope": "proposal", "proposal_id": proposal_id, "status": "unable",
                "notes": "this seller makes no proposals",
            })),
        }
    }
    let keep: Vec<String> = if included.is_empty() {
        entries.iter().map(|e| id(e)).collect()
    } else {
        let mut seen = Vec::new();
        for pid in included {
            if !seen.contains(&pid) {
                seen.push(pid);
            }
        }
        seen
    };
    let products: Vec<&Value> = keep
        .iter()
        .filter(|pid| !omitted.contains(pid))
        .filter_map(|pid| find(pid).map(|e| &e.product))
        .collect();
    json!({ "products": products, "refinement_applied": applied })
}

// ---------------------------------------------------------------------------
// The catalogues. Formats come from the standard creative agent where it has
// one; seller-specific formats (DOOH screens, sponsored listings) name the
// seller's own agent URL, as AdCP allows.

fn std_format(id: &str) -> Value {
    json!({ "agent_url": STANDARD_FORMATS, "id": id })
}

fn own_format(slug: &str, id: &str) -> Value {
    json!({ "agent_url": format!("https://{DEMO_HOST}/{slug}"), "id": id })
}

fn publisher(domain: &str) -> Value {
    json!([{ "publisher_domain": domain, "selection_type": "all" }])
}

fn reporting(metrics: &[&str], placement_breakdown: bool) -> Value {
    json!({
        "available_reporting_frequencies": ["daily"],
        "expected_delay_minutes": 240,
        "timezone": "UTC",
        "supports_webhooks": false,
        "available_metrics": metrics,
        "supports_placement_breakdown": placement_breakdown,
        "date_range_support": "date_range",
    })
}

fn placement(domain: &str, id: &str, name: &str, mode: &str, formats: Vec<Value>) -> Value {
    json!({
        "kind": "publisher_ref", "publisher_domain": domain, "placement_id": id,
        "name": name, "mode": mode, "format_ids": formats,
    })
}

type Catalogue = (Vec<Entry>, Option<&'static str>);

fn catalogue(slug: &str) -> Catalogue {
    match slug {
        "meridian-daily" => meridian(),
        "lumen-ctv" => lumen(),
        "tidewave-audio" => tidewave(),
        "cartwheel-retail" => cartwheel(),
        "atlas-outdoor" => atlas(),
        _ => (Vec::new(), None),
    }
}

/// A news publisher: display, online video, native and a newsletter.
fn meridian() -> Catalogue {
    const D: &str = "meridian-daily.example";
    let entries = vec![
        Entry {
            countries: &["US", "CA", "GB"],
            keywords: &[
                "news",
                "banner",
                "awareness",
                "reach",
                "desktop",
                "mobile",
                "run of site",
            ],
            product: json!({
                "product_id": "md_display_ros",
                "name": "Meridian Daily run-of-site display",
                "description": "Standard IAB display across Meridian Daily desktop and mobile web in the US, Canada and the UK, auction priced.",
                "publisher_properties": publisher(D),
                "channels": ["display"],
                "format_ids": [std_format("display_300x250_image"), std_format("display_728x90_image"), std_format("display_320x50_image")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "md_ros_cpm_usd", "pricing_model": "cpm", "currency": "USD", "floor_price": 2.8,
                     "price_guidance": {"p25": 3.1, "p50": 3.6, "p75": 4.4}},
                    {"pricing_option_id": "md_ros_cpm_gbp", "pricing_model": "cpm", "currency": "GBP", "floor_price": 2.2}
                ],
                "placements": [
                    placement(D, "homepage_top", "Homepage leaderboard", "targetable", vec![std_format("display_728x90_image")]),
                    placement(D, "article_sidebar", "Article sidebar MPU", "targetable", vec![std_format("display_300x250_image")]),
                    placement(D, "mobile_inline", "Mobile in-article banner", "targetable", vec![std_format("display_320x50_image")])
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "clicks", "ctr"], true),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: &[
                "homepage",
                "takeover",
                "launch",
                "premium",
                "news",
                "high impact",
                "roadblock",
            ],
            product: json!({
                "product_id": "md_homepage_takeover",
                "name": "Meridian Daily homepage takeover",
                "description": "Every homepage unit for 24 hours (US edition): leaderboard, skins and the lead MPU, sold by the day.",
                "publisher_properties": publisher(D),
                "channels": ["display"],
                "format_ids": [std_format("display_728x90_image"), std_format("display_300x600_image"), std_format("display_300x250_image")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "md_takeover_day", "pricing_model": "flat_rate", "currency": "USD", "fixed_price": 28000.0}
                ],
                "placements": [
                    placement(D, "homepage_top", "Homepage leaderboard", "included", vec![std_format("display_728x90_image")]),
                    placement(D, "homepage_skin", "Homepage skins", "included", vec![std_format("display_300x600_image")])
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "clicks"], false),
            }),
        },
        Entry {
            countries: &["US", "CA", "GB"],
            keywords: &[
                "video",
                "pre roll",
                "preroll",
                "news",
                "completion",
                "awareness",
            ],
            product: json!({
                "product_id": "md_olv_preroll",
                "name": "Meridian Daily pre-roll video",
                "description": "15 and 30 second pre-roll ahead of Meridian Daily's editorial video in the US, Canada and the UK, guaranteed.",
                "publisher_properties": publisher(D),
                "channels": ["olv"],
                "format_ids": [std_format("video_standard_15s"), std_format("video_standard_30s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "md_olv_cpm", "pricing_model": "cpm", "currency": "USD", "fixed_price": 22.0, "min_spend_per_package": 5000},
                    {"pricing_option_id": "md_olv_cpcv", "pricing_model": "cpcv", "currency": "USD", "fixed_price": 0.05}
                ],
                "placements": [
                    placement(D, "video_player_preroll", "Editorial video player pre-roll", "included", vec![std_format("video_standard_30s")])
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_views", "completion_rate"], false),
            }),
        },
        Entry {
            countries: &["GB"],
            keywords: &[
                "politics",
                "viewable",
                "viewability",
                "news",
                "election",
                "business",
            ],
            product: json!({
                "product_id": "md_uk_politics_vcpm",
                "name": "Meridian Daily UK politics and business, viewable",
                "description": "Display in the UK edition's politics and business sections, bought per thousand viewable impressions (MRC standard).",
                "publisher_properties": publisher(D),
                "channels": ["display"],
                "format_ids": [std_format("display_300x250_image"), std_format("display_300x600_image")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "md_uk_vcpm", "pricing_model": "vcpm", "currency": "GBP", "floor_price": 4.5}
                ],
                "reporting_capabilities": reporting(&["impressions", "viewable_impressions", "spend"], false),
            }),
        },
        Entry {
            countries: &["US", "CA"],
            keywords: &[
                "native",
                "in feed",
                "clicks",
                "traffic",
                "performance",
                "sponsored content",
            ],
            product: json!({
                "product_id": "md_native_cpc",
                "name": "Meridian Daily in-feed native",
                "description": "Native units in article feeds and recirculation modules, US and Canada, paid per click.",
                "publisher_properties": publisher(D),
                "channels": ["display"],
                "format_ids": [own_format("meridian-daily", "native_in_feed")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "md_native_cpc", "pricing_model": "cpc", "currency": "USD", "floor_price": 0.85}
                ],
                "reporting_capabilities": reporting(&["impressions", "clicks", "ctr", "spend"], false),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: &[
                "newsletter",
                "sponsorship",
                "morning",
                "subscribers",
                "b2b",
                "business",
            ],
            product: json!({
                "product_id": "md_newsletter_sponsor",
                "name": "Meridian Morning newsletter sponsorship",
                "description": "Exclusive presenting sponsor of the Meridian Morning briefing (1.2M US subscribers) for one week.",
                "publisher_properties": publisher(D),
                "channels": ["email"],
                "format_ids": [own_format("meridian-daily", "newsletter_sponsor_unit")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "md_newsletter_week", "pricing_model": "flat_rate", "currency": "USD", "fixed_price": 9500.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "clicks"], false),
            }),
        },
    ];
    (entries, None)
}

/// A connected-TV network: premium, sports, FAST, pause ads, UK and DACH.
fn lumen() -> Catalogue {
    const D: &str = "lumen-tv.example";
    let entries = vec![
        Entry {
            countries: &["US"],
            keywords: &[
                "connected tv",
                "television",
                "tv",
                "premium",
                "entertainment",
                "drama",
                "awareness",
                "living room",
            ],
            product: json!({
                "product_id": "lm_ctv_premium",
                "name": "Lumen premium entertainment CTV",
                "description": "Non-skippable 15 and 30 second spots in Lumen's premium drama and entertainment catalogue on US connected TVs, guaranteed.",
                "publisher_properties": publisher(D),
                "channels": ["ctv"],
                "format_ids": [std_format("video_ctv_preroll_30s"), std_format("video_standard_15s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "lm_premium_cpm", "pricing_model": "cpm", "currency": "USD", "fixed_price": 34.0, "min_spend_per_package": 15000}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_views", "completion_rate"], false),
            }),
        },
        Entry {
            countries: &["US", "CA"],
            keywords: &[
                "connected tv",
                "tv",
                "sports",
                "live",
                "football",
                "basketball",
                "hockey",
                "fans",
            ],
            product: json!({
                "product_id": "lm_ctv_live_sports",
                "name": "Lumen live sports CTV",
                "description": "Breaks in live games streamed on Lumen apps in the US and Canada, auction priced.",
                "publisher_properties": publisher(D),
                "channels": ["ctv"],
                "format_ids": [std_format("video_standard_15s"), std_format("video_ctv_midroll_30s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "lm_sports_cpm", "pricing_model": "cpm", "currency": "USD", "floor_price": 28.0,
                     "price_guidance": {"p25": 29.5, "p50": 32.0, "p75": 36.0}}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_views"], false),
            }),
        },
        Entry {
            countries: &["US", "CA", "GB"],
            keywords: &[
                "connected tv",
                "tv",
                "fast",
                "free streaming",
                "efficient",
                "scale",
                "reach",
                "completion",
            ],
            product: json!({
                "product_id": "lm_ctv_fast",
                "name": "Lumen FAST channels",
                "description": "Free ad-supported streaming channels (classic films, cooking, news) in the US, Canada and the UK; CPM or per completed view.",
                "publisher_properties": publisher(D),
                "channels": ["ctv"],
                "format_ids": [std_format("video_standard_15s"), std_format("video_standard_30s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "lm_fast_cpm", "pricing_model": "cpm", "currency": "USD", "floor_price": 14.0},
                    {"pricing_option_id": "lm_fast_cpcv", "pricing_model": "cpcv", "currency": "USD", "floor_price": 0.03}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_views", "completion_rate"], false),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: &[
                "connected tv",
                "tv",
                "pause",
                "pause ads",
                "static",
                "non intrusive",
            ],
            product: json!({
                "product_id": "lm_ctv_pause_ads",
                "name": "Lumen pause ads",
                "description": "A full-screen still shown when a viewer pauses a Lumen stream on a US connected TV.",
                "publisher_properties": publisher(D),
                "channels": ["ctv"],
                "format_ids": [own_format("lumen-ctv", "ctv_pause_1920x1080_image")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "lm_pause_cpm", "pricing_model": "cpm", "currency": "USD", "fixed_price": 18.0}
                ],
                "placements": [
                    {"kind": "publisher_ref", "publisher_domain": D, "placement_id": "pause_screen", "name": "Pause screen", "mode": "included"}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend"], false),
            }),
        },
        Entry {
            countries: &["GB"],
            keywords: &["connected tv", "tv", "premium", "drama", "entertainment"],
            product: json!({
                "product_id": "lm_ctv_uk",
                "name": "Lumen UK premium CTV",
                "description": "Guaranteed 30 second spots in Lumen's UK drama and entertainment catalogue on connected TVs.",
                "publisher_properties": publisher(D),
                "channels": ["ctv"],
                "format_ids": [std_format("video_ctv_preroll_30s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "lm_uk_cpm", "pricing_model": "cpm", "currency": "GBP", "fixed_price": 26.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_views"], false),
            }),
        },
        Entry {
            countries: &["DE", "AT", "CH"],
            keywords: &[
                "connected tv",
                "tv",
                "dach",
                "completion",
                "completed views",
            ],
            product: json!({
                "product_id": "lm_ctv_dach",
                "name": "Lumen DACH CTV, per completed view",
                "description": "Connected-TV video in Germany, Austria and Switzerland, paid only for views watched to the end.",
                "publisher_properties": publisher(D),
                "channels": ["ctv"],
                "format_ids": [std_format("video_standard_15s"), std_format("video_standard_30s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "lm_dach_cpcv", "pricing_model": "cpcv", "currency": "EUR", "fixed_price": 0.045}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_views", "completion_rate"], false),
            }),
        },
    ];
    (entries, None)
}

/// A streaming-audio and podcast network, in North America and Europe.
fn tidewave() -> Catalogue {
    const D: &str = "tidewave.example";
    let entries = vec![
        Entry {
            countries: &["US"],
            keywords: &[
                "audio",
                "music",
                "streaming",
                "commute",
                "gen z",
                "young adults",
                "listeners",
            ],
            product: json!({
                "product_id": "tw_streaming_audio_us",
                "name": "Tidewave streaming audio, US",
                "description": "15 and 30 second audio spots between songs on Tidewave's free tier in the US, auction priced.",
                "publisher_properties": publisher(D),
                "channels": ["streaming_audio"],
                "format_ids": [std_format("audio_standard_15s"), std_format("audio_standard_30s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "tw_us_cpm", "pricing_model": "cpm", "currency": "USD", "floor_price": 6.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_listens"], false),
            }),
        },
        Entry {
            countries: &["DE", "FR", "ES", "IE"],
            keywords: &["audio", "music", "streaming", "europe", "listeners"],
            product: json!({
                "product_id": "tw_streaming_audio_eu",
                "name": "Tidewave streaming audio, Europe",
                "description": "Audio spots on Tidewave's free tier in Germany, France, Spain and Ireland, in the listener's language.",
                "publisher_properties": publisher(D),
                "channels": ["streaming_audio"],
                "format_ids": [std_format("audio_standard_30s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "tw_eu_cpm", "pricing_model": "cpm", "currency": "EUR", "floor_price": 5.5}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "completed_listens"], false),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: &[
                "host read",
                "sponsorship",
                "endorsement",
                "trust",
                "business",
                "finance",
                "audio",
            ],
            product: json!({
                "product_id": "tw_podcast_host_read",
                "name": "Tidewave host-read podcast sponsorship",
                "description": "A 60 second host-read endorsement in every episode of a top-20 US business podcast for four weeks.",
                "publisher_properties": publisher(D),
                "channels": ["podcast"],
                "format_ids": [std_format("audio_standard_60s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "tw_host_read_4w", "pricing_model": "flat_rate", "currency": "USD", "fixed_price": 4500.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "downloads"], false),
            }),
        },
        Entry {
            countries: &["US", "GB"],
            keywords: &["dynamic", "insertion", "dai", "scale", "audio", "episodes"],
            product: json!({
                "product_id": "tw_podcast_dai",
                "name": "Tidewave podcast dynamic insertion",
                "description": "Pre-, mid- and post-roll inserted at download across Tidewave's podcast network in the US and the UK.",
                "publisher_properties": publisher(D),
                "channels": ["podcast"],
                "format_ids": [std_format("audio_standard_30s"), std_format("audio_standard_15s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "tw_dai_cpm_usd", "pricing_model": "cpm", "currency": "USD", "floor_price": 18.0},
                    {"pricing_option_id": "tw_dai_cpm_gbp", "pricing_model": "cpm", "currency": "GBP", "floor_price": 15.0}
                ],
                "placements": [
                    {"kind": "publisher_ref", "publisher_domain": D, "placement_id": "preroll", "name": "Pre-roll", "mode": "targetable"},
                    {"kind": "publisher_ref", "publisher_domain": D, "placement_id": "midroll", "name": "Mid-roll", "mode": "targetable"}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "downloads"], true),
            }),
        },
        Entry {
            countries: &["GB", "IE"],
            keywords: &[
                "true crime",
                "crime",
                "sponsorship",
                "women",
                "audio",
                "storytelling",
            ],
            product: json!({
                "product_id": "tw_true_crime_sponsor",
                "name": "Tidewave true-crime podcast sponsorship",
                "description": "Presenting sponsor of a UK true-crime series (8 episodes, about 400k downloads each), UK and Ireland.",
                "publisher_properties": publisher(D),
                "channels": ["podcast"],
                "format_ids": [std_format("audio_standard_30s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "tw_true_crime_series", "pricing_model": "flat_rate", "currency": "GBP", "fixed_price": 3200.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "downloads"], false),
            }),
        },
        Entry {
            countries: &["US", "GB"],
            keywords: &["companion", "banner", "audio", "app"],
            product: json!({
                "product_id": "tw_companion_display",
                "name": "Tidewave in-app companion banners",
                "description": "Display companions shown in the Tidewave player while an audio ad plays, bought per viewable thousand.",
                "publisher_properties": publisher(D),
                "channels": ["display"],
                "format_ids": [std_format("display_300x250_image")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "tw_companion_vcpm", "pricing_model": "vcpm", "currency": "USD", "floor_price": 2.4}
                ],
                "reporting_capabilities": reporting(&["impressions", "viewable_impressions", "clicks"], false),
            }),
        },
    ];
    (entries, None)
}

/// A retail media network. A specialist: it declines briefs with no shopper
/// angle instead of offering its catalogue.
fn cartwheel() -> Catalogue {
    const D: &str = "cartwheel.example";
    const SHOPPER: &[&str] = &[
        "retail",
        "shopper",
        "shopping",
        "grocery",
        "cpg",
        "store",
        "purchase",
        "sales",
        "beauty",
        "household",
        "snacks",
        "beverage",
        "pet",
        "baby",
        "conversion",
        "ecommerce",
        "e commerce",
        "checkout",
        "basket",
    ];
    let entries = vec![
        Entry {
            countries: &["US"],
            keywords: SHOPPER,
            product: json!({
                "product_id": "cw_sponsored_products",
                "name": "Cartwheel sponsored products",
                "description": "Sponsored listings in Cartwheel search and category pages, paid per click, closed-loop sales reporting.",
                "publisher_properties": publisher(D),
                "channels": ["retail_media"],
                "format_ids": [own_format("cartwheel-retail", "sponsored_product_listing")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "cw_sp_cpc", "pricing_model": "cpc", "currency": "USD", "floor_price": 0.65}
                ],
                "placements": [
                    {"kind": "publisher_ref", "publisher_domain": D, "placement_id": "search_results", "name": "Search results", "mode": "targetable"},
                    {"kind": "publisher_ref", "publisher_domain": D, "placement_id": "category_pages", "name": "Category pages", "mode": "targetable"}
                ],
                "reporting_capabilities": reporting(&["impressions", "clicks", "spend", "conversions", "roas"], true),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: SHOPPER,
            product: json!({
                "product_id": "cw_onsite_display",
                "name": "Cartwheel on-site display",
                "description": "Brand display on Cartwheel's home and category pages, targeted to shopper segments, guaranteed.",
                "publisher_properties": publisher(D),
                "channels": ["retail_media", "display"],
                "format_ids": [std_format("display_300x250_image"), std_format("display_728x90_image")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "cw_onsite_cpm", "pricing_model": "cpm", "currency": "USD", "fixed_price": 9.5}
                ],
                "reporting_capabilities": reporting(&["impressions", "clicks", "spend", "conversions"], false),
            }),
        },
        Entry {
            countries: &["US", "CA"],
            keywords: SHOPPER,
            product: json!({
                "product_id": "cw_offsite_audiences",
                "name": "Cartwheel off-site shopper audiences",
                "description": "Display and online video across the open web to Cartwheel shopper audiences (US and Canada), per viewable thousand.",
                "publisher_properties": publisher(D),
                "channels": ["retail_media", "display", "olv"],
                "format_ids": [std_format("display_300x250_image"), std_format("video_standard_15s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "cw_offsite_vcpm", "pricing_model": "vcpm", "currency": "USD", "floor_price": 7.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "viewable_impressions", "spend", "conversions"], false),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: SHOPPER,
            product: json!({
                "product_id": "cw_in_store_screens",
                "name": "Cartwheel in-store screens",
                "description": "10 second spots on screens at checkout and in aisles in 1,400 Cartwheel stores for four weeks.",
                "publisher_properties": publisher(D),
                "channels": ["retail_media", "dooh"],
                "format_ids": [own_format("cartwheel-retail", "in_store_screen_10s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "cw_screens_4w", "pricing_model": "flat_rate", "currency": "USD", "fixed_price": 12000.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend"], false),
            }),
        },
        Entry {
            countries: &["US"],
            keywords: SHOPPER,
            product: json!({
                "product_id": "cw_shoppable_ctv",
                "name": "Cartwheel shoppable CTV",
                "description": "Connected-TV video to Cartwheel shopper audiences with an add-to-basket QR code, per completed view.",
                "publisher_properties": publisher(D),
                "channels": ["retail_media", "ctv"],
                "format_ids": [std_format("video_standard_30s")],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "cw_ctv_cpcv", "pricing_model": "cpcv", "currency": "USD", "fixed_price": 0.06}
                ],
                "reporting_capabilities": reporting(&["impressions", "completed_views", "conversions"], false),
            }),
        },
    ];
    (
        entries,
        Some(
            "Cartwheel Retail Media sells shopper-targeted media for brands stocked in Cartwheel stores \
             (sponsored products, on-site and off-site display, in-store screens, shoppable CTV). The brief \
             names no retail, shopper or product-category angle, so nothing here fits; mention shoppers, \
             grocery, beauty, household goods or another category to see this inventory.",
        ),
    )
}

/// International out-of-home: transit, airports and city screens.
fn atlas() -> Catalogue {
    const D: &str = "atlas-outdoor.example";
    let screen = || own_format("atlas-outdoor", "dooh_landscape_10s");
    let entries = vec![
        Entry {
            countries: &["GB"],
            keywords: &[
                "out of home",
                "outdoor",
                "transit",
                "london",
                "underground",
                "commuters",
                "screens",
            ],
            product: json!({
                "product_id": "at_london_transit",
                "name": "Atlas London transit screens",
                "description": "Digital screens in London Underground stations and on platforms, two-week packages, priced per thousand audience impacts.",
                "publisher_properties": publisher(D),
                "channels": ["dooh"],
                "format_ids": [screen(), std_format("video_standard_15s")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "at_london_cpm", "pricing_model": "cpm", "currency": "GBP", "fixed_price": 12.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend"], false),
            }),
        },
        Entry {
            countries: &["FR"],
            keywords: &[
                "out of home",
                "outdoor",
                "transit",
                "paris",
                "metro",
                "commuters",
                "screens",
            ],
            product: json!({
                "product_id": "at_paris_metro",
                "name": "Atlas Paris Métro screens",
                "description": "Digital screens across Paris Métro corridors and platforms, guaranteed two-week packages.",
                "publisher_properties": publisher(D),
                "channels": ["dooh"],
                "format_ids": [screen()],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "at_paris_cpm", "pricing_model": "cpm", "currency": "EUR", "fixed_price": 11.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend"], false),
            }),
        },
        Entry {
            countries: &["FR", "DE", "ES", "NL"],
            keywords: &[
                "out of home",
                "outdoor",
                "airport",
                "airports",
                "travel",
                "business travellers",
                "luxury",
                "premium",
            ],
            product: json!({
                "product_id": "at_eu_airports",
                "name": "Atlas European airports",
                "description": "Large-format digital screens in departure halls at Paris CDG, Frankfurt, Madrid and Amsterdam for four weeks.",
                "publisher_properties": publisher(D),
                "channels": ["dooh"],
                "format_ids": [screen()],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "at_airports_4w", "pricing_model": "flat_rate", "currency": "EUR", "fixed_price": 18000.0}
                ],
                "reporting_capabilities": reporting(&["impressions"], false),
            }),
        },
        Entry {
            countries: &["DE", "FR", "ES", "NL", "IT"],
            keywords: &[
                "out of home",
                "outdoor",
                "programmatic",
                "europe",
                "flexible",
                "weather",
                "screens",
            ],
            product: json!({
                "product_id": "at_eu_programmatic",
                "name": "Atlas programmatic DOOH, Europe",
                "description": "Roadside, mall and transit screens in five European markets, bought by the play in auction with hour and weather triggers.",
                "publisher_properties": publisher(D),
                "channels": ["dooh"],
                "format_ids": [screen()],
                "delivery_type": "non_guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "at_eu_cpm_auction", "pricing_model": "cpm", "currency": "EUR", "floor_price": 6.5,
                     "price_guidance": {"p25": 7.0, "p50": 8.2, "p75": 9.5}}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend", "plays"], true),
            }),
        },
        Entry {
            countries: &["JP", "AU", "SG"],
            keywords: &[
                "out of home",
                "outdoor",
                "asia",
                "apac",
                "tokyo",
                "sydney",
                "city",
                "screens",
            ],
            product: json!({
                "product_id": "at_apac_cities",
                "name": "Atlas APAC city screens",
                "description": "Landmark screens in Tokyo (Shibuya), Sydney and Singapore, guaranteed, priced in US dollars.",
                "publisher_properties": publisher(D),
                "channels": ["dooh"],
                "format_ids": [screen()],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "at_apac_cpm", "pricing_model": "cpm", "currency": "USD", "fixed_price": 14.0}
                ],
                "reporting_capabilities": reporting(&["impressions", "spend"], false),
            }),
        },
        Entry {
            countries: &["GB"],
            keywords: &[
                "out of home",
                "outdoor",
                "billboard",
                "billboards",
                "roadside",
                "posters",
                "launch",
            ],
            product: json!({
                "product_id": "at_uk_billboards",
                "name": "Atlas UK roadside billboards",
                "description": "48-sheet classic billboards on major UK roads, a two-week national campaign of 150 panels.",
                "publisher_properties": publisher(D),
                "channels": ["ooh"],
                "format_ids": [own_format("atlas-outdoor", "billboard_48_sheet")],
                "delivery_type": "guaranteed",
                "pricing_options": [
                    {"pricing_option_id": "at_billboards_2w", "pricing_model": "flat_rate", "currency": "GBP", "fixed_price": 9500.0}
                ],
                "reporting_capabilities": reporting(&["impressions"], false),
            }),
        },
    ];
    (entries, None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use std::time::Instant;

    use super::*;
    use crate::buyer::advertisers::model::CHANNELS;
    use crate::discovery::seller::{Price, Product, ProposalAction};
    use crate::types::{OutboundUrl, UrlPolicy};

    fn target(s: &DemoStorefront) -> StorefrontTarget {
        StorefrontTarget {
            id: 1,
            name: s.name.into(),
            url: OutboundUrl::parse(
                &s.url(),
                UrlPolicy {
                    allow_insecure: false,
                },
            )
            .unwrap(),
            auth_token: None,
        }
    }

    fn seller(slug: &str) -> DemoSeller {
        let s = STOREFRONTS.iter().find(|s| s.slug == slug).unwrap();
        DemoSeller::new(*s, 0.0)
    }

    async fn ask(seller: &DemoSeller, query: ProductQuery) -> SellerAnswer {
        seller
            .get_products(&target(seller.storefront()), &query)
            .await
            .unwrap()
    }

    fn ids(answer: &SellerAnswer) -> Vec<&str> {
        answer
            .products
            .iter()
            .map(|p| p.product_id.as_str())
            .collect()
    }

    fn wholesale(filters: ProductFilters) -> ProductQuery {
        ProductQuery {
            mode: BuyingMode::Wholesale,
            brand: None,
            filters,
        }
    }

    fn refine_query(changes: Vec<Refinement>) -> ProductQuery {
        ProductQuery {
            mode: BuyingMode::Refine(changes),
            brand: None,
            filters: ProductFilters::default(),
        }
    }

    fn product(id: &str, action: ProductAction) -> Refinement {
        Refinement::Product {
            product_id: id.into(),
            action,
            ask: None,
        }
    }

    #[test]
    fn every_catalogue_is_valid_adcp_with_distinct_ids_and_canonical_channels() {
        let mut all_ids = Vec::new();
        let mut models = Vec::new();
        let mut currencies = Vec::new();
        for s in DemoSeller::all(0.0) {
            assert!(
                (4..=8).contains(&s.catalogue.len()),
                "{} has {} products",
                s.storefront.name,
                s.catalogue.len()
            );
            for e in &s.catalogue {
                let p = Product::parse(&e.product)
                    .unwrap_or_else(|err| panic!("{}: {err}", e.product["product_id"]));
                assert!(!all_ids.contains(&p.product_id), "{}", p.product_id);
                all_ids.push(p.product_id.clone());
                assert!(!e.countries.is_empty(), "{}", p.product_id);
                for c in e.countries {
                    assert!(
                        !country_words(c).is_empty(),
                        "{}: no words for {c}",
                        p.product_id
                    );
                }
                for c in e.product["channels"].as_array().unwrap() {
                    assert!(CHANNELS.contains(&c.as_str().unwrap()), "{c}");
                }
                assert!(e.product["publisher_properties"].is_array());
                assert!(e.product["reporting_capabilities"].is_object());
                for o in &p.pricing_options {
                    models.push(o.pricing_model);
                    currencies.push(o.currency.clone());
                    if let Price::Auction { floor } = o.price {
                        assert!(
                            floor.is_some(),
                            "{}: auctions here have floors",
                            p.product_id
                        );
                    }
                }
            }
        }
        for m in [
            PricingModel::Cpm,
            PricingModel::Vcpm,
            PricingModel::Cpcv,
            PricingModel::Cpc,
            PricingModel::FlatRate,
        ] {
            assert!(models.contains(&m), "no {m:?} product");
        }
        for c in ["USD", "EUR", "GBP"] {
            assert!(currencies.iter().any(|x| x == c), "no {c} product");
        }
    }

    #[test]
    fn the_storefronts_use_the_reserved_host_and_distinct_increasing_delays() {
        let strict = UrlPolicy {
            allow_insecure: false,
        };
        let mut previous = Duration::ZERO;
        for s in STOREFRONTS {
            // Strict policy accepts `.invalid`, so they register like any
            // storefront, and nothing on the network can answer there.
            let url = OutboundUrl::parse(&s.url(), strict).unwrap();
            assert_eq!(url.url().host_str(), Some(DEMO_HOST));
            assert!(
                s.delay > previous,
                "{} is not slower than the one before",
                s.name
            );
            previous = s.delay;
        }
        assert_eq!(DemoSeller::new(STOREFRONTS[4], 0.0).delay(), Duration::ZERO);
        assert_eq!(
            DemoSeller::new(STOREFRONTS[4], 0.5).delay(),
            Duration::from_millis(1500)
        );
        assert_eq!(
            DemoSeller::new(STOREFRONTS[0], -1.0).delay(),
            Duration::ZERO
        );
        assert_eq!(
            DemoSeller::new(STOREFRONTS[0], f64::NAN).delay(),
            Duration::ZERO
        );
    }

    #[tokio::test]
    async fn each_seller_answers_after_its_own_scaled_delay() {
        // A hundredth of the real delays: 1.5 ms to 30 ms. Sleeps never end
        // early, so the lower bound cannot flake on a busy machine.
        for s in DemoSeller::all(0.01) {
            let started = Instant::now();
            let answer = ask(&s, wholesale(ProductFilters::default())).await;
            assert!(started.elapsed() >= s.delay(), "{}", s.storefront.name);
            assert!(!answer.products.is_empty());
        }
    }

    #[tokio::test]
    async fn a_brief_ranks_matching_products_and_says_why() {
        let lumen = seller("lumen-ctv");
        let answer = ask(
            &lumen,
            ProductQuery::brief("Live sports on connected TV in Canada"),
        )
        .await;
        let got = ids(&answer);
        assert_eq!(got[0], "lm_ctv_live_sports", "{got:?}");
        let why = answer.products[0].brief_relevance.as_deref().unwrap();
        assert!(
            why.contains("'sports'") && why.contains("'canada'"),
            "{why}"
        );
        assert!(why.ends_with("Lumen live sports CTV."), "{why}");
        // Only matching products, each with a relevance sentence.
        assert!(answer.products.iter().all(|p| p.brief_relevance.is_some()));
        assert!(answer.message.is_none());

        let audio = seller("tidewave-audio");
        let answer = ask(
            &audio,
            ProductQuery::brief("Podcasts about true crime for the UK"),
        )
        .await;
        assert_eq!(ids(&answer)[0], "tw_true_crime_sponsor");
    }

    #[tokio::test]
    async fn us_counts_as_a_country_only_in_capitals() {
        let meridian = seller("meridian-daily");
        let answer = ask(&meridian, ProductQuery::brief("Help us grow in the US")).await;
        let why = answer.products[0].brief_relevance.as_deref().unwrap();
        assert!(why.contains("'US'"), "{why}");
        let answer = ask(&meridian, ProductQuery::brief("help us grow")).await;
        assert!(
            answer.products[0]
                .brief_relevance
                .as_deref()
                .unwrap()
                .starts_with("No direct match"),
        );
    }

    #[tokio::test]
    async fn an_off_topic_brief_gets_general_inventory_or_a_reasoned_refusal() {
        let atlas = seller("atlas-outdoor");
        let answer = ask(&atlas, ProductQuery::brief("Quarterly awareness push")).await;
        assert_eq!(answer.products.len(), atlas.catalogue.len());
        assert!(
            answer
                .message
                .as_deref()
                .unwrap()
                .contains("general inventory")
        );

        // The retail network declines with an explanation, and answers a
        // shopper brief.
        let cartwheel = seller("cartwheel-retail");
        let answer = ask(&cartwheel, ProductQuery::brief("Quarterly awareness push")).await;
        assert!(answer.products.is_empty());
        assert!(answer.message.as_deref().unwrap().contains("shopper"));
        let answer = ask(&cartwheel, ProductQuery::brief("Reach grocery shoppers")).await;
        assert_eq!(answer.products.len(), cartwheel.catalogue.len());
    }

    #[tokio::test]
    async fn wholesale_honours_every_filter() {
        let lumen = seller("lumen-ctv");
        let all = ask(&lumen, wholesale(ProductFilters::default())).await;
        assert_eq!(all.products.len(), 6);
        assert!(all.products.iter().all(|p| p.brief_relevance.is_none()));

        let cases: Vec<(ProductFilters, &[&str])> = vec![
            (
                ProductFilters {
                    countries: vec!["DE".into()],
                    ..Default::default()
                },
                &["lm_ctv_dach"],
            ),
            (
                ProductFilters {
                    countries: vec!["GB".into()],
                    delivery_type: Some(DeliveryType::Guaranteed),
                    ..Default::default()
                },
                &["lm_ctv_uk"],
            ),
            (
                ProductFilters {
                    pricing_currencies: vec!["GBP".into(), "EUR".into()],
                    ..Default::default()
                },
                &["lm_ctv_uk", "lm_ctv_dach"],
            ),
            (
                ProductFilters {
                    pricing_models: vec![PricingModel::Cpcv],
                    ..Default::default()
                },
                &["lm_ctv_fast", "lm_ctv_dach"],
            ),
        ];
        for (filters, want) in cases {
            let answer = ask(&lumen, wholesale(filters.clone())).await;
            assert_eq!(ids(&answer), want, "{filters:?}");
        }

        let meridian = seller("meridian-daily");
        let answer = ask(
            &meridian,
            wholesale(ProductFilters {
                channels: vec!["email".into(), "olv".into()],
                ..Default::default()
            }),
        )
        .await;
        assert_eq!(ids(&answer), ["md_olv_preroll", "md_newsletter_sponsor"]);
    }

    #[tokio::test]
    async fn filters_that_exclude_everything_are_explained() {
        let cartwheel = seller("cartwheel-retail");
        let answer = ask(
            &cartwheel,
            wholesale(ProductFilters {
                channels: vec!["podcast".into()],
                countries: vec!["FR".into()],
                ..Default::default()
            }),
        )
        .await;
        assert!(answer.products.is_empty());
        let msg = answer.message.unwrap();
        assert!(msg.contains("channels podcast; countries FR"), "{msg}");
    }

    #[tokio::test]
    async fn refine_includes_omits_and_finds_more_like_a_product() {
        let audio = seller("tidewave-audio");
        // more_like_this: the product first, then others on its channel.
        let answer = ask(
            &audio,
            refine_query(vec![
                product("tw_podcast_dai", ProductAction::MoreLikeThis),
                product("tw_podcast_host_read", ProductAction::Omit),
            ]),
        )
        .await;
        assert_eq!(ids(&answer), ["tw_podcast_dai", "tw_true_crime_sponsor"]);

        // include narrows to the named products.
        let answer = ask(
            &audio,
            refine_query(vec![product(
                "tw_streaming_audio_eu",
                ProductAction::Include,
            )]),
        )
        .await;
        assert_eq!(ids(&answer), ["tw_streaming_audio_eu"]);

        // omit alone removes from the whole catalogue.
        let answer = ask(
            &audio,
            refine_query(vec![product("tw_companion_display", ProductAction::Omit)]),
        )
        .await;
        assert_eq!(answer.products.len(), 5);
        assert!(!ids(&answer).contains(&"tw_companion_display"));

        // A request ask adds what its words match; proposals are unable
        // here, unknown ids too, and the rest still applies.
        let answer = ask(
            &audio,
            refine_query(vec![
                Refinement::Request {
                    ask: "add companion banners".into(),
                },
                Refinement::Proposal {
                    proposal_id: "nope".into(),
                    action: ProposalAction::Include,
                    ask: None,
                },
                product("unknown", ProductAction::Include),
            ]),
        )
        .await;
        assert_eq!(ids(&answer), ["tw_companion_display"]);
        let payload = audio.respond(&refine_query(vec![
            Refinement::Request {
                ask: "add companion banners".into(),
            },
            product("unknown", ProductAction::Include),
        ]));
        let statuses: Vec<&str> = payload["refinement_applied"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["status"].as_str().unwrap())
            .collect();
        assert_eq!(statuses, ["applied", "unable"]);
    }

    #[tokio::test]
    async fn an_invalid_query_is_refused_before_any_wait() {
        let slow = DemoSeller::new(STOREFRONTS[4], 1.0);
        let started = Instant::now();
        let err = slow
            .get_products(&target(slow.storefront()), &ProductQuery::brief(" "))
            .await
            .unwrap_err();
        assert!(matches!(err, SellerError::InvalidQuery(_)), "{err:?}");
        assert!(started.elapsed() < Duration::from_secs(3));
    }

    #[tokio::test]
    async fn account_tasks_go_through_call_task_with_the_storefronts_credential() {
        let cartwheel = seller("cartwheel-retail");
        assert!(
            cartwheel
                .storefront()
                .account_capabilities()
                .requires_credentials
        );
        let mut storefront = target(cartwheel.storefront());
        let no_token = cartwheel
            .call_task(&storefront, "list_accounts", Map::new())
            .await
            .unwrap();
        assert_eq!(no_token["errors"][0]["code"], "AUTH_REQUIRED");
        storefront.auth_token = Some(crate::discovery::seller::AuthToken::new("buyer-token"));
        let seats = cartwheel
            .call_task(&storefront, "list_accounts", Map::new())
            .await
            .unwrap();
        assert_eq!(seats["accounts"][0]["account_id"], "cartwheel_seat_1");
        assert_eq!(seats["accounts"][1]["account_id"], "cartwheel_seat_2");

        let meridian = seller("meridian-daily");
        let storefront = target(meridian.storefront());
        let sync = json!({"idempotency_key": "meridian-sync-00000001", "dry_run": false,
            "accounts": [{"brand": {"domain": "acme.example"}, "operator": "agency.example",
                          "billing": "operator"}]});
        let synced = meridian
            .call_task(
                &storefront,
                "sync_accounts",
                sync.as_object().unwrap().clone(),
            )
            .await
            .unwrap();
        assert_eq!(synced["accounts"][0]["action"], "created");
        let listed = meridian
            .call_task(&storefront, "list_accounts", Map::new())
            .await
            .unwrap();
        assert_eq!(
            listed["accounts"][0]["account_id"],
            "acc_acme.example_agency.example"
        );
        // Media buys still answer, and an unknown task is still refused.
        assert!(
            meridian
                .call_task(&storefront, "get_media_buys", Map::new())
                .await
                .is_ok()
        );
        assert!(
            meridian
                .call_task(&storefront, "activate_signal", Map::new())
                .await
                .is_err()
        );
    }
}
