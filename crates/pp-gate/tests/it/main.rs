//! Integration tests of the workspace jail and the policy (one binary, see STYLE T2).
#![allow(
    clippy::disallowed_methods,
    reason = "tests build trees and inspect the outside directory with std::fs on paths they chose"
)]
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers panic on setup failure, like the #[test] functions they serve"
)]

mod entries;
mod escapes;
mod fingerprint;
mod ops;
mod policy;
mod probe;
mod props;
mod race;
mod special;
mod walk;
mod writes;

use pp_gate::{Jail, JailError};
use pp_test_support::TempTree;

/// A tree with some inside content and an outside secret, plus a jail on it.
pub(crate) fn setup() -> (TempTree, Jail) {
    let tree = TempTree::new();
    tree.file("docs/readme.txt", "inside readme");
    tree.file("top.txt", "top");
    tree.dir("empty");
    tree.outside_file("secret.txt", "TOP-SECRET");
    tree.outside_file("dir/inner.txt", "TOP-SECRET inner");
    let jail = Jail::new(tree.workspace()).expect("jail");
    (tree, jail)
}

/// Short name of an error variant, for compact assertions.
pub(crate) fn kind(error: &JailError) -> &'static str {
    match error {
        JailError::AbsolutePath { .. } => "absolute",
        JailError::Escapes { .. } => "escapes",
        JailError::SymlinkEscape { .. } => "symlink_escape",
        JailError::InvalidPath { .. } => "invalid",
        JailError::NotFound { .. } => "not_found",
        JailError::NotAFile { .. } => "not_a_file",
        JailError::NotADirectory { .. } => "not_a_directory",
        JailError::TooManyLinks { .. } => "too_many_links",
        JailError::Aborted { .. } => "aborted",
        JailError::AlreadyExists { .. } => "already_exists",
        JailError::NotEmpty { .. } => "not_empty",
        JailError::TooLarge { .. } => "too_large",
        JailError::RootInvalid { .. } => "root_invalid",
        JailError::Io { .. } => "io",
    }
}

/// The error kind of a result, or `"ok"`.
pub(crate) fn outcome<T>(result: &Result<T, JailError>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(error) => kind(error),
    }
}
