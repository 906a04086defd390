//! Agent phone lines (SMS, RCS).

pub mod keywords;
pub mod signature;
pub mod telnyx_wire;
