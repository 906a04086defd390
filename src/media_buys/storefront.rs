//! The storefront operator's view of the media buys placed at the
//! storefronts its account operates: what was sent to the seller (drafts
//! never sent are not shown), without the buyer's internal records.

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{media_buy, storefront_operator};

use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Filtered, Input, Nothing, Operation, Paged, Pagination, Verb};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontMediaBuyOut {
    pub storefront_id: i64,
    /// The seller's id of the buy (AdCP `media_buy_id`), once it gave one.
    pub adcp_media_buy_id: Option<String>,
    pub product_id: Option<String>,
    pub proposal_id: Option<String>,
    pub pricing_model: Option<String>,
    pub currency: String,
    pub budget: f64,
    /// The buyer's status of the buy and the seller's last reported one.
    pub status: String,
    pub adcp_status: Option<String>,
    pub sandbox: bool,
    pub sent_at: Option<DateTime<Utc>>,
}

impl From<media_buy::Model> for StorefrontMediaBuyOut {
    fn from(b: media_buy::Model) -> Self {
        StorefrontMediaBuyOut {
            storefront_id: b.storefront_id,
            adcp_media_buy_id: b.adcp_media_buy_id,
            product_id: b.product_id,
            proposal_id: b.proposal_id,
            pricing_model: b.pricing_model,
            currency: b.currency,
            budget: b.budget,
            status: b.status,
            adcp_status: b.adcp_status,
            sandbox: b.sandbox,
            sent_at: b.dispatched_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontBuysFilter {
    /// Only this storefront's buys.
    pub storefront_id: Option<i64>,
}

pub struct ListStorefrontMediaBuys;

impl Operation for ListStorefrontMediaBuys {
    const NAME: &'static str = "list_storefront_media_buys";
    const DESCRIPTION: &'static str = "Media buys sent to the storefronts this account operates, newest first (drafts never sent are not shown).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/storefront/media-buys";
    type Path = Nothing;
    type Query = Filtered<StorefrontBuysFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<StorefrontMediaBuyOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let mut select = media_buy::Entity::find()
            .filter(media_buy::Column::DispatchedAt.is_not_null())
            .filter(
                media_buy::Column::StorefrontId.in_subquery(
                    sea_orm::sea_query::Query::select()
                        .column(storefront_operator::Column::StorefrontId)
                        .from(storefront_operator::Entity)
                        .and_where(storefront_operator::Column::AccountId.eq(caller.account_id()))
                        .to_owned(),
                ),
            );
        if let Some(id) = filter.storefront_id {
            select = select.filter(media_buy::Column::StorefrontId.eq(id));
        }
        let select = select
            .order_by_desc(media_buy::Column::DispatchedAt)
            .order_by_desc(media_buy::Column::Id);
        Ok(page
            .fetch(&ctx.db, select, StorefrontMediaBuyOut::from)
            .await?)
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}
