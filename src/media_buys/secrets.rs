//! Each storefront's callback secret: made on first use (32 random bytes,
//! hex), sealed at rest like webhook secrets, sent to the seller in every
//! `create_media_buy`'s `push_notification_config.authentication` (AdCP's
//! HMAC-SHA256 scheme), and never returned by the API or logged.

use chrono::Utc;
use sea_orm::{ConnectionTrait, EntityTrait, Set, sea_query::OnConflict};

use entity::storefront_callback_secret as row;

use crate::config::Config;
use crate::error::ApiError;
use crate::webhooks::secret;

fn aad(storefront_id: i64) -> String {
    format!("storefront-callback:{storefront_id}")
}

/// The storefront's secret, made now if it has none (two instances making
/// one at once agree: the first insert wins and both read it back).
pub async fn for_storefront(
    db: &impl ConnectionTrait,
    config: &Config,
    storefront_id: i64,
) -> Result<String, ApiError> {
    if let Some(s) = read(db, config, storefront_id).await? {
        return Ok(s);
    }
    store_fresh(db, config, storefront_id, false).await?;
    read(db, config, storefront_id)
        .await?
        .ok_or_else(|| ApiError::internal("storefront callback secret vanished"))
}

/// The storefront's secret, if it has one.
pub async fn read(
    db: &impl ConnectionTrait,
    config: &Config,
    storefront_id: i64,
) -> Result<Option<String>, ApiError> {
    let Some(r) = row::Entity::find_by_id(storefront_id).one(db).await? else {
        return Ok(None);
    };
    secret::open(
        &r.secret,
        &aad(storefront_id),
        config.webhook_secret_key.as_ref(),
    )
    .map(Some)
    .map_err(ApiError::internal)
}

/// Replaces the storefront's secret (an operator's rotation); the next
/// buys carry the new one, callbacks signed with the old one fail.
pub async fn rotate(
    db: &impl ConnectionTrait,
    config: &Config,
    storefront_id: i64,
) -> Result<(), ApiError> {
    store_fresh(db, config, storefront_id, true).await
}

/// Stores a new random secret: over the old one when `replace`, else only
/// where none exists.
async fn store_fresh(
    db: &impl ConnectionTrait,
    config: &Config,
    storefront_id: i64,
    replace: bool,
) -> Result<(), ApiError> {
    let fresh = hex::encode(rand::random::<[u8; 32]>());
    let sealed = secret::seal(
        &fresh,
        &aad(storefront_id),
        config.webhook_secret_key.as_ref(),
    )?;
    let mut conflict = OnConflict::column(row::Column::StorefrontId);
    if replace {
        conflict.update_columns([row::Column::Secret, row::Column::CreatedAt]);
    } else {
        conflict.do_nothing();
    }
    row::Entity::insert(row::ActiveModel {
        storefront_id: Set(storefront_id),
        secret: Set(sealed),
        created_at: Set(Utc::now()),
    })
    .on_conflict(conflict)
    .exec_without_returning(db)
    .await?;
    Ok(())
}
