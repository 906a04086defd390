//! The multi-storefront `get_products`: agents' view of discovery sessions,
//! in AdCP's shape (snake_case, `buying_mode`, `ext.platform`). A call
//! without an execution id starts a session and answers at once with what
//! is there (`provisional`); calls with `ext.platform.execution_id` poll it
//! (optionally `since_revision`) or refine it.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::ToSchema;

use super::model::ProductOut;
use super::operations::{
    DiscoverProductsIn, Window, parse_ask, parse_refine, refine_round, sessions, snapshot, start,
    visible_session,
};
use crate::buyer::advertisers::model::Issues;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Verb};

const DEFAULT_RESULTS: u64 = 50;
const MAX_RESULTS: u64 = 200;

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetProductsFilters {
    pub channels: Option<Vec<String>>,
    pub countries: Option<Vec<String>>,
    /// One pricing model (`cpm`, `vcpm`, `cpc`, `cpcv`, `cpv`, `cpp`, `flat_rate`).
    pub pricing_model: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetProductsPagination {
    /// 1 to 200 products per page (default 50).
    pub max_results: Option<u64>,
    /// From the previous page's `pagination.cursor`.
    pub cursor: Option<String>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PlatformExt {
    /// The session to poll or refine (its `discoveryId`).
    pub execution_id: Option<String>,
    /// Only products of groups landed after this revision.
    pub since_revision: Option<i64>,
    /// Required to start a session.
    pub advertiser_id: Option<String>,
    pub storefront_ids: Option<Vec<i64>>,
}

#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetProductsExt {
    pub platform: Option<PlatformExt>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GetProductsIn {
    /// `brief`, `wholesale` or `refine`.
    pub buying_mode: String,
    pub brief: Option<String>,
    /// AdCP `refine[]` (with `buying_mode: refine` and an execution id).
    #[schema(value_type = Option<Vec<Object>>)]
    pub refine: Option<Vec<Value>>,
    pub filters: Option<GetProductsFilters>,
    pub pagination: Option<GetProductsPagination>,
    pub ext: Option<GetProductsExt>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct GetProductsOut {
    /// AdCP products, each with `ext.platform` naming its storefront.
    #[schema(value_type = Vec<Object>)]
    pub products: Vec<Value>,
    pub results_complete: bool,
    pub revision: i64,
    /// More revisions may follow: poll again with the execution id.
    pub provisional: bool,
    #[schema(value_type = Vec<Object>)]
    pub pending_agents: Vec<Value>,
    #[schema(value_type = Vec<Object>)]
    pub storefront_results: Vec<Value>,
    #[schema(value_type = Object)]
    pub pagination: Value,
    #[schema(value_type = Object)]
    pub ext: Value,
}

fn adcp_product(p: &ProductOut, group_id: &str) -> Value {
    let mut v = p.adcp.clone();
    if let Some(obj) = v.as_object_mut() {
        obj.insert(
            "ext".into(),
            json!({"platform": {
                "storefront_id": p.storefront_id,
                "storefront_name": p.storefront_name,
                "group_id": group_id,
            }}),
        );
    }
    v
}

/// Names REST body fields as this operation's callers sent them.
fn agent_fields(e: ApiError) -> ApiError {
    let ApiError::Validation { issues, .. } = e else {
        return e;
    };
    let rename = |path: &str| -> String {
        for (rest, agent) in [
            ("channels", "filters.channels"),
            ("countries", "filters.countries"),
            ("pricingModel", "filters.pricing_model"),
            ("advertiserId", "ext.platform.advertiser_id"),
            ("storefrontIds", "ext.platform.storefront_ids"),
        ] {
            if let Some(tail) = path.strip_prefix(rest) {
                return format!("{agent}{tail}");
            }
        }
        path.to_string()
    };
    ApiError::invalid_all(
        issues
            .into_iter()
            .map(|i| crate::error::Issue {
                path: rename(&i.path),
                message: i.message,
            })
            .collect(),
    )
}

pub struct GetProducts;

impl Operation for GetProducts {
    const NAME: &'static str = "get_products";
    const DESCRIPTION: &'static str = "AdCP get_products across every storefront, as a discovery session: the first call starts it and answers at once (provisional); poll with ext.platform.execution_id (and since_revision) until results_complete, or refine it with buying_mode refine.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/discovery/get-products";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            404,
            "the advertiser, discovery session or proposal code is unknown to the caller",
        ),
        (
            409,
            "the session is still collecting results (refine once it completes)",
        ),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<GetProductsIn>;
    type Output = GetProductsOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<GetProductsOut, ApiError> {
        let body = input.body.0;
        let platform = body.ext.and_then(|e| e.platform).unwrap_or_default();
        let page = body.pagination.unwrap_or_default();
        let mut issues = Issues::default();
        if !matches!(body.buying_mode.as_str(), "brief" | "wholesale" | "refine") {
            issues.add("buying_mode", "must be brief, wholesale or refine");
        }
        if body.buying_mode == "brief" && body.brief.as_deref().is_none_or(|b| b.trim().is_empty())
        {
            issues.add("brief", "is required in brief mode");
        }
        if body.buying_mode != "brief" && body.brief.is_some() {
            issues.add("brief", "is only for brief mode");
        }
        if body.buying_mode == "refine" && platform.execution_id.is_none() {
            issues.add(
                "ext.platform.execution_id",
                "refine needs the session to refine",
            );
        }
        if body.buying_mode != "refine" && body.refine.is_some() {
            issues.add("refine", "is only for refine mode");
        }
        if let Some(m) = page.max_results
            && !(1..=MAX_RESULTS).contains(&m)
        {
            issues.add(
                "pagination.max_results",
                format!("must be 1 to {MAX_RESULTS}"),
            );
        }
        let offset: usize = match page.cursor.as_deref() {
            None => 0,
            Some(c) => c.parse().unwrap_or_else(|_| {
                issues.add("pagination.cursor", "is not a cursor from this operation");
                0
            }),
        };
        if let Some(s) = platform.since_revision
            && s < 0
        {
            issues.add(
                "ext.platform.since_revision",
                "must be a revision (0 or more)",
            );
        }
        issues.into_result()?;

        let session = match &platform.execution_id {
            Some(id) => {
                let session = visible_session(ctx, caller, id).await?;
                if body.buying_mode == "refine" {
                    let refine = parse_refine(body.refine.as_deref().unwrap_or_default())?;
                    refine_round(ctx, sessions(ctx)?, &session, refine).await?
                } else {
                    session
                }
            }
            None => {
                let filters = body.filters.unwrap_or_default();
                let ask_in = DiscoverProductsIn {
                    advertiser_id: platform.advertiser_id.clone(),
                    channels: filters.channels,
                    countries: filters.countries,
                    brief: body.brief,
                    storefront_ids: platform.storefront_ids,
                    pricing_model: filters.pricing_model,
                    progressive: Some(true),
                    ..DiscoverProductsIn::default()
                };
                let ask = parse_ask(&ask_in).map_err(agent_fields)?;
                start(ctx, caller, sessions(ctx)?, &ask_in, &ask)
                    .await
                    .map_err(agent_fields)?
            }
        };
        let window = Window {
            group_limit: Some(u64::MAX),
            products_per_group: Some(u64::MAX),
            since_revision: platform.since_revision,
            ..Window::default()
        };
        let snap = snapshot(ctx, &session, window).await?;
        let all: Vec<Value> = snap
            .product_groups
            .iter()
            .flat_map(|g| g.products.iter().map(|p| adcp_product(p, &g.group_id)))
            .collect();
        let max = page.max_results.unwrap_or(DEFAULT_RESULTS) as usize;
        let products: Vec<Value> = all.iter().skip(offset).take(max).cloned().collect();
        let next = offset + products.len();
        let has_more = next < all.len();
        let mut pagination = json!({"has_more": has_more, "max_results": max});
        if has_more {
            pagination["cursor"] = Value::from(next.to_string());
        }
        Ok(GetProductsOut {
            products,
            results_complete: snap.results_complete,
            revision: snap.revision,
            provisional: !snap.results_complete,
            pending_agents: snap
                .pending_agents
                .iter()
                .map(|a| json!({"agent_id": a.agent_id, "agent_name": a.agent_name}))
                .collect(),
            storefront_results: snap
                .storefront_results
                .iter()
                .map(|r| {
                    let mut v = json!({"agent_id": r.agent_id, "agent_name": r.agent_name, "status": r.status});
                    if let Some(m) = &r.message {
                        v["message"] = Value::from(m.clone());
                    }
                    v
                })
                .collect(),
            pagination,
            ext: json!({"platform": {"execution_id": snap.discovery_id}}),
        })
    }
}
