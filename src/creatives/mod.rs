//! Creatives: an advertiser's creative library (AdCP 3.1 creative assets:
//! a format, assets by role, a landing page), assigned to media buys (one
//! package each) and sent to their sellers with AdCP `sync_creatives`.
//!
//! - [`model`]: the wire shapes and the checks of input;
//! - [`service`]: the library and the assignments, per account;
//! - [`sync`]: the calls to the sellers, one AdCP creative per assignment
//!   with its click URL's utm parameters resolved (`crate::buyer::utm`),
//!   and the managed-storefront linkage rule;
//! - [`operations`]: the registry entries.

pub mod model;
pub mod operations;
pub mod service;
pub mod sync;

use crate::ops::{OperationDef, def};

pub static OPERATIONS: &[&OperationDef] = &[
    &def::<operations::ListCreatives>(),
    &def::<operations::GetCreative>(),
    &def::<operations::CreateCreative>(),
    &def::<operations::UpdateCreative>(),
    &def::<operations::AssignCreative>(),
    &def::<operations::SyncCreatives>(),
];
