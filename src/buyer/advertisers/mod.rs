//! Advertisers: the root of the buyer API.

pub mod events;
pub mod model;
pub mod openapi;
pub mod operations;
pub mod service;
