//! Insights: what the buyer learns from what it bought.
//!
//! - [`cohorts`]: the test cohorts of auto-selected products (the rows
//!   `media_buys::auto_select` writes with the choice) and how each
//!   performed, from the delivery rows and the conversions stored here.
//! - [`feedback`]: people's ratings of a product, media buy or proposal.
//! - [`measurement`]: the measurement engine: an advertiser's event
//!   sources, conversion events synced in batches (deduplicated by event
//!   id per source), and conversions by day, source, campaign and type.
//!
//! Every query is scoped to the caller's account: another account's row is
//! never visible, and a filter naming another account's advertiser or
//! campaign is 404 (as `reporting` answers). Everything is answered from
//! the database; nothing here calls a seller. Docs: docs/api/insights.md.

pub mod cohorts;
pub mod feedback;
pub mod measurement;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter};

use entity::{advertiser, campaign};

use crate::error::ApiError;
use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<cohorts::ListTestCohorts>(),
    &def::<feedback::ListHumanFeedback>(),
    &def::<feedback::GiveHumanFeedback>(),
    &def::<measurement::ListEventSources>(),
    &def::<measurement::CreateEventSource>(),
    &def::<measurement::SyncConversionEvents>(),
    &def::<measurement::ListConversions>(),
];

/// The account's advertiser `id`, or 404.
pub(crate) async fn own_advertiser(
    db: &impl ConnectionTrait,
    account: &str,
    id: &str,
) -> Result<advertiser::Model, ApiError> {
    advertiser::Entity::find_by_id(id)
        .filter(advertiser::Column::AccountId.eq(account))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("advertiser"))
}

/// The account's campaign `id`, or 404.
pub(crate) async fn own_campaign(
    db: &impl ConnectionTrait,
    account: &str,
    id: &str,
) -> Result<campaign::Model, ApiError> {
    campaign::Entity::find_by_id(id)
        .filter(campaign::Column::AccountId.eq(account))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("campaign"))
}

/// Checks the `advertiserId` and `campaignId` filters of a listing (each
/// must be the account's, 404 otherwise; both: the campaign must be the
/// advertiser's, else the listing is empty).
pub(crate) async fn scope(
    db: &impl ConnectionTrait,
    account: &str,
    advertiser_id: Option<&str>,
    campaign_id: Option<&str>,
) -> Result<bool, ApiError> {
    let adv = match advertiser_id {
        Some(a) => Some(own_advertiser(db, account, a).await?),
        None => None,
    };
    let cmp = match campaign_id {
        Some(c) => Some(own_campaign(db, account, c).await?),
        None => None,
    };
    Ok(match (adv, cmp) {
        (Some(a), Some(c)) => a.id == c.advertiser_id,
        _ => true,
    })
}

/// Rounds money to six decimals (as reporting does).
pub(crate) fn money(v: f64) -> f64 {
    (v * 1e6).round() / 1e6
}
