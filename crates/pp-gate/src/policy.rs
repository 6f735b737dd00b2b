//! The capability policy: a pure function of a tool's capability and its path arguments.
//!
//! | action (last `:` word, any case) | decision |
//! |---|---|
//! | `read`, `list` | [`Decision::Allow`] |
//! | `write`, `create`, `update`, `delete`, `execute`, `network` | [`Decision::Ask`] |
//! | anything else | [`Decision::Deny`] ([`DenyRule::UnknownCapability`]) |
//! | no capability | [`Decision::Deny`] ([`DenyRule::MissingCapability`]) |

use std::sync::Arc;

use pp_types::{Capability, Decision, Denial, DenyRule, Policy, ToolSpec};
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
/// For each name in `spec.path_params` present in the `arguments` object, the value
/// must be a string ([`DenyRule::PathNotString`] otherwise) that passes
/// [`Jail::check`]; a rule violation is a denial, while a missing file or an I/O error
/// is not (the tool reports it when it runs). The tool's name is never consulted.
pub fn evaluate(jail: &Jail, spec: &ToolSpec, arguments: &Value) -> Decision {
    for name in &spec.path_params {
        let Some(value) = arguments.get(name) else {
            continue;
        };
        let Some(path) = value.as_str() else {
            return Decision::Deny(Denial::new(
                DenyRule::PathNotString,
                format!("path argument {name:?} is not a string"),
            ));
        };
        if let Err(error) = jail.check(path)
            && let Some(denial) = error.denial()
        {
            return Decision::Deny(denial);
        }
    }
    evaluate_capability(spec.capability.as_ref())
}

/// The real [`Policy`]: [`evaluate`] with a shared jail.
///
/// Build a fresh one for every run and every resume.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The jail path arguments are checked against; shared with the tools.
    jail: Arc<Jail>,
}

impl Gate {
    /// A gate checking paths against `jail`.
    pub fn new(jail: Arc<Jail>) -> Self {
        Self { jail }
    }

    /// The jail this gate checks paths against.
    pub fn jail(&self) -> &Arc<Jail> {
        &self.jail
    }
}

impl Policy for Gate {
    fn evaluate(&self, spec: &ToolSpec, arguments: &Value) -> Decision {
        evaluate(&self.jail, spec, arguments)
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
