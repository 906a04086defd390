//! The account domain's shared vocabulary.

/// The AdCP billing parties (`enums/billing-party.json`).
pub const BILLING_PARTIES: [&str; 3] = ["operator", "agent", "advertiser"];

/// Billing observations AdCP deprecated; never accepted as input.
pub const DEPRECATED_BILLING: [&str; 2] = ["DECISIONED", "ROUTED"];

/// Intake states.
pub const PENDING_REVIEW: &str = "pending_review";
pub const ACCEPTED: &str = "accepted";
pub const REJECTED: &str = "rejected";

/// Binding states (`advertiser_linked_accounts.status`).
pub const ACTIVE: &str = "active";

/// Why `billing` is not acceptable, if it is not.
pub fn billing_problem(billing: &str) -> Option<String> {
    if BILLING_PARTIES.contains(&billing) {
        return None;
    }
    if DEPRECATED_BILLING.contains(&billing.to_ascii_uppercase().as_str()) {
        return Some(format!(
            "{billing} is a deprecated billing observation, never an input; use operator, agent or advertiser"
        ));
    }
    Some("must be operator, agent or advertiser".into())
}

/// AdCP's domain pattern for `operator` (lower-case labels of letters,
/// digits and inner hyphens, dot-separated).
pub fn is_domain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn billing_values() {
        assert_eq!(billing_problem("agent"), None);
        assert!(billing_problem("ROUTED").is_some_and(|m| m.contains("deprecated")));
        assert!(billing_problem("decisioned").is_some_and(|m| m.contains("deprecated")));
        assert!(billing_problem("brand").is_some_and(|m| m.starts_with("must be")));
    }

    #[test]
    fn domains() {
        assert!(is_domain("agency.example"));
        assert!(is_domain("a-b.c1"));
        assert!(!is_domain("Agency.example"));
        assert!(!is_domain("-a.example"));
        assert!(!is_domain("a..b"));
        assert!(!is_domain(""));
    }
}
