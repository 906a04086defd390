//! `serve --demo`: an idempotent, ready-to-try tenant.

use sea_orm::sea_query::{Expr, ExprTrait, Func};
use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

use entity::{account, phone_line, storefront, user};

use crate::auth::tenancy::{self, NewAccount, NewLine, NewStorefront, NewUser, TenancyError};
use crate::discovery::demo_sellers::{DEMO_HOST, STOREFRONTS};
use crate::types::UrlPolicy;

pub const DEMO_ACCOUNT_ID: &str = "00000000-0000-4000-8000-00000000de30";
pub const DEMO_EMAIL: &str = "demo-admin@example.com";
pub const DEMO_SMS_NUMBER: &str = "+12025550100";
/// The demo fax line's customer.
pub const DEMO_FAX_CUSTOMER: &str = "Demo Customer";
pub const DEMO_FAX_NUMBER: &str = "+12025550199";

pub struct Demo {
    pub account_id: String,
    pub user_id: i64,
    /// A fresh key each start (the previous demo key is revoked): keys are
    /// stored hashed, so the only way to show one is to issue it.
    pub api_key: String,
    /// The demo user's sign-in (the console's login page): the email and a
    /// fresh random password each start, for the same reason.
    pub email: String,
    pub password: String,
    /// The built-in demo storefronts, in `STOREFRONTS` order.
    pub storefront_ids: Vec<i64>,
}

pub async fn seed(db: &DatabaseConnection) -> Result<Demo, TenancyError> {
    if account::Entity::find_by_id(DEMO_ACCOUNT_ID.to_string())
        .one(db)
        .await?
        .is_none()
    {
        tenancy::create_account_with_id(
            db,
            DEMO_ACCOUNT_ID.into(),
            NewAccount {
                name: "Demo Account".into(),
                phone_lines: true,
                assistant: true,
                shared_conversations: true,
            },
        )
        .await?;
    }
    let user_id = match user::Entity::find()
        .filter(user::Column::Email.eq(DEMO_EMAIL))
        .one(db)
        .await?
    {
        Some(u) => u.id,
        None => {
            tenancy::create_user(
                db,
                NewUser {
                    account_id: DEMO_ACCOUNT_ID.into(),
                    email: DEMO_EMAIL.into(),
                    name: "Demo Admin".into(),
                    role: "admin".into(),
                    password: None,
                },
            )
            .await?
        }
    };
    for (number, kind) in [(DEMO_SMS_NUMBER, "sms"), (DEMO_FAX_NUMBER, "fax")] {
        let exists = phone_line::Entity::find()
            .filter(phone_line::Column::Number.eq(number))
            .one(db)
            .await?
            .is_some();
        if !exists {
            tenancy::provision_line(
                db,
                NewLine {
                    account_id: DEMO_ACCOUNT_ID.into(),
                    number: number.into(),
                    kind: kind.into(),
                    rcs_agent_verified: kind == "sms",
                    messaging_profile: Some(format!("demo-{kind}")),
                    inactive: false,
                },
            )
            .await?;
        }
    }
    seed_fax_customer(db, user_id).await?;
    let storefront_ids = seed_storefronts(db).await?;
    seed_accounts(db, &storefront_ids).await?;
    tenancy::revoke_user_keys(db, user_id).await?;
    let api_key = tenancy::create_api_key(db, user_id, &["platform:write".into()]).await?;
    let password = crate::auth::keys::random_base62(20);
    tenancy::set_password(db, user_id, &password).await?;
    Ok(Demo {
        account_id: DEMO_ACCOUNT_ID.into(),
        user_id,
        api_key,
        email: DEMO_EMAIL.into(),
        password,
        storefront_ids,
    })
}

/// The demo fax line serves a demo customer with faxes enabled, and the
/// demo user acts for it, so faxes can be sent and a sample received
/// (`admin receive-sample-fax`) at once.
async fn seed_fax_customer(db: &DatabaseConnection, user_id: i64) -> Result<(), TenancyError> {
    use crate::phone::fax::admin;
    let Some(line) = phone_line::Entity::find()
        .filter(phone_line::Column::Number.eq(DEMO_FAX_NUMBER))
        .one(db)
        .await?
    else {
        return Ok(());
    };
    let existing = entity::seller_customer::Entity::find()
        .filter(entity::seller_customer::Column::AccountId.eq(DEMO_ACCOUNT_ID))
        .filter(entity::seller_customer::Column::Name.eq(DEMO_FAX_CUSTOMER))
        .one(db)
        .await?;
    let customer = match existing {
        Some(c) => c.id,
        None => admin::create_customer(db, DEMO_ACCOUNT_ID, DEMO_FAX_CUSTOMER, true).await?
            ["customerId"]
            .as_i64()
            .unwrap_or_default(),
    };
    admin::assign_line(db, &line.id.to_string(), customer, true).await?;
    admin::customer_access(db, customer, user_id, true).await?;
    Ok(())
}

/// The demo account's confirmed operator domain (production account sync
/// needs one).
pub const DEMO_OPERATOR: &str = "demo-agency.example";

/// The seller-account side of the demo, once (what an operator changed
/// later survives restarts): each demo storefront's agent source as its
/// seller describes it (Atlas Outdoor bills only the agent; Cartwheel
/// Retail Media needs the buyer's credential and lists its seats); the
/// demo account operates the storefronts that take account sync, so the
/// demo user reviews its own intakes; and its operator domain is confirmed.
async fn seed_accounts(
    db: &DatabaseConnection,
    storefront_ids: &[i64],
) -> Result<(), TenancyError> {
    use crate::accounts::{admin, sources};
    for (demo, &id) in STOREFRONTS.iter().zip(storefront_ids) {
        let caps = demo.account_capabilities();
        let stored = entity::account_source::Entity::find()
            .filter(entity::account_source::Column::StorefrontId.eq(id))
            .filter(entity::account_source::Column::SourceId.eq(sources::AGENT))
            .one(db)
            .await?;
        if stored.is_none() {
            admin::register_account_source(
                db,
                admin::NewSource {
                    storefront: id,
                    source_id: sources::AGENT.into(),
                    name: Some(format!("{} (seller agent)", demo.name)),
                    url: None,
                    requires_credentials: caps.requires_credentials,
                    billing: caps
                        .supported_billing
                        .iter()
                        .map(|b| b.to_string())
                        .collect(),
                },
                UrlPolicy {
                    allow_insecure: false,
                },
            )
            .await?;
        }
        if !caps.requires_credentials && sources::operator_of(db, id).await?.is_none() {
            admin::assign_storefront_operator(db, id, DEMO_ACCOUNT_ID).await?;
        }
    }
    if entity::operator_identity::Entity::find_by_id(DEMO_ACCOUNT_ID)
        .one(db)
        .await?
        .is_none()
    {
        admin::confirm_operator_identity(db, DEMO_ACCOUNT_ID, DEMO_OPERATOR).await?;
    }
    Ok(())
}

/// Registers the built-in demo sellers' storefronts at their reserved URLs,
/// once: a storefront of the same name (any case) is kept as it is, so
/// whatever an operator changed on it survives restarts.
pub async fn seed_storefronts(db: &DatabaseConnection) -> Result<Vec<i64>, TenancyError> {
    // The strict policy: these URLs must register on any deployment.
    let policy = UrlPolicy {
        allow_insecure: false,
    };
    let mut ids = Vec::with_capacity(STOREFRONTS.len());
    for demo in STOREFRONTS {
        let id = match storefront_named(db, demo.name).await? {
            Some(existing) => existing,
            None => {
                let new = NewStorefront {
                    name: demo.name.into(),
                    url: demo.url(),
                    auth_token: None,
                };
                match tenancy::register_storefront_with(db, new, policy).await {
                    Ok(id) => id,
                    // Another instance seeding at the same time won the
                    // unique name; its row is as good as ours.
                    Err(e @ TenancyError::Invalid(_)) => {
                        match storefront_named(db, demo.name).await? {
                            Some(existing) => existing,
                            None => return Err(e),
                        }
                    }
                    Err(e) => return Err(e),
                }
            }
        };
        ids.push(id);
    }
    tracing::info!(
        count = ids.len(),
        host = DEMO_HOST,
        "demo storefronts ready"
    );
    Ok(ids)
}

/// A storefront's id by name, compared as the unique index does (`LOWER`).
async fn storefront_named(
    db: &DatabaseConnection,
    name: &str,
) -> Result<Option<i64>, TenancyError> {
    Ok(storefront::Entity::find()
        .filter(
            Expr::expr(Func::lower(Expr::col(storefront::Column::Name)))
                .eq(Expr::expr(Func::lower(Expr::val(name)))),
        )
        .one(db)
        .await?
        .map(|s| s.id))
}
