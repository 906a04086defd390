//! `agentic-api admin ...`: validates, writes, prints exactly one JSON object.

use sea_orm::DatabaseConnection;
use serde_json::{Value, json};

use crate::auth::tenancy::{self, NewAccount, NewLine, NewUser, TenancyError};
use crate::cli::AdminCommand;
use crate::config::Config;

pub async fn run(
    db: &DatabaseConnection,
    config: &Config,
    cmd: AdminCommand,
) -> Result<Value, TenancyError> {
    Ok(match cmd {
        AdminCommand::CreateAccount {
            name,
            phone_lines,
            no_assistant,
            no_shared_conversations,
        } => {
            let id = tenancy::create_account(
                db,
                NewAccount {
                    name,
                    phone_lines,
                    assistant: !no_assistant,
                    shared_conversations: !no_shared_conversations,
                },
            )
            .await?;
            json!({ "accountId": id })
        }
        AdminCommand::CreateUser {
            account,
            email,
            name,
            role,
            password,
        } => {
            let id = tenancy::create_user(
                db,
                NewUser {
                    account_id: account,
                    email,
                    name,
                    role,
                    password,
                },
            )
            .await?;
            json!({ "userId": id })
        }
        AdminCommand::CreateApiKey { user, permissions } => {
            let user: i64 = user
                .parse()
                .map_err(|_| TenancyError::Invalid(format!("unknown user '{user}'")))?;
            let key = tenancy::create_api_key(db, user, &permissions).await?;
            json!({ "apiKey": key })
        }
        AdminCommand::RevokeApiKey { key } => {
            let (key_id, account_id) = tenancy::revoke_api_key(db, &key).await?;
            announce(db, crate::auth::events::key_revoked(&account_id, key_id)).await;
            json!({ "revoked": true })
        }
        AdminCommand::ProvisionLine {
            account,
            number,
            kind,
            rcs_agent_verified,
            messaging_profile,
            inactive,
        } => {
            let id = tenancy::provision_line(
                db,
                NewLine {
                    account_id: account,
                    number,
                    kind,
                    rcs_agent_verified,
                    messaging_profile,
                    inactive,
                },
            )
            .await?;
            json!({ "endpointId": id.to_string() })
        }
        AdminCommand::EnrolPhoneLines { account, disable } => {
            crate::phone::admin::enrol(db, &account, !disable).await?
        }
        AdminCommand::SetSendingLimits {
            endpoint,
            account,
            countries,
            per_minute,
            daily_spend_cap,
            segment_price,
        } => {
            let change = crate::phone::admin::LimitsChange {
                countries,
                per_minute,
                daily_spend_cap,
                segment_price,
            };
            match (endpoint, account) {
                (Some(line), _) => crate::phone::admin::set_line_limits(db, &line, change).await?,
                (None, Some(account)) => {
                    crate::phone::admin::set_account_limits(db, &account, change).await?
                }
                (None, None) => {
                    return Err(TenancyError::Invalid(
                        "--endpoint or --account is required".into(),
                    ));
                }
            }
        }
        AdminCommand::ListHeldMessages => crate::phone::admin::list_held(db).await?,
        AdminCommand::ResolveHeldMessage {
            outbox_id,
            mark_sent,
            release: _,
            carrier_id,
        } => crate::phone::admin::resolve_held(db, &outbox_id, mark_sent, carrier_id).await?,
        AdminCommand::CreateCustomer {
            account,
            name,
            fax_enabled,
        } => crate::phone::fax::admin::create_customer(db, &account, &name, fax_enabled).await?,
        AdminCommand::SetFaxRollout { customer, disable } => {
            crate::phone::fax::admin::set_fax_rollout(db, customer, !disable).await?
        }
        AdminCommand::AssignLineCustomer {
            endpoint,
            customer,
            inactive,
        } => crate::phone::fax::admin::assign_line(db, &endpoint, customer, !inactive).await?,
        AdminCommand::GrantCustomerAccess {
            customer,
            user,
            revoke,
        } => crate::phone::fax::admin::customer_access(db, customer, user, !revoke).await?,
        AdminCommand::ListFaxes { unresolved, failed } => {
            crate::phone::fax::admin::list_faxes(db, unresolved, failed).await?
        }
        AdminCommand::ResolveFax {
            fax,
            sent,
            failed: _,
            provider_fax_id,
        } => crate::phone::fax::admin::resolve_fax(db, fax, sent, provider_fax_id).await?,
        AdminCommand::AssignFaxAgent {
            endpoint,
            instructions,
            tools,
            tool_user,
        } => {
            crate::phone::fax::admin::assign_agent(
                db,
                crate::app::OPERATIONS,
                &endpoint,
                &instructions,
                &tools,
                tool_user,
            )
            .await?
        }
        AdminCommand::ReceiveSampleFax {
            endpoint,
            number,
            from,
            pdf,
        } => {
            let line = crate::phone::fax::admin::LineRef::from_args(endpoint, number);
            let bytes = match pdf {
                Some(path) => Some(std::fs::read(&path).map_err(|e| {
                    TenancyError::Invalid(format!("cannot read {}: {e}", path.display()))
                })?),
                None => None,
            };
            crate::phone::fax::admin::receive_sample(db, config, line, &from, bytes).await?
        }
        AdminCommand::RegisterStorefront {
            name,
            url,
            auth_token,
        } => {
            let id = tenancy::register_storefront_with(
                db,
                tenancy::NewStorefront {
                    name,
                    url,
                    auth_token,
                },
                config.url_policy(),
            )
            .await?;
            json!({ "storefrontId": id })
        }
        AdminCommand::SetCreditLimit {
            account,
            currency,
            amount,
            clear,
        } => {
            crate::media_buys::admin::set_credit_limit(db, &account, &currency, amount, clear)
                .await?
        }
        AdminCommand::RotateCallbackSecret { storefront } => {
            crate::media_buys::admin::rotate_callback_secret(db, config, storefront).await?
        }
        AdminCommand::ConfirmOperatorIdentity { account, domain } => {
            crate::accounts::admin::confirm_operator_identity(db, &account, &domain).await?
        }
        AdminCommand::RegisterAccountSource {
            storefront,
            source_id,
            name,
            url,
            requires_credentials,
            billing,
        } => {
            crate::accounts::admin::register_account_source(
                db,
                crate::accounts::admin::NewSource {
                    storefront,
                    source_id,
                    name,
                    url,
                    requires_credentials,
                    billing,
                },
                config.url_policy(),
            )
            .await?
        }
        AdminCommand::AssignStorefrontOperator {
            storefront,
            account,
        } => crate::accounts::admin::assign_storefront_operator(db, storefront, &account).await?,
        AdminCommand::RegisterBrand {
            domain,
            name,
            manifest,
        } => {
            let id =
                crate::buyer::brands::register(db, &domain, &name, manifest.as_deref()).await?;
            json!({ "brandId": id })
        }
    })
}

/// Tells running servers on a shared PostgreSQL database at once (their auth
/// caches and open streams); on SQLite they notice within the auth cache TTL
/// and one stream keep-alive.
async fn announce(db: &sea_orm::DatabaseConnection, event: crate::bus::BusEvent) {
    if db.get_database_backend() == sea_orm::DbBackend::Postgres {
        let bus = crate::bus::EventBus::postgres(
            "admin-cli".into(),
            db.get_postgres_connection_pool().clone(),
            crate::bus::DEFAULT_HEARTBEAT,
        );
        bus.publish(event).await;
    }
}
