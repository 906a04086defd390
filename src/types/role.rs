use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    Member,
    Admin,
    SuperAdmin,
}

impl Role {
    pub fn as_str(&self) -> &'static str {
        match self {
            Role::Member => "member",
            Role::Admin => "admin",
            Role::SuperAdmin => "super-admin",
        }
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "member" => Ok(Role::Member),
            "admin" => Ok(Role::Admin),
            "super-admin" => Ok(Role::SuperAdmin),
            other => Err(format!(
                "unknown role '{other}' (expected member, admin or super-admin)"
            )),
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Permissions carried by an API key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum Permission {
    #[serde(rename = "platform:read")]
    PlatformRead,
    #[serde(rename = "platform:write")]
    PlatformWrite,
}

impl Permission {
    pub const ALL: [Permission; 2] = [Permission::PlatformRead, Permission::PlatformWrite];

    /// Grants reading only.
    pub fn is_read(&self) -> bool {
        matches!(self, Permission::PlatformRead)
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Permission::PlatformRead => "platform:read",
            Permission::PlatformWrite => "platform:write",
        }
    }
}

impl FromStr for Permission {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Permission::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                format!("unknown permission '{s}' (expected platform:read or platform:write)")
            })
    }
}

impl fmt::Display for Permission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
