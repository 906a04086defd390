//! Operator actions on seller accounts (`agentic-api admin ...`): confirm a
//! buyer account's operator domain (audited), register or override an
//! account source, make an account a storefront's operator. Every input
//! is checked before anything is written.

use chrono::Utc;
use sea_orm::sea_query::OnConflict;
use sea_orm::{ActiveModelTrait, DatabaseConnection, EntityTrait, Set};
use serde_json::{Value, json};

use entity::{
    account, account_source, audit_log, operator_identity, storefront, storefront_operator,
};

use super::model::{BILLING_PARTIES, is_domain};
use super::sources;
use crate::auth::tenancy::TenancyError;
use crate::types::{OutboundUrl, UrlPolicy};

fn invalid<T>(m: impl Into<String>) -> Result<T, TenancyError> {
    Err(TenancyError::Invalid(m.into()))
}

/// The user id audit entries of operator actions carry (no user made them).
pub const OPERATOR_USER: i64 = 0;

async fn known_account(db: &DatabaseConnection, id: &str) -> Result<(), TenancyError> {
    match account::Entity::find_by_id(id).one(db).await? {
        Some(_) => Ok(()),
        None => invalid(format!("unknown account '{id}'")),
    }
}

async fn known_storefront(db: &DatabaseConnection, id: i64) -> Result<(), TenancyError> {
    match storefront::Entity::find_by_id(id).one(db).await? {
        Some(_) => Ok(()),
        None => invalid(format!("unknown storefront {id}")),
    }
}

/// Confirms (or changes) the account's operator domain, with an audit entry.
pub async fn confirm_operator_identity(
    db: &DatabaseConnection,
    account_id: &str,
    domain: &str,
) -> Result<Value, TenancyError> {
    let domain = domain.trim().to_ascii_lowercase();
    if !is_domain(&domain) {
        return invalid(format!("--domain: '{domain}' is not a domain name"));
    }
    known_account(db, account_id).await?;
    let now = Utc::now();
    let txn = crate::db::begin_write(db).await?;
    let before = operator_identity::Entity::find_by_id(account_id)
        .one(&txn)
        .await?;
    operator_identity::Entity::insert(operator_identity::ActiveModel {
        account_id: Set(account_id.to_string()),
        domain: Set(domain.clone()),
        confirmed_at: Set(now),
    })
    .on_conflict(
        OnConflict::column(operator_identity::Column::AccountId)
            .update_columns([
                operator_identity::Column::Domain,
                operator_identity::Column::ConfirmedAt,
            ])
            .to_owned(),
    )
    .exec_without_returning(&txn)
    .await?;
    audit_log::ActiveModel {
        account_id: Set(account_id.to_string()),
        user_id: Set(OPERATOR_USER),
        api_key_id: Set(None),
        action: Set("confirm_operator_identity".into()),
        resource_type: Set("operator_identity".into()),
        resource_id: Set(account_id.to_string()),
        changes: Set(json!({
            "operatorDomain": { "from": before.map(|b| b.domain), "to": domain },
            "by": { "from": null, "to": "operator (agentic-api admin)" },
        })
        .to_string()),
        created_at: Set(now),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(json!({ "accountId": account_id, "operatorDomain": domain, "confirmedAt": now }))
}

pub struct NewSource {
    pub storefront: i64,
    pub source_id: String,
    pub name: Option<String>,
    pub url: Option<String>,
    pub requires_credentials: bool,
    pub billing: Vec<String>,
}

/// Registers an account source, or replaces one (`agent` overrides the
/// storefront's own agent's capabilities; it takes no URL).
pub async fn register_account_source(
    db: &DatabaseConnection,
    new: NewSource,
    policy: UrlPolicy,
) -> Result<Value, TenancyError> {
    let id = new.source_id.trim().to_string();
    let slug_ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !slug_ok {
        return invalid("--source-id: 1 to 64 lower-case letters, digits, '-' or '_'");
    }
    match (&new.url, id == sources::AGENT) {
        (Some(_), true) => {
            return invalid(
                "--url: the agent source is the storefront's own agent; it takes no URL",
            );
        }
        (None, false) => return invalid("--url: an external source needs its agent's URL"),
        (Some(u), false) => {
            OutboundUrl::parse(u, policy)
                .map_err(|e| TenancyError::Invalid(format!("--url: {e}")))?;
        }
        (None, true) => {}
    }
    let mut billing: Vec<String> = Vec::new();
    for b in &new.billing {
        if !BILLING_PARTIES.contains(&b.as_str()) {
            return invalid(format!(
                "--billing: '{b}' must be operator, agent or advertiser"
            ));
        }
        if !billing.contains(b) {
            billing.push(b.clone());
        }
    }
    if billing.is_empty() {
        billing = BILLING_PARTIES.iter().map(|b| b.to_string()).collect();
    }
    let name = new
        .name
        .map(|n| n.trim().to_string())
        .unwrap_or_else(|| id.clone());
    if name.is_empty() || name.chars().count() > 255 {
        return invalid("--name: 1 to 255 characters");
    }
    known_storefront(db, new.storefront).await?;
    account_source::Entity::insert(account_source::ActiveModel {
        storefront_id: Set(new.storefront),
        source_id: Set(id.clone()),
        name: Set(name),
        url: Set(new.url),
        requires_credentials: Set(new.requires_credentials),
        supported_billing: Set(json!(billing).to_string()),
        created_at: Set(Utc::now()),
        ..Default::default()
    })
    .on_conflict(
        OnConflict::columns([
            account_source::Column::StorefrontId,
            account_source::Column::SourceId,
        ])
        .update_columns([
            account_source::Column::Name,
            account_source::Column::Url,
            account_source::Column::RequiresCredentials,
            account_source::Column::SupportedBilling,
        ])
        .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(json!({
        "storefrontId": new.storefront,
        "sourceId": id,
        "requiresCredentials": new.requires_credentials,
        "supportedBilling": billing,
    }))
}

/// Makes `account_id` the storefront's operator (it reviews the
/// storefront's account-mapping intakes), replacing any other.
pub async fn assign_storefront_operator(
    db: &DatabaseConnection,
    storefront_id: i64,
    account_id: &str,
) -> Result<Value, TenancyError> {
    known_storefront(db, storefront_id).await?;
    known_account(db, account_id).await?;
    storefront_operator::Entity::insert(storefront_operator::ActiveModel {
        storefront_id: Set(storefront_id),
        account_id: Set(account_id.to_string()),
        created_at: Set(Utc::now()),
    })
    .on_conflict(
        OnConflict::column(storefront_operator::Column::StorefrontId)
            .update_column(storefront_operator::Column::AccountId)
            .to_owned(),
    )
    .exec_without_returning(db)
    .await?;
    Ok(json!({ "storefrontId": storefront_id, "accountId": account_id }))
}
