//! Offset pagination as domain types: the request ([`Page`], `take`/`skip`
//! with a per-operation default and cap; [`OptionalPage`] where leaving both
//! out asks for everything) and the position of a result in the whole
//! ([`Pagination`]). The REST edge turns the latter into
//! `meta.pagination`.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use utoipa::openapi::RefOr;
use utoipa::openapi::schema::Schema;
use utoipa::{PartialSchema, ToSchema};

use super::input::{Part, RawInput, parse_query, schema_of};
use crate::error::ApiError;

/// Largest accepted `skip`: keeps offsets inside every backend's integer range.
pub const MAX_SKIP: u64 = 1_000_000_000;

/// `Page<DEFAULT, MAX>`: `take` in 1..=MAX (default DEFAULT), `skip` >= 0.
#[derive(Debug, Clone, Copy)]
pub struct Page<const DEFAULT: u64 = 20, const MAX: u64 = 100> {
    pub take: u64,
    pub skip: u64,
}

#[derive(Serialize, Deserialize, ToSchema, Clone, Copy, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
#[schema(as = PaginationMeta)]
pub struct Pagination {
    pub skip: u64,
    pub take: u64,
    pub total: u64,
    pub has_more: bool,
}

#[derive(Deserialize)]
struct Raw {
    take: Option<String>,
    skip: Option<String>,
}

impl<const DEFAULT: u64, const MAX: u64> Page<DEFAULT, MAX> {
    pub fn parse(query: &str) -> Result<Self, ApiError> {
        let raw: Raw = parse_query(query)?;
        let take = match raw.take {
            None => DEFAULT,
            Some(t) => match t.parse::<u64>() {
                Ok(n) if (1..=MAX).contains(&n) => n,
                _ => {
                    return Err(ApiError::invalid(
                        "take",
                        format!("must be an integer from 1 to {MAX}"),
                    ));
                }
            },
        };
        let skip = match raw.skip {
            None => 0,
            Some(s) => match s.parse::<u64>() {
                Ok(n) if n <= MAX_SKIP => n,
                _ => {
                    return Err(ApiError::invalid(
                        "skip",
                        format!("must be an integer from 0 to {MAX_SKIP}"),
                    ));
                }
            },
        };
        Ok(Page { take, skip })
    }

    pub fn of(&self, total: u64) -> Pagination {
        Pagination {
            skip: self.skip,
            take: self.take,
            total,
            has_more: self.skip.saturating_add(self.take) < total,
        }
    }
}

impl<const DEFAULT: u64, const MAX: u64> Part for Page<DEFAULT, MAX> {
    const PAGINATED: bool = true;
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError> {
        Self::parse(&raw.query)
    }
    fn schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "take": {"type": "integer", "minimum": 1, "maximum": MAX, "default": DEFAULT,
                    "description": format!("Page size, 1 to {MAX} (default {DEFAULT}).")},
                "skip": {"type": "integer", "minimum": 0, "maximum": MAX_SKIP, "default": 0,
                    "description": "Rows to skip (default 0)."},
            },
        }))
    }
}

/// `take`/`skip` for a list the spec answers in full: without either, the
/// whole list (`None`); with one or both, a page as [`Page`] reads it.
#[derive(Debug, Clone, Copy)]
pub struct OptionalPage<const DEFAULT: u64 = 20, const MAX: u64 = 100>(
    pub Option<Page<DEFAULT, MAX>>,
);

impl<const DEFAULT: u64, const MAX: u64> OptionalPage<DEFAULT, MAX> {
    pub fn parse(query: &str) -> Result<Self, ApiError> {
        let raw: Raw = parse_query(query)?;
        if raw.take.is_none() && raw.skip.is_none() {
            return Ok(OptionalPage(None));
        }
        Page::parse(query).map(|page| OptionalPage(Some(page)))
    }

    /// Where `total` items, all of them when no page was asked for, sit.
    pub fn of(&self, total: u64) -> Pagination {
        match self.0 {
            Some(page) => page.of(total),
            None => Pagination {
                skip: 0,
                take: total,
                total,
                has_more: false,
            },
        }
    }
}

impl<const DEFAULT: u64, const MAX: u64> Part for OptionalPage<DEFAULT, MAX> {
    const PAGINATED: bool = true;
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError> {
        Self::parse(&raw.query)
    }
    fn schema() -> Option<Value> {
        Some(json!({
            "type": "object",
            "properties": {
                "take": {"type": "integer", "minimum": 1, "maximum": MAX,
                    "description": format!("Page size (default {DEFAULT} when skip is given). Without take and skip, the whole list.")},
                "skip": {"type": "integer", "minimum": 0, "maximum": MAX_SKIP,
                    "description": "Rows to skip (default 0)."},
            },
        }))
    }
}

/// A page of items and where it sits in the whole. Serializes, and is
/// described, as the items.
#[derive(Debug, Clone)]
pub struct Paged<T> {
    pub items: Vec<T>,
    pub pagination: Pagination,
}

impl<T: Serialize> Serialize for Paged<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.items.serialize(s)
    }
}

impl<const DEFAULT: u64, const MAX: u64> Page<DEFAULT, MAX> {
    /// This page of `select` (already filtered and ordered), each row
    /// mapped by `map`, with the total of the whole.
    pub async fn fetch<E, T>(
        &self,
        db: &impl sea_orm::ConnectionTrait,
        select: sea_orm::Select<E>,
        map: impl FnMut(E::Model) -> T,
    ) -> Result<Paged<T>, sea_orm::DbErr>
    where
        E: sea_orm::EntityTrait,
        E::Model: Sync,
    {
        use sea_orm::{PaginatorTrait, QuerySelect};
        let total = select.clone().count(db).await?;
        let rows = select.offset(self.skip).limit(self.take).all(db).await?;
        Ok(Paged {
            items: rows.into_iter().map(map).collect(),
            pagination: self.of(total),
        })
    }
}

/// An array of `T` by name (`T` is among the named types it reaches).
impl<T: ToSchema> PartialSchema for Paged<T> {
    fn schema() -> RefOr<Schema> {
        utoipa::openapi::schema::ArrayBuilder::new()
            .items(utoipa::openapi::Ref::from_schema_name(T::name()))
            .into()
    }
}

impl<T: ToSchema> ToSchema for Paged<T> {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((T::name().into_owned(), T::schema()));
        T::schemas(schemas);
    }
}

/// A page and the operation's own query filters `F`, e.g. a list filtered by
/// status. `F` must ignore `take` and `skip` (no `deny_unknown_fields`).
#[derive(Debug, Clone)]
pub struct Filtered<F, const DEFAULT: u64 = 20, const MAX: u64 = 100> {
    pub page: Page<DEFAULT, MAX>,
    pub filter: F,
}

impl<F, const DEFAULT: u64, const MAX: u64> Part for Filtered<F, DEFAULT, MAX>
where
    F: serde::de::DeserializeOwned + ToSchema + Send,
{
    const PAGINATED: bool = true;
    fn from_raw(raw: &RawInput) -> Result<Self, ApiError> {
        Ok(Filtered {
            page: Page::parse(&raw.query)?,
            filter: parse_query(&raw.query)?,
        })
    }
    fn schema() -> Option<Value> {
        let mut schema = <Page<DEFAULT, MAX> as Part>::schema()?;
        let mut filter = schema_of::<F>()?;
        let mut defs = serde_json::Map::new();
        super::schema::hoist(&mut filter, &mut defs);
        if let (Some(props), Value::Object(more)) = (
            schema["properties"].as_object_mut(),
            filter["properties"].take(),
        ) {
            props.extend(more);
        }
        Some(super::schema::with_defs(schema, defs))
    }
}
