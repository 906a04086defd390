//! Webhook secrets at rest. The secret is needed in clear to sign deliveries
//! (HMAC-SHA256), so it cannot be hashed; with a key (see [`super::at_rest`]
//! for where it comes from) it is encrypted with AES-256-GCM (random 96-bit
//! nonce, the subscription id as associated data, so a stored value cannot
//! be moved to another row). Every stored value carries a version prefix:
//!
//! - `plain1:<secret>`: written while there was no key (sealed at the next
//!   start with one);
//! - `aesgcm1:<hex of nonce (12 bytes), ciphertext and tag (16 bytes)>`.
//!
//! [`open`] reads one back for the delivery worker.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Key, Nonce};

/// The prefix of a secret stored in plain text.
pub const PLAIN: &str = "plain1:";
const AES_GCM: &str = "aesgcm1:";
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

pub use crate::config::webhooks::{KEY_FORMAT, SecretKey};

impl SecretKey {
    fn cipher(&self) -> Aes256Gcm {
        Aes256Gcm::new(&Key::<Aes256Gcm>::from(*self.bytes()))
    }
}

/// Why a stored secret could not be read back. Never carries the secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error(
        "the stored webhook secret is encrypted but no AGENTIC_WEBHOOK_SECRET_KEY is configured"
    )]
    NoKey,
    #[error("the stored webhook secret has an unknown format")]
    UnknownFormat,
    #[error(
        "the stored webhook secret does not decrypt with the configured key (wrong key or altered value)"
    )]
    Undecryptable,
}

/// The value to store for `secret` of subscription `id`.
pub fn seal(secret: &str, id: &str, key: Option<&SecretKey>) -> Result<String, anyhow::Error> {
    let Some(key) = key else {
        return Ok(format!("{PLAIN}{secret}"));
    };
    let nonce: [u8; NONCE_LEN] = rand::random();
    let sealed = key
        .cipher()
        .encrypt(
            &Nonce::from(nonce),
            Payload {
                msg: secret.as_bytes(),
                aad: id.as_bytes(),
            },
        )
        .map_err(|_| anyhow::anyhow!("webhook secret encryption failed"))?;
    let mut out = Vec::with_capacity(NONCE_LEN + sealed.len());
    out.extend_from_slice(&nonce);
    out.extend_from_slice(&sealed);
    Ok(format!("{AES_GCM}{}", hex::encode(out)))
}

/// The secret of subscription `id` from its stored value. Plaintext rows
/// (written before a key was configured) read back with or without a key.
pub fn open(stored: &str, id: &str, key: Option<&SecretKey>) -> Result<String, OpenError> {
    if let Some(plain) = stored.strip_prefix(PLAIN) {
        return Ok(plain.to_string());
    }
    let Some(hexed) = stored.strip_prefix(AES_GCM) else {
        return Err(OpenError::UnknownFormat);
    };
    let key = key.ok_or(OpenError::NoKey)?;
    let bytes = hex::decode(hexed).map_err(|_| OpenError::Undecryptable)?;
    if bytes.len() < NONCE_LEN + TAG_LEN {
        return Err(OpenError::Undecryptable);
    }
    let (nonce, sealed) = bytes.split_at(NONCE_LEN);
    let nonce: [u8; NONCE_LEN] = nonce.try_into().map_err(|_| OpenError::Undecryptable)?;
    let plain = key
        .cipher()
        .decrypt(
            &Nonce::from(nonce),
            Payload {
                msg: sealed,
                aad: id.as_bytes(),
            },
        )
        .map_err(|_| OpenError::Undecryptable)?;
    String::from_utf8(plain).map_err(|_| OpenError::Undecryptable)
}

/// Whether a stored value is encrypted (for operators and tests).
pub fn is_encrypted(stored: &str) -> bool {
    stored.starts_with(AES_GCM)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    const SECRET: &str = "a-very-secret-string-1234";

    fn key(b: u8) -> SecretKey {
        SecretKey::from_bytes([b; 32])
    }

    #[test]
    fn round_trip_encrypted() {
        let k = key(7);
        let stored = seal(SECRET, "wh_1", Some(&k)).unwrap();
        assert!(is_encrypted(&stored));
        assert!(!stored.contains(SECRET));
        assert_eq!(open(&stored, "wh_1", Some(&k)).unwrap(), SECRET);
        // A fresh nonce each time.
        assert_ne!(stored, seal(SECRET, "wh_1", Some(&k)).unwrap());
    }

    #[test]
    fn round_trip_plain_is_told_apart() {
        let stored = seal(SECRET, "wh_1", None).unwrap();
        assert_eq!(stored, format!("plain1:{SECRET}"));
        assert!(!is_encrypted(&stored));
        assert_eq!(open(&stored, "wh_1", None).unwrap(), SECRET);
        // Rows written before the key was set still read back.
        assert_eq!(open(&stored, "wh_1", Some(&key(1))).unwrap(), SECRET);
    }

    #[test]
    fn wrong_key_fails() {
        let stored = seal(SECRET, "wh_1", Some(&key(7))).unwrap();
        assert_eq!(
            open(&stored, "wh_1", Some(&key(8))),
            Err(OpenError::Undecryptable)
        );
        assert_eq!(open(&stored, "wh_1", None), Err(OpenError::NoKey));
    }

    #[test]
    fn tampered_ciphertext_fails() {
        let k = key(7);
        let stored = seal(SECRET, "wh_1", Some(&k)).unwrap();
        let hexed = stored.strip_prefix("aesgcm1:").unwrap();
        let mut bytes = hex::decode(hexed).unwrap();
        for i in [0, NONCE_LEN, bytes.len() - 1] {
            bytes[i] ^= 1;
            let altered = format!("aesgcm1:{}", hex::encode(&bytes));
            assert_eq!(
                open(&altered, "wh_1", Some(&k)),
                Err(OpenError::Undecryptable),
                "byte {i}"
            );
            bytes[i] ^= 1;
        }
        // Truncated, not hex, unknown version.
        assert!(open(&stored[..stored.len() - 2], "wh_1", Some(&k)).is_err());
        assert!(open("aesgcm1:zz", "wh_1", Some(&k)).is_err());
        assert_eq!(
            open("v9:abc", "wh_1", Some(&k)),
            Err(OpenError::UnknownFormat)
        );
    }

    #[test]
    fn a_value_moved_to_another_row_fails() {
        let k = key(7);
        let stored = seal(SECRET, "wh_1", Some(&k)).unwrap();
        assert_eq!(
            open(&stored, "wh_2", Some(&k)),
            Err(OpenError::Undecryptable)
        );
    }

    #[test]
    fn key_format() {
        assert!(SecretKey::from_hex(&"ab".repeat(32)).is_ok());
        assert!(SecretKey::from_hex(&"AB".repeat(32)).is_ok());
        for bad in [
            "",
            "abc",
            &"ab".repeat(31),
            &"ab".repeat(33),
            &"zz".repeat(32),
        ] {
            let err = SecretKey::from_hex(bad).unwrap_err();
            assert_eq!(err, KEY_FORMAT);
        }
        assert_eq!(
            format!("{:?}", key(9)),
            "SecretKey(<redacted>)",
            "Debug never shows the key"
        );
    }
}
