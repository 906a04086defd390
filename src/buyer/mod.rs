//! The buyer API: advertisers with brand identity, their catalogs, and the
//! audit log.

pub mod advertisers;
pub mod audit;
pub mod brands;
pub mod campaigns;
pub mod catalogs;
pub mod targeting;
pub mod utm;

use crate::caller::CallerInfo;

/// A field stored as JSON text (same on SQLite and PostgreSQL).
pub(crate) fn to_json<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|_| "null".into())
}

/// A JSON-text field read back; the default when it cannot be read.
pub(crate) fn from_json<T: serde::de::DeserializeOwned + Default>(s: &str) -> T {
    serde_json::from_str(s).unwrap_or_default()
}

/// `Some(None)` for an explicit `null`, `None` when absent (with
/// `#[serde(default, deserialize_with = "nullable")]`).
pub(crate) fn nullable<'de, D: serde::Deserializer<'de>, T: serde::Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    use serde::Deserialize;
    Option::<T>::deserialize(d).map(Some)
}
use crate::error::ApiError;
use crate::ops::{
    Access, Ctx, Input, Nothing, Operation, OperationDef, Page, Paged, Pagination, Verb, def,
};

/// Starts this domain's handles: where brand identities resolve, and the
/// catalogs' feed client.
pub fn register(
    handles: &mut crate::ops::context::Handles,
    db: &sea_orm::DatabaseConnection,
    config: &crate::config::Config,
) {
    let brands: std::sync::Arc<dyn brands::BrandRegistry> =
        std::sync::Arc::new(brands::LocalRegistry::new(db.clone()));
    handles.insert(brands);
    let mut tuning = config.catalog_feeds.clone();
    if let Some(secs) = config.catalog_feed_timeout {
        tuning.timeout = std::time::Duration::from_secs(secs);
    }
    if let Some(mb) = config.catalog_feed_max_mb {
        tuning.max_bytes = usize::try_from(mb << 20).unwrap_or(usize::MAX);
    }
    match catalogs::feed::Feeds::start(config.url_policy(), tuning) {
        Ok(feeds) => handles.insert(feeds),
        // Catalog operations then answer 500 (no handle); the rest serves.
        Err(e) => tracing::error!(error = %e, "cannot start the catalog feed client"),
    }
}

/// The buyer domain's own operations (each sub-domain lists its own).
pub static OPERATIONS: &[&OperationDef] = &[&def::<ListAuditLogs>()];

pub struct ListAuditLogs;

impl Operation for ListAuditLogs {
    const NAME: &'static str = "list_audit_logs";
    const DESCRIPTION: &'static str = "The account's audit log, newest first.";
    const ACCESS: Access = Access::Read;
    const VERB: Verb = Verb::Get;
    const PATH: &'static str = "/buyer/audit-logs";
    type Path = Nothing;
    type Query = Page<20, 200>;
    type Body = Nothing;
    type Output = Paged<audit::AuditEntry>;

    async fn run(
        ctx: &Ctx,
        caller: &CallerInfo,
        input: Input<Self>,
    ) -> Result<Self::Output, ApiError> {
        let page = input.query;
        let (items, total) = audit::list(&ctx.db, caller, page.take, page.skip).await?;
        Ok(Paged {
            items,
            pagination: page.of(total),
        })
    }

    fn pagination(out: &Self::Output) -> Option<Pagination> {
        Some(out.pagination)
    }
}
