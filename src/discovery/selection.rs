//! Saved snapshots (proposal codes) and the products a user chose.

use sea_orm::{ColumnTrait, EntityTrait, QueryFilter};
use serde_json::Value;

use entity::discovery_proposal;

use crate::auth::CallerInfo;
use crate::error::ApiError;
use crate::ops::Ctx;

/// The snapshot saved under `code` for the caller's account.
pub async fn proposal_snapshot(
    ctx: &Ctx,
    caller: &CallerInfo,
    code: &str,
) -> Result<Value, ApiError> {
    let row = discovery_proposal::Entity::find_by_id(code.trim().to_string())
        .filter(discovery_proposal::Column::AccountId.eq(caller.account_id()))
        .one(&ctx.db)
        .await?
        .ok_or_else(|| ApiError::not_found("proposal"))?;
    serde_json::from_str(&row.snapshot).map_err(ApiError::internal)
}
