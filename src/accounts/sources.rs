//! A storefront's account sources. Its own AdCP agent is the source
//! `agent`, implicit (buyer-declared accounts, every billing party) until
//! the operator overrides it; external sources (an upstream platform's
//! agent, say) are registered by the operator with their capabilities.

use sea_orm::{ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, QueryOrder};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use entity::{account_source, storefront};

use super::model::BILLING_PARTIES;
use crate::caller::CallerInfo;
use crate::discovery::seller::{AuthToken, StorefrontTarget};
use crate::error::ApiError;
use crate::ops::{Access, Ctx, Input, Nothing, Operation, Params, Verb};
use crate::types::{OutboundUrl, UrlPolicy};

/// The implicit source: the storefront's own agent.
pub const AGENT: &str = "agent";

/// One account source with its capabilities.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub storefront_id: i64,
    pub source_id: String,
    pub name: String,
    /// The source's agent; `None` is the storefront's own.
    pub url: Option<String>,
    pub requires_credentials: bool,
    pub supported_billing: Vec<String>,
}

impl Source {
    fn agent(s: &storefront::Model) -> Self {
        Source {
            storefront_id: s.id,
            source_id: AGENT.into(),
            name: format!("{} (seller agent)", s.name),
            url: None,
            requires_credentials: false,
            supported_billing: BILLING_PARTIES.iter().map(|b| b.to_string()).collect(),
        }
    }

    fn from_row(r: account_source::Model) -> Self {
        Source {
            storefront_id: r.storefront_id,
            source_id: r.source_id,
            name: r.name,
            url: r.url,
            requires_credentials: r.requires_credentials,
            supported_billing: serde_json::from_str(&r.supported_billing).unwrap_or_default(),
        }
    }
}

/// A storefront's sources: its agent first (as overridden, if it is), then
/// the external ones in registration order. `None` for an unknown storefront.
pub async fn of_storefront(
    db: &impl ConnectionTrait,
    storefront_id: i64,
) -> Result<Option<Vec<Source>>, sea_orm::DbErr> {
    let Some(s) = storefront::Entity::find_by_id(storefront_id)
        .one(db)
        .await?
    else {
        return Ok(None);
    };
    let rows = account_source::Entity::find()
        .filter(account_source::Column::StorefrontId.eq(storefront_id))
        .order_by_asc(account_source::Column::Id)
        .all(db)
        .await?;
    let mut out = Vec::with_capacity(rows.len() + 1);
    if !rows.iter().any(|r| r.source_id == AGENT) {
        out.push(Source::agent(&s));
    }
    let (agent, others): (Vec<_>, Vec<_>) = rows.into_iter().partition(|r| r.source_id == AGENT);
    out.extend(agent.into_iter().chain(others).map(Source::from_row));
    Ok(Some(out))
}

/// One source of a storefront, if both exist.
pub async fn find(
    db: &impl ConnectionTrait,
    storefront_id: i64,
    source_id: &str,
) -> Result<Option<Source>, sea_orm::DbErr> {
    Ok(of_storefront(db, storefront_id)
        .await?
        .and_then(|all| all.into_iter().find(|s| s.source_id == source_id)))
}

/// Whom to call for a source: its own agent with the buyer's credential,
/// or the storefront's agent with the storefront's token. The URL is
/// checked against the current policy.
pub async fn target(
    db: &impl ConnectionTrait,
    source: &Source,
    credential: Option<AuthToken>,
    policy: UrlPolicy,
) -> Result<StorefrontTarget, ApiError> {
    let s = storefront::Entity::find_by_id(source.storefront_id)
        .one(db)
        .await?
        .ok_or_else(|| ApiError::not_found("storefront"))?;
    let raw = source.url.clone().unwrap_or(s.url);
    let url = OutboundUrl::parse(&raw, policy).map_err(|reason| {
        ApiError::coded(
            crate::error::Kind::Unavailable,
            "SERVICE_UNAVAILABLE",
            format!("the account source's URL is not allowed: {reason}"),
            serde_json::json!({ "storefrontId": s.id, "sourceId": source.source_id }),
        )
    })?;
    Ok(StorefrontTarget {
        id: s.id,
        name: s.name,
        url,
        auth_token: credential.or_else(|| s.auth_token.map(AuthToken::new)),
    })
}

/// What a source can do, as buyers see it.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Capabilities {
    /// Buyers register a credential and list the accounts it can see
    /// (AdCP `require_operator_auth`); otherwise accounts are declared
    /// with account sync.
    pub requires_credentials: bool,
    /// The billing parties account sync may ask for.
    pub supported_billing: Vec<String>,
}

#[derive(Debug, Clone, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceOut {
    pub storefront_id: i64,
    pub source_id: String,
    pub name: String,
    /// `agent` (the storefront's own) or `external`.
    pub kind: &'static str,
    pub capabilities: Capabilities,
}

impl From<Source> for SourceOut {
    fn from(s: Source) -> Self {
        SourceOut {
            kind: if s.url.is_none() { "agent" } else { "external" },
            storefront_id: s.storefront_id,
            source_id: s.source_id,
            name: s.name,
            capabilities: Capabilities {
                requires_credentials: s.requires_credentials,
                supported_billing: s.supported_billing,
            },
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourcesOut {
    pub sources: Vec<SourceOut>,
    /// Operated on this server: buyer-declared accounts are reviewed by
    /// the storefront's operator.
    pub managed: bool,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct StorefrontPath {
    /// The storefront's id (an integer).
    pub storefront_id: String,
}

pub struct ListAccountSources;

impl Operation for ListAccountSources {
    const NAME: &'static str = "list_account_sources";
    const DESCRIPTION: &'static str = "A storefront's account sources and their capabilities: requiresCredentials (register a credential, then list_available_accounts) or account sync (supportedBilling).";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/storefronts/{storefrontId}/account-sources";
    const ERRORS: &'static [(u16, &'static str)] = &[(404, "unknown storefront")];
    type Path = Params<StorefrontPath>;
    type Query = Nothing;
    type Body = Nothing;
    type Output = SourcesOut;

    async fn run(
        ctx: &Ctx,
        _caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<SourcesOut, ApiError> {
        let id: i64 = input
            .path
            .0
            .storefront_id
            .parse()
            .map_err(|_| ApiError::not_found("storefront"))?;
        let sources = of_storefront(&ctx.db, id)
            .await?
            .ok_or_else(|| ApiError::not_found("storefront"))?;
        Ok(SourcesOut {
            sources: sources.into_iter().map(SourceOut::from).collect(),
            managed: operator_of(&ctx.db, id).await?.is_some(),
        })
    }
}

/// The account operating a storefront on this server, if one does.
pub async fn operator_of(
    db: &impl ConnectionTrait,
    storefront_id: i64,
) -> Result<Option<String>, sea_orm::DbErr> {
    Ok(
        entity::storefront_operator::Entity::find_by_id(storefront_id)
            .one(db)
            .await?
            .map(|r| r.account_id),
    )
}
