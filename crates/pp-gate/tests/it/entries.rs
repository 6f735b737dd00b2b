//! Entries as such: moving (`rename`), deleting (`remove_entry`), creating folders, and
//! the entry fingerprint; every escape class on both paths of a move; the policy on a
//! move's two path parameters.

use std::sync::Arc;

use pp_gate::{EntryKind, Gate};
use pp_types::{Capability, Decision, DenyRule, Policy, Risk, ToolSpec};
use pretty_assertions::assert_eq;
use serde_json::json;

use crate::{outcome, setup};

#[test]
fn a_rename_never_replaces_unless_asked_and_never_a_folder() {
    let (tree, jail) = setup();
    tree.file("a.txt", "a");
    assert_eq!(
        outcome(&jail.rename("a.txt", "top.txt", false)),
        "already_exists"
    );
    assert_eq!(tree.read("top.txt"), "top");
    assert_eq!(
        outcome(&jail.rename("a.txt", "empty", true)),
        "already_exists"
    );
    assert_eq!(
        outcome(&jail.rename("empty", "top.txt", true)),
        "already_exists"
    );
    assert_eq!(outcome(&jail.rename("missing", "x", false)), "not_found");
    assert_eq!(
        outcome(&jail.rename("a.txt", "no/such/dir.txt", false)),
        "not_found"
    );
    assert_eq!(
        outcome(&jail.rename("a.txt", "a.txt", true)),
        "already_exists"
    );
    assert_eq!(outcome(&jail.rename("", "x", false)), "not_a_file");
    assert_eq!(outcome(&jail.rename("docs/..", "x", false)), "not_a_file");
    let replaced = jail.rename("a.txt", "top.txt", true).unwrap();
    assert!(replaced.replaced);
    assert_eq!(tree.read("top.txt"), "a");
    assert!(!tree.exists("a.txt"));
    let moved = jail.rename("docs", "empty/docs", false).unwrap();
    assert!(!moved.replaced);
    assert_eq!(tree.read("empty/docs/readme.txt"), "inside readme");
}

#[cfg(unix)]
#[test]
fn links_are_moved_and_removed_as_links() {
    let (tree, jail) = setup();
    tree.symlink("alias", "docs/readme.txt");
    tree.symlink("out", tree.outside().join("secret.txt"));
    jail.rename("alias", "alias2", false).unwrap();
    let moved = tree.workspace().join("alias2");
    assert!(
        std::fs::symlink_metadata(&moved)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(jail.remove_entry("alias2").unwrap(), EntryKind::Symlink);
    assert!(std::fs::symlink_metadata(&moved).is_err());
    assert_eq!(tree.read("docs/readme.txt"), "inside readme");
    // The jail removes a link leading outside as a link (the policy denies the call
    // before it gets here); what it points to stays.
    assert_eq!(jail.remove_entry("out").unwrap(), EntryKind::Symlink);
    assert_eq!(
        std::fs::read_to_string(tree.outside().join("secret.txt")).unwrap(),
        "TOP-SECRET"
    );
}

#[test]
fn remove_entry_takes_files_and_empty_folders_only() {
    let (tree, jail) = setup();
    assert_eq!(outcome(&jail.remove_entry("docs")), "not_empty");
    assert_eq!(tree.read("docs/readme.txt"), "inside readme");
    assert_eq!(jail.remove_entry("empty").unwrap(), EntryKind::Dir);
    assert_eq!(
        jail.remove_entry("docs/readme.txt").unwrap(),
        EntryKind::File
    );
    assert_eq!(outcome(&jail.remove_entry("docs/readme.txt")), "not_found");
    assert_eq!(outcome(&jail.remove_entry(".")), "not_a_file");
    assert_eq!(outcome(&jail.remove_entry("top.txt/x")), "not_a_directory");
}

#[test]
fn folders_are_created_with_their_parents_and_removed_only_when_empty() {
    let (tree, jail) = setup();
    assert_eq!(
        jail.missing_dirs("docs/a/b").unwrap(),
        [std::path::PathBuf::from("docs/a"), "docs/a/b".into()]
    );
    assert_eq!(outcome(&jail.create_dir_all("docs")), "already_exists");
    assert_eq!(outcome(&jail.create_dir_all("top.txt")), "already_exists");
    assert_eq!(
        outcome(&jail.create_dir_all("top.txt/x")),
        "not_a_directory"
    );
    let created = jail.create_dir_all("docs/a/b").unwrap();
    assert_eq!(created.len(), 2);
    assert!(tree.workspace().join("docs/a/b").is_dir());
    assert_eq!(outcome(&jail.remove_empty_dir("docs/a")), "not_empty");
    assert_eq!(
        outcome(&jail.remove_empty_dir("top.txt")),
        "not_a_directory"
    );
    jail.remove_empty_dir("docs/a/b").unwrap();
    jail.remove_empty_dir("docs/a").unwrap();
    assert!(!tree.exists("docs/a"));
}

#[test]
fn the_entry_fingerprint_tells_files_folders_and_nothing_apart() {
    let (tree, jail) = setup();
    let file = jail.fingerprint_entry("top.txt", 1024).unwrap();
    assert_eq!(file, jail.fingerprint("top.txt").unwrap());
    let folder = jail.fingerprint_entry("docs", 1024).unwrap();
    assert!(folder.starts_with("folder dev="), "{folder}");
    tree.file("docs/new.txt", "content changes, the folder stays the same");
    assert_eq!(jail.fingerprint_entry("docs", 1024).unwrap(), folder);
    assert_eq!(jail.fingerprint_entry("nothing", 1024).unwrap(), "absent");
    #[cfg(unix)]
    {
        tree.symlink("alias", "top.txt");
        let link = jail.fingerprint_entry("alias", 1024).unwrap();
        assert!(link.starts_with("link dev="), "{link}");
    }
}

/// Every escape class, on either path of a move: refused, nothing moved anywhere.
#[test]
fn every_escape_class_is_refused_on_both_paths_of_a_move() {
    let (tree, jail) = setup();
    #[cfg(unix)]
    {
        tree.symlink("out-dir", "../outside/dir");
        tree.symlink("chain", "out-dir");
    }
    let before = tree.outside_snapshot();
    let outside = tree.outside().join("secret.txt");
    let mut cases = vec![
        (outside.to_string_lossy().into_owned(), "absolute"),
        ("/etc/passwd".to_owned(), "absolute"),
        ("../outside/secret.txt".to_owned(), "escapes"),
        ("docs/../../outside/x".to_owned(), "escapes"),
        ("a\\b".to_owned(), "invalid"),
        ("C:x".to_owned(), "invalid"),
        ("bad\0name".to_owned(), "invalid"),
    ];
    #[cfg(unix)]
    cases.extend([
        ("out-dir/inner.txt".to_owned(), "symlink_escape"),
        ("out-dir/new.txt".to_owned(), "symlink_escape"),
        ("chain/inner.txt".to_owned(), "symlink_escape"),
    ]);
    for (path, expected) in &cases {
        assert_eq!(
            outcome(&jail.rename(path, "stolen.txt", true)),
            *expected,
            "from {path}"
        );
        assert_eq!(
            outcome(&jail.rename("top.txt", path, true)),
            *expected,
            "to {path}"
        );
        assert_eq!(
            outcome(&jail.remove_entry(path)),
            *expected,
            "delete {path}"
        );
        assert_eq!(
            outcome(&jail.create_dir_all(path)),
            *expected,
            "mkdir {path}"
        );
    }
    assert_eq!(tree.outside_snapshot(), before);
    assert_eq!(tree.read("top.txt"), "top");
    assert!(!tree.exists("stolen.txt"));
}

fn move_spec() -> ToolSpec {
    ToolSpec {
        name: "move_file".to_owned(),
        description: String::new(),
        parameters: json!({"type": "object"}),
        capability: Some(Capability::new("file:update")),
        risk: Risk::High,
        path_params: vec!["from".to_owned(), "to".to_owned()],
        root: pp_types::PathRoot::Workspace,
    }
}

/// The policy checks both of a move's paths; a `to` that is a link leading outside is
/// denied even though the move would replace the link, not follow it.
#[test]
fn the_policy_denies_an_escape_on_either_path_of_a_move() {
    let (tree, jail) = setup();
    #[cfg(unix)]
    tree.symlink("out-file", tree.outside().join("secret.txt"));
    let gate = Gate::new(Arc::new(jail));
    let decide = |from: &str, to: &str| match gate.evaluate(
        &move_spec(),
        &json!({"from": from, "to": to, "overwrite": true}),
    ) {
        Decision::Deny(denial) => Some(denial.rule),
        Decision::Ask { .. } => None,
        Decision::Allow => panic!("a move is never allowed without asking"),
    };
    assert_eq!(decide("top.txt", "docs/moved.txt"), None);
    assert_eq!(
        decide("../outside/secret.txt", "x"),
        Some(DenyRule::Escapes)
    );
    assert_eq!(decide("top.txt", "../outside/x"), Some(DenyRule::Escapes));
    assert_eq!(decide("/etc/passwd", "x"), Some(DenyRule::AbsolutePath));
    assert_eq!(decide("top.txt", "/tmp/x"), Some(DenyRule::AbsolutePath));
    assert_eq!(decide("top.txt", "a\\b"), Some(DenyRule::InvalidPath));
    #[cfg(unix)]
    {
        assert_eq!(decide("top.txt", "out-file"), Some(DenyRule::SymlinkEscape));
        assert_eq!(decide("out-file", "x"), Some(DenyRule::SymlinkEscape));
    }
}
