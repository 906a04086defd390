//! Sending limits (rule 1), shared by SMS and RCS: destination countries,
//! messages per minute per line, and a daily spend cap (segments × the
//! line's price per segment, per UTC day). A line has its own limits (the
//! defaults until an operator sets them); an account may add limits over
//! all its lines (countries it may reach, a daily cap).

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;

use sea_orm::{ColumnTrait, ConnectionTrait, DbErr, EntityTrait, QueryFilter, QuerySelect, Set};

use entity::{phone_account_limit, phone_daily_spend, phone_line_limit, phone_message};

/// Destinations of a fresh line: the +1 countries US and Canada.
pub const DEFAULT_COUNTRIES: &[&str] = &["US", "CA"];
/// Messages a minute per line.
pub const DEFAULT_PER_MINUTE: i32 = 60;
/// Price of one segment, in micro-units of the account's currency
/// (0.0079: a typical US SMS segment).
pub const DEFAULT_SEGMENT_PRICE_MICROS: i64 = 7_900;
/// Daily spend cap per line: 100.00, i.e. 12,658 segments, 1,150
/// 1,600-character GSM-7 messages (11 segments) or 527 UCS-2 ones (24).
pub const DEFAULT_DAILY_SPEND_CAP_MICROS: i64 = 100_000_000;

/// The limits that apply to one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limits {
    pub countries: Vec<String>,
    pub per_minute: i32,
    pub daily_spend_cap_micros: i64,
    pub segment_price_micros: i64,
    pub account_countries: Option<Vec<String>>,
    pub account_daily_spend_cap_micros: Option<i64>,
}

fn split(s: &str) -> Vec<String> {
    s.split(',')
        .map(|c| c.trim().to_ascii_uppercase())
        .filter(|c| !c.is_empty())
        .collect()
}

pub async fn for_line(
    conn: &impl ConnectionTrait,
    account_id: &str,
    line_id: i64,
) -> Result<Limits, DbErr> {
    let line = phone_line_limit::Entity::find_by_id(line_id)
        .one(conn)
        .await?;
    let account = phone_account_limit::Entity::find_by_id(account_id.to_string())
        .one(conn)
        .await?;
    Ok(combine(line.as_ref(), account.as_ref()))
}

/// A line's limits from its own row (the defaults without one) and its
/// account's.
pub fn combine(
    line: Option<&phone_line_limit::Model>,
    account: Option<&phone_account_limit::Model>,
) -> Limits {
    let mut limits = match line {
        Some(l) => Limits {
            countries: split(&l.countries),
            per_minute: l.per_minute,
            daily_spend_cap_micros: l.daily_spend_cap_micros,
            segment_price_micros: l.segment_price_micros,
            account_countries: None,
            account_daily_spend_cap_micros: None,
        },
        None => Limits {
            countries: DEFAULT_COUNTRIES.iter().map(|c| c.to_string()).collect(),
            per_minute: DEFAULT_PER_MINUTE,
            daily_spend_cap_micros: DEFAULT_DAILY_SPEND_CAP_MICROS,
            segment_price_micros: DEFAULT_SEGMENT_PRICE_MICROS,
            account_countries: None,
            account_daily_spend_cap_micros: None,
        },
    };
    if let Some(a) = account {
        limits.account_countries = a.countries.as_deref().map(split);
        limits.account_daily_spend_cap_micros = a.daily_spend_cap_micros;
    }
    limits
}

/// The limits of many lines at once (two queries): by line id.
pub async fn for_lines(
    conn: &impl ConnectionTrait,
    lines: &[(i64, String)],
) -> Result<std::collections::HashMap<i64, Limits>, DbErr> {
    use std::collections::HashMap;
    let line_ids: Vec<i64> = lines.iter().map(|l| l.0).collect();
    let mut accounts: Vec<String> = lines.iter().map(|l| l.1.clone()).collect();
    accounts.sort_unstable();
    accounts.dedup();
    let own: HashMap<i64, phone_line_limit::Model> = phone_line_limit::Entity::find()
        .filter(phone_line_limit::Column::LineId.is_in(line_ids))
        .all(conn)
        .await?
        .into_iter()
        .map(|l| (l.line_id, l))
        .collect();
    let of_account: HashMap<String, phone_account_limit::Model> =
        phone_account_limit::Entity::find()
            .filter(phone_account_limit::Column::AccountId.is_in(accounts))
            .all(conn)
            .await?
            .into_iter()
            .map(|a| (a.account_id.clone(), a))
            .collect();
    Ok(lines
        .iter()
        .map(|(id, account)| (*id, combine(own.get(id), of_account.get(account))))
        .collect())
}

/// Which limit a message would break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Breach {
    Country(Option<String>),
    PerMinute(i32),
    DailySpend {
        cap_micros: i64,
        scope: &'static str,
    },
}

/// The UTC day of `now`, as `phone_daily_spend` keys it.
pub fn day(now: DateTime<Utc>) -> String {
    now.format("%Y-%m-%d").to_string()
}

/// What a line already used: the messages of the last minute and today's
/// spend. Read in the accepting transaction, which holds the line's lock,
/// so concurrent sends are counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    pub last_minute: u64,
    pub spent_micros: i64,
}

/// What many lines used (two queries): by line id; a line with no message
/// yet is absent (nothing used). The minute is counted from the messages
/// (an index range the per-minute limit keeps short); the day's spend is
/// one kept row per line, not a sum over the day's messages.
pub async fn used_by_lines(
    conn: &impl ConnectionTrait,
    line_ids: &[i64],
    now: DateTime<Utc>,
) -> Result<std::collections::HashMap<i64, Used>, DbErr> {
    let mut used: std::collections::HashMap<i64, Used> = std::collections::HashMap::new();
    let counts: Vec<(i64, i64)> = phone_message::Entity::find()
        .select_only()
        .column(phone_message::Column::LineId)
        .expr(Expr::cust("CAST(COUNT(*) AS BIGINT)"))
        .filter(phone_message::Column::LineId.is_in(line_ids.iter().copied()))
        .filter(phone_message::Column::CreatedAt.gt(now - chrono::Duration::seconds(60)))
        .group_by(phone_message::Column::LineId)
        .into_tuple()
        .all(conn)
        .await?;
    for (line, n) in counts {
        used.entry(line).or_default().last_minute = n.max(0) as u64;
    }
    let spent: Vec<(i64, i64)> = phone_daily_spend::Entity::find()
        .select_only()
        .column(phone_daily_spend::Column::LineId)
        .column(phone_daily_spend::Column::SpentMicros)
        .filter(phone_daily_spend::Column::LineId.is_in(line_ids.iter().copied()))
        .filter(phone_daily_spend::Column::Day.eq(day(now)))
        .into_tuple()
        .all(conn)
        .await?;
    for (line, micros) in spent {
        used.entry(line).or_default().spent_micros = micros;
    }
    Ok(used)
}

/// Today's spend over all the account's lines (read only when the account
/// has a daily cap).
pub async fn account_spent(
    conn: &impl ConnectionTrait,
    account_id: &str,
    now: DateTime<Utc>,
) -> Result<i64, DbErr> {
    let sum: Option<Option<i64>> = phone_daily_spend::Entity::find()
        .select_only()
        .expr(Expr::cust("CAST(COALESCE(SUM(spent_micros), 0) AS BIGINT)"))
        .filter(phone_daily_spend::Column::AccountId.eq(account_id))
        .filter(phone_daily_spend::Column::Day.eq(day(now)))
        .into_tuple()
        .one(conn)
        .await?;
    Ok(sum.flatten().unwrap_or(0))
}

/// Adds newly accepted messages to their lines' spend of the day `now`
/// falls in: one upsert for all of them. `spends` is (line, account,
/// micros) per message.
pub async fn add_spend(
    conn: &impl ConnectionTrait,
    spends: &[(i64, &str, i64)],
    now: DateTime<Utc>,
) -> Result<(), DbErr> {
    use sea_orm::sea_query::{Alias, ExprTrait, OnConflict};
    let mut per_line: std::collections::BTreeMap<i64, (&str, i64, i64)> = Default::default();
    for (line, account, micros) in spends {
        let e = per_line.entry(*line).or_insert((account, 0, 0));
        e.1 += micros;
        e.2 += 1;
    }
    if per_line.is_empty() {
        return Ok(());
    }
    let today = day(now);
    let excluded = |c: phone_daily_spend::Column| Expr::col((Alias::new("excluded"), c));
    let kept = |c: phone_daily_spend::Column| Expr::col((phone_daily_spend::Entity, c));
    phone_daily_spend::Entity::insert_many(per_line.into_iter().map(
        |(line_id, (account, micros, n))| phone_daily_spend::ActiveModel {
            line_id: Set(line_id),
            day: Set(today.clone()),
            account_id: Set(account.to_string()),
            spent_micros: Set(micros),
            messages: Set(n),
        },
    ))
    .on_conflict(
        OnConflict::columns([
            phone_daily_spend::Column::LineId,
            phone_daily_spend::Column::Day,
        ])
        .value(
            phone_daily_spend::Column::SpentMicros,
            kept(phone_daily_spend::Column::SpentMicros)
                .add(excluded(phone_daily_spend::Column::SpentMicros)),
        )
        .value(
            phone_daily_spend::Column::Messages,
            kept(phone_daily_spend::Column::Messages)
                .add(excluded(phone_daily_spend::Column::Messages)),
        )
        .to_owned(),
    )
    .exec_without_returning(conn)
    .await?;
    Ok(())
}

/// Checks a message of `cost_micros` to `country` against `limits`, given
/// what its line `used` and its account spent today.
pub fn judge(
    limits: &Limits,
    used: &Used,
    account_spent_micros: Option<i64>,
    country: Option<&str>,
    cost_micros: i64,
) -> Option<Breach> {
    let allowed = |list: &[String]| country.is_some_and(|c| list.iter().any(|l| l == c));
    if !allowed(&limits.countries)
        || limits
            .account_countries
            .as_deref()
            .is_some_and(|l| !allowed(l))
    {
        return Some(Breach::Country(country.map(String::from)));
    }
    if used.last_minute >= limits.per_minute.max(0) as u64 {
        return Some(Breach::PerMinute(limits.per_minute));
    }
    if used.spent_micros + cost_micros > limits.daily_spend_cap_micros {
        return Some(Breach::DailySpend {
            cap_micros: limits.daily_spend_cap_micros,
            scope: "line",
        });
    }
    if let (Some(cap), Some(spent)) = (limits.account_daily_spend_cap_micros, account_spent_micros)
        && spent + cost_micros > cap
    {
        return Some(Breach::DailySpend {
            cap_micros: cap,
            scope: "account",
        });
    }
    None
}
