//! `Jail::probe`: existence, kind and size from metadata, without opening anything.

use std::path::PathBuf;

use pp_gate::{EntryKind, Probe};
use pretty_assertions::assert_eq;

use crate::{outcome, setup};

#[test]
fn files_directories_and_absence() {
    let (tree, jail) = setup();
    tree.file("ten.txt", "0123456789");
    assert_eq!(
        jail.probe("ten.txt").unwrap(),
        Probe {
            resolved: PathBuf::from("ten.txt"),
            kind: Some(EntryKind::File),
            size: 10,
        }
    );
    let probe = jail.probe("docs/../ten.txt").unwrap();
    assert!(probe.exists() && probe.is_file());
    assert_eq!(probe.resolved, PathBuf::from("ten.txt"));

    let docs = jail.probe("docs").unwrap();
    assert_eq!(docs.kind, Some(EntryKind::Dir));
    assert!(docs.exists() && !docs.is_file());
    assert_eq!(jail.probe("").unwrap().kind, Some(EntryKind::Dir));

    let missing = jail.probe("new/file.txt").unwrap();
    assert_eq!(
        missing,
        Probe {
            resolved: PathBuf::from("new/file.txt"),
            kind: None,
            size: 0,
        }
    );
    assert!(!missing.exists() && !missing.is_file());
}

#[cfg(unix)]
#[test]
fn links_are_resolved_and_escapes_refused() {
    let (tree, jail) = setup();
    tree.symlink("readme-link", "docs/readme.txt");
    tree.symlink("dangling", "docs/nothing.txt");
    tree.symlink("out", "../outside/secret.txt");
    let probe = jail.probe("readme-link").unwrap();
    assert_eq!(probe.resolved, PathBuf::from("docs/readme.txt"));
    assert_eq!(probe.size, "inside readme".len() as u64);
    assert!(probe.is_file());
    let dangling = jail.probe("dangling").unwrap();
    assert_eq!(dangling.resolved, PathBuf::from("docs/nothing.txt"));
    assert!(!dangling.exists());
    assert_eq!(outcome(&jail.probe("out")), "symlink_escape");
    assert_eq!(outcome(&jail.probe("../outside/secret.txt")), "escapes");
    assert_eq!(outcome(&jail.probe("/etc/passwd")), "absolute");
}

/// Existence comes from metadata, not readability: a mode-000 file is an existing file.
#[cfg(unix)]
#[test]
fn an_unreadable_file_exists() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, jail) = setup();
    let path = tree.file("locked.txt", "secret");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o000)).unwrap();
    let probe = jail.probe("locked.txt").unwrap();
    assert!(probe.is_file());
    assert_eq!(probe.size, 6);
}

#[cfg(unix)]
#[test]
fn special_files_are_other() {
    let (tree, jail) = setup();
    let _listener = std::os::unix::net::UnixListener::bind(tree.workspace().join("sock")).unwrap();
    let probe = jail.probe("sock").unwrap();
    assert_eq!(probe.kind, Some(EntryKind::Other));
    assert!(probe.exists() && !probe.is_file());
}
