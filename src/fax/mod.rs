//! Fax lines: PDF handling for inbound faxes and rendered replies.
pub mod pdf;
