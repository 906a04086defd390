//! Targeting: campaign `constraints` validated against real vocabularies,
//! the postal country/system pairing, effective targeting, and the
//! dimension operations (resolve a name, list labels, validate).

pub mod constraints;
pub mod openapi;
pub mod operations;
pub mod postal;
pub mod raw;
pub mod vocab;

pub use constraints::{Constraints, EffectiveTargeting, MetroArea, PostalArea, parse_constraints};
pub use vocab::metro_name;
