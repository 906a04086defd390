//! Settings of the phone lines: the carrier's API key and public key
//! (`AGENTIC_CARRIER_API_KEY`, `AGENTIC_CARRIER_PUBLIC_KEY`). Signing checks
//! and the carrier client are in `crate::phone`.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::VerifyingKey;

/// The carrier API key (`AGENTIC_CARRIER_API_KEY`); never printed.
pub type ApiKey = super::Secret;

/// The carrier's public key, parsed once at start-up.
#[derive(Clone)]
pub struct CarrierKey(pub(crate) VerifyingKey);

impl std::fmt::Debug for CarrierKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CarrierKey(..)")
    }
}

impl std::str::FromStr for CarrierKey {
    type Err = String;

    /// Base64 of the 32-byte Ed25519 public key, as the carrier shows it.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bytes = STANDARD
            .decode(s.trim())
            .map_err(|_| "not base64".to_string())?;
        let bytes: [u8; 32] = bytes
            .try_into()
            .map_err(|_| "not a 32-byte Ed25519 public key".to_string())?;
        VerifyingKey::from_bytes(&bytes)
            .map(CarrierKey)
            .map_err(|_| "not a valid Ed25519 public key".to_string())
    }
}
