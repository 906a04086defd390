//! Password checks for the login page. Argon2 verification is slow by
//! design, so it runs on the blocking pool; an unknown email (or a user
//! without a password) is checked against a dummy hash with the same
//! parameters, so the answer takes as long whether the account exists or
//! not. The comparison inside argon2 is constant-time.

use std::sync::OnceLock;

use argon2::Argon2;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

use crate::error::ApiError;

/// Hash of a random password nobody knows, made with the same default
/// parameters as `admin create-user --password`.
fn dummy_hash() -> &'static str {
    static DUMMY: OnceLock<String> = OnceLock::new();
    DUMMY.get_or_init(|| {
        let secret = super::super::keys::random_base62(32);
        Argon2::default()
            .hash_password(secret.as_bytes())
            .map(|h| h.to_string())
            // Unreachable with default parameters; an empty string fails
            // to parse and is refused like a wrong password.
            .unwrap_or_default()
    })
}

/// Does `password` match `stored` (a PHC string)? `None` checks against the
/// dummy hash and is always false.
pub async fn verify(stored: Option<String>, password: String) -> Result<bool, ApiError> {
    actix_web::web::block(move || {
        let real = stored.is_some();
        let hash = stored.unwrap_or_else(|| dummy_hash().to_string());
        let ok = Argon2::default()
            .verify_password(password.as_bytes(), hash.as_str())
            .is_ok();
        ok && real
    })
    .await
    .map_err(ApiError::internal)
}
