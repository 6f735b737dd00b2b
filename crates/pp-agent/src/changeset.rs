//! Changesets: the calls of one model turn that wait for a person together.
//!
//! When a turn's first call needs approval, the loop looks at the rest of the turn
//! before it suspends (see [`crate::Agent`]): calls that need approval too join the
//! changeset — unless their target is the same as, or lies beneath, the target of an
//! earlier call of the changeset ([`same_or_beneath`]); those are answered
//! [`AFTER_EARLIER_MESSAGE`] at once. [`crate::Agent::resume_all`] takes one decision per
//! pending call and runs the rest of the turn in the model's order, calling a
//! [`BeforeApprovedCall`] hook right before each approved call runs.

use serde_json::Value;

use crate::BoxFuture;

/// What the model is told for a call of a changeset's turn that needs approval but whose
/// target is the same as, or lies beneath, the target of an earlier call of the turn
/// that waits for approval: it is not run and not put before the person (its effect
/// would depend on the earlier decision), and the model should ask for it again in its
/// next turn, once it has seen how the earlier call ended.
pub const AFTER_EARLIER_MESSAGE: &str = "not run — ask again after the earlier call: an \
    earlier call of this turn on the same path (or a folder above it) is waiting for \
    approval; once you see its result, ask for this call again in your next turn if it \
    is still needed";

/// Checks an approved call right before it runs.
///
/// Set with [`crate::Agent::with_before_approved_call`]; without one every approved
/// call runs. On resume, for each call a person approved, in the model's order, the loop
/// emits the call's `approval_resolved` event, checks the (possibly edited) arguments
/// with the fresh policy (a denial answers the call as denied and the hook is not
/// called), then calls [`BeforeApprovedCall::check`] and, when it answers `Ok`, runs
/// the call at once ([`crate::Tool::execute`]). The hook is never called for rejected or
/// stale calls, for calls the policy allowed without approval, or for calls left unrun
/// because the task stopped (denial cap).
///
/// `Err(message)` means the call must not run: it is answered to the model as a
/// `tool_error` carrying `message` (the `approval_resolved` event already said
/// "approved"), and the loop goes on with the turn's next call.
pub trait BeforeApprovedCall: Send + Sync {
    /// Whether the approved call `call_id` may run now with `arguments` (the edited
    /// arguments when the person edited the call, otherwise the model's).
    fn check<'a>(
        &'a self,
        call_id: &'a str,
        arguments: &'a Value,
    ) -> BoxFuture<'a, Result<(), String>>;
}

/// Whether the workspace-relative path `path` is the same as `base` or lies beneath it,
/// compared lexically by normalised components (nothing is read from the disk).
///
/// Normalising splits at `/`, drops empty and `.` components and lets `..` take back the
/// component before it (a `..` with nothing before it is kept, so `../a` is not `a`); a
/// leading `/` is kept as part of the path (an absolute path is never beneath a relative
/// one). So `a/b` is beneath `a`, `./a/` is the same as `a`, `a/bc` is not beneath
/// `a/b`, and every path is beneath `""` or `.` (the workspace itself).
pub fn same_or_beneath(path: &str, base: &str) -> bool {
    let (path, base) = (normalise(path), normalise(base));
    path.len() >= base.len() && path.iter().zip(&base).all(|(a, b)| a == b)
}

/// The components of `path` (see [`same_or_beneath`]); an absolute path starts with `/`.
fn normalise(path: &str) -> Vec<&str> {
    let mut components: Vec<&str> = Vec::new();
    if path.starts_with('/') {
        components.push("/");
    }
    for component in path.split('/') {
        match component {
            "" | "." => {}
            ".." => match components.last() {
                Some(&last) if last != ".." && last != "/" => {
                    components.pop();
                }
                _ => components.push(".."),
            },
            other => components.push(other),
        }
    }
    components
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::same_or_beneath;

    #[test]
    fn table() {
        for (path, base, expected) in [
            ("a", "a", true),
            ("a/b", "a", true),
            ("a/b/c.txt", "a", true),
            ("a", "a/b", false),
            ("a/bc", "a/b", false),
            ("ab", "a", false),
            ("./a", "a", true),
            ("a", "./a/", true),
            ("a//b", "a/b", true),
            ("a/./b", "a", true),
            ("a/../b", "b", true),
            ("a/../b", "a", false),
            ("../a", "a", false),
            ("a", "../a", false),
            ("../a/b", "../a", true),
            ("/a", "a", false),
            ("/a/b", "/a", true),
            ("/../a", "/a", false),
            ("anything/at/all", "", true),
            ("anything", ".", true),
            ("", "a", false),
            ("notes.md", "notes.md", true),
            ("notes.md.bak", "notes.md", false),
        ] {
            assert_eq!(
                same_or_beneath(path, base),
                expected,
                "same_or_beneath({path:?}, {base:?})"
            );
        }
    }

    fn component() -> impl Strategy<Value = String> {
        prop_oneof![
            6 => "[a-c]{1,3}",
            1 => Just(".".to_owned()),
            1 => Just(String::new()),
        ]
    }

    /// A relative path, possibly with empty and `.` components (never a leading `/`).
    fn relative() -> impl Strategy<Value = String> {
        prop::collection::vec(component(), 0..5)
            .prop_map(|parts| parts.join("/").trim_start_matches('/').to_owned())
    }

    /// A relative path with at least one real component.
    fn named() -> impl Strategy<Value = String> {
        prop::collection::vec("[a-c]{1,3}", 1..4).prop_map(|parts| parts.join("/"))
    }

    /// The components of a path without `..`, as [`super::same_or_beneath`] sees them.
    fn strip(text: &str) -> Vec<&str> {
        text.split('/')
            .filter(|c| !c.is_empty() && *c != ".")
            .collect()
    }

    proptest! {
        #[test]
        fn every_path_is_the_same_as_itself(path in relative()) {
            prop_assert!(same_or_beneath(&path, &path));
        }

        #[test]
        fn a_path_below_another_is_beneath_it_and_not_the_reverse(
            base in named(),
            rest in named(),
        ) {
            let below = format!("{base}/{rest}");
            prop_assert!(same_or_beneath(&below, &base));
            prop_assert!(!same_or_beneath(&base, &below));
        }

        #[test]
        fn dot_and_empty_components_and_trailing_slashes_change_nothing(
            path in relative(),
            base in relative(),
        ) {
            let expected = same_or_beneath(&path, &base);
            prop_assert_eq!(same_or_beneath(&format!("./{path}/"), &base), expected);
            prop_assert_eq!(same_or_beneath(&path, &format!("./{base}//.")), expected);
        }

        #[test]
        fn a_longer_last_component_is_not_beneath(base in named(), extra in "[a-c]{1,3}") {
            let sibling = format!("{base}{extra}");
            prop_assert!(!same_or_beneath(&sibling, &base));
            let inside_sibling = format!("{sibling}/x");
            prop_assert!(!same_or_beneath(&inside_sibling, &base));
        }

        #[test]
        fn both_ways_means_the_same_path(path in relative(), base in relative()) {
            if same_or_beneath(&path, &base) && same_or_beneath(&base, &path) {
                prop_assert_eq!(strip(&path), strip(&base));
            }
        }

        #[test]
        fn beneath_is_transitive(c in relative(), x in relative(), y in relative()) {
            let b = format!("{c}/{x}");
            let a = format!("{b}/{y}");
            prop_assert!(same_or_beneath(&b, &c));
            prop_assert!(same_or_beneath(&a, &b));
            prop_assert!(same_or_beneath(&a, &c));
        }

        #[test]
        fn a_step_down_and_back_up_is_the_same_path(path in named(), name in "[a-c]{1,3}") {
            let there_and_back = format!("{path}/{name}/..");
            prop_assert!(same_or_beneath(&there_and_back, &path));
            prop_assert!(same_or_beneath(&path, &there_and_back));
        }
    }
}
