//! Which seller answers a storefront (placeholder until the built-in demo
//! sellers land): the MCP client for every storefront.

use std::sync::Arc;

use super::seller::{Seller, StorefrontTarget};

#[derive(Clone)]
pub struct Sellers {
    default: Arc<dyn Seller>,
}

impl Sellers {
    pub fn new(default: Arc<dyn Seller>) -> Self {
        Sellers { default }
    }

    pub fn for_storefront(&self, _sf: &StorefrontTarget) -> Arc<dyn Seller> {
        self.default.clone()
    }
}
