//! The library: a buyer's materials (files and notes with a lifecycle
//! from upload to acceptance), library requests (asks for materials),
//! RFPs with their turns, and proposal passes over an RFP; file uploads
//! through expiring single-use write URLs ([`uploads`]); and the Page
//! capability bridge of `/mcp/v3` ([`page`]) through which the Teach and
//! Library pages call the public tools.
//!
//! Every query is scoped to the caller's account: another account's record
//! is 404. Everything shared lives in the database (reservations, claims,
//! capabilities) and every state move is a conditional update, so any
//! number of instances serve it; the upload storage directory must be
//! shared between them too.

pub mod materials;
pub mod model;
pub mod page;
pub mod requests;
pub mod rfps;
pub mod uploads;

use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<materials::ListMaterials>(),
    &def::<materials::GetMaterial>(),
    &def::<materials::CreateMaterial>(),
    &def::<materials::UpdateMaterial>(),
    &def::<uploads::CreateMaterialUpload>(),
    &def::<requests::ListLibraryRequests>(),
    &def::<requests::GetLibraryRequest>(),
    &def::<requests::CreateLibraryRequest>(),
    &def::<requests::UpdateLibraryRequest>(),
    &def::<rfps::ListRfps>(),
    &def::<rfps::GetRfp>(),
    &def::<rfps::CreateRfp>(),
    &def::<rfps::UpdateRfp>(),
    &def::<rfps::GetRfpTurn>(),
    &def::<rfps::OpenProposalPass>(),
];

/// Registers the upload storage.
pub fn register(handles: &mut crate::ops::context::Handles, config: &crate::config::Config) {
    handles.insert(uploads::Storage::new(config.upload_storage_dir.clone()));
}

/// Starts the pruning of unfinished upload reservations.
pub fn start(ctx: &crate::ops::Ctx) {
    if let Ok(storage) = ctx.get::<uploads::Storage>() {
        uploads::spawn_pruning(
            ctx.db.clone(),
            storage.clone(),
            ctx.config.upload_prune_every,
            ctx.shutdown.clone(),
        );
    }
}
