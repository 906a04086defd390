//! The authenticated caller, as every operation sees it: the account always
//! comes from here, never from a request body. Transport-free: REST, the
//! operation dispatcher and MCP all build one from a credential.

use chrono::{DateTime, Utc};
use serde::Serialize;
use utoipa::ToSchema;

use crate::types::{Permission, Role};

/// Who is calling: the account always comes from here, never from a body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallerInfo {
    pub account: AccountInfo,
    pub user: UserInfo,
    pub api_key_id: i64,
    pub permissions: Vec<Permission>,
    /// When the credential stops being valid by itself (an OAuth access
    /// token, or a stream token minted with one); streams end then.
    pub expires_at: Option<DateTime<Utc>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AccountInfo {
    pub id: String,
    pub name: String,
    pub assistant_enabled: bool,
    pub shared_conversations_enabled: bool,
    pub phone_lines_enabled: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserInfo {
    pub id: i64,
    pub name: String,
    pub email: String,
    pub role: Role,
}

impl CallerInfo {
    pub fn account_id(&self) -> &str {
        &self.account.id
    }

    pub fn has(&self, p: Permission) -> bool {
        self.permissions.contains(&p)
    }

    /// A key whose every permission is a read permission writes nothing; a
    /// key with no permissions acts with its user's full access.
    pub fn is_read_only(&self) -> bool {
        !self.permissions.is_empty() && self.permissions.iter().all(|p| p.is_read())
    }

    pub fn is_admin(&self) -> bool {
        matches!(self.user.role, Role::Admin | Role::SuperAdmin)
    }
}
