//! Campaign and package targeting `constraints`: parsed from JSON with every
//! problem reported at once under its full path, normalised (canonical case,
//! canonical postal forms, duplicates dropped, areas of one system merged),
//! and combined into the effective targeting.
//!
//! Combination rule (spec, "Campaign inputs"): include lists intersect with
//! package targeting, exclude lists union; then within the result each
//! include list loses what its exclude list (and an excluded country) takes
//! away. An include list that ends up empty matches nothing and is named in
//! `unsatisfiable`; an absent include list means "unrestricted".

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use super::raw::{Area, AreaObj, Field, List, Raw, Str};
use super::{postal, vocab};
use crate::buyer::advertisers::model::CHANNELS;
use crate::error::Issues;

/// AdCP device types.
pub const DEVICE_TYPES: &[&str] = &["desktop", "mobile", "tablet", "ctv", "dooh"];

/// Operating systems a seller can target; `device_platform` accepts these.
pub const DEVICE_PLATFORMS: &[&str] = &[
    "ios",
    "ipados",
    "android",
    "windows",
    "macos",
    "linux",
    "chromeos",
    "roku_os",
    "tvos",
    "tizen",
    "webos",
    "fire_os",
    "android_tv",
    "vizio_smartcast",
    "playstation",
    "xbox",
];

/// Longest simple list (countries, regions, languages, ...).
pub const MAX_LIST: usize = 5_000;
/// Most area items in one `geo_metros*` or `geo_postal_areas*` list.
pub const MAX_AREAS: usize = 200;
/// Most codes in one area's `values`.
pub const MAX_VALUES: usize = 10_000;

/// Every key `constraints` accepts (`countries` is the deprecated alias of
/// `geo_countries`).
pub const FIELDS: &[&str] = &[
    "channels",
    "geo_countries",
    "geo_countries_exclude",
    "countries",
    "geo_regions",
    "geo_regions_exclude",
    "geo_metros",
    "geo_metros_exclude",
    "geo_postal_areas",
    "geo_postal_areas_exclude",
    "language",
    "device_type",
    "device_type_exclude",
    "device_platform",
];

/// Metro codes of one system, e.g. `{system: "nielsen_dma", values: ["501"]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MetroArea {
    /// `nielsen_dma`.
    pub system: String,
    /// Numeric string codes, e.g. `"501"`.
    pub values: Vec<String>,
}

/// Postal codes of one country and system, e.g.
/// `{country: "US", system: "zip", values: ["94105"]}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PostalArea {
    /// ISO 3166-1 alpha-2.
    pub country: String,
    /// The system the country uses (see the pairing table).
    pub system: String,
    pub values: Vec<String>,
}

/// Normalised targeting constraints (snake_case keys, as the spec gives
/// them). Empty lists are omitted: an empty list equals omission.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Constraints {
    /// Canonical AdCP media channels.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub channels: Vec<String>,
    /// ISO 3166-1 alpha-2 (`countries` is accepted as its deprecated alias).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_countries: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_countries_exclude: Vec<String>,
    /// ISO 3166-2, e.g. `US-CA`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_regions: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_regions_exclude: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_metros: Vec<MetroArea>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_metros_exclude: Vec<MetroArea>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_postal_areas: Vec<PostalArea>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_postal_areas_exclude: Vec<PostalArea>,
    /// ISO 639-1.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub language: Vec<String>,
    /// `desktop`, `mobile`, `tablet`, `ctv`, `dooh`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_type: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_type_exclude: Vec<String>,
    /// Operating systems, e.g. `ios`, `android`, `roku_os`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_platform: Vec<String>,
}

fn join(base: &str, key: &str) -> String {
    if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// `path[i]`.
fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// A list of strings, each checked (and normalised) by `check`; duplicates
/// after normalisation are dropped (the first kept). Problems go to `path[i]`;
/// `path` is written out only then (most validations report nothing).
fn strings(
    v: &List<Str>,
    path: &dyn Fn() -> String,
    max: usize,
    issues: &mut Issues,
    check: impl Fn(&str) -> Result<String, String>,
) -> Vec<String> {
    let List::Ok(items) = v else {
        issues.add(path(), "must be an array of strings");
        return vec![];
    };
    if items.len() > max {
        issues.add(path(), format!("must have at most {max} items"));
        return vec![];
    }
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Str::Ok(s) = item else {
            issues.add(index(&path(), i), "must be a string");
            continue;
        };
        match check(s) {
            Ok(code) => out.push(code),
            Err(message) => issues.add(index(&path(), i), message),
        }
    }
    dedup(&mut out);
    out
}

/// Drops repeated codes, keeping first occurrences in order.
fn dedup(list: &mut Vec<String>) {
    if list.len() < 2 {
        return;
    }
    let mut seen = HashSet::with_capacity(list.len());
    let first: Vec<bool> = list.iter().map(|c| seen.insert(c.as_str())).collect();
    let mut first = first.into_iter();
    list.retain(|_| first.next().unwrap_or(true));
}

fn country(s: &str) -> Result<String, String> {
    let code = s.trim().to_ascii_uppercase();
    if vocab::is_country(&code) {
        Ok(code)
    } else {
        Err("must be an ISO 3166-1 alpha-2 country code such as US".into())
    }
}

fn region(s: &str) -> Result<String, String> {
    let code = s.trim().to_ascii_uppercase();
    if vocab::is_region(&code) {
        Ok(code)
    } else {
        Err("must be an ISO 3166-2 subdivision code such as US-CA".into())
    }
}

fn language(s: &str) -> Result<String, String> {
    let code = s.trim().to_ascii_lowercase();
    if vocab::is_language(&code) {
        Ok(code)
    } else {
        Err("must be an ISO 639-1 language code such as en".into())
    }
}

fn one_of(
    list: &'static [&'static str],
    what: &'static str,
) -> impl Fn(&str) -> Result<String, String> {
    move |s| {
        let v = s.trim().to_ascii_lowercase();
        if list.contains(&v.as_str()) {
            Ok(v)
        } else {
            Err(format!("must be {what}: {}", list.join(", ")))
        }
    }
}

/// The object of an area item, with its unknown keys reported.
fn area_object<'r, 'a>(
    item: &'r Area<'a>,
    path: &dyn Fn() -> String,
    keys: &[&str],
    issues: &mut Issues,
) -> Option<&'r AreaObj<'a>> {
    let Area::Obj(obj) = item else {
        issues.add(
            path(),
            format!("must be an object with {}", keys.join(", ")),
        );
        return None;
    };
    for k in &obj.unknown {
        issues.add(
            format!("{}.{k}", path()),
            format!("unknown field; expected {}", keys.join(", ")),
        );
    }
    Some(obj)
}

/// An area's `values`: a non-empty array of strings, each checked by `check`.
fn area_values(
    obj: &AreaObj,
    at: &dyn Fn() -> String,
    issues: &mut Issues,
    check: impl Fn(&str) -> Result<String, String>,
) -> Vec<String> {
    let path = || join(&at(), "values");
    match &obj.values {
        None => {
            issues.add(path(), "required");
            vec![]
        }
        Some(List::Ok(a)) if a.is_empty() => {
            issues.add(path(), "must not be empty");
            vec![]
        }
        Some(v) => strings(v, &path, MAX_VALUES, issues, check),
    }
}

fn area_items<'r, 'a>(v: &'r List<Area<'a>>, path: &str, issues: &mut Issues) -> &'r [Area<'a>] {
    match v {
        List::NotArray => {
            issues.add(path, "must be an array of objects");
            &[]
        }
        List::Ok(a) if a.len() > MAX_AREAS => {
            issues.add(path, format!("must have at most {MAX_AREAS} items"));
            &[]
        }
        List::Ok(a) => a,
    }
}

/// Adds `area` to `areas`: its codes go into the area that is the `same`
/// (without duplicates), else it is a new area, its strings moved in.
fn merge<A: AsMut<Vec<String>>>(areas: &mut Vec<A>, mut area: A, same: impl Fn(&A, &A) -> bool) {
    match areas.iter_mut().find(|a| same(a, &area)) {
        Some(existing) => {
            // `area` has no duplicates of its own (each list is deduplicated).
            let existing = existing.as_mut();
            let fresh: Vec<String> = {
                let seen: HashSet<&str> = existing.iter().map(String::as_str).collect();
                std::mem::take(area.as_mut())
                    .into_iter()
                    .filter(|v| !seen.contains(v.as_str()))
                    .collect()
            };
            existing.extend(fresh);
        }
        None => areas.push(area),
    }
}

impl AsMut<Vec<String>> for MetroArea {
    fn as_mut(&mut self) -> &mut Vec<String> {
        &mut self.values
    }
}

impl AsMut<Vec<String>> for PostalArea {
    fn as_mut(&mut self) -> &mut Vec<String> {
        &mut self.values
    }
}

/// A metro code: digits, trimmed.
fn numeric(s: &str) -> Option<String> {
    let code = s.trim();
    (!code.is_empty() && code.bytes().all(|b| b.is_ascii_digit())).then(|| code.to_string())
}

fn metros(v: &List<Area>, path: &str, issues: &mut Issues) -> Vec<MetroArea> {
    let mut out: Vec<MetroArea> = Vec::new();
    for (i, item) in area_items(v, path, issues).iter().enumerate() {
        let at = || index(path, i);
        let Some(obj) = area_object(item, &at, &["system", "values"], issues) else {
            continue;
        };
        let system = match &obj.system {
            Some(Str::Ok(s)) if vocab::METRO_SYSTEMS.contains(&&**s) => Some(&**s),
            None => {
                issues.add(format!("{}.system", at()), "required");
                None
            }
            _ => {
                issues.add(
                    format!("{}.system", at()),
                    format!("must be one of: {}", vocab::METRO_SYSTEMS.join(", ")),
                );
                None
            }
        };
        let values = area_values(obj, &at, issues, |s| {
            let Some(code) = numeric(s) else {
                return Err("must be a numeric string code such as \"501\"".into());
            };
            // A vocabulary lookup takes the key the code holds.
            if system == Some("nielsen_dma") && !vocab::is_dma(&code) {
                Err("is not a Nielsen DMA code".into())
            } else {
                Ok(code)
            }
        });
        if let Some(system) = system {
            let area = MetroArea {
                system: system.to_string(),
                values,
            };
            merge(&mut out, area, |a, b| a.system == b.system);
        }
    }
    out
}

fn postal_areas(v: &List<Area>, path: &str, issues: &mut Issues) -> Vec<PostalArea> {
    let mut out: Vec<PostalArea> = Vec::new();
    for (i, item) in area_items(v, path, issues).iter().enumerate() {
        let at = || index(path, i);
        let Some(obj) = area_object(item, &at, &["country", "system", "values"], issues) else {
            continue;
        };
        let system = match &obj.system {
            None => {
                issues.add(format!("{}.system", at()), "required");
                None
            }
            Some(Str::Ok(s)) => Some(s.trim().to_ascii_lowercase()),
            Some(Str::NotStr) => {
                issues.add(format!("{}.system", at()), "must be a string");
                None
            }
        };
        // The (country, system) pair, when it is a valid one.
        let pair: Option<(String, String)> = match (&obj.country, system) {
            (None, Some(system)) => match postal::legacy(&system) {
                Some((c, s)) => Some((c.to_string(), s.to_string())),
                None => {
                    issues.add(
                        format!("{}.country", at()),
                        format!(
                            "required; areas without country are accepted only for the deprecated systems {}",
                            postal::LEGACY_SYSTEMS
                                .iter()
                                .map(|(n, _, _)| *n)
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    );
                    None
                }
            },
            (None, None) => {
                issues.add(format!("{}.country", at()), "required");
                None
            }
            (Some(c), system) => {
                let code = match c {
                    Str::Ok(c) => country(c).ok(),
                    Str::NotStr => None,
                };
                let code = match code {
                    Some(code) => Some(code),
                    _ => {
                        issues.add(
                            format!("{}.country", at()),
                            "must be an ISO 3166-1 alpha-2 country code such as US",
                        );
                        None
                    }
                };
                match (code, system) {
                    (Some(code), Some(system)) => {
                        let allowed = postal::systems_for(&code);
                        if allowed.contains(&system.as_str()) {
                            Some((code, system))
                        } else {
                            issues.add(
                                format!("{}.system", at()),
                                format!("for country {code} must be {}", allowed.join(" or ")),
                            );
                            None
                        }
                    }
                    _ => None,
                }
            }
        };
        let values = match &pair {
            Some((c, s)) => {
                let format = postal::Format::of(c, s);
                area_values(obj, &at, issues, |v| format.normalize(v))
            }
            // The format depends on the pair: only the shape can be checked.
            None => area_values(obj, &at, issues, |v| Ok(v.to_string())),
        };
        if let Some((country, system)) = pair {
            let area = PostalArea {
                country,
                system,
                values,
            };
            merge(&mut out, area, |a, b| {
                a.country == b.country && a.system == b.system
            });
        }
    }
    out
}

/// Parses `constraints` (`v`, e.g. a campaign body's), reporting every
/// problem under `base`; see [`check_constraints`].
pub fn parse_constraints(v: &Value, base: &str, issues: &mut Issues) -> Option<Constraints> {
    match Raw::deserialize(v) {
        Ok(raw) => check_constraints(&raw, base, issues),
        Err(e) => {
            issues.add(base, e.to_string());
            None
        }
    }
}

/// Checks and normalises `constraints` as read, reporting every problem
/// under `base` (e.g. `constraints.geo_postal_areas[2].values[5]`). `Some`
/// only when nothing was wrong. `null` or absence is the caller's business.
pub fn check_constraints(raw: &Raw, base: &str, issues: &mut Issues) -> Option<Constraints> {
    let before = issues.0.len();
    let Raw::Obj(fields) = raw else {
        issues.add(base, "must be an object");
        return None;
    };
    let at = |key: &str| join(base, key);
    for (key, field) in fields {
        if matches!(field, Field::Unknown) {
            issues.add(
                at(key),
                format!("unknown field; expected one of: {}", FIELDS.join(", ")),
            );
        }
    }
    let list = |key: &str,
                issues: &mut Issues,
                check: &dyn Fn(&str) -> Result<String, String>|
     -> Vec<String> {
        match raw.get(key) {
            Some(Field::Strings(v)) => strings(v, &|| at(key), MAX_LIST, issues, check),
            _ => vec![],
        }
    };
    let channels = one_of(CHANNELS, "an AdCP media channel");
    let device_types = one_of(DEVICE_TYPES, "one of");
    let platforms = one_of(DEVICE_PLATFORMS, "one of");
    let mut c = Constraints {
        channels: list("channels", issues, &channels),
        geo_countries_exclude: list("geo_countries_exclude", issues, &country),
        geo_regions: list("geo_regions", issues, &region),
        geo_regions_exclude: list("geo_regions_exclude", issues, &region),
        language: list("language", issues, &language),
        device_type: list("device_type", issues, &device_types),
        device_type_exclude: list("device_type_exclude", issues, &device_types),
        device_platform: list("device_platform", issues, &platforms),
        ..Constraints::default()
    };
    c.geo_countries = match (raw.get("geo_countries"), raw.get("countries")) {
        (Some(_), Some(_)) => {
            issues.add(
                at("countries"),
                "deprecated alias of geo_countries; send geo_countries only",
            );
            list("geo_countries", issues, &country)
        }
        (None, Some(_)) => list("countries", issues, &country),
        _ => list("geo_countries", issues, &country),
    };
    for (key, out) in [
        ("geo_metros", &mut c.geo_metros),
        ("geo_metros_exclude", &mut c.geo_metros_exclude),
    ] {
        if let Some(Field::Areas(v)) = raw.get(key) {
            *out = metros(v, &at(key), issues);
        }
    }
    for (key, out) in [
        ("geo_postal_areas", &mut c.geo_postal_areas),
        ("geo_postal_areas_exclude", &mut c.geo_postal_areas_exclude),
    ] {
        if let Some(Field::Areas(v)) = raw.get(key) {
            *out = postal_areas(v, &at(key), issues);
        }
    }
    (issues.0.len() == before).then_some(c)
}

/// The targeting that results from a campaign's constraints and,
/// optionally, a package's. Absent include lists are unrestricted; present
/// ones list exactly what may match.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct EffectiveTargeting {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo_countries: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_countries_exclude: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo_regions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_regions_exclude: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo_metros: Option<Vec<MetroArea>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_metros_exclude: Vec<MetroArea>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub geo_postal_areas: Option<Vec<PostalArea>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub geo_postal_areas_exclude: Vec<PostalArea>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub language: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_type: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub device_type_exclude: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub device_platform: Option<Vec<String>>,
    /// Include dimensions left with nothing to match: their lists do not
    /// overlap, or their exclusions remove everything.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsatisfiable: Vec<String>,
}

/// Include lists intersect; an empty list is no restriction.
fn intersect(a: Vec<String>, b: &[String]) -> Option<Vec<String>> {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => None,
        (false, true) => Some(a),
        (true, false) => Some(b.to_vec()),
        (false, false) => {
            let set: HashSet<&str> = b.iter().map(String::as_str).collect();
            Some(a.into_iter().filter(|x| set.contains(x.as_str())).collect())
        }
    }
}

/// Exclude lists union.
fn union(mut a: Vec<String>, b: &[String]) -> Vec<String> {
    if b.is_empty() {
        return a;
    }
    let extra: Vec<String> = {
        let seen: HashSet<&str> = a.iter().map(String::as_str).collect();
        b.iter()
            .filter(|x| !seen.contains(x.as_str()))
            .cloned()
            .collect()
    };
    a.extend(extra);
    dedup(&mut a);
    a
}

fn union_areas<A: Clone + AsMut<Vec<String>>>(
    a: Vec<A>,
    b: &[A],
    same: impl Fn(&A, &A) -> bool,
) -> Vec<A> {
    let mut out: Vec<A> = a;
    for area in b {
        merge(&mut out, area.clone(), &same);
    }
    out
}

type PostalKey<'a> = (&'a str, &'a str, &'a str);

fn postal_keys(areas: &[PostalArea]) -> Vec<PostalKey<'_>> {
    areas
        .iter()
        .flat_map(|a| {
            a.values
                .iter()
                .map(move |v| (a.country.as_str(), a.system.as_str(), v.as_str()))
        })
        .collect()
}

/// The coarser system a finer one's codes lie in: a ZIP+4 in its ZIP, a
/// full GB postcode in its outward code, a full Canadian code in its FSA.
fn parent_system(country: &str, system: &str) -> Option<&'static str> {
    match (country, system) {
        ("US", "zip_plus_four") => Some("zip"),
        ("GB", "full") => Some("outward"),
        ("CA", "full") => Some("fsa"),
        _ => None,
    }
}

/// The coarser area a finer postal code lies in.
fn parent<'a>(k: &PostalKey<'a>) -> Option<PostalKey<'a>> {
    let system = parent_system(k.0, k.1)?;
    Some((k.0, system, cut(system)(k.2)?))
}

/// How a finer code is cut to its code in the coarser `system` (chosen once
/// per area, not per code).
fn cut(system: &str) -> fn(&str) -> Option<&str> {
    match system {
        "zip" => |c| c.get(..5),
        "outward" => |c| c.split(' ').next(),
        _ => |c| c.get(..3),
    }
}

/// Is `k` one of `set`'s codes, or inside one of them?
fn inside(k: &PostalKey, set: &HashSet<PostalKey>) -> bool {
    set.contains(k) || parent(k).is_some_and(|p| set.contains(&p))
}

/// Groups keys back into areas, one per (country, system), in first-seen order.
fn group_postal(keys: Vec<PostalKey>) -> Vec<PostalArea> {
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    let mut out: Vec<PostalArea> = Vec::new();
    let mut seen: HashSet<&PostalKey> = HashSet::with_capacity(keys.len());
    for k @ (c, s, v) in &keys {
        if !seen.insert(k) {
            continue;
        }
        let i = *index.entry((*c, *s)).or_insert_with(|| {
            out.push(PostalArea {
                country: c.to_string(),
                system: s.to_string(),
                values: vec![],
            });
            out.len() - 1
        });
        out[i].values.push(v.to_string());
    }
    out
}

/// Postal areas without the codes `excluded` covers, itself or by the
/// coarser area a code lies in. Areas are one per (country, system).
fn without_postal(areas: &mut Vec<PostalArea>, excluded: &[PostalArea]) {
    let sets: Vec<(&str, &str, HashSet<&str>)> = excluded
        .iter()
        .map(|a| {
            (
                a.country.as_str(),
                a.system.as_str(),
                a.values.iter().map(String::as_str).collect(),
            )
        })
        .collect();
    let set = |country: &str, system: &str| {
        sets.iter()
            .find(|(c, s, _)| *c == country && *s == system)
            .map(|(_, _, set)| set)
    };
    for PostalArea {
        country,
        system,
        values,
    } in areas.iter_mut()
    {
        let direct = set(country, system);
        let coarse = parent_system(country, system).and_then(|p| Some((set(country, p)?, cut(p))));
        if direct.is_none() && coarse.is_none() {
            continue;
        }
        values.retain(|v| {
            let out = direct.is_some_and(|d| d.contains(v.as_str()))
                || coarse.is_some_and(|(c, cut)| cut(v).is_some_and(|p| c.contains(p)));
            !out
        });
    }
    areas.retain(|a| !a.values.is_empty());
}

fn metro_keys(areas: &[MetroArea]) -> Vec<(&str, &str)> {
    areas
        .iter()
        .flat_map(|a| {
            a.values
                .iter()
                .map(move |v| (a.system.as_str(), v.as_str()))
        })
        .collect()
}

fn group_metros(keys: Vec<(&str, &str)>) -> Vec<MetroArea> {
    let mut index: HashMap<&str, usize> = HashMap::new();
    let mut out: Vec<MetroArea> = Vec::new();
    let mut seen: HashSet<(&str, &str)> = HashSet::with_capacity(keys.len());
    for k @ (s, v) in keys {
        if !seen.insert(k) {
            continue;
        }
        let i = *index.entry(s).or_insert_with(|| {
            out.push(MetroArea {
                system: s.to_string(),
                values: vec![],
            });
            out.len() - 1
        });
        out[i].values.push(v.to_string());
    }
    out
}

/// Metro areas without the codes `excluded` lists for their system.
fn without_metros(areas: &mut Vec<MetroArea>, excluded: &[MetroArea]) {
    for a in areas.iter_mut() {
        // Areas are one per system.
        if let Some(x) = excluded.iter().find(|x| x.system == a.system) {
            let set: HashSet<&str> = x.values.iter().map(String::as_str).collect();
            a.values.retain(|v| !set.contains(v.as_str()));
        }
    }
    areas.retain(|a| !a.values.is_empty());
}

fn region_country(code: &str) -> &str {
    code.split('-').next().unwrap_or(code)
}

impl Constraints {
    /// The effective targeting of these constraints, combined with a
    /// package's when given: include lists intersect, exclude lists union,
    /// then each include list loses what is excluded (including regions and
    /// postal codes of excluded or non-included countries).
    pub fn effective(&self, package: Option<&Constraints>) -> EffectiveTargeting {
        self.clone().into_effective(package)
    }

    /// [`Constraints::effective`], taking these constraints' lists rather
    /// than copying them.
    pub fn into_effective(self, package: Option<&Constraints>) -> EffectiveTargeting {
        let empty = Constraints::default();
        let p = package.unwrap_or(&empty);
        let mut e = EffectiveTargeting {
            channels: intersect(self.channels, &p.channels),
            geo_countries: intersect(self.geo_countries, &p.geo_countries),
            geo_countries_exclude: union(self.geo_countries_exclude, &p.geo_countries_exclude),
            geo_regions: intersect(self.geo_regions, &p.geo_regions),
            geo_regions_exclude: union(self.geo_regions_exclude, &p.geo_regions_exclude),
            geo_metros_exclude: union_areas(
                self.geo_metros_exclude,
                &p.geo_metros_exclude,
                |a, b| a.system == b.system,
            ),
            geo_postal_areas_exclude: union_areas(
                self.geo_postal_areas_exclude,
                &p.geo_postal_areas_exclude,
                |a, b| a.country == b.country && a.system == b.system,
            ),
            language: intersect(self.language, &p.language),
            device_type: intersect(self.device_type, &p.device_type),
            device_type_exclude: union(self.device_type_exclude, &p.device_type_exclude),
            device_platform: intersect(self.device_platform, &p.device_platform),
            ..EffectiveTargeting::default()
        };

        // Metros: intersect by (system, code); one side alone is kept as is
        // (already normalised), so the common case hashes nothing.
        let metros = match (self.geo_metros.is_empty(), p.geo_metros.is_empty()) {
            (true, true) => None,
            (false, true) => Some(self.geo_metros),
            (true, false) => Some(p.geo_metros.clone()),
            (false, false) => {
                let set: HashSet<_> = metro_keys(&p.geo_metros).into_iter().collect();
                Some(group_metros(
                    metro_keys(&self.geo_metros)
                        .into_iter()
                        .filter(|k| set.contains(k))
                        .collect(),
                ))
            }
        };
        e.geo_metros = metros.map(|mut areas| {
            without_metros(&mut areas, &e.geo_metros_exclude);
            areas
        });

        // Postal codes: with both sides, a code of one side is kept when it
        // lies within an area of the other (so a ZIP+4 narrows a ZIP).
        let postal = match (
            self.geo_postal_areas.is_empty(),
            p.geo_postal_areas.is_empty(),
        ) {
            (true, true) => None,
            (false, true) => Some(self.geo_postal_areas),
            (true, false) => Some(p.geo_postal_areas.clone()),
            (false, false) => {
                let (a, b) = (
                    postal_keys(&self.geo_postal_areas),
                    postal_keys(&p.geo_postal_areas),
                );
                let (sa, sb): (HashSet<_>, HashSet<_>) =
                    (a.iter().cloned().collect(), b.iter().cloned().collect());
                let mut keep: Vec<PostalKey> =
                    a.iter().filter(|x| inside(x, &sb)).cloned().collect();
                keep.extend(b.iter().filter(|y| inside(y, &sa)).cloned());
                Some(group_postal(keep))
            }
        };
        let countries_out: HashSet<&str> =
            e.geo_countries_exclude.iter().map(String::as_str).collect();
        let countries_in: Option<HashSet<&str>> = e
            .geo_countries
            .as_ref()
            .map(|l| l.iter().map(String::as_str).collect());
        let country_ok = |c: &str| {
            !countries_out.contains(c) && countries_in.as_ref().is_none_or(|l| l.contains(c))
        };
        e.geo_postal_areas = postal.map(|mut areas| {
            areas.retain(|a| country_ok(&a.country));
            without_postal(&mut areas, &e.geo_postal_areas_exclude);
            areas
        });
        let regions_exclude: HashSet<&str> =
            e.geo_regions_exclude.iter().map(String::as_str).collect();
        if let Some(list) = e.geo_regions.as_mut() {
            list.retain(|r| !regions_exclude.contains(r.as_str()) && country_ok(region_country(r)));
        }

        // Simple lists lose their exclusions.
        if let Some(list) = e.geo_countries.as_mut() {
            list.retain(|c| !countries_out.contains(c.as_str()));
        }
        if let Some(list) = e.device_type.as_mut() {
            list.retain(|d| !e.device_type_exclude.contains(d));
        }

        let checks: [(&str, Option<usize>); 8] = [
            ("channels", e.channels.as_ref().map(Vec::len)),
            ("geo_countries", e.geo_countries.as_ref().map(Vec::len)),
            ("geo_regions", e.geo_regions.as_ref().map(Vec::len)),
            ("geo_metros", e.geo_metros.as_ref().map(Vec::len)),
            (
                "geo_postal_areas",
                e.geo_postal_areas.as_ref().map(Vec::len),
            ),
            ("language", e.language.as_ref().map(Vec::len)),
            ("device_type", e.device_type.as_ref().map(Vec::len)),
            ("device_platform", e.device_platform.as_ref().map(Vec::len)),
        ];
        e.unsatisfiable = checks
            .iter()
            .filter(|(_, n)| *n == Some(0))
            .map(|(k, _)| k.to_string())
            .collect();
        e
    }
}

pub use super::vocab::metro_name;

/// A metro code with its label, for showing (`geo_metro_names`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MetroLabel {
    pub system: String,
    pub code: String,
    pub name: String,
}

/// The labels of every code of `areas` (codes without a label are skipped;
/// validated constraints have none).
pub fn metro_labels(areas: &[MetroArea]) -> Vec<MetroLabel> {
    areas
        .iter()
        .flat_map(|a| {
            a.values.iter().filter_map(move |code| {
                metro_name(&a.system, code).map(|name| MetroLabel {
                    system: a.system.clone(),
                    code: code.to_string(),
                    name: name.to_string(),
                })
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use serde_json::json;

    use super::*;

    fn parse(v: Value) -> Result<Constraints, Vec<(String, String)>> {
        let mut issues = Issues::default();
        parse_constraints(&v, "constraints", &mut issues)
            .ok_or_else(|| issues.0.into_iter().map(|i| (i.path, i.message)).collect())
    }

    #[test]
    fn the_reader_knows_the_keys_of_the_constraints_type() {
        // The type is the schema: its keys (and which hold areas) are what
        // the reader of raw constraints accepts, besides the alias.
        let schema = crate::ops::schema::of::<Constraints>();
        let props = schema["properties"].as_object().unwrap();
        let mut keys: Vec<&str> = props.keys().map(String::as_str).collect();
        let mut fields: Vec<&str> = FIELDS
            .iter()
            .copied()
            .filter(|k| *k != "countries")
            .collect();
        keys.sort();
        fields.sort();
        assert_eq!(keys, fields);
        let mut areas: Vec<&str> = props
            .iter()
            .filter(|(_, p)| p["items"].get("$ref").is_some())
            .map(|(k, _)| k.as_str())
            .collect();
        areas.sort();
        assert_eq!(areas, super::super::raw::AREA_KEYS);
    }

    #[test]
    fn normalises_and_merges() {
        let c = parse(json!({
            "countries": ["us", "US", "gb"],
            "geo_postal_areas": [
                {"country": "us", "system": "zip", "values": ["94105"]},
                {"system": "us_zip", "values": ["94105", "10001"]},
            ],
            "geo_metros": [{"system": "nielsen_dma", "values": ["501", "501"]}],
        }))
        .unwrap();
        assert_eq!(c.geo_countries, vec!["US", "GB"]);
        assert_eq!(c.geo_postal_areas.len(), 1);
        assert_eq!(c.geo_postal_areas[0].values, vec!["94105", "10001"]);
        assert_eq!(c.geo_metros[0].values, vec!["501"]);
    }

    #[test]
    fn every_issue_has_its_path() {
        let issues = parse(json!({
            "geo_countries": ["XX"],
            "geo_postal_areas": [
                {"country": "US", "system": "zip", "values": ["94105"]},
                {"country": "GB", "system": "zip", "values": ["SW1A"]},
                {"country": "US", "system": "zip", "values": ["1", "94105", "x"]},
            ],
            "geo_metros": [{"system": "nielsen_dma", "values": ["999"]}],
            "bogus": 1,
        }))
        .unwrap_err();
        let paths: Vec<&str> = issues.iter().map(|(p, _)| p.as_str()).collect();
        for want in [
            "constraints.bogus",
            "constraints.geo_countries[0]",
            "constraints.geo_postal_areas[1].system",
            "constraints.geo_postal_areas[2].values[0]",
            "constraints.geo_postal_areas[2].values[2]",
            "constraints.geo_metros[0].values[0]",
        ] {
            assert!(paths.contains(&want), "{want} missing from {paths:?}");
        }
    }

    #[test]
    fn effective_intersects_includes_and_unions_excludes() {
        let campaign = parse(json!({
            "geo_countries": ["US", "CA"],
            "geo_regions": ["US-CA", "US-NY", "CA-ON"],
            "geo_countries_exclude": ["CA"],
            "device_type": ["mobile", "ctv"],
            "geo_postal_areas": [{"country": "US", "system": "zip", "values": ["94105", "10001"]}],
            "geo_metros": [{"system": "nielsen_dma", "values": ["501", "803"]}],
        }))
        .unwrap();
        let package = parse(json!({
            "geo_regions_exclude": ["US-NY"],
            "device_type": ["desktop"],
            "geo_postal_areas": [{"country": "US", "system": "zip_plus_four", "values": ["94105-1234"]}],
            "geo_metros_exclude": [{"system": "nielsen_dma", "values": ["803"]}],
        }))
        .unwrap();
        let e = campaign.effective(Some(&package));
        assert_eq!(e.geo_countries, Some(vec!["US".to_string()]));
        assert_eq!(e.geo_regions, Some(vec!["US-CA".to_string()]));
        assert_eq!(e.geo_regions_exclude, vec!["US-NY"]);
        assert_eq!(e.device_type, Some(vec![]));
        assert!(e.unsatisfiable.contains(&"device_type".to_string()));
        let postal = e.geo_postal_areas.unwrap();
        assert_eq!(postal[0].system, "zip_plus_four");
        assert_eq!(postal[0].values, vec!["94105-1234"]);
        assert_eq!(e.geo_metros.unwrap()[0].values, vec!["501"]);
        assert!(e.channels.is_none());

        let alone = campaign.effective(None);
        assert_eq!(alone.device_type.unwrap().len(), 2);
    }

    #[test]
    fn every_listed_value_is_accepted_in_any_case() {
        for list in [CHANNELS, DEVICE_TYPES, DEVICE_PLATFORMS] {
            let check = one_of(list, "");
            for v in list {
                assert_eq!(check(&format!(" {} ", v.to_uppercase())), Ok(v.to_string()));
            }
        }
        assert!(one_of(CHANNELS, "")("product_placements").is_err());
        assert!(one_of(DEVICE_TYPES, "")("phone").is_err());
    }

    #[test]
    fn an_excluded_area_removes_the_finer_codes_inside_it() {
        let c = parse(json!({
            "geo_postal_areas": [
                {"country": "US", "system": "zip_plus_four", "values": ["10001-1234", "60601-0001"]},
                {"country": "GB", "system": "full", "values": ["EC1A 1BB", "SW1A 1AA"]},
                {"country": "CA", "system": "full", "values": ["K1A 0B1"]},
                {"country": "US", "system": "zip", "values": ["10001", "94105"]},
            ],
            "geo_postal_areas_exclude": [
                {"country": "US", "system": "zip", "values": ["10001"]},
                {"country": "GB", "system": "outward", "values": ["EC1A"]},
                {"country": "CA", "system": "fsa", "values": ["K1A"]},
            ],
        }))
        .unwrap();
        let kept: Vec<(String, Vec<String>)> = c
            .effective(None)
            .geo_postal_areas
            .unwrap()
            .into_iter()
            .map(|a| (a.system, a.values))
            .collect();
        assert_eq!(
            kept,
            vec![
                ("zip_plus_four".into(), vec!["60601-0001".into()]),
                ("full".into(), vec!["SW1A 1AA".into()]),
                ("zip".into(), vec!["94105".into()]),
            ]
        );
    }
}
