//! The built-in demo sellers' accounts: each answers the AdCP 3.1 account
//! tasks `list_accounts` and `sync_accounts` in-process, as the reference
//! seller (`scripts/adcp-seller`) does, keeping what is synced in memory (a
//! restart forgets it, as a demo may). Each storefront's account model is
//! [`demo_account_capabilities`]:
//!
//! - most are buyer-declared (`require_operator_auth: false`): `sync_accounts`
//!   provisions one account per (brand, operator, sandbox), active at once,
//!   with the id [`account_id`], and `list_accounts` returns the accounts
//!   synced so far. Atlas Outdoor invoices only the agent: any other billing
//!   party is a failed entry, `BILLING_NOT_SUPPORTED`;
//! - Cartwheel Retail Media needs the buyer's operator credential
//!   (`require_operator_auth: true`): without a token on the storefront both
//!   tasks are refused `AUTH_REQUIRED`; with one, `list_accounts` returns its
//!   two upstream seats ([`CARTWHEEL_SEATS`]) and `sync_accounts` provisions
//!   nothing (each entry fails `UNSUPPORTED_PROVISIONING`: its accounts are
//!   managed upstream).
//!
//! A repeated idempotency key returns the first answer (`replayed: true`)
//! and changes nothing; the same key with different accounts is
//! `IDEMPOTENCY_CONFLICT`. `billing_entity.bank` is write-only: it is never
//! stored or sent back.

use std::collections::HashMap;

use parking_lot::Mutex;
use serde_json::{Map, Value, json};

/// Every AdCP billing party (`enums/billing-party.json`).
pub const ALL_BILLING: &[&str] = &["operator", "agent", "advertiser"];

/// A demo storefront's account model, for seeding matching account sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DemoAccountCapabilities {
    /// AdCP `account.require_operator_auth`: the buyer's own credential for
    /// this storefront must be sent (`StorefrontTarget::auth_token`), else
    /// the account tasks answer `AUTH_REQUIRED`. Such a seller's accounts are
    /// found with `list_accounts` only; it provisions nothing by sync.
    pub requires_credentials: bool,
    /// AdCP `account.supported_billing`: the billing parties `sync_accounts`
    /// accepts (another is a failed entry, `BILLING_NOT_SUPPORTED`).
    pub supported_billing: &'static [&'static str],
}

/// The account model of the demo storefront with this slug
/// ([`super::demo_sellers::DemoStorefront::slug`]): `atlas-outdoor` bills
/// only the agent, `cartwheel-retail` requires credentials and bills the
/// operator, the others (and any other slug) are buyer-declared with every
/// billing party.
pub fn demo_account_capabilities(slug: &str) -> DemoAccountCapabilities {
    match slug {
        "atlas-outdoor" => DemoAccountCapabilities {
            requires_credentials: false,
            supported_billing: &["agent"],
        },
        "cartwheel-retail" => DemoAccountCapabilities {
            requires_credentials: true,
            supported_billing: &["operator"],
        },
        _ => DemoAccountCapabilities {
            requires_credentials: false,
            supported_billing: ALL_BILLING,
        },
    }
}

/// Cartwheel Retail Media's upstream seats: (account_id, name).
pub const CARTWHEEL_SEATS: [(&str, &str); 2] = [
    ("cartwheel_seat_1", "Cartwheel self-serve seat"),
    ("cartwheel_seat_2", "Cartwheel managed-service seat"),
];

/// The id of a buyer-declared account, the same as the reference seller's:
/// `acc_<brand domain>_<operator>`, with `~<brand_id>` after the domain when
/// the brand has one and `_sandbox` at the end for a sandbox account
/// (`acme.example` operated by `agency.example`:
/// `acc_acme.example_agency.example`).
pub fn account_id(domain: &str, brand_id: Option<&str>, operator: &str, sandbox: bool) -> String {
    let mut id = format!("acc_{domain}");
    if let Some(b) = brand_id.filter(|b| !b.is_empty()) {
        id.push('~');
        id.push_str(b);
    }
    id.push('_');
    id.push_str(operator);
    if sandbox {
        id.push_str("_sandbox");
    }
    id
}

#[derive(Debug, Clone, PartialEq)]
struct Account {
    id: String,
    name: String,
    brand: Value,
    operator: String,
    sandbox: bool,
    billing: String,
    /// Without `bank`.
    billing_entity: Option<Value>,
    payment_terms: Option<Value>,
}

impl Account {
    fn listed(&self) -> Value {
        let mut v = json!({
            "account_id": self.id, "name": self.name, "status": "active",
            "brand": self.brand, "operator": self.operator, "billing": self.billing,
        });
        self.extras(&mut v);
        v
    }

    fn synced(&self, action: &str) -> Value {
        let mut v = json!({
            "account_id": self.id, "brand": self.brand, "operator": self.operator,
            "name": self.name, "action": action, "status": "active", "billing": self.billing,
        });
        self.extras(&mut v);
        v
    }

    fn extras(&self, v: &mut Value) {
        if let Some(e) = &self.billing_entity {
            v["billing_entity"] = e.clone();
        }
        if let Some(t) = &self.payment_terms {
            v["payment_terms"] = t.clone();
        }
        if self.sandbox {
            v["sandbox"] = json!(true);
        }
    }
}

/// One demo seller's accounts.
pub struct DemoAccounts {
    name: &'static str,
    caps: DemoAccountCapabilities,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// In creation order.
    accounts: Vec<Account>,
    /// By idempotency key: the request's accounts part and the answer.
    by_key: HashMap<String, (Value, Value)>,
}

impl DemoAccounts {
    /// `name` is the storefront's (for messages), `slug` picks its model.
    pub fn new(name: &'static str, slug: &str) -> Self {
        DemoAccounts {
            name,
            caps: demo_account_capabilities(slug),
            state: Mutex::new(State::default()),
        }
    }

    /// One task's answer payload; `None` for a task that is not an account
    /// task. `authenticated`: the storefront carries the buyer's credential.
    pub fn answer(
        &self,
        task: &str,
        authenticated: bool,
        args: &Map<String, Value>,
    ) -> Option<Value> {
        if !matches!(task, "list_accounts" | "sync_accounts") {
            return None;
        }
        if self.caps.requires_credentials && !authenticated {
            return Some(failed(
                "AUTH_REQUIRED",
                &format!(
                    "{} requires operator credentials; none were sent",
                    self.name
                ),
            ));
        }
        Some(match task {
            "list_accounts" => self.list(args),
            _ => self.sync(args),
        })
    }

    fn list(&self, args: &Map<String, Value>) -> Value {
        let mut accounts: Vec<Value> = if self.caps.requires_credentials {
            CARTWHEEL_SEATS
                .iter()
                .map(|(id, name)| {
                    json!({"account_id": id, "name": name, "status": "active", "billing": "operator"})
                })
                .collect()
        } else {
            self.state
                .lock()
                .accounts
                .iter()
                .map(Account::listed)
                .collect()
        };
        // The request's filters: status, sandbox, and one account by id.
        if let Some(status) = args.get("status").and_then(Value::as_str) {
            accounts.retain(|a| a["status"] == status);
        }
        if let Some(sandbox) = args.get("sandbox").and_then(Value::as_bool) {
            accounts.retain(|a| a["sandbox"].as_bool().unwrap_or(false) == sandbox);
        }
        if let Some(id) = args
            .get("account")
            .and_then(|a| a.get("account_id"))
            .and_then(Value::as_str)
        {
            accounts.retain(|a| a["account_id"] == id);
        }
        json!({"status": "completed", "accounts": accounts})
    }

    fn sync(&self, args: &Map<String, Value>) -> Value {
        let key = args
            .get("idempotency_key")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let Some(entries) = args.get("accounts").and_then(Value::as_array) else {
            return failed("INVALID_REQUEST", "accounts is required");
        };
        if key.len() < 16 {
            return failed(
                "INVALID_REQUEST",
                "idempotency_key of at least 16 characters is required",
            );
        }
        if args.get("delete_missing").and_then(Value::as_bool) == Some(true) {
            return failed(
                "UNSUPPORTED_FEATURE",
                "this seller does not deactivate accounts (delete_missing)",
            );
        }
        let dry_run = args.get("dry_run").and_then(Value::as_bool) == Some(true);
        let request = json!({"accounts": entries, "dry_run": dry_run});

        let mut st = self.state.lock();
        if let Some((earlier, answer)) = st.by_key.get(key) {
            if *earlier != request {
                return failed(
                    "IDEMPOTENCY_CONFLICT",
                    "idempotency_key reused with different accounts",
                );
            }
            let mut a = answer.clone();
            a["replayed"] = json!(true);
            return a;
        }
        for (i, e) in entries.iter().enumerate() {
            if e.get("account").is_none()
                && let Err(why) = natural_key(e)
            {
                return failed("INVALID_REQUEST", &format!("accounts[{i}]: {why}"));
            }
        }
        let results: Vec<Value> = entries
            .iter()
            .map(|e| self.sync_one(&mut st, e, dry_run))
            .collect();
        let answer = json!({"status": "completed", "dry_run": dry_run, "accounts": results});
        st.by_key.insert(key.to_string(), (request, answer.clone()));
        answer
    }

    fn sync_one(&self, st: &mut State, entry: &Value, dry_run: bool) -> Value {
        if let Some(reference) = entry.get("account") {
            // Settings-update mode (an AccountRef): not implemented.
            let known = reference
                .get("account_id")
                .and_then(Value::as_str)
                .and_then(|id| st.accounts.iter().find(|a| a.id == id));
            let (brand, operator) = match known {
                Some(a) => (a.brand.clone(), json!(a.operator)),
                None => (
                    reference
                        .get("brand")
                        .cloned()
                        .unwrap_or_else(|| json!({"domain": "unknown.invalid"})),
                    reference
                        .get("operator")
                        .cloned()
                        .unwrap_or_else(|| json!("unknown.invalid")),
                ),
            };
            return entry_failed(
                json!({"brand": brand, "operator": operator}),
                "UNSUPPORTED_PROVISIONING",
                None,
                "this seller provisions accounts by brand, operator and billing only; settings updates are not supported",
            );
        }
        // Checked by the caller.
        let Ok((domain, brand_id, operator, billing)) = natural_key(entry) else {
            return Value::Null;
        };
        let sandbox = entry.get("sandbox").and_then(Value::as_bool) == Some(true);
        let mut echo = json!({"brand": entry["brand"], "operator": operator});
        if sandbox {
            echo["sandbox"] = json!(true);
        }
        if self.caps.requires_credentials {
            return entry_failed(
                echo,
                "UNSUPPORTED_PROVISIONING",
                None,
                &format!(
                    "{} accounts are managed upstream: pick one from list_accounts",
                    self.name
                ),
            );
        }
        if !self.caps.supported_billing.contains(&billing) {
            return entry_failed(
                echo,
                "BILLING_NOT_SUPPORTED",
                Some("billing"),
                &format!(
                    "{} does not support billing '{billing}'; it supports {}",
                    self.name,
                    self.caps.supported_billing.join(", ")
                ),
            );
        }
        let id = account_id(domain, brand_id, operator, sandbox);
        let wanted = Account {
            id: id.clone(),
            name: account_name(domain, brand_id, operator, sandbox),
            brand: entry["brand"].clone(),
            operator: operator.to_string(),
            sandbox,
            billing: billing.to_string(),
            billing_entity: entry.get("billing_entity").map(without_bank),
            payment_terms: entry.get("payment_terms").cloned(),
        };
        let existing = st.accounts.iter().position(|a| a.id == id);
        let action = match existing {
            None => "created",
            Some(i) if st.accounts[i] == wanted => "unchanged",
            Some(_) => "updated",
        };
        let result = wanted.synced(action);
        if !dry_run {
            match existing {
                Some(i) => st.accounts[i] = wanted,
                None => st.accounts.push(wanted),
            }
        }
        result
    }
}

/// An entry's (brand domain, brand_id, operator, billing), or what is wrong.
fn natural_key(entry: &Value) -> Result<(&str, Option<&str>, &str, &str), String> {
    let domain = entry
        .get("brand")
        .and_then(|b| b.get("domain"))
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .ok_or("brand.domain is required")?;
    let brand_id = entry
        .get("brand")
        .and_then(|b| b.get("brand_id"))
        .and_then(Value::as_str);
    let operator = entry
        .get("operator")
        .and_then(Value::as_str)
        .filter(|o| !o.is_empty())
        .ok_or("operator is required")?;
    let billing = entry
        .get("billing")
        .and_then(Value::as_str)
        .filter(|b| ALL_BILLING.contains(b))
        .ok_or("billing must be one of operator, agent, advertiser")?;
    Ok((domain, brand_id, operator, billing))
}

fn account_name(domain: &str, brand_id: Option<&str>, operator: &str, sandbox: bool) -> String {
    let mut name = domain.to_string();
    if let Some(b) = brand_id.filter(|b| !b.is_empty()) {
        name.push_str(&format!(" ({b})"));
    }
    if operator != domain {
        name.push_str(&format!(" via {operator}"));
    }
    if sandbox {
        name.push_str(" [sandbox]");
    }
    name
}

/// `business-entity.json`'s `bank` is write-only.
fn without_bank(entity: &Value) -> Value {
    let mut e = entity.clone();
    if let Some(o) = e.as_object_mut() {
        o.remove("bank");
    }
    e
}

fn entry_failed(mut echo: Value, code: &str, field: Option<&str>, message: &str) -> Value {
    let mut error = json!({"code": code, "message": message});
    if let Some(f) = field {
        error["field"] = json!(f);
    }
    echo["action"] = json!("failed");
    echo["status"] = json!("rejected");
    echo["errors"] = json!([error]);
    echo
}

fn failed(code: &str, message: &str) -> Value {
    json!({"status": "failed", "errors": [{"code": code, "message": message}]})
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    fn entry(billing: &str) -> Value {
        json!({"brand": {"domain": "acme.example"}, "operator": "agency.example", "billing": billing})
    }

    fn sync(d: &DemoAccounts, key: &str, dry_run: bool, entries: Vec<Value>) -> Value {
        d.answer(
            "sync_accounts",
            false,
            &args(
                json!({"idempotency_key": key, "dry_run": dry_run, "accounts": entries,
                         "adcp_version": "3.1", "adcp_major_version": 3}),
            ),
        )
        .unwrap()
    }

    fn list(d: &DemoAccounts, authenticated: bool) -> Value {
        d.answer(
            "list_accounts",
            authenticated,
            &args(json!({"adcp_version": "3.1", "adcp_major_version": 3})),
        )
        .unwrap()
    }

    fn listed_ids(answer: &Value) -> Vec<&str> {
        answer["accounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a["account_id"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn capabilities_per_storefront() {
        use crate::discovery::demo_sellers::STOREFRONTS;
        let by_slug: Vec<_> = STOREFRONTS
            .iter()
            .map(|s| (s.slug, demo_account_capabilities(s.slug)))
            .collect();
        for (slug, caps) in by_slug {
            assert!(!caps.supported_billing.is_empty());
            assert!(
                caps.supported_billing
                    .iter()
                    .all(|b| ALL_BILLING.contains(b))
            );
            match slug {
                "atlas-outdoor" => {
                    assert_eq!(caps.supported_billing, ["agent"]);
                    assert!(!caps.requires_credentials);
                }
                "cartwheel-retail" => assert!(caps.requires_credentials),
                _ => {
                    assert_eq!(caps.supported_billing, ALL_BILLING);
                    assert!(!caps.requires_credentials);
                }
            }
        }
    }

    #[test]
    fn account_ids_are_readable_and_distinct() {
        assert_eq!(
            account_id("acme.example", None, "agency.example", false),
            "acc_acme.example_agency.example"
        );
        assert_eq!(
            account_id("acme.example", None, "acme.example", true),
            "acc_acme.example_acme.example_sandbox"
        );
        assert_eq!(
            account_id("nova.example", Some("spark"), "agency.example", false),
            "acc_nova.example~spark_agency.example"
        );
    }

    #[test]
    fn sync_creates_once_then_is_unchanged_and_listed() {
        let d = DemoAccounts::new("Meridian Daily", "meridian-daily");
        assert_eq!(list(&d, false)["accounts"], json!([]));

        let dry = sync(&d, "dry-run-key-0000000001", true, vec![entry("operator")]);
        assert_eq!(dry["dry_run"], true);
        assert_eq!(dry["accounts"][0]["action"], "created");
        assert_eq!(
            list(&d, false)["accounts"],
            json!([]),
            "a dry run stores nothing"
        );

        let mut sandbox = entry("agent");
        sandbox["sandbox"] = json!(true);
        let mut with_bank = entry("operator");
        with_bank["billing_entity"] = json!({"legal_name": "Acme Inc", "bank": {"account_holder": "Acme", "iban": "DE75512108001245126199"}});
        let made = sync(
            &d,
            "sync-key-000000000001",
            false,
            vec![with_bank.clone(), sandbox],
        );
        assert_eq!(made["status"], "completed");
        assert_eq!(made["dry_run"], false);
        let first = &made["accounts"][0];
        assert_eq!(first["account_id"], "acc_acme.example_agency.example");
        assert_eq!(first["action"], "created");
        assert_eq!(first["status"], "active");
        assert_eq!(first["billing"], "operator");
        assert_eq!(first["brand"], json!({"domain": "acme.example"}));
        assert_eq!(first["operator"], "agency.example");
        assert_eq!(first["name"], "acme.example via agency.example");
        assert_eq!(first["billing_entity"], json!({"legal_name": "Acme Inc"}));
        assert!(!made.to_string().contains("iban"), "bank is write-only");
        let second = &made["accounts"][1];
        assert_eq!(
            second["account_id"],
            "acc_acme.example_agency.example_sandbox"
        );
        assert_eq!(second["sandbox"], true);

        // The same key again: the first answer, nothing new.
        let replay = sync(
            &d,
            "sync-key-000000000001",
            false,
            vec![with_bank.clone(), entry("agent")],
        );
        assert_eq!(replay["errors"][0]["code"], "IDEMPOTENCY_CONFLICT");
        let mut sandbox = entry("agent");
        sandbox["sandbox"] = json!(true);
        let replay = sync(
            &d,
            "sync-key-000000000001",
            false,
            vec![with_bank.clone(), sandbox],
        );
        assert_eq!(replay["replayed"], true);
        assert_eq!(replay["accounts"][0]["action"], "created");

        // A new key, the same entry: unchanged, the same id; a new billing: updated.
        let again = sync(&d, "sync-key-000000000002", false, vec![with_bank]);
        assert_eq!(again["accounts"][0]["action"], "unchanged");
        assert_eq!(
            again["accounts"][0]["account_id"],
            "acc_acme.example_agency.example"
        );
        let changed = sync(
            &d,
            "sync-key-000000000003",
            false,
            vec![entry("advertiser")],
        );
        assert_eq!(changed["accounts"][0]["action"], "updated");
        assert_eq!(changed["accounts"][0]["billing"], "advertiser");

        let listed = list(&d, false);
        assert_eq!(listed["status"], "completed");
        assert_eq!(
            listed_ids(&listed),
            [
                "acc_acme.example_agency.example",
                "acc_acme.example_agency.example_sandbox"
            ]
        );
        assert_eq!(listed["accounts"][0]["billing"], "advertiser");
        assert_eq!(
            listed["accounts"][0]["name"],
            "acme.example via agency.example"
        );
        assert_eq!(listed["accounts"][0]["status"], "active");
        assert_eq!(listed["accounts"][1]["sandbox"], true);
        let only_sandbox = d
            .answer("list_accounts", false, &args(json!({"sandbox": true})))
            .unwrap();
        assert_eq!(
            listed_ids(&only_sandbox),
            ["acc_acme.example_agency.example_sandbox"]
        );
    }

    #[test]
    fn atlas_bills_only_the_agent() {
        let d = DemoAccounts::new("Atlas Outdoor", "atlas-outdoor");
        let a = sync(
            &d,
            "atlas-key-0000000001",
            false,
            vec![entry("operator"), entry("agent")],
        );
        let refused = &a["accounts"][0];
        assert_eq!(refused["action"], "failed");
        assert_eq!(refused["status"], "rejected");
        assert_eq!(refused["errors"][0]["code"], "BILLING_NOT_SUPPORTED");
        assert_eq!(refused["brand"], json!({"domain": "acme.example"}));
        assert!(refused.get("account_id").is_none());
        assert_eq!(a["accounts"][1]["action"], "created");
        assert_eq!(
            listed_ids(&list(&d, false)),
            ["acc_acme.example_agency.example"]
        );
    }

    #[test]
    fn cartwheel_needs_credentials_and_lists_its_seats() {
        let d = DemoAccounts::new("Cartwheel Retail Media", "cartwheel-retail");
        let refused = list(&d, false);
        assert_eq!(refused["status"], "failed");
        assert_eq!(refused["errors"][0]["code"], "AUTH_REQUIRED");
        assert_eq!(
            sync(&d, "cart-key-00000000001", false, vec![entry("operator")])["errors"][0]["code"],
            "AUTH_REQUIRED"
        );

        let listed = list(&d, true);
        assert_eq!(
            listed_ids(&listed),
            ["cartwheel_seat_1", "cartwheel_seat_2"]
        );
        assert_eq!(listed["accounts"][0]["name"], "Cartwheel self-serve seat");
        assert_eq!(
            listed["accounts"][1]["name"],
            "Cartwheel managed-service seat"
        );
        assert_eq!(listed["accounts"][1]["status"], "active");

        let synced = d
            .answer(
                "sync_accounts",
                true,
                &args(json!({"idempotency_key": "cart-key-00000000002", "accounts": [entry("operator")]})),
            )
            .unwrap();
        assert_eq!(synced["accounts"][0]["action"], "failed");
        assert_eq!(
            synced["accounts"][0]["errors"][0]["code"],
            "UNSUPPORTED_PROVISIONING"
        );
        assert_eq!(listed_ids(&list(&d, true)).len(), 2);
    }

    #[test]
    fn malformed_requests_and_other_tasks() {
        let d = DemoAccounts::new("Lumen CTV Network", "lumen-ctv");
        assert!(d.answer("get_products", false, &Map::new()).is_none());
        assert_eq!(
            sync(&d, "short", false, vec![entry("agent")])["errors"][0]["code"],
            "INVALID_REQUEST"
        );
        let bad = sync(&d, "bad-billing-key-00001", false, vec![entry("nobody")]);
        assert_eq!(bad["errors"][0]["code"], "INVALID_REQUEST");
        let settings = sync(
            &d,
            "settings-key-0000001",
            false,
            vec![json!({"account": {"account_id": "acc_x"}})],
        );
        assert_eq!(
            settings["accounts"][0]["errors"][0]["code"],
            "UNSUPPORTED_PROVISIONING"
        );
        assert!(list(&d, false)["accounts"].as_array().unwrap().is_empty());
    }
}
