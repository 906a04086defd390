//! The targeting operations: resolve a market or place name to codes, list
//! a dimension's labels, and validate a `constraints` object. All read-only.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Value, json};
use utoipa::{IntoParams, ToSchema};

use super::constraints::{
    Constraints, EffectiveTargeting, MetroLabel, check_constraints, metro_labels,
};
use super::raw::Raw;
use super::vocab::{self, SYSTEMS};
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};
use crate::ops::input::{JsonBytes, Part, RawInput, parse_query};
use crate::ops::{
    Access, Ctx, Input, Nothing, Operation, OperationDef, Page, Paged, Pagination, Params, Query,
    Verb, def,
};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<ResolveTargetingDimension>(),
    &def::<ListTargetingDimensionValues>(),
    &def::<ValidateTargeting>(),
];

/// Longest accepted name query.
const MAX_QUERY: usize = 200;

#[derive(Debug, Deserialize, ToSchema)]
pub struct DimensionPath {
    /// `nielsen_dma`, `countries`, `regions` or `languages`.
    pub system: String,
}

/// An unknown dimension is a missing resource under `/dimensions`: 404.
fn dimension(system: &str) -> Result<&'static vocab::Vocab, ApiError> {
    vocab::vocab(system).ok_or_else(|| {
        ApiError::NotFound(format!(
            "unknown targeting dimension {system:?}; known: {}",
            SYSTEMS.join(", ")
        ))
    })
}

/// `country` narrows regions to one country; other dimensions have none.
fn country_filter(system: &str, country: Option<&str>) -> Result<Option<String>, ApiError> {
    let Some(c) = country.map(str::trim).filter(|c| !c.is_empty()) else {
        return Ok(None);
    };
    if system != "regions" {
        return Err(ApiError::invalid("country", "applies to regions only"));
    }
    let code = c.to_ascii_uppercase();
    if !vocab::is_country(code.as_str()) {
        return Err(ApiError::invalid(
            "country",
            "must be an ISO 3166-1 alpha-2 country code such as US",
        ));
    }
    Ok(Some(code))
}

#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct ResolveQuery {
    /// The name to resolve, e.g. `New York` (1 to 200 characters).
    pub q: Option<String>,
    /// Regions only: an ISO 3166-1 alpha-2 country to search within.
    pub country: Option<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TargetingCandidate {
    pub code: String,
    pub name: String,
    /// 1.0 for an exact code or name match; below for fuzzy matches.
    pub confidence: f64,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TargetingResolution {
    pub system: String,
    pub query: String,
    /// Best first; empty when nothing is close (ask the user).
    pub candidates: Vec<TargetingCandidate>,
    /// Several high-confidence candidates: ask the user which one.
    pub ambiguous: bool,
}

pub struct ResolveTargetingDimension;

impl Operation for ResolveTargetingDimension {
    const NAME: &'static str = "resolve_targeting_dimension";
    const DESCRIPTION: &'static str = "Resolve a name (e.g. a market such as \"New York\") to codes of a targeting dimension (nielsen_dma, countries, regions, languages), with confidence; ambiguous or empty results need clarification.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/targeting/dimensions/{system}/resolve";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown dimension")];
    type Path = Params<DimensionPath>;
    type Query = Query<ResolveQuery>;
    type Body = Nothing;
    type Output = TargetingResolution;

    async fn run(
        _ctx: &Ctx,
        _caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<TargetingResolution, ApiError> {
        let system = input.path.0.system;
        let vocab = dimension(&system)?;
        let q = input.query.0.q.unwrap_or_default();
        let query = q.trim();
        if query.is_empty() || query.chars().count() > MAX_QUERY {
            return Err(ApiError::invalid(
                "q",
                format!("required: a name of 1 to {MAX_QUERY} characters"),
            ));
        }
        let country = country_filter(&system, input.query.0.country.as_deref())?;
        let r = vocab::resolve(vocab, query, country.as_deref());
        Ok(TargetingResolution {
            candidates: r
                .candidates
                .into_iter()
                .map(|c| TargetingCandidate {
                    code: c.entry.code.to_string(),
                    name: c.entry.name.to_string(),
                    confidence: c.confidence,
                })
                .collect(),
            ambiguous: r.ambiguous,
            query: query.to_string(),
            system,
        })
    }
}

#[derive(Debug, Default, Deserialize, IntoParams, ToSchema)]
#[into_params(parameter_in = Query)]
pub struct ValuesFilter {
    /// Only labels whose code or name starts with this (case-insensitive).
    pub q: Option<String>,
    /// Regions only: an ISO 3166-1 alpha-2 country.
    pub country: Option<String>,
}

/// `take`/`skip` (default 50, at most 200) plus the filter.
pub struct ValuesQuery {
    pub page: Page<50, 200>,
    pub filter: ValuesFilter,
}

impl Part for ValuesQuery {
    const PAGINATED: bool = true;
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError> {
        Ok(ValuesQuery {
            page: Page::parse(&raw.query)?,
            filter: parse_query(&raw.query)?,
        })
    }
    fn schema() -> Option<Value> {
        let mut s = <Page<50, 200> as Part>::schema()?;
        s["properties"]["q"] = json!({"type": "string", "maxLength": MAX_QUERY});
        s["properties"]["country"] = json!({"type": "string", "minLength": 2, "maxLength": 2});
        Some(s)
    }
}

#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct TargetingLabel {
    pub code: String,
    pub name: String,
    /// Regions: the ISO 3166-1 country they belong to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
}

pub struct ListTargetingDimensionValues;

impl Operation for ListTargetingDimensionValues {
    const NAME: &'static str = "list_targeting_dimension_values";
    const DESCRIPTION: &'static str = "Codes and labels of a targeting dimension (nielsen_dma, countries, regions, languages), by code, with an optional prefix filter `q` and, for regions, `country`.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/targeting/dimensions/{system}/values";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown dimension")];
    type Path = Params<DimensionPath>;
    type Query = ValuesQuery;
    type Body = Nothing;
    type Output = Paged<TargetingLabel>;

    async fn run(
        _ctx: &Ctx,
        _caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let system = input.path.0.system;
        let vocab = dimension(&system)?;
        let ValuesQuery { page, filter } = input.query;
        let country = country_filter(&system, filter.country.as_deref())?;
        let q = filter.q.unwrap_or_default();
        if q.chars().count() > MAX_QUERY {
            return Err(ApiError::invalid(
                "q",
                format!("must be at most {MAX_QUERY} characters"),
            ));
        }
        let name_prefix = vocab::normalize(&q);
        let code_prefix = q.trim().to_lowercase();
        let matching = vocab.entries.iter().filter(|e| {
            country.as_deref().is_none_or(|c| e.country == Some(c))
                && (e.code.to_lowercase().starts_with(&code_prefix)
                    || e.full.starts_with(&name_prefix))
        });
        let mut total = 0u64;
        let mut items = Vec::new();
        for (i, e) in matching.enumerate() {
            total += 1;
            let i = i as u64;
            if i >= page.skip && i < page.skip.saturating_add(page.take) {
                items.push(TargetingLabel {
                    code: e.code.to_string(),
                    name: e.name.to_string(),
                    country: e.country.map(String::from),
                });
            }
        }
        Ok(Paged {
            items,
            pagination: page.of(total),
        })
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}

/// `fields=geo_metro_names` adds the names of the metro codes (campaigns'
/// get and list, `validate_targeting`).
#[derive(Debug, Default, Deserialize, ToSchema, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct Fields {
    /// Comma-separated extras; `geo_metro_names` is the one known.
    pub fields: Option<String>,
}

impl Fields {
    /// Whether metro names were asked for.
    pub fn parse(&self) -> Result<bool, ApiError> {
        let mut names = false;
        for f in self.fields.iter().flat_map(|f| f.split(',')) {
            match f.trim() {
                "geo_metro_names" => names = true,
                "" => {}
                other => {
                    return Err(ApiError::invalid(
                        "fields",
                        format!("unknown field set {other:?}; known: geo_metro_names"),
                    ));
                }
            }
        }
        Ok(names)
    }
}

/// The body of `validate_targeting`.
// `constraints` is read as it came, borrowed from the body, with wrong
// shapes kept so that each is reported at its path.
#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ValidateTargetingIn<'a> {
    /// The constraints to check, as a campaign or package would carry them.
    #[serde(borrow)]
    #[schema(value_type = Constraints)]
    pub constraints: Raw<'a>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TargetingValidation {
    pub valid: bool,
    /// The constraints normalised (canonical codes, duplicates merged),
    /// serialized before their lists move into `effective`.
    #[schema(value_type = Constraints)]
    pub constraints: Box<RawValue>,
    /// What they target on their own.
    pub effective: EffectiveTargeting,
    /// The labels of `geo_metros` and `geo_metros_exclude`, for showing
    /// (with `fields=geo_metro_names`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub geo_metro_names: Vec<MetroLabel>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub geo_metro_names_exclude: Vec<MetroLabel>,
}

pub struct ValidateTargeting;

impl Operation for ValidateTargeting {
    const NAME: &'static str = "validate_targeting";
    const DESCRIPTION: &'static str = "Check targeting constraints against the real vocabularies (ISO 3166-1/-2, ISO 639-1, Nielsen DMA, postal systems per country); returns them normalised with their effective targeting, or every problem with its path.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/targeting/validate";
    const ERRORS: &'static [(u16, &'static str)] = &[(400, "VALIDATION_ERROR with every issue")];
    type Path = Nothing;
    type Query = Query<Fields>;
    type Body = JsonBytes<ValidateTargetingIn<'static>>;
    type Output = TargetingValidation;

    async fn run(
        _ctx: &Ctx,
        _caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<TargetingValidation, ApiError> {
        let names = input.query.0.parse()?;
        let wire: ValidateTargetingIn = input.body.parse()?;
        let mut issues = Issues::default();
        let Some(constraints) = check_constraints(&wire.constraints, "constraints", &mut issues)
        else {
            return Err(ApiError::invalid_all(issues.0));
        };
        let labels = |areas| if names { metro_labels(areas) } else { vec![] };
        let (geo_metro_names, geo_metro_names_exclude) = (
            labels(&constraints.geo_metros),
            labels(&constraints.geo_metros_exclude),
        );
        Ok(TargetingValidation {
            valid: true,
            constraints: serde_json::value::to_raw_value(&constraints)
                .map_err(ApiError::internal)?,
            effective: constraints.into_effective(None),
            geo_metro_names,
            geo_metro_names_exclude,
        })
    }
}
