//! Operator actions on tenants: the code behind `agentic-api admin ...` and
//! the test factories. Every input is validated before anything is written.

use chrono::Utc;
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set, TransactionTrait,
};

use entity::{account, api_key, phone_line, storefront, user};

use crate::types::{E164, Email, OutboundUrl, Permission, Role, UrlPolicy};

use super::keys;

/// An operator-facing error: printed on stderr by the CLI.
#[derive(Debug, thiserror::Error)]
pub enum TenancyError {
    #[error("{0}")]
    Invalid(String),
    #[error(transparent)]
    Db(#[from] sea_orm::DbErr),
}

type Result<T> = std::result::Result<T, TenancyError>;

fn invalid<T>(msg: impl Into<String>) -> Result<T> {
    Err(TenancyError::Invalid(msg.into()))
}

#[derive(Debug, Clone)]
pub struct NewAccount {
    pub name: String,
    pub phone_lines: bool,
    pub assistant: bool,
    pub shared_conversations: bool,
}

impl NewAccount {
    pub fn named(name: &str) -> Self {
        NewAccount {
            name: name.into(),
            phone_lines: false,
            assistant: true,
            shared_conversations: true,
        }
    }
}

pub async fn create_account(db: &impl ConnectionTrait, new: NewAccount) -> Result<String> {
    create_account_with_id(db, uuid::Uuid::new_v4().to_string(), new).await
}

pub async fn create_account_with_id(
    db: &impl ConnectionTrait,
    id: String,
    new: NewAccount,
) -> Result<String> {
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return invalid("account name must be 1 to 255 characters");
    }
    account::ActiveModel {
        id: Set(id.clone()),
        name: Set(name.to_string()),
        assistant_enabled: Set(new.assistant),
        shared_conversations_enabled: Set(new.shared_conversations),
        phone_lines_enabled: Set(new.phone_lines),
        created_at: Set(Utc::now()),
    }
    .insert(db)
    .await?;
    Ok(id)
}

async fn require_account(db: &impl ConnectionTrait, id: &str) -> Result<account::Model> {
    match account::Entity::find_by_id(id.to_string()).one(db).await? {
        Some(a) => Ok(a),
        None => invalid(format!("unknown account '{id}'")),
    }
}

#[derive(Debug, Clone)]
pub struct NewUser {
    pub account_id: String,
    pub email: String,
    pub name: String,
    pub role: String,
    pub password: Option<String>,
}

pub async fn create_user(db: &impl ConnectionTrait, new: NewUser) -> Result<i64> {
    let email = Email::parse(&new.email).map_err(TenancyError::Invalid)?;
    let role: Role = new.role.parse().map_err(TenancyError::Invalid)?;
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return invalid("user name must be 1 to 255 characters");
    }
    let password_hash = match new.password.as_deref() {
        None => None,
        Some(pw) if pw.chars().count() < 8 => {
            return invalid("password must be at least 8 characters");
        }
        Some(pw) => Some(hash_password(pw)?),
    };
    require_account(db, &new.account_id).await?;
    if user::Entity::find()
        .filter(user::Column::Email.eq(email.as_str()))
        .one(db)
        .await?
        .is_some()
    {
        return invalid(format!("a user with email '{email}' already exists"));
    }
    let row = user::ActiveModel {
        account_id: Set(new.account_id),
        email: Set(email.as_str().to_string()),
        name: Set(name.to_string()),
        role: Set(role.as_str().to_string()),
        password_hash: Set(password_hash),
        created_at: Set(Utc::now()),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(row.id)
}

fn hash_password(pw: &str) -> Result<String> {
    use argon2::password_hash::PasswordHasher;
    argon2::Argon2::default()
        .hash_password(pw.as_bytes())
        .map(|h| h.to_string())
        .map_err(|e| TenancyError::Invalid(format!("could not hash password: {e}")))
}

/// Issues a key and returns it: the only time it is ever visible.
pub async fn create_api_key(
    db: &impl ConnectionTrait,
    user_id: i64,
    permissions: &[String],
) -> Result<String> {
    Ok(issue_api_key(db, user_id, permissions, None).await?.1)
}

/// Issues a key, optionally named; returns its row and the key itself (the
/// only time it is ever visible: only its SHA-256 is stored).
pub async fn issue_api_key(
    db: &impl ConnectionTrait,
    user_id: i64,
    permissions: &[String],
    name: Option<String>,
) -> Result<(api_key::Model, String)> {
    let mut perms: Vec<Permission> = Vec::new();
    for p in permissions {
        let p: Permission = p.parse().map_err(TenancyError::Invalid)?;
        if !perms.contains(&p) {
            perms.push(p);
        }
    }
    if user::Entity::find_by_id(user_id).one(db).await?.is_none() {
        return invalid(format!("unknown user '{user_id}'"));
    }
    let key = keys::generate();
    let row = api_key::ActiveModel {
        user_id: Set(user_id),
        prefix: Set(key.prefix),
        key_hash: Set(key.hash),
        permissions: Set(perms
            .iter()
            .map(|p| p.as_str())
            .collect::<Vec<_>>()
            .join(" ")),
        created_at: Set(Utc::now()),
        revoked_at: Set(None),
        kind: Set(keys::KIND_API_KEY.into()),
        name: Set(name),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok((row, key.key))
}

/// Sets (or replaces) a user's password; the next sign-in must use it.
pub async fn set_password(db: &impl ConnectionTrait, user_id: i64, password: &str) -> Result<()> {
    if password.chars().count() < 8 {
        return invalid("password must be at least 8 characters");
    }
    let hash = hash_password(password)?;
    let res = user::Entity::update_many()
        .col_expr(
            user::Column::PasswordHash,
            sea_orm::sea_query::Expr::value(hash),
        )
        .filter(user::Column::Id.eq(user_id))
        .exec(db)
        .await?;
    if res.rows_affected == 0 {
        return invalid(format!("unknown user '{user_id}'"));
    }
    Ok(())
}

/// Revokes every live key of a user; returns how many.
pub async fn revoke_user_keys(db: &impl ConnectionTrait, user_id: i64) -> Result<u64> {
    let res = api_key::Entity::update_many()
        .col_expr(
            api_key::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(api_key::Column::UserId.eq(user_id))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    Ok(res.rows_affected)
}

/// Revokes one key by its full value or its readable prefix; returns the
/// key's id and its account (to announce the revocation).
pub async fn revoke_api_key(
    db: &impl ConnectionTrait,
    key_or_prefix: &str,
) -> Result<(i64, String)> {
    let prefix = keys::prefix_of(key_or_prefix).unwrap_or(key_or_prefix);
    let Some(key) = api_key::Entity::find()
        .filter(api_key::Column::Prefix.eq(prefix))
        .filter(api_key::Column::Kind.eq(keys::KIND_API_KEY))
        .filter(api_key::Column::RevokedAt.is_null())
        .one(db)
        .await?
    else {
        return invalid(format!("no live API key with prefix '{prefix}'"));
    };
    let Some(owner) = user::Entity::find_by_id(key.user_id).one(db).await? else {
        return invalid(format!("no live API key with prefix '{prefix}'"));
    };
    let res = api_key::Entity::update_many()
        .col_expr(
            api_key::Column::RevokedAt,
            sea_orm::sea_query::Expr::value(Utc::now()),
        )
        .filter(api_key::Column::Prefix.eq(prefix))
        .filter(api_key::Column::RevokedAt.is_null())
        .exec(db)
        .await?;
    if res.rows_affected == 0 {
        return invalid(format!("no live API key with prefix '{prefix}'"));
    }
    Ok((key.id, owner.account_id))
}

#[derive(Debug, Clone)]
pub struct NewLine {
    pub account_id: String,
    pub number: String,
    pub kind: String,
    pub rcs_agent_verified: bool,
    pub messaging_profile: Option<String>,
    pub inactive: bool,
}

pub async fn provision_line<C>(db: &C, new: NewLine) -> Result<i64>
where
    C: TransactionTrait<Transaction = sea_orm::DatabaseTransaction>,
{
    let number = E164::parse(&new.number).map_err(TenancyError::Invalid)?;
    if new.kind != "sms" && new.kind != "fax" {
        return invalid(format!(
            "unknown line kind '{}' (expected sms or fax)",
            new.kind
        ));
    }
    if new.rcs_agent_verified && new.kind != "sms" {
        return invalid("--rcs-agent-verified applies to sms lines only");
    }
    let profile = new.messaging_profile.map(|p| p.trim().to_string());
    if profile.as_deref().is_some_and(str::is_empty) {
        return invalid("messaging profile must not be empty");
    }
    // Reads then writes: it must hold the write lock from the start.
    let txn = crate::db::begin_write(db).await?;
    require_account(&txn, &new.account_id).await?;
    if phone_line::Entity::find()
        .filter(phone_line::Column::Number.eq(number.as_str()))
        .one(&txn)
        .await?
        .is_some()
    {
        return invalid(format!("number {number} is already provisioned"));
    }
    let row = phone_line::ActiveModel {
        account_id: Set(new.account_id),
        number: Set(number.as_str().to_string()),
        kind: Set(new.kind),
        rcs_agent_verified: Set(new.rcs_agent_verified),
        messaging_profile: Set(profile),
        active: Set(!new.inactive),
        created_at: Set(Utc::now()),
        ..Default::default()
    }
    .insert(&txn)
    .await?;
    txn.commit().await?;
    Ok(row.id)
}

/// A seller agent to register (`admin register-storefront`).
#[derive(Debug, Clone)]
pub struct NewStorefront {
    pub name: String,
    pub url: String,
    /// Sent as `Authorization: Bearer` to the seller; never shown again.
    pub auth_token: Option<String>,
}

pub async fn register_storefront<C>(db: &C, name: &str, url: &str, policy: UrlPolicy) -> Result<i64>
where
    C: TransactionTrait<Transaction = sea_orm::DatabaseTransaction>,
{
    register_storefront_with(
        db,
        NewStorefront {
            name: name.into(),
            url: url.into(),
            auth_token: None,
        },
        policy,
    )
    .await
}

/// Registers a storefront. Names are unique whatever their case.
pub async fn register_storefront_with<C>(
    db: &C,
    new: NewStorefront,
    policy: UrlPolicy,
) -> Result<i64>
where
    C: TransactionTrait<Transaction = sea_orm::DatabaseTransaction>,
{
    use sea_orm::sea_query::{Expr, ExprTrait, Func};
    let name = new.name.trim();
    if name.is_empty() || name.chars().count() > 255 {
        return invalid("storefront name must be 1 to 255 characters");
    }
    let url = OutboundUrl::parse(&new.url, policy).map_err(TenancyError::Invalid)?;
    let token = match new.auth_token.as_deref() {
        None => None,
        // Visible ASCII only: it goes into an HTTP header as is.
        Some(t) if !t.is_empty() && t.len() <= 4096 && t.bytes().all(|b| b.is_ascii_graphic()) => {
            Some(t.to_string())
        }
        Some(_) => {
            return invalid("auth token must be 1 to 4096 visible ASCII characters (no spaces)");
        }
    };
    let txn = crate::db::begin_write(db).await?;
    // The same comparison as the unique index on LOWER(name).
    if let Some(existing) = storefront::Entity::find()
        .filter(
            Expr::expr(Func::lower(Expr::col(storefront::Column::Name)))
                .eq(Expr::expr(Func::lower(Expr::val(name)))),
        )
        .one(&txn)
        .await?
    {
        return invalid(format!(
            "a storefront named '{}' already exists (storefrontId {})",
            existing.name, existing.id
        ));
    }
    let row = storefront::ActiveModel {
        name: Set(name.to_string()),
        url: Set(url.as_str().to_string()),
        auth_token: Set(token),
        created_at: Set(Utc::now()),
        ..Default::default()
    }
    .insert(&txn)
    .await
    .map_err(|e| match e.sql_err() {
        // A concurrent registration got there first.
        Some(sea_orm::SqlErr::UniqueConstraintViolation(_)) => {
            TenancyError::Invalid(format!("a storefront named '{name}' already exists"))
        }
        _ => TenancyError::Db(e),
    })?;
    txn.commit().await?;
    Ok(row.id)
}
