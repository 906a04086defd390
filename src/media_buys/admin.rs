//! Operator actions on media buys (`agentic-api admin ...`): an account's
//! credit limit, a storefront's callback secret. Every input is checked
//! before anything is written.

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter, Set};
use serde_json::{Value, json};

use entity::{account, account_credit_limit as limit, storefront};

use crate::auth::tenancy::TenancyError;
use crate::config::Config;

fn invalid<T>(m: impl Into<String>) -> Result<T, TenancyError> {
    Err(TenancyError::Invalid(m.into()))
}

/// Sets or clears the account's credit limit in `currency`.
pub async fn set_credit_limit(
    db: &DatabaseConnection,
    account_id: &str,
    currency: &str,
    amount: Option<f64>,
    clear: bool,
) -> Result<Value, TenancyError> {
    let currency = currency.trim().to_ascii_uppercase();
    if iso_currency::Currency::from_code(&currency).is_none() {
        return invalid(format!("--currency: '{currency}' is not an ISO 4217 code"));
    }
    if account::Entity::find_by_id(account_id)
        .one(db)
        .await?
        .is_none()
    {
        return invalid(format!("unknown account '{account_id}'"));
    }
    if clear {
        limit::Entity::delete_many()
            .filter(limit::Column::AccountId.eq(account_id))
            .filter(limit::Column::Currency.eq(currency.clone()))
            .exec(db)
            .await?;
        return Ok(json!({"accountId": account_id, "currency": currency, "creditLimit": null}));
    }
    let Some(amount) = amount.filter(|a| a.is_finite() && *a >= 0.0 && *a <= 1e15) else {
        return invalid("--amount: must be a number from 0 to 1e15");
    };
    limit::Entity::insert(limit::ActiveModel {
        account_id: Set(account_id.to_string()),
        currency: Set(currency.clone()),
        credit_limit: Set(amount),
        updated_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::columns([limit::Column::AccountId, limit::Column::Currency])
            .update_columns([limit::Column::CreditLimit, limit::Column::UpdatedAt])
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(json!({"accountId": account_id, "currency": currency, "creditLimit": amount}))
}

/// Replaces a storefront's callback secret.
pub async fn rotate_callback_secret(
    db: &DatabaseConnection,
    config: &Config,
    storefront_id: i64,
) -> Result<Value, TenancyError> {
    if storefront::Entity::find_by_id(storefront_id)
        .one(db)
        .await?
        .is_none()
    {
        return invalid(format!("unknown storefront {storefront_id}"));
    }
    super::secrets::rotate(db, config, storefront_id)
        .await
        .map_err(|e| TenancyError::Invalid(e.to_string()))?;
    Ok(json!({"storefrontId": storefront_id, "rotated": true}))
}
