//! Settings of webhook delivery: the key that seals signing secrets at rest
//! (`AGENTIC_WEBHOOK_SECRET_KEY`) and the delivery bounds. Sealing itself is
//! in `crate::webhooks::secret`.

use std::time::Duration;

/// The operator's key (`AGENTIC_WEBHOOK_SECRET_KEY`, 64 hex characters).
/// Its `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct SecretKey([u8; 32]);

impl std::fmt::Debug for SecretKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SecretKey(<redacted>)")
    }
}

/// Why a key was refused. The message never repeats the value.
pub const KEY_FORMAT: &str = "AGENTIC_WEBHOOK_SECRET_KEY (--webhook-secret-key) must be exactly 64 hexadecimal characters (a 32-byte AES-256 key, e.g. from `openssl rand -hex 32`); the value given is not shown";

impl SecretKey {
    pub fn from_hex(s: &str) -> Result<Self, &'static str> {
        let s = s.trim();
        if s.len() != 64 {
            return Err(KEY_FORMAT);
        }
        let mut key = [0u8; 32];
        hex::decode_to_slice(s, &mut key).map_err(|_| KEY_FORMAT)?;
        Ok(SecretKey(key))
    }

    pub fn from_bytes(key: [u8; 32]) -> Self {
        SecretKey(key)
    }

    /// The raw key, for the cipher (`crate::webhooks::secret`).
    pub(crate) fn bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// Settings of delivery.
#[derive(Debug, Clone)]
pub struct DeliveryTuning {
    /// One attempt, from connecting to the end of the answer.
    pub timeout: Duration,
    /// Attempts are listed this long, then pruned.
    pub retention: Duration,
}

impl Default for DeliveryTuning {
    fn default() -> Self {
        DeliveryTuning {
            timeout: Duration::from_secs(10),
            retention: Duration::from_secs(7 * 24 * 3600),
        }
    }
}
