//! API key format: `agk_<prefix>_<secret>`. The prefix (12 base62 chars) is a
//! readable, non-secret handle used to find the row; the secret (40 base62
//! chars, ~238 bits) never touches the database: only SHA-256 of the whole
//! key is stored. High entropy makes a slow hash unnecessary.

use rand::Rng;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
pub const PREFIX_LEN: usize = 12;
pub const SECRET_LEN: usize = 40;
/// API keys are `agk_<prefix>_<secret>`.
pub const API_KEY_TAG: &str = "agk";

pub struct NewKey {
    pub key: String,
    pub prefix: String,
    pub hash: String,
}

/// `api_keys.kind` of an API key.
pub const KIND_API_KEY: &str = "key";
/// `api_keys.kind` of an OAuth grant's credential row (no usable secret).
pub const KIND_OAUTH_GRANT: &str = "oauth";

pub fn random_base62(n: usize) -> String {
    let mut rng = rand::rng();
    (0..n)
        .map(|_| ALPHABET[rng.random_range(0..ALPHABET.len())] as char)
        .collect()
}

pub fn generate() -> NewKey {
    generate_tagged(API_KEY_TAG)
}

/// A new credential `<tag>_<prefix>_<secret>`, same shape as an API key.
pub fn generate_tagged(tag: &str) -> NewKey {
    let prefix = random_base62(PREFIX_LEN);
    let key = format!("{tag}_{prefix}_{}", random_base62(SECRET_LEN));
    let hash = hash_hex(&key);
    NewKey { key, prefix, hash }
}

pub fn hash_hex(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// The prefix of a well-formed key, or `None` for anything else.
pub fn prefix_of(token: &str) -> Option<&str> {
    prefix_of_tagged(API_KEY_TAG, token)
}

/// The prefix of a well-formed `<tag>_<prefix>_<secret>` credential.
pub fn prefix_of_tagged<'a>(tag: &str, token: &'a str) -> Option<&'a str> {
    let rest = token.strip_prefix(tag)?.strip_prefix('_')?;
    let (prefix, secret) = rest.split_once('_')?;
    let ok = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_alphanumeric());
    (ok(prefix, PREFIX_LEN) && ok(secret, SECRET_LEN)).then_some(prefix)
}

pub fn hashes_match(a: &str, b: &str) -> bool {
    a.as_bytes().ct_eq(b.as_bytes()).into()
}
