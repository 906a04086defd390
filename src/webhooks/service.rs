//! Webhook subscription storage: create, list and delete, always within the
//! caller's account.

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, EntityTrait, PaginatorTrait, QueryFilter, QueryOrder,
    QuerySelect, Set,
};

use entity::webhook_subscription as sub;

use super::events::QUEUE;
use super::model::{DeliveryOut, STATUS_ACTIVE, SubscriptionCreate, SubscriptionOut, new_id};
use super::secret;
use crate::caller::CallerInfo;
use crate::error::ApiError;
use crate::ops::{Ctx, OptionalPage, Page, Paged};
use crate::outbox;

/// Registers a subscription: `active`, no failures yet. Nothing is written
/// unless every field is valid.
pub async fn create(
    ctx: &Ctx,
    caller: &CallerInfo,
    input: SubscriptionCreate,
) -> Result<SubscriptionOut, ApiError> {
    let valid = input.validate(ctx.config.url_policy())?;
    let id = new_id();
    let stored_secret = secret::seal(&valid.secret, &id, ctx.config.webhook_secret_key.as_ref())?;
    let event_types = serde_json::to_string(&valid.event_types).map_err(ApiError::internal)?;
    let now = Utc::now();
    let row = sub::ActiveModel {
        id: Set(id),
        account_id: Set(caller.account_id().to_string()),
        url: Set(valid.url.as_str().to_string()),
        event_types: Set(event_types),
        secret: Set(stored_secret),
        status: Set(STATUS_ACTIVE.to_string()),
        failure_count: Set(0),
        last_success: Set(None),
        last_failure: Set(None),
        created_at: Set(now),
        updated_at: Set(now),
    }
    .insert(&ctx.db)
    .await?;
    SubscriptionOut::try_from(row)
}

/// The account's subscriptions, newest first.
pub async fn list(
    ctx: &Ctx,
    caller: &CallerInfo,
    page: OptionalPage<20, 100>,
) -> Result<Paged<SubscriptionOut>, ApiError> {
    let mine = sub::Entity::find().filter(sub::Column::AccountId.eq(caller.account_id()));
    let newest_first = mine
        .clone()
        .order_by_desc(sub::Column::CreatedAt)
        .order_by_desc(sub::Column::Id);
    let (rows, total) = match page.0 {
        Some(p) => (
            newest_first
                .offset(p.skip)
                .limit(p.take)
                .all(&ctx.db)
                .await?,
            mine.count(&ctx.db).await?,
        ),
        None => {
            let rows = newest_first.all(&ctx.db).await?;
            let total = rows.len() as u64;
            (rows, total)
        }
    };
    Ok(Paged {
        items: rows
            .into_iter()
            .map(SubscriptionOut::try_from)
            .collect::<Result<_, _>>()?,
        pagination: page.of(total),
    })
}

/// Deletes one of the account's subscriptions and returns it as it was.
/// Its queued deliveries and its log go in the same transaction, so no
/// delivery starts afterwards (one already under way finishes, and its
/// record finds nothing to update); another account's subscription is
/// reported as missing.
pub async fn delete(ctx: &Ctx, caller: &CallerInfo, id: &str) -> Result<SubscriptionOut, ApiError> {
    let row = find(ctx, caller, id).await?;
    let _turn = ctx.writes.enter().await;
    let txn = crate::db::begin_write(&ctx.db).await?;
    let gone = sub::Entity::delete_many()
        .filter(sub::Column::Id.eq(id))
        .filter(sub::Column::AccountId.eq(caller.account_id()))
        .exec(&txn)
        .await?;
    if gone.rows_affected == 0 {
        // Deleted concurrently by another request.
        return Err(ApiError::not_found("webhook subscription"));
    }
    outbox::store::delete_lane(&txn, QUEUE, id).await?;
    txn.commit().await?;
    SubscriptionOut::try_from(row)
}

/// One of the account's subscriptions; another account's is missing.
async fn find(ctx: &Ctx, caller: &CallerInfo, id: &str) -> Result<sub::Model, ApiError> {
    sub::Entity::find_by_id(id.to_string())
        .filter(sub::Column::AccountId.eq(caller.account_id()))
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::not_found("webhook subscription"))
}

/// A subscription's deliveries, newest first: queued ones, and every
/// attempt with its time, status code, duration and error class.
pub async fn deliveries(
    ctx: &Ctx,
    caller: &CallerInfo,
    id: &str,
    page: Page<20, 100>,
) -> Result<Paged<DeliveryOut>, ApiError> {
    find(ctx, caller, id).await?;
    let (rows, total) = outbox::store::history(&ctx.db, QUEUE, id, page.skip, page.take).await?;
    Ok(Paged {
        items: rows.into_iter().map(DeliveryOut::from).collect(),
        pagination: page.of(total),
    })
}

/// The signing secret of a stored subscription, for the delivery worker.
pub fn signing_secret(
    row: &sub::Model,
    key: Option<&secret::SecretKey>,
) -> Result<String, secret::OpenError> {
    secret::open(&row.secret, &row.id, key)
}
