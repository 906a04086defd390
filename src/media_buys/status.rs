//! Reading a campaign's buys: the records `create_media_buys` answers with,
//! and `media-buy-status` (answered from the database; the poller keeps it
//! fresh, so a status read never waits on a seller).

use std::collections::BTreeMap;

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde_json::Value;

use entity::{media_buy, storefront};

use super::model::{AgentQueried, MediaBuyOut, MediaBuyStatusOut, Money, StatusError, StatusRow};
use crate::error::ApiError;

pub fn out(b: media_buy::Model) -> MediaBuyOut {
    MediaBuyOut {
        media_buy_id: b.id,
        campaign_id: b.campaign_id,
        advertiser_id: b.advertiser_id,
        product_query_id: b.discovery_id,
        storefront_id: b.storefront_id,
        kind: b.kind,
        product_id: b.product_id,
        proposal_id: b.proposal_id,
        pricing_option_id: b.pricing_option_id,
        pricing_model: b.pricing_model,
        budget: Money {
            amount: b.budget,
            currency: b.currency,
        },
        bid_price: b.bid_price,
        package: serde_json::from_str(&b.package).unwrap_or(Value::Null),
        status: b.status,
        adcp_status: b.adcp_status,
        adcp_media_buy_id: b.adcp_media_buy_id,
        task_id: b.adcp_task_id,
        sandbox: b.sandbox,
        errors: serde_json::from_str(&b.errors).unwrap_or_else(|_| Value::Array(vec![])),
        created_at: b.created_at,
        updated_at: b.updated_at,
    }
}

/// The campaign's buys, oldest first.
pub async fn buys_of(
    db: &impl ConnectionTrait,
    account_id: &str,
    campaign_id: &str,
) -> Result<Vec<media_buy::Model>, ApiError> {
    Ok(media_buy::Entity::find()
        .filter(media_buy::Column::AccountId.eq(account_id))
        .filter(media_buy::Column::CampaignId.eq(campaign_id))
        .order_by_asc(media_buy::Column::CreatedAt)
        .order_by_asc(media_buy::Column::Id)
        .all(db)
        .await?)
}

/// `media-buy-status` of the campaign's buys that reached (or are reaching)
/// a seller; DRAFT buys are the cart, not yet a status.
pub async fn status(
    db: &impl ConnectionTrait,
    account_id: &str,
    campaign_id: &str,
) -> Result<MediaBuyStatusOut, ApiError> {
    let buys = buys_of(db, account_id, campaign_id).await?;
    let mut per_storefront: BTreeMap<i64, usize> = BTreeMap::new();
    let mut rows = Vec::with_capacity(buys.len());
    let mut errors = Vec::new();
    for b in buys.into_iter().filter(|b| b.status != super::model::DRAFT) {
        *per_storefront.entry(b.storefront_id).or_default() += 1;
        if let Ok(Value::Array(errs)) = serde_json::from_str::<Value>(&b.errors) {
            for e in errs {
                errors.push(StatusError {
                    media_buy_id: b.id.clone(),
                    storefront_id: b.storefront_id,
                    code: e
                        .get("code")
                        .and_then(Value::as_str)
                        .unwrap_or("SELLER_ERROR")
                        .to_string(),
                    message: e
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                });
            }
        }
        let delivery = super::delivery::stored(&b);
        rows.push(StatusRow {
            media_buy_id: b.id,
            adcp_media_buy_id: b.adcp_media_buy_id,
            storefront_id: b.storefront_id,
            internal_status: b.status,
            adcp_status: b.adcp_status,
            previous_internal_status: b.previous_status,
            previous_adcp_status: b.previous_adcp_status,
            status_changed_at: b.status_changed_at,
            last_checked_at: b.last_polled_at.or(b.dispatched_at),
            next_check_at: b.next_poll_at,
            delivery,
        });
    }
    let names: BTreeMap<i64, String> = storefront::Entity::find()
        .filter(storefront::Column::Id.is_in(per_storefront.keys().copied()))
        .all(db)
        .await?
        .into_iter()
        .map(|s| (s.id, s.name))
        .collect();
    Ok(MediaBuyStatusOut {
        media_buys: rows,
        agents_queried: per_storefront
            .into_iter()
            .map(|(id, n)| AgentQueried {
                storefront_id: id,
                storefront_name: names.get(&id).cloned().unwrap_or_default(),
                media_buys: n,
            })
            .collect(),
        errors,
    })
}
