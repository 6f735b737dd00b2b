//! The capability policy: a pure function of a tool's capability and its path arguments.
//!
//! | action (last `:` word, any case) | decision |
//! |---|---|
//! | `read`, `list` | [`Decision::Allow`] |
//! | `write`, `create`, `update`, `delete`, `execute`, `network` | [`Decision::Ask`] |
//! | anything else | [`Decision::Deny`] ([`DenyRule::UnknownCapability`]) |
//! | no capability | [`Decision::Deny`] ([`DenyRule::MissingCapability`]) |

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_types::{Capability, Decision, Denial, DenyRule, Policy, ToolSpec, pointer_paths};
use serde_json::Value;

use crate::Jail;

/// Actions that run without asking.
const ALLOWED: [&str; 2] = ["read", "list"];
/// Actions that stop for a person's approval.
const ASK: [&str; 6] = ["write", "create", "update", "delete", "execute", "network"];

/// Classifies a capability by its action word alone.
///
/// A capability whose string is empty or blank counts as missing; one whose last word
/// is empty (`file:`) or unknown is denied as unknown.
pub fn evaluate_capability(capability: Option<&Capability>) -> Decision {
    let Some(capability) = capability.filter(|c| !c.as_str().trim().is_empty()) else {
        return Decision::Deny(Denial::new(
            DenyRule::MissingCapability,
            "the tool declares no capability",
        ));
    };
    match capability.action() {
        Some(action) if ALLOWED.contains(&action) => Decision::Allow,
        Some(action) if ASK.contains(&action) => Decision::Ask {
            action: action.to_owned(),
        },
        _ => Decision::Deny(Denial::new(
            DenyRule::UnknownCapability,
            format!("unknown capability {:?}", capability.as_str()),
        )),
    }
}

/// Decides one call: every path argument through `jail`, then the capability.
///
/// Every path a pointer of `spec.path_params` designates in the `arguments` object (a
/// top-level string for `"path"`, each element of a top-level array for `"paths[]"`)
/// must be a string ([`DenyRule::PathNotString`] otherwise) that passes
/// [`Jail::check`]; a rule violation is a denial, while a missing file or an I/O error
/// is not (the tool reports it when it runs). The tool's name is never consulted.
pub fn evaluate(jail: &Jail, spec: &ToolSpec, arguments: &Value) -> Decision {
    match check_paths(Some(jail), spec, arguments) {
        Some(denial) => Decision::Deny(denial),
        None => evaluate_capability(spec.capability.as_ref()),
    }
}

/// The first path argument `jail` refuses; with no jail (an unknown root), the first
/// path argument at all.
fn check_paths(jail: Option<&Jail>, spec: &ToolSpec, arguments: &Value) -> Option<Denial> {
    for pointer in &spec.path_params {
        let paths = match pointer_paths(pointer, arguments) {
            Ok(paths) => paths,
            Err(error) => return Some(Denial::new(DenyRule::PathNotString, error.to_string())),
        };
        for path in paths {
            let Some(jail) = jail else {
                return Some(Denial::new(
                    DenyRule::UnknownRoot,
                    format!("{path:?} is relative to a folder that does not exist in this run"),
                ));
            };
            if let Err(error) = jail.check(path)
                && let Some(denial) = error.denial()
            {
                return Some(denial);
            }
        }
    }
    None
}

/// The real [`Policy`]: [`evaluate`] with a shared jail for the workspace and one per
/// scoped root (a skill's folder), chosen by the tool's [`PathRoot`](pp_types::PathRoot).
///
/// Build a fresh one for every run and every resume.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The workspace jail path arguments are checked against; shared with the tools.
    jail: Arc<Jail>,
    /// Scoped roots by [`PathRoot::key`](pp_types::PathRoot::key).
    roots: BTreeMap<String, Arc<Jail>>,
}

impl Gate {
    /// A gate checking paths against the workspace `jail`.
    pub fn new(jail: Arc<Jail>) -> Self {
        Self {
            jail,
            roots: BTreeMap::new(),
        }
    }

    /// Adds a scoped root: tools whose [`PathRoot::Scoped`](pp_types::PathRoot::Scoped) resolves to `key` have their
    /// paths checked against `jail`.
    pub fn add_root(&mut self, key: impl Into<String>, jail: Arc<Jail>) {
        self.roots.insert(key.into(), jail);
    }

    /// The workspace jail.
    pub fn jail(&self) -> &Arc<Jail> {
        &self.jail
    }

    /// The jail `spec`'s paths are checked against for `arguments`: the workspace, a
    /// registered scoped root, or `None` when the root is unknown or unnamed.
    pub fn root_for(&self, spec: &ToolSpec, arguments: &Value) -> Option<&Arc<Jail>> {
        match spec.root.key_for(arguments) {
            None => Some(&self.jail),
            Some(Ok(key)) => self.roots.get(&key),
            Some(Err(())) => None,
        }
    }
}

impl Policy for Gate {
    fn evaluate(&self, spec: &ToolSpec, arguments: &Value) -> Decision {
        let jail = self.root_for(spec, arguments).map(Arc::as_ref);
        match check_paths(jail, spec, arguments) {
            Some(denial) => Decision::Deny(denial),
            None => evaluate_capability(spec.capability.as_ref()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn decide(capability: &str) -> Decision {
        evaluate_capability(Some(&Capability::new(capability)))
    }

    fn ask(action: &str) -> Decision {
        Decision::Ask {
            action: action.to_owned(),
        }
    }

    fn rule(decision: &Decision) -> Option<DenyRule> {
        match decision {
            Decision::Deny(denial) => Some(denial.rule),
            Decision::Allow | Decision::Ask { .. } => None,
        }
    }

    #[test]
    fn every_known_suffix() {
        assert_eq!(decide("file:read"), Decision::Allow);
        assert_eq!(decide("file:list"), Decision::Allow);
        for action in ASK {
            assert_eq!(decide(&format!("file:{action}")), ask(action));
            assert_eq!(decide(&format!("mcp:server:tool:{action}")), ask(action));
        }
    }

    #[test]
    fn case_and_whitespace_variants() {
        assert_eq!(decide("FILE:READ"), Decision::Allow);
        assert_eq!(decide("file:List"), Decision::Allow);
        assert_eq!(decide("file:Write"), ask("write"));
        assert_eq!(decide("mcp:a:b:NETWORK"), ask("network"));
        assert_eq!(decide("x: Delete "), ask("delete"));
        assert_eq!(decide("read"), Decision::Allow);
    }

    #[test]
    fn unknown_empty_and_missing() {
        assert_eq!(rule(&decide("file:")), Some(DenyRule::UnknownCapability));
        assert_eq!(
            rule(&decide("file:frobnicate")),
            Some(DenyRule::UnknownCapability)
        );
        assert_eq!(
            rule(&decide("file:readx")),
            Some(DenyRule::UnknownCapability)
        );
        assert_eq!(
            rule(&decide("read:file")),
            Some(DenyRule::UnknownCapability)
        );
        assert_eq!(
            rule(&decide("file:réad")),
            Some(DenyRule::UnknownCapability)
        );
        assert_eq!(rule(&decide("")), Some(DenyRule::MissingCapability));
        assert_eq!(rule(&decide("  ")), Some(DenyRule::MissingCapability));
        assert_eq!(
            rule(&evaluate_capability(None)),
            Some(DenyRule::MissingCapability)
        );
    }
}
