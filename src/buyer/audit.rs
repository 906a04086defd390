//! The audit log: every create and update of a buyer resource writes who,
//! what, when and a field-level diff, in the same transaction as the change.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, PaginatorTrait, QueryFilter,
    QueryOrder, QuerySelect, Set,
};
use serde::Serialize;
use serde_json::{Map, Value, json};
use utoipa::ToSchema;

use entity::audit_log;

use crate::caller::CallerInfo;
use crate::error::ApiError;

/// `{field: {from, to}}` for every top-level field that differs, ignoring
/// timestamps. `before = Null` (a create) lists every field from `null`.
pub fn diff(before: &Value, after: &Value) -> Map<String, Value> {
    let mut changes = Map::new();
    let Some(after) = after.as_object() else {
        return changes;
    };
    for (k, to) in after {
        if k == "createdAt" || k == "updatedAt" {
            continue;
        }
        let from = before.get(k).unwrap_or(&Value::Null);
        if from != to {
            changes.insert(k.clone(), json!({ "from": from, "to": to }));
        }
    }
    changes
}

pub async fn record(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    action: &str,
    resource_type: &str,
    resource_id: &str,
    changes: Map<String, Value>,
) -> Result<(), ApiError> {
    audit_log::ActiveModel {
        account_id: Set(caller.account_id().to_string()),
        user_id: Set(caller.user.id),
        api_key_id: Set(Some(caller.api_key_id)),
        action: Set(action.to_string()),
        resource_type: Set(resource_type.to_string()),
        resource_id: Set(resource_id.to_string()),
        changes: Set(Value::Object(changes).to_string()),
        created_at: Set(Utc::now()),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(())
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditActor {
    pub user_id: i64,
    pub api_key_id: Option<i64>,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntry {
    pub id: i64,
    /// e.g. `advertiser.created`, `advertiser.updated`.
    pub action: String,
    pub resource_type: String,
    pub resource_id: String,
    pub actor: AuditActor,
    /// Field-level diff: `{field: {from, to}}`.
    #[schema(value_type = Object)]
    pub changes: Value,
    pub created_at: DateTime<Utc>,
}

/// The account's entries, newest first.
pub async fn list(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    take: u64,
    skip: u64,
) -> Result<(Vec<AuditEntry>, u64), ApiError> {
    let query =
        audit_log::Entity::find().filter(audit_log::Column::AccountId.eq(caller.account_id()));
    let total = query.clone().count(db).await?;
    let rows = query
        .order_by_desc(audit_log::Column::Id)
        .offset(skip)
        .limit(take)
        .all(db)
        .await?;
    let entries = rows
        .into_iter()
        .map(|r| AuditEntry {
            id: r.id,
            action: r.action,
            resource_type: r.resource_type,
            resource_id: r.resource_id,
            actor: AuditActor {
                user_id: r.user_id,
                api_key_id: r.api_key_id,
            },
            changes: serde_json::from_str(&r.changes).unwrap_or_else(|_| json!({})),
            created_at: r.created_at,
        })
        .collect();
    Ok((entries, total))
}
