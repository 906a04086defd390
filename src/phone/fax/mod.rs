//! Fax lines: sending a PDF fax from a line ([`operations`], [`service`]),
//! bound to its request id and the PDF's digest and submitted to the
//! carrier in the request ([`carrier`]: the Telnyx adapter or the simulated
//! carrier, which fetches and checks the PDF itself); its status from the
//! carrier's events; the customers a line serves and the operator's actions
//! ([`admin`]).

pub mod admin;
pub mod carrier;
pub mod model;
pub mod operations;
pub mod service;
