//! Each user's delivery preferences: per topic and channel (a row only
//! where the user chose), and the `email` channel's address.

use std::collections::HashMap;

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};

use entity::{notification_preference as pref, notification_setting as setting};

use super::model::{PreferencesIn, PreferencesOut, TopicPreference};
use super::topics;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Issues};

pub async fn get(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
) -> Result<PreferencesOut, ApiError> {
    let user = caller.user.id;
    let chosen: HashMap<(String, String), bool> = pref::Entity::find()
        .filter(pref::Column::UserId.eq(user))
        .all(db)
        .await?
        .into_iter()
        .map(|p| ((p.topic, p.channel), p.enabled))
        .collect();
    let on = |topic: &str, channel: &str| {
        chosen
            .get(&(topic.to_string(), channel.to_string()))
            .copied()
            .unwrap_or_else(|| topics::default_on(channel))
    };
    let email_address = setting::Entity::find_by_id(user)
        .one(db)
        .await?
        .and_then(|s| s.email_address);
    Ok(PreferencesOut {
        email_address,
        topics: topics::TOPICS
            .iter()
            .map(|(t, a)| TopicPreference {
                topic: t.to_string(),
                audience: a.as_str().into(),
                console: on(t, topics::CONSOLE),
                webhook: on(t, topics::WEBHOOK),
                email: on(t, topics::EMAIL),
            })
            .collect(),
    })
}

/// Checks everything first (nothing is written on a bad input), then
/// writes the changes in one transaction.
pub async fn update(
    db: &sea_orm::DatabaseConnection,
    caller: &CallerInfo,
    body: PreferencesIn,
) -> Result<PreferencesOut, ApiError> {
    let mut issues = Issues::default();
    let address = match &body.email_address {
        Some(Some(a)) => match crate::types::Email::parse(a) {
            Ok(e) => Some(Some(e.as_str().to_string())),
            Err(msg) => {
                issues.add("emailAddress", msg);
                None
            }
        },
        Some(None) => Some(None),
        None => None,
    };
    let mut rows = Vec::new();
    let now = Utc::now();
    for (i, change) in body.topics.iter().enumerate() {
        if topics::audience(&change.topic).is_none() {
            issues.add(
                format!("topics[{i}].topic"),
                format!(
                    "unknown topic '{}'; the topics: {}",
                    change.topic,
                    topics::names().join(", ")
                ),
            );
            continue;
        }
        for (channel, value) in [
            (topics::CONSOLE, change.console),
            (topics::WEBHOOK, change.webhook),
            (topics::EMAIL, change.email),
        ] {
            if let Some(enabled) = value {
                rows.push(pref::ActiveModel {
                    user_id: Set(caller.user.id),
                    topic: Set(change.topic.clone()),
                    channel: Set(channel.to_string()),
                    enabled: Set(enabled),
                    updated_at: Set(now),
                });
            }
        }
    }
    issues.into_result()?;
    let txn = crate::db::begin_write(db).await?;
    if !rows.is_empty() {
        pref::Entity::insert_many(rows)
            .on_conflict(
                OnConflict::columns([
                    pref::Column::UserId,
                    pref::Column::Topic,
                    pref::Column::Channel,
                ])
                .update_columns([pref::Column::Enabled, pref::Column::UpdatedAt])
                .to_owned(),
            )
            .exec_without_returning(&txn)
            .await?;
    }
    if let Some(address) = address {
        setting::Entity::insert(setting::ActiveModel {
            user_id: Set(caller.user.id),
            email_address: Set(address),
            updated_at: Set(now),
        })
        .on_conflict(
            OnConflict::column(setting::Column::UserId)
                .update_columns([setting::Column::EmailAddress, setting::Column::UpdatedAt])
                .to_owned(),
        )
        .exec_without_returning(&txn)
        .await?;
    }
    txn.commit().await?;
    get(db, caller).await
}
