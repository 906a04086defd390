//! Buyers' credentials for account sources that require them: registered
//! per account (one operator login serves every advertiser), sealed at rest
//! like webhook secrets (AES-256-GCM under the same key, the credential's
//! id as associated data), write-only, rotated and deleted by admins.

use chrono::{DateTime, Utc};
use sea_orm::{
    ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder, Set,
};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{available_account, source_credential as row};

use super::sources;
use crate::caller::CallerInfo;
use crate::config::Config;
use crate::discovery::seller::AuthToken;
use crate::error::{ApiError, Issues};
use crate::ops::{Access, Ctx, Input, Json, Nothing, Operation, Params, Verb};
use crate::webhooks::secret;

const MAX_SECRET: usize = 4096;
const MAX_LABEL: usize = 100;

/// A credential as listed: never its secret.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialOut {
    pub credential_id: String,
    pub storefront_id: i64,
    pub source_id: String,
    pub label: String,
    pub created_at: DateTime<Utc>,
    pub rotated_at: Option<DateTime<Utc>>,
}

impl From<row::Model> for CredentialOut {
    fn from(r: row::Model) -> Self {
        CredentialOut {
            credential_id: r.id,
            storefront_id: r.storefront_id,
            source_id: r.source_id,
            label: r.label,
            created_at: r.created_at,
            rotated_at: r.rotated_at,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialsOut {
    pub credentials: Vec<CredentialOut>,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CredentialCreate {
    pub storefront_id: i64,
    pub source_id: String,
    /// A name for people (default: the source's id).
    pub label: Option<String>,
    /// What the source takes as a bearer token. Write-only.
    pub secret: String,
}

#[derive(Deserialize, ToSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SecretRotate {
    /// The new secret. Write-only.
    pub secret: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CredentialPath {
    pub credential_id: String,
}

fn aad(id: &str) -> String {
    format!("source-credential:{id}")
}

fn check_secret(secret: &str, issues: &mut Issues) {
    if secret.trim().is_empty() || secret.len() > MAX_SECRET {
        issues.add(
            "secret",
            format!("must be 1 to {MAX_SECRET} bytes, not blank"),
        );
    } else if secret.chars().any(char::is_control) {
        issues.add("secret", "must not contain control characters");
    }
}

/// The caller's credentials for one source, oldest first.
pub async fn for_source(
    db: &impl ConnectionTrait,
    account_id: &str,
    storefront_id: i64,
    source_id: &str,
) -> Result<Vec<row::Model>, sea_orm::DbErr> {
    row::Entity::find()
        .filter(row::Column::AccountId.eq(account_id))
        .filter(row::Column::StorefrontId.eq(storefront_id))
        .filter(row::Column::SourceId.eq(source_id))
        .order_by_asc(row::Column::CreatedAt)
        .order_by_asc(row::Column::Id)
        .all(db)
        .await
}

/// The secret of a stored credential, for the outbound call only.
pub fn open(config: &Config, r: &row::Model) -> Result<AuthToken, ApiError> {
    secret::open(&r.secret, &aad(&r.id), config.webhook_secret_key.as_ref())
        .map(AuthToken::new)
        .map_err(|e| ApiError::internal(format!("source credential {}: {e}", r.id)))
}

async fn owned(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<row::Model, ApiError> {
    row::Entity::find_by_id(id)
        .filter(row::Column::AccountId.eq(caller.account_id()))
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("credential"))
}

pub struct ListSourceCredentials;

impl Operation for ListSourceCredentials {
    const NAME: &'static str = "list_source_credentials";
    const DESCRIPTION: &'static str =
        "The account's credentials for account sources, oldest first; secrets are never shown.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/source-credentials";
    type Path = Nothing;
    type Query = Nothing;
    type Body = Nothing;
    type Output = CredentialsOut;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        _: Input<Self>,
    ) -> Result<CredentialsOut, ApiError> {
        let rows = row::Entity::find()
            .filter(row::Column::AccountId.eq(caller.account_id()))
            .order_by_asc(row::Column::CreatedAt)
            .order_by_asc(row::Column::Id)
            .all(&ctx.db)
            .await?;
        Ok(CredentialsOut {
            credentials: rows.into_iter().map(CredentialOut::from).collect(),
        })
    }
}

pub struct CreateSourceCredential;

impl Operation for CreateSourceCredential {
    const NAME: &'static str = "create_source_credential";
    const DESCRIPTION: &'static str = "Register a credential (the bearer token the source's agent takes) for an account source whose capabilities say requiresCredentials. Admins only. The secret is stored encrypted and never returned.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Post;
    const PATH: &'static str = "/buyer/source-credentials";
    const STATUS: u16 = 201;
    const ERRORS: &'static [(u16, &'static str)] = &[
        (
            400,
            "invalid secret or label, unknown source, or a source that takes no credentials",
        ),
        (403, "not an admin or super-admin"),
    ];
    type Path = Nothing;
    type Query = Nothing;
    type Body = Json<CredentialCreate>;
    type Output = CredentialOut;

    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        super::admins_only(caller)
    }

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CredentialOut, ApiError> {
        let body = input.body.0;
        let mut issues = Issues::default();
        check_secret(&body.secret, &mut issues);
        let label = body
            .label
            .as_deref()
            .map(str::trim)
            .unwrap_or(&body.source_id)
            .to_string();
        if label.is_empty() || label.chars().count() > MAX_LABEL {
            issues.add("label", format!("must be 1 to {MAX_LABEL} characters"));
        }
        match sources::find(&ctx.db, body.storefront_id, &body.source_id).await? {
            None => issues.add(
                "sourceId",
                "no such source at this storefront (see list_account_sources)",
            ),
            Some(s) if !s.requires_credentials => issues.add(
                "sourceId",
                "this source takes no credentials: its accounts are declared with account sync",
            ),
            Some(_) => {}
        }
        issues.into_result()?;
        let id = format!("cred_{}", uuid::Uuid::new_v4().simple());
        let sealed = secret::seal(
            &body.secret,
            &aad(&id),
            ctx.config.webhook_secret_key.as_ref(),
        )?;
        let saved = row::ActiveModel {
            id: Set(id),
            account_id: Set(caller.account_id().to_string()),
            storefront_id: Set(body.storefront_id),
            source_id: Set(body.source_id),
            label: Set(label),
            secret: Set(sealed),
            created_at: Set(Utc::now()),
            rotated_at: Set(None),
        }
        .insert(&ctx.db)
        .await?;
        Ok(saved.into())
    }
}

pub struct RotateSourceCredential;

impl Operation for RotateSourceCredential {
    const NAME: &'static str = "rotate_source_credential";
    const DESCRIPTION: &'static str = "Replace a credential's secret (admins only); the next call to the source uses the new one.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Put;
    const PATH: &'static str = "/buyer/source-credentials/{credentialId}/secret";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (403, "not an admin or super-admin"),
        (404, "unknown, or another account's"),
    ];
    type Path = Params<CredentialPath>;
    type Query = Nothing;
    type Body = Json<SecretRotate>;
    type Output = CredentialOut;

    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        super::admins_only(caller)
    }

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CredentialOut, ApiError> {
        let current = owned(&ctx.db, caller, &input.path.0.credential_id).await?;
        let mut issues = Issues::default();
        check_secret(&input.body.0.secret, &mut issues);
        issues.into_result()?;
        let sealed = secret::seal(
            &input.body.0.secret,
            &aad(&current.id),
            ctx.config.webhook_secret_key.as_ref(),
        )?;
        let mut active: row::ActiveModel = current.into();
        active.secret = Set(sealed);
        active.rotated_at = Set(Some(Utc::now()));
        Ok(active.update(&ctx.db).await?.into())
    }
}

pub struct DeleteSourceCredential;

impl Operation for DeleteSourceCredential {
    const NAME: &'static str = "delete_source_credential";
    const DESCRIPTION: &'static str = "Delete a credential and the accounts cached from it (admins only). Bindings made with it stay.";
    const ACCESS: Access = Access::Write;
    const VERB: Verb = Verb::Delete;
    const PATH: &'static str = "/buyer/source-credentials/{credentialId}";
    const ERRORS: &'static [(u16, &'static str)] = &[
        (403, "not an admin or super-admin"),
        (404, "unknown, or another account's"),
    ];
    type Path = Params<CredentialPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = CredentialOut;

    fn admit(caller: &CallerInfo) -> Result<(), ApiError> {
        super::admins_only(caller)
    }

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<CredentialOut, ApiError> {
        let txn = crate::db::begin_write(&ctx.db).await?;
        let current = owned(&txn, caller, &input.path.0.credential_id).await?;
        available_account::Entity::delete_many()
            .filter(available_account::Column::CredentialId.eq(current.id.as_str()))
            .exec(&txn)
            .await?;
        row::Entity::delete_by_id(current.id.as_str())
            .exec(&txn)
            .await?;
        txn.commit().await?;
        Ok(current.into())
    }
}
