//! The Page capability bridge of `/mcp/v3`: `open_page` issues a
//! capability for the Teach or Library page, bound to the MCP session that
//! asked, the user (in their account), the page and optionally one
//! resource; the host proxies the page's calls through host-only alias
//! tools, each mapped by [`ALIASES`] onto one public tool with a scoped
//! allowlist of argument fields.
//!
//! The capability is a credential of the stream-token kind
//! (`pgc_<prefix>_<secret>`): only SHA-256 of it is stored
//! (`page_capabilities`), any instance checks it, and it goes only in the
//! result's `_meta` (never `content` or `structuredContent`, which the
//! model sees). Every refusal is `ACCESS_DENIED` (403): missing,
//! malformed, unknown, expired, another MCP session's, another user's,
//! another page's, another resource's, or an argument outside the alias's
//! allowlist.

use chrono::{DateTime, Utc};
use sea_orm::sea_query::Expr;
use sea_orm::{ActiveModelTrait, ColumnTrait, ConnectionTrait, EntityTrait, QueryFilter, Set};
use serde_json::{Map, Value, json};

use entity::page_capability as row;

use crate::auth::keys;
use crate::caller::CallerInfo;
use crate::error::{ApiError, Kind};

/// Capabilities are `pgc_<prefix>_<secret>`.
pub const TOKEN_TAG: &str = "pgc";

/// Where the capability sits in a result's `_meta`.
pub const META_KEY: &str = "agentic-api/pageCapability";

pub const TEACH: &str = "teach";
pub const LIBRARY: &str = "library";
pub const PAGES: [&str; 2] = [TEACH, LIBRARY];

/// One host-only alias: the page whose capability it takes, the public
/// tool it runs, the `type` it fixes for `search`/`get`, the argument
/// fields it lets through, and the statuses a material save may ask for.
#[derive(Debug)]
pub struct Alias {
    pub name: &'static str,
    pub page: &'static str,
    /// The public `/mcp/v3` tool; `None` renews the capability.
    pub tool: Option<&'static str>,
    pub kind: Option<&'static str>,
    pub fields: &'static [&'static str],
    /// For `save_material`: the statuses it may set.
    pub statuses: &'static [&'static str],
    /// Refuse a destination-owned candidate (Teach never rejects one).
    pub refuse_destination_candidate: bool,
}

const PAGE_ARGS: [&str; 2] = ["take", "skip"];

const fn alias(
    name: &'static str,
    page: &'static str,
    tool: Option<&'static str>,
    kind: Option<&'static str>,
    fields: &'static [&'static str],
) -> Alias {
    Alias {
        name,
        page,
        tool,
        kind,
        fields,
        statuses: &[],
        refuse_destination_candidate: false,
    }
}

/// The scoped allowlist: every alias, what it maps onto and what it lets
/// through. Writes are limited to what the page does; nothing here
/// accepts or archives a material.
pub static ALIASES: [Alias; 14] = [
    alias(
        "teach_search_materials",
        TEACH,
        Some("search"),
        Some("material"),
        &[PAGE_ARGS[0], PAGE_ARGS[1], "status", "advertiserId"],
    ),
    alias(
        "teach_get_material",
        TEACH,
        Some("get"),
        Some("material"),
        &["id"],
    ),
    Alias {
        name: "teach_save_material",
        page: TEACH,
        tool: Some("save_material"),
        kind: None,
        // Title and description, an upload's reservation, finalising it
        // (draft) and proposing it (candidate).
        fields: &[
            "materialId",
            "title",
            "description",
            "status",
            "fileName",
            "contentType",
            "sizeBytes",
        ],
        statuses: &["draft", "candidate"],
        refuse_destination_candidate: true,
    },
    alias("teach_renew_capability", TEACH, None, None, &[]),
    alias(
        "library_search_materials",
        LIBRARY,
        Some("search"),
        Some("material"),
        &[PAGE_ARGS[0], PAGE_ARGS[1], "status", "advertiserId"],
    ),
    alias(
        "library_get_material",
        LIBRARY,
        Some("get"),
        Some("material"),
        &["id"],
    ),
    alias(
        "library_search_requests",
        LIBRARY,
        Some("search"),
        Some("library_request"),
        &[PAGE_ARGS[0], PAGE_ARGS[1], "status", "advertiserId"],
    ),
    alias(
        "library_search_rfps",
        LIBRARY,
        Some("search"),
        Some("rfp"),
        &[PAGE_ARGS[0], PAGE_ARGS[1], "status", "advertiserId"],
    ),
    alias(
        "library_get_rfp_turn",
        LIBRARY,
        Some("get"),
        Some("rfp_turn"),
        &["id"],
    ),
    alias(
        "library_open_proposal_pass",
        LIBRARY,
        Some("open_proposal_pass"),
        None,
        &["rfpId", "discoveryId"],
    ),
    Alias {
        name: "library_save_material",
        page: LIBRARY,
        tool: Some("save_material"),
        kind: None,
        // Title and description, finalising, proposing, and the
        // destination side's rejection.
        fields: &[
            "materialId",
            "title",
            "description",
            "status",
            "rejectionReason",
        ],
        statuses: &["draft", "candidate", "rejected"],
        refuse_destination_candidate: false,
    },
    alias(
        "library_save_request",
        LIBRARY,
        Some("save_library_request"),
        None,
        &["requestId", "title", "body", "advertiserId", "status"],
    ),
    alias(
        "library_save_rfp",
        LIBRARY,
        Some("save_rfp"),
        None,
        &[
            "rfpId",
            "title",
            "brief",
            "advertiserId",
            "budget",
            "dueDate",
            "status",
            "appendTurn",
        ],
    ),
    alias("library_renew_capability", LIBRARY, None, None, &[]),
];

pub fn find(name: &str) -> Option<&'static Alias> {
    ALIASES.iter().find(|a| a.name == name)
}

/// `ACCESS_DENIED`, with why (never the token).
pub fn denied(reason: &'static str, message: &str) -> ApiError {
    ApiError::coded(
        Kind::Denied,
        "ACCESS_DENIED",
        message,
        json!({ "reason": reason }),
    )
}

/// A capability just issued or renewed: the only time its token is seen.
#[derive(Debug, Clone)]
pub struct Issued {
    pub token: String,
    pub page: String,
    pub resource_id: Option<String>,
    pub expires_at: DateTime<Utc>,
}

impl Issued {
    /// The `_meta` entry carrying it.
    pub fn meta(&self) -> Value {
        json!({ "token": self.token, "page": self.page, "expiresAt": self.expires_at })
    }
}

/// Issues a capability for `page` (and `resource_id`) to `caller` in MCP
/// session `session_id`, valid for `ttl`; prunes expired ones.
pub async fn issue(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    session_id: &str,
    page: &str,
    resource_id: Option<String>,
    ttl: std::time::Duration,
) -> Result<Issued, ApiError> {
    let now = Utc::now();
    row::Entity::delete_many()
        .filter(row::Column::ExpiresAt.lt(now))
        .exec(db)
        .await?;
    let ttl = chrono::Duration::from_std(ttl).map_err(ApiError::internal)?;
    let expires_at = caller.expires_at.map_or(now + ttl, |at| at.min(now + ttl));
    let new = keys::generate_tagged(TOKEN_TAG);
    row::ActiveModel {
        prefix: Set(new.prefix),
        token_hash: Set(new.hash),
        account_id: Set(caller.account_id().to_string()),
        user_id: Set(caller.user.id),
        mcp_session_id: Set(session_id.to_string()),
        page: Set(page.to_string()),
        resource_id: Set(resource_id.clone()),
        created_at: Set(now),
        expires_at: Set(expires_at),
        ..Default::default()
    }
    .insert(db)
    .await?;
    Ok(Issued {
        token: new.key,
        page: page.to_string(),
        resource_id,
        expires_at,
    })
}

/// The capability `token` if it admits `caller` in `session_id` to `page`.
pub async fn check(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    session_id: Option<&str>,
    token: Option<&Value>,
    page: &str,
) -> Result<row::Model, ApiError> {
    let Some(token) = token.and_then(Value::as_str) else {
        return Err(denied(
            "missing",
            "this tool needs a Page capability (open_page)",
        ));
    };
    let invalid = || denied("invalid", "the Page capability is not valid");
    let prefix = keys::prefix_of_tagged(TOKEN_TAG, token).ok_or_else(invalid)?;
    let cap = row::Entity::find()
        .filter(row::Column::Prefix.eq(prefix))
        .one(db)
        .await?
        .ok_or_else(invalid)?;
    if !keys::hashes_match(&cap.token_hash, &keys::hash_hex(token)) {
        return Err(invalid());
    }
    if cap.expires_at <= Utc::now() {
        return Err(denied(
            "expired",
            "the Page capability expired; open the page again",
        ));
    }
    if cap.account_id != caller.account_id() || cap.user_id != caller.user.id {
        return Err(denied(
            "user",
            "the Page capability belongs to another user",
        ));
    }
    if session_id != Some(cap.mcp_session_id.as_str()) {
        return Err(denied(
            "session",
            "the Page capability belongs to another MCP session",
        ));
    }
    if cap.page != page {
        return Err(denied("page", "the Page capability is for another page"));
    }
    Ok(cap)
}

/// The resource an alias call names, if it names one.
pub fn resource_of(alias: &Alias, args: &Map<String, Value>) -> Option<String> {
    let s = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    match alias.tool {
        Some("get") => s("id").map(|id| match id.split_once(':') {
            Some((rfp, _)) if alias.kind == Some("rfp_turn") => rfp.to_string(),
            _ => id,
        }),
        Some("save_material") => s("materialId"),
        Some("open_proposal_pass") | Some("save_rfp") => s("rfpId"),
        Some("save_library_request") => s("requestId"),
        _ => None,
    }
}

/// Checks the arguments against the alias's allowlist (and a resource-bound
/// capability's resource).
pub fn admit(alias: &Alias, cap: &row::Model, args: &Map<String, Value>) -> Result<(), ApiError> {
    if let Some(extra) = args.keys().find(|k| !alias.fields.contains(&k.as_str())) {
        return Err(denied(
            "allowlist",
            &format!("{} does not take {extra}", alias.name),
        ));
    }
    if let Some(status) = args.get("status")
        && !alias.statuses.is_empty()
        && !status.as_str().is_some_and(|s| alias.statuses.contains(&s))
    {
        return Err(denied(
            "allowlist",
            &format!(
                "{} may only set status {}",
                alias.name,
                alias.statuses.join(" or ")
            ),
        ));
    }
    if let (Some(bound), Some(named)) = (&cap.resource_id, resource_of(alias, args))
        && *bound != named
    {
        return Err(denied(
            "resource",
            "the Page capability is for another resource",
        ));
    }
    Ok(())
}

/// A fresh token and expiry for a still-valid capability; the old token
/// stops working (conditional on it, so two renewals cannot both win).
pub async fn renew(
    db: &impl ConnectionTrait,
    cap: &row::Model,
    caller: &CallerInfo,
    ttl: std::time::Duration,
) -> Result<Issued, ApiError> {
    let now = Utc::now();
    let ttl = chrono::Duration::from_std(ttl).map_err(ApiError::internal)?;
    let expires_at = caller.expires_at.map_or(now + ttl, |at| at.min(now + ttl));
    let new = keys::generate_tagged(TOKEN_TAG);
    let done = row::Entity::update_many()
        .col_expr(row::Column::Prefix, Expr::value(new.prefix))
        .col_expr(row::Column::TokenHash, Expr::value(new.hash))
        .col_expr(row::Column::ExpiresAt, Expr::value(expires_at))
        .filter(row::Column::Id.eq(cap.id))
        .filter(row::Column::TokenHash.eq(&cap.token_hash))
        .exec(db)
        .await?;
    if done.rows_affected == 0 {
        return Err(denied(
            "invalid",
            "the Page capability was renewed meanwhile",
        ));
    }
    Ok(Issued {
        token: new.key,
        page: cap.page.clone(),
        resource_id: cap.resource_id.clone(),
        expires_at,
    })
}

/// Is `id` a material, RFP or library request of the caller's account?
pub async fn resource_exists(
    db: &impl ConnectionTrait,
    caller: &CallerInfo,
    id: &str,
) -> Result<bool, ApiError> {
    if super::materials::owned(db, caller, id).await.is_ok()
        || super::rfps::owned(db, caller, id).await.is_ok()
        || super::requests::owned(db, caller, id).await.is_ok()
    {
        return Ok(true);
    }
    Ok(false)
}
