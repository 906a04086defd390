//! The assistant in the room: a turn directed at it (`audience:
//! assistant`) starts a run that answers through the agent interface
//! (`crate::agent`), streamed to the room as `message.delta` events and
//! kept as the conversation's messages. Its tools are the registry's
//! operations, run with the directing caller's rights; writes wait for a
//! participant's confirmation unless the account lets them through. One run
//! per conversation at a time, in turn order, driven under a lease
//! ([`runner`]); records in [`service`], what the model sees in
//! [`context`], what a run does for the agent in [`host`].

pub mod context;
pub mod host;
pub mod model;
pub mod operations;
pub mod runner;
pub mod service;

use crate::ops::{OperationDef, def};

pub use runner::Runner;

/// This domain's operations.
pub static OPERATIONS: &[&OperationDef] = &[
    &def::<operations::DirectAssistantTurn>(),
    &def::<operations::ListAssistantRuns>(),
    &def::<operations::GetAssistantRun>(),
    &def::<operations::CancelAssistantRun>(),
    &def::<operations::DecideAssistantAction>(),
];

/// Registers this instance's runner.
pub fn register(
    handles: &mut crate::ops::context::Handles,
    config: &crate::config::Config,
    bus: &crate::bus::EventBus,
    model: std::sync::Arc<dyn crate::agent::Backend>,
) {
    handles.insert(Runner::new(config, bus, model));
}

/// Starts the sweeper once the server is assembled.
pub fn start(ctx: &crate::ops::Ctx) {
    runner::start(ctx);
}
