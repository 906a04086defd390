//! Agent phone lines: SMS and plain-text RCS from a line an
//! operator provisioned. [`model`] parses a request into a valid message
//! (with its [`segments`]); [`service`] checks enrolment, the line, the
//! opt-out and the [`limits`] and queues it in one transaction with its
//! outbox job; [`sender`] is the outbox queue that hands messages to the
//! [`carrier`], once at most.

pub mod admin;
pub mod carrier;
pub mod fax;
pub mod inbound;
pub mod keywords;
pub mod limits;
pub mod model;
pub mod operations;
pub mod segments;
pub mod sender;
pub mod service;
pub mod signature;
pub mod telnyx;
pub mod telnyx_wire;

use std::sync::Arc;

use crate::ops::{OperationDef, def};

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[
    &def::<operations::SendSmsMessage>(),
    &def::<operations::SendRcsMessage>(),
    &def::<fax::operations::SendFax>(),
    &def::<fax::operations::GetFax>(),
];

/// The text queue's handler with its carrier: the Telnyx HTTP adapter at
/// `AGENTIC_CARRIER_URL`, or the built-in simulated carrier when it is
/// unset (registered as a handle, so its mode can be switched).
pub fn register(
    handles: &mut crate::ops::context::Handles,
    db: &sea_orm::DatabaseConnection,
    writes: &crate::db::WriteGate,
    config: &crate::config::Config,
    public_url: &str,
    model: Arc<dyn crate::agent::Backend>,
) -> Option<Arc<dyn crate::outbox::Handler>> {
    handles.insert(service::Acceptor::start(db.clone(), writes.clone()));
    fax::register(handles, config, model);
    let carrier: Arc<dyn carrier::Carrier> = match &config.carrier_url {
        Some(url) => {
            let timeout = std::time::Duration::from_secs(15);
            let options = crate::net::OutboundOptions {
                request_timeout: timeout,
                connect_timeout: std::time::Duration::from_secs(5),
                user_agent: format!("agentic-api/{}", env!("CARGO_PKG_VERSION")),
                ..Default::default()
            };
            let outbound = match crate::net::Outbound::start(config.url_policy(), options) {
                Ok(o) => o,
                Err(e) => {
                    tracing::error!(error = %e, "cannot start the carrier client; text messages stay queued");
                    return None;
                }
            };
            let key = config.carrier_api_key.clone();
            if key.is_none() {
                tracing::warn!(
                    "AGENTIC_CARRIER_API_KEY is unset; the carrier will refuse requests"
                );
            }
            let telnyx = Arc::new(telnyx::Telnyx::new(outbound, url, key, timeout));
            handles.insert(fax::carrier::Faxing(telnyx.clone()));
            telnyx
        }
        None => {
            let simulated = carrier::Simulated::new(carrier::SimMode::Deliver);
            handles.insert(simulated.clone());
            // The simulated carrier fetches fax media like a real one: through
            // the guard, except from this server's own public URL (a reply's PDF).
            let open = crate::types::UrlPolicy {
                allow_insecure: true,
            };
            let clients = crate::net::Outbound::start(config.url_policy(), Default::default())
                .and_then(|g| Ok((g, crate::net::Outbound::start(open, Default::default())?)));
            match clients {
                Ok((guarded, own)) => handles.insert(fax::carrier::Faxing(Arc::new(
                    fax::carrier::SimulatedFax::new(
                        simulated.clone(),
                        guarded,
                        (public_url.to_string(), own),
                        db.clone(),
                        writes.clone(),
                    ),
                ))),
                Err(e) => tracing::error!(error = %e, "cannot start the simulated fax carrier"),
            }
            Arc::new(simulated)
        }
    };
    Some(Arc::new(sender::Sender::new(
        carrier,
        db.clone(),
        writes.clone(),
    )))
}
