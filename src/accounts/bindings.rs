//! The advertisers' seller-account bindings as one listing, with status.

use chrono::{DateTime, Utc};
use sea_orm::{ColumnTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{advertiser, advertiser_linked_account as linked};

use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Filtered, Input, Nothing, Operation, Paged, Pagination, Verb};

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdvertiserAccountOut {
    pub advertiser_id: String,
    pub storefront_id: i64,
    pub source_id: String,
    /// The seller's account id.
    pub account_id: String,
    pub billing_type: Option<String>,
    /// `active` (locks the advertiser's brand and currency; media buys at
    /// the storefront use it), `pending_review` or `rejected`.
    pub status: String,
    /// The account-mapping intake, for a managed storefront's account.
    pub intake_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<linked::Model> for AdvertiserAccountOut {
    fn from(l: linked::Model) -> Self {
        AdvertiserAccountOut {
            advertiser_id: l.advertiser_id,
            storefront_id: l.storefront_id,
            source_id: l.source_id,
            account_id: l.account_ref,
            billing_type: l.billing_type,
            status: l.status,
            intake_id: l.intake_id,
            created_at: l.created_at,
        }
    }
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountsFilter {
    /// Only this advertiser's bindings.
    pub advertiser_id: Option<String>,
    /// Only bindings in this status.
    pub status: Option<String>,
}

pub struct ListAdvertiserAccounts;

impl Operation for ListAdvertiserAccounts {
    const NAME: &'static str = "list_advertiser_accounts";
    const DESCRIPTION: &'static str = "The advertisers' seller-account bindings with their status, oldest first; filter by advertiserId or status.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/advertiser-accounts";
    type Path = Nothing;
    type Query = Filtered<AccountsFilter, 20, 100>;
    type Body = Nothing;
    type Output = Paged<AdvertiserAccountOut>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let Filtered { page, filter } = input.query;
        let mut select = linked::Entity::find().filter(
            linked::Column::AdvertiserId.in_subquery(
                sea_orm::sea_query::Query::select()
                    .column(advertiser::Column::Id)
                    .from(advertiser::Entity)
                    .and_where(advertiser::Column::AccountId.eq(caller.account_id()))
                    .to_owned(),
            ),
        );
        if let Some(a) = filter.advertiser_id {
            select = select.filter(linked::Column::AdvertiserId.eq(a));
        }
        if let Some(s) = filter.status {
            select = select.filter(linked::Column::Status.eq(s));
        }
        let select = select.order_by_asc(linked::Column::Id);
        Ok(page
            .fetch(&ctx.db, select, AdvertiserAccountOut::from)
            .await?)
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}
