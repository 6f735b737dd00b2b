//! Team users and their roles (team mode, docs/team.md).

use serde::{Deserialize, Serialize};

use crate::Timestamp;

crate::wire_enum! {
    /// What a team user may do; the role matrix in docs/team.md says which routes each
    /// role may use.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
    pub enum Role {
        /// Everything, on every workspace.
        Owner => "owner",
        /// Creates tasks, sees and resolves approvals on the workspaces granted.
        Approver => "approver",
        /// Creates tasks on the workspaces granted and sees only their own.
        Member => "member",
        /// Reads the workspaces granted.
        Viewer => "viewer",
    }
}

/// A team user as stored (never with the token: only its SHA-256 is kept).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UserRecord {
    /// The name (`^[a-z0-9][a-z0-9_.-]{0,63}$`).
    pub name: String,
    /// The role.
    pub role: Role,
    /// The workspaces granted, by name, sorted (an owner needs none: it has them all).
    pub workspaces: Vec<String>,
    /// When the user was added.
    pub created_at: Timestamp,
    /// When the token was last rotated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rotated_at: Option<Timestamp>,
}

/// Whether `name` is a valid user name: `^[a-z0-9][a-z0-9_.-]{0,63}$`.
pub fn valid_user_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    let first_ok = bytes
        .next()
        .is_some_and(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit());
    first_ok
        && name.len() <= 64
        && bytes.all(|byte| {
            byte.is_ascii_lowercase() || byte.is_ascii_digit() || matches!(byte, b'_' | b'.' | b'-')
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_roles() {
        assert!(valid_user_name("alice"));
        assert!(valid_user_name("a.b-c_9"));
        assert!(valid_user_name(&"a".repeat(64)));
        assert!(!valid_user_name(&"a".repeat(65)));
        assert!(!valid_user_name(""));
        assert!(!valid_user_name("-alice"));
        assert!(!valid_user_name("Alice"));
        assert!(!valid_user_name("al ice"));
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("admin"), None);
    }
}
