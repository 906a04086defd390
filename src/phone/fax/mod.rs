//! Fax lines: sending a PDF fax from a line ([`operations`], [`service`]),
//! bound to its request id and the PDF's digest and submitted to the
//! carrier in the request ([`carrier`]: the Telnyx adapter or the simulated
//! carrier, which fetches and checks the PDF itself); its status from the
//! carrier's events; the customers a line serves and the operator's actions
//! ([`admin`]). Received faxes go through the inbound pipeline: the carrier's
//! event copies the PDF into private [`storage`] ([`receive`]), then the
//! supervised [`pipeline`] extracts its text ([`pdf`]), asks the line's
//! storefront [`agent`], renders the answer and faxes it back (its PDF served
//! to the carrier by [`media`]).

pub mod admin;
pub mod agent;
pub mod carrier;
pub mod media;
pub mod model;
pub mod operations;
pub mod pdf;
pub mod pipeline;
pub mod receive;
pub mod service;
pub mod storage;

/// Registers what the pipeline and the inbound stage need.
pub fn register(
    handles: &mut crate::ops::context::Handles,
    config: &crate::config::Config,
    model: std::sync::Arc<dyn crate::agent::Backend>,
) {
    let storage = storage::Storage::new(config.fax_storage_dir.clone());
    let max_bytes = usize::try_from(config.fax_max_mb * 1024 * 1024).unwrap_or(usize::MAX);
    match crate::net::Outbound::start(config.url_policy(), Default::default()) {
        Ok(outbound) => handles.insert(receive::Receiving {
            outbound,
            storage: storage.clone(),
            max_bytes,
        }),
        Err(e) => tracing::error!(error = %e, "cannot start the inbound fax client"),
    }
    let limits = pdf::ExtractLimits {
        max_bytes,
        max_pages: config.fax_max_pages,
        ..Default::default()
    };
    handles.insert(pipeline::Pipeline {
        backend: model,
        storage,
        limits,
        program: config.fax.extractor.clone(),
        retention: std::time::Duration::from_secs(config.fax_retention_days * 24 * 3600),
    });
}

/// Starts the pipeline once the server is assembled.
pub fn start(ctx: &crate::ops::Ctx) {
    pipeline::start(ctx);
}
