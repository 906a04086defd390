//! Agent phone lines (SMS, RCS).

pub mod carrier;
pub mod keywords;
pub mod signature;
pub mod telnyx;
pub mod telnyx_wire;
