//! Carrier webhooks are verified before anything in them is read: Telnyx's
//! scheme, an Ed25519 signature (`telnyx-signature-ed25519`, base64) over
//! `{telnyx-timestamp}|{raw body}`, checked with the public key from the
//! carrier's portal (base64, 32 bytes), and the timestamp within a
//! tolerance of now in either direction, so a captured event cannot be
//! replayed later.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ed25519_dalek::Signature;

/// Header carrying the base64 signature.
pub const SIGNATURE_HEADER: &str = "telnyx-signature-ed25519";
/// Header carrying the Unix time (seconds) the carrier signed at.
pub const TIMESTAMP_HEADER: &str = "telnyx-timestamp";
/// How far the signing time may be from now (the carrier's SDKs use 5 min).
pub const DEFAULT_TOLERANCE_SECS: i64 = 300;

/// Why an event is refused; each says what an operator should look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    #[error("the event is not signed ({SIGNATURE_HEADER} and {TIMESTAMP_HEADER} are required)")]
    Unsigned,
    #[error("the event's signature or timestamp is malformed")]
    Malformed,
    #[error("the event was signed too long ago (or in the future)")]
    Stale,
    #[error("the event's signature does not match its body")]
    Forged,
}

pub use crate::config::phone::CarrierKey;

impl CarrierKey {
    /// Verifies one event: `signature` and `timestamp` as the headers carry
    /// them (absent → `None`), `body` the exact bytes received, `now` Unix
    /// seconds.
    pub fn verify(
        &self,
        signature: Option<&[u8]>,
        timestamp: Option<&[u8]>,
        body: &[u8],
        now: i64,
        tolerance_secs: i64,
    ) -> Result<(), Rejected> {
        let (Some(signature), Some(timestamp)) = (signature, timestamp) else {
            return Err(Rejected::Unsigned);
        };
        let at: i64 = std::str::from_utf8(timestamp)
            .ok()
            .and_then(|t| t.trim().parse().ok())
            .ok_or(Rejected::Malformed)?;
        let signature: [u8; 64] = STANDARD
            .decode(signature)
            .ok()
            .and_then(|s| s.try_into().ok())
            .ok_or(Rejected::Malformed)?;
        // The signature first: a forged event learns nothing about the clock.
        let mut signed = Vec::with_capacity(timestamp.len() + 1 + body.len());
        signed.extend_from_slice(timestamp);
        signed.push(b'|');
        signed.extend_from_slice(body);
        self.0
            .verify_strict(&signed, &Signature::from_bytes(&signature))
            .map_err(|_| Rejected::Forged)?;
        if (now - at).abs() > tolerance_secs {
            return Err(Rejected::Stale);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use ed25519_dalek::{Signer, SigningKey};

    fn keys() -> (SigningKey, CarrierKey) {
        let signing = SigningKey::from_bytes(&[7u8; 32]);
        let public = STANDARD.encode(signing.verifying_key().to_bytes());
        (signing, public.parse().unwrap())
    }

    fn sign(key: &SigningKey, ts: &str, body: &[u8]) -> String {
        let mut m = format!("{ts}|").into_bytes();
        m.extend_from_slice(body);
        STANDARD.encode(key.sign(&m).to_bytes())
    }

    const NOW: i64 = 1_800_000_000;
    const BODY: &[u8] = br#"{"data":{"event_type":"message.received"}}"#;

    #[test]
    fn a_fresh_event_signed_by_the_carrier_is_accepted() {
        let (sk, key) = keys();
        let ts = NOW.to_string();
        let sig = sign(&sk, &ts, BODY);
        let ok = key.verify(
            Some(sig.as_bytes()),
            Some(ts.as_bytes()),
            BODY,
            NOW + 10,
            300,
        );
        assert_eq!(ok, Ok(()));
    }

    #[test]
    fn unsigned_malformed_stale_and_forged_events_are_refused() {
        let (sk, key) = keys();
        let ts = NOW.to_string();
        let sig = sign(&sk, &ts, BODY);
        let v = |s: Option<&str>, t: Option<&str>, body: &[u8], now: i64| {
            key.verify(s.map(str::as_bytes), t.map(str::as_bytes), body, now, 300)
        };
        assert_eq!(v(None, Some(&ts), BODY, NOW), Err(Rejected::Unsigned));
        assert_eq!(v(Some(&sig), None, BODY, NOW), Err(Rejected::Unsigned));
        assert_eq!(
            v(Some("%%%"), Some(&ts), BODY, NOW),
            Err(Rejected::Malformed)
        );
        assert_eq!(
            v(Some(&sig), Some("soon"), BODY, NOW),
            Err(Rejected::Malformed)
        );
        // A byte changed in the body, or the timestamp moved, breaks it.
        assert_eq!(
            v(
                Some(&sig),
                Some(&ts),
                br#"{"data":{"event_type":"message.sent"}}"#,
                NOW
            ),
            Err(Rejected::Forged)
        );
        let later = (NOW + 1).to_string();
        assert_eq!(
            v(Some(&sig), Some(&later), BODY, NOW),
            Err(Rejected::Forged)
        );
        // Another key's signature.
        let other = SigningKey::from_bytes(&[8u8; 32]);
        let forged = sign(&other, &ts, BODY);
        assert_eq!(
            v(Some(&forged), Some(&ts), BODY, NOW),
            Err(Rejected::Forged)
        );
        // Genuine but outside the tolerance, either way.
        assert_eq!(
            v(Some(&sig), Some(&ts), BODY, NOW + 301),
            Err(Rejected::Stale)
        );
        assert_eq!(
            v(Some(&sig), Some(&ts), BODY, NOW - 301),
            Err(Rejected::Stale)
        );
    }

    #[test]
    fn the_public_key_must_be_32_bytes_of_base64() {
        assert!("not base64!".parse::<CarrierKey>().is_err());
        assert!(STANDARD.encode([1u8; 31]).parse::<CarrierKey>().is_err());
        let (_, key) = keys();
        assert_eq!(format!("{key:?}"), "CarrierKey(..)");
    }
}
