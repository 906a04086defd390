//! `serve --demo`: an idempotent, ready-to-try tenant.

use sea_orm::{ColumnTrait, DatabaseConnection, EntityTrait, QueryFilter};

use entity::{account, phone_line, user};

use crate::auth::tenancy::{self, NewAccount, NewLine, NewUser, TenancyError};

pub const DEMO_ACCOUNT_ID: &str = "00000000-0000-4000-8000-00000000de30";
pub const DEMO_EMAIL: &str = "demo-admin@example.com";
pub const DEMO_SMS_NUMBER: &str = "+12025550100";
pub const DEMO_FAX_NUMBER: &str = "+12025550199";

pub struct Demo {
    pub account_id: String,
    pub user_id: i64,
    /// A fresh key each start (the previous demo key is revoked): keys are
    /// stored hashed, so the only way to show one is to issue it.
    pub api_key: String,
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
    tenancy::revoke_user_keys(db, user_id).await?;
    let api_key = tenancy::create_api_key(db, user_id, &["platform:write".into()]).await?;
    Ok(Demo {
        account_id: DEMO_ACCOUNT_ID.into(),
        user_id,
        api_key,
    })
}
