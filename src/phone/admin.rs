//! Operator actions on phone lines (`agentic-api admin ...`): enrolment,
//! sending limits, held messages. Every input is checked before anything
//! is written.

use chrono::Utc;
use sea_orm::sea_query::{Expr, OnConflict};
use sea_orm::{
    ColumnTrait, ConnectionTrait, DatabaseConnection, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde_json::{Value, json};

use entity::{
    account, outbox_job, phone_account_limit, phone_line, phone_line_limit, phone_message,
};

use super::limits;
use super::sender::{MessageJob, QUEUE};
use crate::auth::tenancy::TenancyError;
use crate::outbox::store;

fn invalid<T>(m: impl Into<String>) -> Result<T, TenancyError> {
    Err(TenancyError::Invalid(m.into()))
}

/// Enrols an account in agent phone lines (or withdraws it).
pub async fn enrol(
    db: &DatabaseConnection,
    account_id: &str,
    enrol: bool,
) -> Result<Value, TenancyError> {
    let res = account::Entity::update_many()
        .col_expr(account::Column::PhoneLinesEnabled, Expr::value(enrol))
        .filter(account::Column::Id.eq(account_id))
        .exec(db)
        .await?;
    if res.rows_affected == 0 {
        return invalid(format!("unknown account '{account_id}'"));
    }
    Ok(json!({ "accountId": account_id, "phoneLines": enrol }))
}

/// ISO 3166-1 alpha-2 codes, checked against the real list.
fn countries(raw: &str) -> Result<Vec<String>, TenancyError> {
    let list: Vec<String> = raw
        .split(',')
        .map(|c| c.trim().to_ascii_uppercase())
        .filter(|c| !c.is_empty())
        .collect();
    if list.is_empty() {
        return invalid("--countries needs at least one ISO 3166-1 alpha-2 code, e.g. US,CA");
    }
    for c in &list {
        if isocountry::CountryCode::for_alpha2(c).is_err() {
            return invalid(format!("'{c}' is not an ISO 3166-1 alpha-2 country code"));
        }
    }
    Ok(list)
}

/// Money as a decimal with up to 6 places, in micro-units.
fn micros(raw: &str, what: &str) -> Result<i64, TenancyError> {
    let bad = || {
        TenancyError::Invalid(format!(
            "{what} must be a non-negative amount such as 25 or 0.0079"
        ))
    };
    let (int, frac) = raw.trim().split_once('.').unwrap_or((raw.trim(), ""));
    if int.is_empty() && frac.is_empty() || frac.len() > 6 || int.len() > 12 {
        return Err(bad());
    }
    if !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let i: i64 = if int.is_empty() {
        0
    } else {
        int.parse().map_err(|_| bad())?
    };
    let f: i64 = if frac.is_empty() {
        0
    } else {
        format!("{frac:0<6}").parse().map_err(|_| bad())?
    };
    Ok(i * 1_000_000 + f)
}

fn money(m: i64) -> String {
    format!("{}.{:06}", m / 1_000_000, m % 1_000_000)
}

/// What `set-sending-limits` was asked.
#[derive(Debug, Clone, Default)]
pub struct LimitsChange {
    pub countries: Option<String>,
    pub per_minute: Option<i32>,
    pub daily_spend_cap: Option<String>,
    pub segment_price: Option<String>,
}

/// Sets a line's limits (fields not given keep their value); prints them.
pub async fn set_line_limits(
    db: &DatabaseConnection,
    line_id: &str,
    change: LimitsChange,
) -> Result<Value, TenancyError> {
    let Some(line) = (match line_id.parse::<i64>() {
        Ok(id) => phone_line::Entity::find_by_id(id).one(db).await?,
        Err(_) => None,
    }) else {
        return invalid(format!("unknown line '{line_id}'"));
    };
    let countries = change.countries.as_deref().map(countries).transpose()?;
    if change
        .per_minute
        .is_some_and(|n| !(1..=100_000).contains(&n))
    {
        return invalid("--per-minute must be 1 to 100000");
    }
    let cap = change
        .daily_spend_cap
        .as_deref()
        .map(|c| micros(c, "--daily-spend-cap"))
        .transpose()?;
    let price = change
        .segment_price
        .as_deref()
        .map(|c| micros(c, "--segment-price"))
        .transpose()?;
    let now = limits::for_line(db, &line.account_id, line.id).await?;
    let row = phone_line_limit::ActiveModel {
        line_id: Set(line.id),
        countries: Set(countries.unwrap_or(now.countries).join(",")),
        per_minute: Set(change.per_minute.unwrap_or(now.per_minute)),
        daily_spend_cap_micros: Set(cap.unwrap_or(now.daily_spend_cap_micros)),
        segment_price_micros: Set(price.unwrap_or(now.segment_price_micros)),
        updated_at: Set(Utc::now()),
    };
    phone_line_limit::Entity::insert(row)
        .on_conflict(
            OnConflict::column(phone_line_limit::Column::LineId)
                .update_columns([
                    phone_line_limit::Column::Countries,
                    phone_line_limit::Column::PerMinute,
                    phone_line_limit::Column::DailySpendCapMicros,
                    phone_line_limit::Column::SegmentPriceMicros,
                    phone_line_limit::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    let l = limits::for_line(db, &line.account_id, line.id).await?;
    Ok(json!({
        "endpointId": line.id.to_string(),
        "countries": l.countries,
        "perMinute": l.per_minute,
        "dailySpendCap": money(l.daily_spend_cap_micros),
        "segmentPrice": money(l.segment_price_micros),
    }))
}

/// Sets an account's limits over all its lines (`--countries`, `--daily-spend-cap`).
pub async fn set_account_limits(
    db: &DatabaseConnection,
    account_id: &str,
    change: LimitsChange,
) -> Result<Value, TenancyError> {
    if change.per_minute.is_some() || change.segment_price.is_some() {
        return invalid("--per-minute and --segment-price are limits of a line (use --endpoint)");
    }
    if account::Entity::find_by_id(account_id.to_string())
        .one(db)
        .await?
        .is_none()
    {
        return invalid(format!("unknown account '{account_id}'"));
    }
    let countries = change.countries.as_deref().map(countries).transpose()?;
    let cap = change
        .daily_spend_cap
        .as_deref()
        .map(|c| micros(c, "--daily-spend-cap"))
        .transpose()?;
    let prior = phone_account_limit::Entity::find_by_id(account_id.to_string())
        .one(db)
        .await?;
    let row = phone_account_limit::ActiveModel {
        account_id: Set(account_id.to_string()),
        countries: Set(countries
            .map(|c| c.join(","))
            .or(prior.as_ref().and_then(|p| p.countries.clone()))),
        daily_spend_cap_micros: Set(cap.or(prior.as_ref().and_then(|p| p.daily_spend_cap_micros))),
        updated_at: Set(Utc::now()),
    };
    phone_account_limit::Entity::insert(row)
        .on_conflict(
            OnConflict::column(phone_account_limit::Column::AccountId)
                .update_columns([
                    phone_account_limit::Column::Countries,
                    phone_account_limit::Column::DailySpendCapMicros,
                    phone_account_limit::Column::UpdatedAt,
                ])
                .to_owned(),
        )
        .exec_without_returning(db)
        .await?;
    let a = phone_account_limit::Entity::find_by_id(account_id.to_string())
        .one(db)
        .await?;
    Ok(json!({
        "accountId": account_id,
        "countries": a.as_ref().and_then(|a| a.countries.clone()).map(|c| c.split(',').map(String::from).collect::<Vec<_>>()),
        "dailySpendCap": a.and_then(|a| a.daily_spend_cap_micros).map(money),
    }))
}

/// Held jobs of the text queue with their messages.
async fn held(db: &impl ConnectionTrait) -> Result<Vec<(outbox_job::Model, i64)>, TenancyError> {
    let jobs = outbox_job::Entity::find()
        .filter(outbox_job::Column::Queue.eq(QUEUE))
        .filter(outbox_job::Column::State.eq(store::HELD))
        .order_by_asc(outbox_job::Column::Id)
        .all(db)
        .await?;
    Ok(jobs
        .into_iter()
        .filter_map(|j| {
            let id = serde_json::from_str::<MessageJob>(&j.payload)
                .ok()?
                .message_id;
            Some((j, id))
        })
        .collect())
}

/// Messages held for an operator (rule 10), oldest first.
pub async fn list_held(db: &DatabaseConnection) -> Result<Value, TenancyError> {
    let mut out = Vec::new();
    for (job, id) in held(db).await? {
        if let Some(m) = phone_message::Entity::find_by_id(id).one(db).await? {
            out.push(json!({
                "outboxId": m.id.to_string(),
                "accountId": m.account_id,
                "endpointId": m.line_id.to_string(),
                "channel": m.channel,
                "to": m.to_number,
                "createdAt": m.created_at,
                "reason": job.result.as_deref().and_then(|r| serde_json::from_str::<Value>(r).ok()).and_then(|r| r["error"].as_str().map(String::from)),
            }));
        }
    }
    Ok(json!({ "messages": out }))
}

/// Resolves a held message: `sent` (the operator found the carrier took
/// it; `carrier_id` if known) or `release` (one more automatic try).
pub async fn resolve_held(
    db: &DatabaseConnection,
    outbox_id: &str,
    sent: bool,
    carrier_id: Option<String>,
) -> Result<Value, TenancyError> {
    let Ok(id) = outbox_id.parse::<i64>() else {
        return invalid(format!("unknown held message '{outbox_id}'"));
    };
    let txn = crate::db::begin_write(db).await?;
    let Some((job, _)) = held(&txn).await?.into_iter().find(|(_, m)| *m == id) else {
        return invalid(format!("no held message with outboxId '{outbox_id}'"));
    };
    let now = Utc::now();
    let (job_state, status) = if sent {
        (store::DONE, "submitted")
    } else {
        (store::PENDING, "pending")
    };
    let mut q = outbox_job::Entity::update_many()
        .col_expr(outbox_job::Column::State, Expr::value(job_state))
        .filter(outbox_job::Column::Id.eq(job.id))
        .filter(outbox_job::Column::State.eq(store::HELD));
    q = if sent {
        q.col_expr(outbox_job::Column::FinishedAt, Expr::value(Some(now)))
    } else {
        q.col_expr(outbox_job::Column::AvailableAt, Expr::value(now))
            .col_expr(
                outbox_job::Column::FinishedAt,
                Expr::value(None::<chrono::DateTime<Utc>>),
            )
    };
    q.exec(&txn).await?;
    let mut m = phone_message::Entity::update_many()
        .col_expr(phone_message::Column::Status, Expr::value(status))
        .col_expr(phone_message::Column::UpdatedAt, Expr::value(now))
        .filter(phone_message::Column::Id.eq(id));
    if sent {
        m = m.col_expr(
            phone_message::Column::CarrierMessageId,
            Expr::value(carrier_id),
        );
    }
    m.exec(&txn).await?;
    txn.commit().await?;
    Ok(json!({ "outboxId": outbox_id, "status": status }))
}
