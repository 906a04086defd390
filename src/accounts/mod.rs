//! Seller accounts: where a storefront's accounts come from (account
//! sources), buyers' credentials for sources that need them, the accounts
//! a credential can see (AdCP `list_accounts`), buyer-declared accounts
//! synced to managed storefronts (AdCP `sync_accounts`) and their review
//! by the storefront's operator, and the advertisers' account bindings.
//!
//! - A source that requires credentials (AdCP `require_operator_auth`):
//!   the buyer registers a credential, lists the accounts it can see and
//!   binds one through the advertiser's `linkedAccounts`.
//! - A managed storefront (one operated by an account on this server): the
//!   buyer syncs an account; the seller answers; an intake waits for the
//!   storefront operator; accepting it makes the binding active.
//!
//! An active binding locks the advertiser's brand and currency and is the
//! account media buys at that storefront are placed under.

pub mod admin;
pub mod available;
pub mod bindings;
pub mod credentials;
pub mod intakes;
pub mod model;
pub mod sources;
pub mod sync;

use crate::ops::{OperationDef, def};

/// The buyer side of seller accounts.
pub static OPERATIONS: &[&OperationDef] = &[
    &def::<sources::ListAccountSources>(),
    &def::<credentials::ListSourceCredentials>(),
    &def::<credentials::CreateSourceCredential>(),
    &def::<credentials::RotateSourceCredential>(),
    &def::<credentials::DeleteSourceCredential>(),
    &def::<available::ListAvailableAccounts>(),
    &def::<sync::SyncStorefrontAccounts>(),
    &def::<bindings::ListAdvertiserAccounts>(),
];

/// The storefront operator's side (also the `/mcp/storefront` tools).
pub static STOREFRONT_OPERATIONS: &[&OperationDef] = &[
    &def::<intakes::ListAccountMappingReviews>(),
    &def::<intakes::AcceptAccountMapping>(),
    &def::<intakes::RejectAccountMapping>(),
    &def::<intakes::ReadmitAccountMapping>(),
];

/// Account admin operations are for admins and super-admins.
pub(crate) fn admins_only(
    caller: &crate::caller::CallerInfo,
) -> Result<(), crate::error::ApiError> {
    if caller.is_admin() {
        Ok(())
    } else {
        Err(crate::error::ApiError::Forbidden(
            "account admin operations need the admin or super-admin role".into(),
        ))
    }
}
