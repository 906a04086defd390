//! Campaigns: one advertiser's flight, budget, brief, goals and targeting,
//! from DRAFT through pause, resume, archive and restore.

pub mod model;
pub mod operations;
pub mod service;
mod targeting;
