//! Registered storefronts (seller agents) as buyers see them, and as the
//! seller client needs them.

use chrono::{DateTime, Utc};
use sea_orm::{ConnectionTrait, EntityTrait, PaginatorTrait, QueryOrder, QuerySelect};
use serde::Serialize;
use utoipa::ToSchema;

use entity::storefront;

use super::seller::{AuthToken, StorefrontTarget};
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Nothing, Operation, Page, Paged, Pagination, Verb};
use crate::types::{OutboundUrl, UrlPolicy};

/// A storefront as listed. Its credential is never part of it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontOut {
    pub id: i64,
    pub name: String,
    /// The seller agent's MCP endpoint.
    pub url: String,
    pub created_at: DateTime<Utc>,
}

impl From<storefront::Model> for StorefrontOut {
    fn from(m: storefront::Model) -> Self {
        StorefrontOut {
            id: m.id,
            name: m.name,
            url: m.url,
            created_at: m.created_at,
        }
    }
}

/// Storefronts in registration order (`id` ascending), so pages are stable.
pub async fn list(
    db: &impl ConnectionTrait,
    page: Page<20, 100>,
) -> Result<Paged<StorefrontOut>, ApiError> {
    let total = storefront::Entity::find().count(db).await?;
    let rows = storefront::Entity::find()
        .order_by_asc(storefront::Column::Id)
        .offset(page.skip)
        .limit(page.take)
        .all(db)
        .await?;
    Ok(Paged {
        items: rows.into_iter().map(StorefrontOut::from).collect(),
        pagination: page.of(total),
    })
}

/// What the seller client needs to call a storefront, its token included.
/// The stored URL is checked again against the current policy (a URL
/// registered while insecure URLs were allowed is refused without it).
pub async fn target(
    db: &impl ConnectionTrait,
    id: i64,
    policy: UrlPolicy,
) -> Result<Option<Result<StorefrontTarget, String>>, sea_orm::DbErr> {
    let Some(row) = storefront::Entity::find_by_id(id).one(db).await? else {
        return Ok(None);
    };
    Ok(Some(OutboundUrl::parse(&row.url, policy).map(|url| {
        StorefrontTarget {
            id: row.id,
            name: row.name,
            url,
            auth_token: row.auth_token.map(AuthToken::new),
        }
    })))
}

pub struct ListStorefronts;

impl Operation for ListStorefronts {
    const NAME: &'static str = "list_storefronts";
    const DESCRIPTION: &'static str =
        "The registered storefronts (seller agents), in registration order.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/storefronts";
    type Path = Nothing;
    type Query = Page<20, 100>;
    type Body = Nothing;
    type Output = Paged<StorefrontOut>;

    async fn run(
        ctx: &Ctx,
        _caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        list(&ctx.db, input.query).await
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}
