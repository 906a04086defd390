//! Discovery operations, each declared once (REST, the dispatcher and agent
//! tools derive from them): start or refine a session, browse it.

use std::time::{Duration, Instant};

use chrono::Utc;
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use entity::{advertiser, discovery_session, storefront};

use super::model::{
    AgentRef, DiscoveryId, IncompleteAgent, ProductGroup, ProductOut, StorefrontResult, Summary,
    pricing_model,
};
use super::seller::{BuyingMode, ProductFilters, ProductQuery, Refinement};
use super::service::{self, NewSession};
use super::session::{Round, Sessions};
use super::storefronts;
use crate::buyer::advertisers::model::{self, Issues};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Params, Query, Verb, progress};

/// The longest wait without `waitMode: long`, and with it.
const SHORT_WAIT_MAX: u64 = 30;
const LONG_WAIT_MAX: u64 = 300;
/// Waits when the request names none.
const DEFAULT_WAIT: u64 = 30;
const DEFAULT_LONG_WAIT: u64 = 120;
/// A brief is kept whole, up to this many characters.
const BRIEF_MAX: usize = 20_000;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DiscoverProductsIn {
    /// An advertiser of the caller's account (required to start a session).
    pub advertiser_id: Option<String>,
    /// AdCP media channels to ask for.
    pub channels: Option<Vec<String>>,
    /// ISO 3166-1 alpha-2 countries.
    pub countries: Option<Vec<String>>,
    /// The campaign brief, kept whole (brief mode); without it, wholesale.
    pub brief: Option<String>,
    pub storefront_ids: Option<Vec<i64>>,
    /// Case-insensitive substrings of storefront names.
    pub storefront_names: Option<Vec<String>>,
    /// Matches storefronts whose host is this domain or under it.
    pub publisher_domain: Option<String>,
    /// `cpm`, `vcpm`, `cpc`, `cpcv`, `cpv`, `cpp` or `flat_rate`.
    pub pricing_model: Option<String>,
    /// Returns the snapshot saved under this code; other fields are ignored.
    pub proposal_code: Option<String>,
    /// An existing session: with `refine`, asks again; without, waits for
    /// and returns it.
    pub discovery_id: Option<String>,
    /// AdCP `refine[]` change requests (`scope`: request, product, proposal).
    #[schema(value_type = Option<Vec<Object>>)]
    pub refine: Option<Vec<Value>>,
    /// Return at once with the current revision.
    pub progressive: Option<bool>,
    /// `long` allows waiting up to 300 seconds.
    pub wait_mode: Option<String>,
    /// How long to wait for completion (above 30 needs `waitMode: long`).
    pub wait_seconds: Option<u64>,
    /// A campaign whose storefront pin is the fallback.
    pub campaign_id: Option<String>,
}

/// Which part of a session to show.
#[derive(Debug, Clone, Copy, Default, Deserialize, IntoParams, ToSchema)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct Window {
    /// Groups per page (1 to 100, default 20).
    pub group_limit: Option<u64>,
    pub group_offset: Option<u64>,
    /// Products per group (1 to 100, default 20).
    pub products_per_group: Option<u64>,
    pub product_offset: Option<u64>,
    /// Only groups landed after this revision (replace them by `groupId`).
    pub since_revision: Option<i64>,
}

impl Window {
    fn check(&self) -> Result<(), ApiError> {
        let mut issues = Issues::default();
        for (name, v) in [
            ("groupLimit", self.group_limit),
            ("productsPerGroup", self.products_per_group),
        ] {
            if let Some(v) = v
                && !(1..=100).contains(&v)
            {
                issues.add(name, "must be 1 to 100");
            }
        }
        if let Some(s) = self.since_revision
            && s < 0
        {
            issues.add("sinceRevision", "must be a revision (0 or more)");
        }
        issues.into_result()
    }
}

/// A session as its callers see it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryOut {
    pub discovery_id: String,
    pub revision: i64,
    pub results_complete: bool,
    pub product_groups: Vec<ProductGroup>,
    pub total_groups: i64,
    pub has_more_groups: bool,
    pub summary: Summary,
    pub pending_agents: Vec<AgentRef>,
    /// Storefronts whose results are missing or partial.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub incomplete_agents: Option<Vec<IncompleteAgent>>,
    pub storefront_results: Vec<StorefrontResult>,
}

/// Reads a session's snapshot through `window`.
pub async fn snapshot(
    ctx: &Ctx,
    session: &discovery_session::Model,
    window: Window,
) -> Result<DiscoveryOut, ApiError> {
    // One snapshot of the three reads, so a revision committed in between
    // cannot show a complete session with agents still pending.
    let (agents, row, all) = service::read_consistent(&ctx.db, &session.id).await?;
    let row = row.ok_or_else(|| ApiError::not_found("discovery session"))?;
    let total_products: i64 = all.iter().map(|g| g.product_count).sum();
    let total_groups = all.len() as i64;
    let chosen: Vec<_> = all
        .into_iter()
        .filter(|g| window.since_revision.is_none_or(|s| g.revision > s))
        .collect();
    let shown_total = chosen.len() as u64;
    let offset = window.group_offset.unwrap_or(0);
    let limit = window.group_limit.unwrap_or(20);
    let per = window.products_per_group.unwrap_or(20) as usize;
    let poff = window.product_offset.unwrap_or(0) as usize;
    let mut groups = Vec::new();
    for g in chosen.iter().skip(offset as usize).take(limit as usize) {
        let products: Vec<ProductOut> = serde_json::from_str(&g.products)
            .map_err(|e| ApiError::internal(format!("stored group: {e}")))?;
        groups.push(ProductGroup {
            group_id: g.group_id.clone(),
            group_name: g.group_name.clone(),
            revision: g.revision,
            total_products: g.product_count,
            products: products.into_iter().skip(poff).take(per).collect(),
            proposals: g
                .proposals
                .as_deref()
                .and_then(|p| serde_json::from_str(p).ok())
                .unwrap_or_default(),
        });
    }
    let answered = agents
        .iter()
        .filter(|a| a.status == service::ANSWERED)
        .count() as i64;
    let pending = service::pending(&agents);
    let incomplete = service::incomplete_agents(&agents, row.results_complete);
    Ok(DiscoveryOut {
        discovery_id: row.id.clone(),
        revision: row.revision,
        results_complete: row.results_complete,
        has_more_groups: offset + (groups.len() as u64) < shown_total,
        total_groups: shown_total as i64,
        summary: Summary {
            total_products,
            total_groups,
            storefronts_queried: agents.len() as i64,
            storefronts_answered: answered,
            storefronts_pending: pending.len() as i64,
        },
        product_groups: groups,
        pending_agents: pending,
        incomplete_agents: (!incomplete.is_empty()).then_some(incomplete),
        storefront_results: service::storefront_results(&agents),
    })
}

pub(super) fn sessions(ctx: &Ctx) -> Result<&Sessions, ApiError> {
    ctx.get::<Sessions>()
}

/// The caller's session, or 404.
pub async fn visible_session(
    ctx: &Ctx,
    caller: &CallerInfo,
    raw_id: &str,
) -> Result<discovery_session::Model, ApiError> {
    let Ok(id) = DiscoveryId::parse(raw_id, "discoveryId") else {
        return Err(ApiError::not_found("discovery session"));
    };
    service::find(&ctx.db, caller.account_id(), id.as_str())
        .await?
        .ok_or_else(|| ApiError::not_found("discovery session"))
}

/// What the request asks sellers, parsed and checked (every problem at once).
pub(super) struct Ask {
    channels: Vec<String>,
    countries: Vec<String>,
    brief: Option<String>,
    pricing: Option<super::seller::PricingModel>,
    wait: Duration,
}

pub(super) fn parse_ask(body: &DiscoverProductsIn) -> Result<Ask, ApiError> {
    let mut issues = Issues::default();
    let channels = model::channels(body.channels.clone().unwrap_or_default(), &mut issues);
    let countries = model::countries_at(
        "countries",
        body.countries.clone().unwrap_or_default(),
        &mut issues,
    );
    let brief = body.brief.clone().filter(|b| !b.trim().is_empty());
    if brief
        .as_ref()
        .is_some_and(|b| b.chars().count() > BRIEF_MAX)
    {
        issues.add("brief", format!("must be at most {BRIEF_MAX} characters"));
    }
    let pricing = match body.pricing_model.as_deref() {
        None => None,
        Some(p) => match pricing_model(p) {
            Ok(m) => Some(m),
            Err(_) => {
                issues.add(
                    "pricingModel",
                    "must be one of cpm, vcpm, cpc, cpcv, cpv, cpp, flat_rate",
                );
                None
            }
        },
    };
    for (i, n) in body.storefront_names.iter().flatten().enumerate() {
        if n.trim().is_empty() {
            issues.add(format!("storefrontNames[{i}]"), "must not be empty");
        }
    }
    if let Some(d) = &body.publisher_domain
        && !is_domain(d)
    {
        issues.add("publisherDomain", "must be a domain such as example.com");
    }
    let long = match body.wait_mode.as_deref() {
        None => false,
        Some("long") => true,
        Some(_) => {
            issues.add("waitMode", "must be long");
            false
        }
    };
    let progressive = body.progressive == Some(true);
    if progressive && (body.wait_mode.is_some() || body.wait_seconds.is_some()) {
        issues.add(
            "progressive",
            "returns at once; do not combine it with waitMode or waitSeconds",
        );
    }
    let max = if long { LONG_WAIT_MAX } else { SHORT_WAIT_MAX };
    if let Some(w) = body.wait_seconds
        && w > max
    {
        if long {
            issues.add("waitSeconds", format!("must be at most {LONG_WAIT_MAX}"));
        } else {
            issues.add(
                "waitSeconds",
                format!("above {SHORT_WAIT_MAX} needs waitMode long"),
            );
        }
    }
    if body.refine.is_some() && body.discovery_id.is_none() {
        issues.add(
            "refine",
            "refines an existing session: give its discoveryId",
        );
    }
    issues.into_result()?;
    let wait = if progressive {
        0
    } else {
        body.wait_seconds.unwrap_or(if long {
            DEFAULT_LONG_WAIT
        } else {
            DEFAULT_WAIT
        })
    };
    Ok(Ask {
        channels,
        countries,
        brief,
        pricing,
        wait: Duration::from_secs(wait),
    })
}

fn is_domain(d: &str) -> bool {
    crate::buyer::brands::parse_domain(d.trim().trim_end_matches('.')).is_ok()
}

pub(super) fn parse_refine(raw: &[Value]) -> Result<Vec<Refinement>, ApiError> {
    let mut issues = Issues::default();
    let mut out = Vec::new();
    if raw.is_empty() {
        issues.add("refine", "needs at least one change request");
    }
    for (i, r) in raw.iter().enumerate() {
        match serde_json::from_value::<Refinement>(r.clone()) {
            Ok(x) => out.push(x),
            Err(e) => issues.add(
                format!("refine[{i}]"),
                format!("is not an AdCP refine entry: {e}"),
            ),
        }
    }
    issues.into_result()?;
    Ok(out)
}

/// Storefronts matching the request (all when it names none).
async fn eligible(
    ctx: &Ctx,
    body: &DiscoverProductsIn,
    pinned: &[i64],
) -> Result<Vec<storefront::Model>, ApiError> {
    let all = storefront::Entity::find()
        .order_by_asc(storefront::Column::Id)
        .all(&ctx.db)
        .await?;
    let sent: Vec<i64> = body.storefront_ids.clone().unwrap_or_default();
    // Empty arrays equal omission: the campaign's pin applies then.
    let (ids, field) = if sent.is_empty() {
        (pinned.to_vec(), "campaignId.storefrontIds")
    } else {
        (sent, "storefrontIds")
    };
    let mut issues = Issues::default();
    for (i, id) in ids.iter().enumerate() {
        if !all.iter().any(|s| s.id == *id) {
            issues.add(format!("{field}[{i}]"), "is not a registered storefront");
        }
    }
    issues.into_result()?;
    let names: Vec<String> = body
        .storefront_names
        .iter()
        .flatten()
        .map(|n| n.trim().to_lowercase())
        .collect();
    let domain = body
        .publisher_domain
        .as_deref()
        .map(|d| d.trim().trim_end_matches('.').to_ascii_lowercase());
    Ok(all
        .into_iter()
        .filter(|s| ids.is_empty() || ids.contains(&s.id))
        .filter(|s| {
            let name = s.name.to_lowercase();
            names.is_empty() || names.iter().any(|n| name.contains(n.as_str()))
        })
        .filter(|s| {
            domain.as_deref().is_none_or(|d| {
                url::Url::parse(&s.url)
                    .ok()
                    .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
                    .is_some_and(|h| h == d || h.ends_with(&format!(".{d}")))
            })
        })
        .collect())
}

/// A session's snapshot, or one saved under a proposal code (sent as
/// stored, not parsed and written again).
#[derive(Serialize)]
#[serde(untagged)]
pub enum Discovered {
    Live(DiscoveryOut),
    Saved(Box<serde_json::value::RawValue>),
}

/// Both are a session's snapshot.
impl utoipa::PartialSchema for Discovered {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        <DiscoveryOut as utoipa::PartialSchema>::schema()
    }
}

impl utoipa::ToSchema for Discovered {
    fn name() -> std::borrow::Cow<'static, str> {
        <DiscoveryOut as ToSchema>::name()
    }
    fn schemas(
        schemas: &mut Vec<(
            String,
            utoipa::openapi::RefOr<utoipa::openapi::schema::Schema>,
        )>,
    ) {
        <DiscoveryOut as ToSchema>::schemas(schemas)
    }
}

pub struct DiscoverProducts;

impl Operation for DiscoverProducts {
    const NAME: &'static str = "discover_products";
    const DESCRIPTION: &'static str = "Ask the storefronts for products (AdCP get_products), as a discovery session whose revisions land as each seller answers. Progressive requests return at once; others wait for completion or their wait limit. With discoveryId and refine, asks again; with proposalCode, returns a saved snapshot.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/discovery/discover-products";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            404,
            "the advertiser, discovery session or proposal code is unknown to the caller",
        ),
        (
            409,
            "the session is still collecting results (refine once it completes), or the advertiser is archived",
        ),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<DiscoverProductsIn>;
    type Output = Discovered;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Discovered, ApiError> {
        let body = input.body.0;
        if let Some(code) = &body.proposal_code {
            return super::selection::proposal_snapshot(ctx, caller, code)
                .await
                .map(Discovered::Saved);
        }
        let ask = parse_ask(&body)?;
        let sessions = sessions(ctx)?;
        let session = match &body.discovery_id {
            Some(raw) => {
                let session = visible_session(ctx, caller, raw).await?;
                if let Some(refine) = &body.refine {
                    let refine = parse_refine(refine)?;
                    refine_round(ctx, sessions, &session, refine).await?
                } else {
                    session
                }
            }
            None => start(ctx, caller, sessions, &body, &ask).await?,
        };
        if !ask.wait.is_zero() {
            if progress::wanted() {
                // One report per storefront as it settles: progress =
                // storefronts settled, total = storefronts queried.
                let total = service::agents(&ctx.db, &session.id).await?.len();
                let mut reported = 0;
                sessions
                    .wait_reporting(&session, ask.wait, |pending| {
                        let settled = total.saturating_sub(pending);
                        while reported < settled {
                            reported += 1;
                            progress::report(
                                reported as f64,
                                Some(total as f64),
                                Some(format!("{reported} of {total} storefronts answered")),
                            );
                        }
                    })
                    .await;
            } else {
                sessions.wait(&session, ask.wait).await;
            }
        }
        Ok(Discovered::Live(
            snapshot(ctx, &session, Window::default()).await?,
        ))
    }
}

/// Creates a session and drives its first round on this instance.
pub(super) async fn start(
    ctx: &Ctx,
    caller: &CallerInfo,
    sessions: &Sessions,
    body: &DiscoverProductsIn,
    ask: &Ask,
) -> Result<discovery_session::Model, ApiError> {
    let Some(raw) = body.advertiser_id.as_deref() else {
        return Err(ApiError::invalid(
            "advertiserId",
            "is required to start a discovery",
        ));
    };
    let advertiser_id = crate::buyer::advertisers::model::advertiser_id(raw)?;
    let advertiser = advertiser::Entity::find_by_id(advertiser_id.clone())
        .filter(advertiser::Column::AccountId.eq(caller.account_id()))
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))?;
    crate::buyer::advertisers::service::refuse_archived(&advertiser, "discoveries")?;
    // A campaign's storefront pin is the fallback when none are sent.
    let pinned: Vec<i64> = match body.campaign_id.as_deref() {
        None => Vec::new(),
        Some(id) => {
            let campaign = crate::buyer::campaigns::service::load(&ctx.db, caller, id).await?;
            if campaign.advertiser_id != advertiser.id {
                return Err(ApiError::invalid(
                    "campaignId",
                    "the campaign belongs to another advertiser",
                ));
            }
            crate::buyer::campaigns::service::out(campaign, false).storefront_ids
        }
    };
    let storefronts = eligible(ctx, body, &pinned).await?;
    let brand = Some(advertiser.brand.trim().to_ascii_lowercase()).filter(|b| is_domain(b));
    let query = ProductQuery {
        mode: match &ask.brief {
            Some(b) => BuyingMode::Brief(b.clone()),
            None => BuyingMode::Wholesale,
        },
        brand: brand.clone(),
        filters: ProductFilters {
            channels: ask.channels.clone(),
            countries: ask.countries.clone(),
            pricing_models: ask.pricing.into_iter().collect(),
            ..ProductFilters::default()
        },
    };
    query.validate().map_err(|m| ApiError::invalid("", m))?;
    let tuning = sessions.tuning().clone();
    let now = Utc::now();
    let agents: Vec<AgentRef> = storefronts
        .iter()
        .map(|s| AgentRef {
            agent_id: s.id,
            agent_name: s.name.clone(),
        })
        .collect();
    let id = DiscoveryId::new();
    let request = json!({
        "advertiserId": advertiser_id,
        "brief": ask.brief,
        "brand": brand,
        "channels": ask.channels,
        "countries": ask.countries,
        "pricingModel": ask.pricing.map(|p| p.as_str()),
        "storefrontIds": agents.iter().map(|a| a.agent_id).collect::<Vec<_>>(),
    });
    let new = NewSession {
        id: id.as_str().to_string(),
        account_id: caller.account_id().to_string(),
        advertiser_id,
        user_id: caller.user.id,
        request,
        agents: agents.clone(),
        deadline: now + chrono::Duration::from_std(tuning.hard_cap).unwrap_or_default(),
        lease_owner: sessions.instance().to_string(),
        lease_until: now + chrono::Duration::from_std(tuning.lease).unwrap_or_default(),
    };
    let first = service::create(&ctx.db, &ctx.writes, &new).await?;
    crate::outbox::announce(&ctx.bus, &first.kicks);
    first.notices.publish(&ctx.bus).await;
    let session = service::find(&ctx.db, caller.account_id(), id.as_str())
        .await?
        .ok_or_else(|| ApiError::internal("discovery session vanished"))?;
    if agents.is_empty() {
        return Ok(session);
    }
    let round = Round {
        round: 0,
        agents: targets(ctx, &agents).await?,
        query,
        deadline: Instant::now() + tuning.hard_cap,
        opened: None,
    };
    sessions.drive(&session, round);
    Ok(session)
}

async fn targets(
    ctx: &Ctx,
    agents: &[AgentRef],
) -> Result<Vec<(AgentRef, Result<super::seller::StorefrontTarget, String>)>, ApiError> {
    let mut out = Vec::new();
    for a in agents {
        let t = storefronts::target(&ctx.db, a.agent_id, ctx.config.url_policy())
            .await?
            .unwrap_or_else(|| Err("the storefront was removed".into()));
        out.push((a.clone(), t));
    }
    Ok(out)
}

/// Asks the session's storefronts again with AdCP `buying_mode: refine`.
pub(super) async fn refine_round(
    ctx: &Ctx,
    sessions: &Sessions,
    session: &discovery_session::Model,
    refine: Vec<Refinement>,
) -> Result<discovery_session::Model, ApiError> {
    let request: Value = serde_json::from_str(&session.request).unwrap_or(Value::Null);
    let strings = |k: &str| -> Vec<String> {
        request[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let query = ProductQuery {
        mode: BuyingMode::Refine(refine),
        brand: request["brand"].as_str().map(String::from),
        filters: ProductFilters {
            channels: strings("channels"),
            countries: strings("countries"),
            pricing_models: request["pricingModel"]
                .as_str()
                .and_then(super::seller::PricingModel::parse)
                .into_iter()
                .collect(),
            ..ProductFilters::default()
        },
    };
    query
        .validate()
        .map_err(|m| ApiError::invalid("refine", m))?;
    let tuning = sessions.tuning().clone();
    let now = Utc::now();
    let Some((round, opened)) = service::restart_round(
        &ctx.db,
        &ctx.writes,
        &session.id,
        now + chrono::Duration::from_std(tuning.hard_cap).unwrap_or_default(),
        sessions.instance(),
        now + chrono::Duration::from_std(tuning.lease).unwrap_or_default(),
    )
    .await?
    else {
        return Err(ApiError::Conflict {
            message: "the session is still collecting results; refine it once it completes".into(),
            details: None,
        });
    };
    crate::outbox::announce(&ctx.bus, &opened.kicks);
    opened.notices.publish(&ctx.bus).await;
    let agents = service::pending(&service::agents(&ctx.db, &session.id).await?);
    let session = service::find(&ctx.db, &session.account_id, &session.id)
        .await?
        .ok_or_else(|| ApiError::not_found("discovery session"))?;
    sessions.drive(
        &session,
        Round {
            round,
            agents: targets(ctx, &agents).await?,
            query,
            deadline: Instant::now() + tuning.hard_cap,
            opened: Some(opened),
        },
    );
    Ok(session)
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DiscoveryPath {
    /// The session's id (`disc_...`).
    pub discovery_id: String,
}

pub struct BrowseDiscovery;

impl Operation for BrowseDiscovery {
    const NAME: &'static str = "browse_discovery";
    const DESCRIPTION: &'static str = "A discovery session's current snapshot, page by page; with sinceRevision, only the groups landed since (replace them by groupId).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/discovery/{discoveryId}/discover-products";
    type Path = Params<DiscoveryPath>;
    type Query = Query<Window>;
    type Body = Nothing;
    type Output = DiscoveryOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<DiscoveryOut, ApiError> {
        let window = input.query.0;
        window.check()?;
        let session = visible_session(ctx, caller, &input.path.0.discovery_id).await?;
        snapshot(ctx, &session, window).await
    }
}
