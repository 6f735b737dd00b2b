//! Capabilities (`file:read`, `mcp:server:tool:write`) and risk levels.

use serde::{Deserialize, Serialize};

/// A tool's declared capability: `:`-separated words whose last word is the action.
///
/// Only the action decides policy (see `pp_gate::policy`); the leading words say what
/// the action applies to and are for people reading the audit log.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Capability(String);

impl Capability {
    /// Wraps a capability string as declared by a tool.
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    /// The whole capability string, as declared.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The last `:`-separated word, trimmed and lower-cased; `None` when it is empty.
    pub fn action(&self) -> Option<&str> {
        let last = self.0.rsplit(':').next().unwrap_or_default().trim();
        if last.is_empty() {
            None
        } else {
            Some(known_lower(last))
        }
    }
}

/// Lower-cases ASCII without allocating for the common already-lower case.
///
/// Actions are short ASCII words; a non-ASCII action can never match a known action, so
/// it is returned unchanged (and therefore denied).
fn known_lower(word: &str) -> &str {
    const KNOWN: [&str; 8] = [
        "read", "list", "write", "create", "update", "delete", "execute", "network",
    ];
    KNOWN
        .iter()
        .find(|known| known.eq_ignore_ascii_case(word))
        .copied()
        .unwrap_or(word)
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

crate::wire_enum! {
    /// How much harm a tool can do; the approvals inbox highlights `high`.
    ///
    /// Risk comes from the tool's [`crate::ToolSpec`] only; no service hard-codes it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
    pub enum Risk {
        /// Reads and listings.
        #[default]
        Low => "low",
        /// Effects that are easy to undo.
        Medium => "medium",
        /// Writes, deletions, execution, network access.
        High => "high",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_is_the_last_word_lower_cased() {
        assert_eq!(Capability::new("file:read").action(), Some("read"));
        assert_eq!(Capability::new("mcp:a:b:WRITE").action(), Some("write"));
        assert_eq!(Capability::new("Network").action(), Some("network"));
        assert_eq!(Capability::new("x: Delete ").action(), Some("delete"));
        assert_eq!(Capability::new("file:").action(), None);
        assert_eq!(Capability::new("").action(), None);
        assert_eq!(
            Capability::new("file:frobnicate").action(),
            Some("frobnicate")
        );
    }
}
