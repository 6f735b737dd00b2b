//! Property tests: random trees with links in and out, random path strings.
//!
//! Invariants (STYLE T5):
//! - every successful `open_file`/`read` refers to a regular file of the workspace tree,
//!   compared by (device, inode) against a walk that never follows links;
//! - every path the OS would resolve to an outside file is an `Err`;
//! - `check` results are link-free;
//! - on trees without links, success agrees with a lexical oracle;
//! - writes never change the outside directory.

#![cfg(unix)]

use std::collections::HashSet;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use pp_gate::{Jail, JailError, ListOptions};
use pp_test_support::TempTree;
use proptest::prelude::*;

const NAMES: [&str; 9] = ["a", "b", "c", "f1", "f2", "l1", "l2", "ü", "日本"];

/// Link targets; `@OUT`/`@IN` are replaced by the absolute outside/workspace paths.
const TARGETS: [&str; 18] = [
    "a",
    "b/c",
    "f1",
    "../f1",
    "..",
    ".",
    "../outside",
    "../outside/secret.txt",
    "../../outside/secret.txt",
    "a/../..",
    "l1",
    "l2",
    "nope",
    "@OUT",
    "@OUT/secret.txt",
    "@IN",
    "@IN/f1",
    "@IN/../outside",
];

/// Path components for generated path strings.
const PARTS: [&str; 14] = [
    "..",
    ".",
    "",
    "a",
    "b",
    "c",
    "f1",
    "f2",
    "l1",
    "l2",
    "ü",
    "日本",
    "outside",
    "secret.txt",
];

#[derive(Debug, Clone)]
enum Kind {
    File,
    Dir,
    Link(usize),
}

#[derive(Debug, Clone)]
struct Node {
    path: Vec<usize>,
    kind: Kind,
}

fn node(links: bool) -> impl Strategy<Value = Node> {
    let kind = if links {
        prop_oneof![
            2 => Just(Kind::File),
            2 => Just(Kind::Dir),
            3 => (0..TARGETS.len()).prop_map(Kind::Link),
        ]
        .boxed()
    } else {
        prop_oneof![Just(Kind::File), Just(Kind::Dir)].boxed()
    };
    (prop::collection::vec(0..NAMES.len(), 1..=3), kind)
        .prop_map(|(path, kind)| Node { path, kind })
}

fn path_string() -> impl Strategy<Value = String> {
    (any::<bool>(), prop::collection::vec(0..PARTS.len(), 0..6)).prop_map(|(absolute, parts)| {
        let joined: Vec<&str> = parts.iter().map(|&i| PARTS[i]).collect();
        let joined = joined.join("/");
        if absolute {
            format!("/{joined}")
        } else {
            joined
        }
    })
}

/// Builds the tree; nodes that cannot be created (parent is a file, name taken) are
/// skipped. Outside holds files mirroring inside names, all containing `TOP-SECRET`.
fn build(nodes: &[Node]) -> TempTree {
    let tree = TempTree::new();
    for name in ["secret.txt", "f1", "a/f1", "b/c/f1"] {
        tree.outside_file(name, "TOP-SECRET");
    }
    for node in nodes {
        let relative: PathBuf = node.path.iter().map(|&i| NAMES[i]).collect();
        let full = tree.workspace().join(&relative);
        if let Some(parent) = full.parent()
            && std::fs::create_dir_all(parent).is_err()
        {
            continue;
        }
        if std::fs::symlink_metadata(&full).is_ok() {
            continue;
        }
        let _ = match &node.kind {
            Kind::File => std::fs::write(&full, format!("inside {}", relative.display())),
            Kind::Dir => std::fs::create_dir(&full),
            Kind::Link(target) => {
                let target = TARGETS[*target]
                    .replace("@OUT", &tree.outside().to_string_lossy())
                    .replace("@IN", &tree.workspace().to_string_lossy());
                std::os::unix::fs::symlink(target, &full)
            }
        };
    }
    tree
}

/// Regular files under `dir` as (relative path, dev, ino), never following links.
fn walk(dir: &Path, relative: &Path, out: &mut Vec<(PathBuf, u64, u64)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let Ok(metadata) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        let child = relative.join(entry.file_name());
        if metadata.is_dir() {
            walk(&entry.path(), &child, out);
        } else if metadata.is_file() {
            out.push((child, metadata.dev(), metadata.ino()));
        }
    }
}

fn identities(files: &[(PathBuf, u64, u64)]) -> HashSet<(u64, u64)> {
    files.iter().map(|(_, dev, ino)| (*dev, *ino)).collect()
}

/// What a lexical oracle predicts on a tree without links: `Err(kind)` or the
/// normalised relative path.
fn lexical(path: &str) -> Result<PathBuf, &'static str> {
    if path.starts_with('/') {
        return Err("absolute");
    }
    let mut stack: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                stack.pop().ok_or("escapes")?;
            }
            name => stack.push(name),
        }
    }
    Ok(stack.iter().collect())
}

fn is_rule_violation(error: &JailError) -> bool {
    error.denial().is_some()
}

/// Checks every invariant for `paths` on the tree built from `nodes`.
fn check_case(nodes: &[Node], paths: &[String]) {
    let tree = build(nodes);
    let jail = Jail::new(tree.workspace()).unwrap();
    let has_links = nodes.iter().any(|n| matches!(n.kind, Kind::Link(_)));
    let mut inside = Vec::new();
    walk(tree.workspace(), Path::new(""), &mut inside);
    let inside_ids = identities(&inside);
    let inside_paths: HashSet<PathBuf> = inside.iter().map(|(p, _, _)| p.clone()).collect();
    let mut outside = Vec::new();
    walk(tree.outside(), Path::new(""), &mut outside);
    let outside_ids = identities(&outside);
    let before = tree.outside_snapshot();

    for path in paths {
        let opened = jail.open_file(path);
        if let Ok(file) = &opened {
            let metadata = file.metadata().unwrap();
            assert!(
                inside_ids.contains(&(metadata.dev(), metadata.ino())),
                "{path:?} opened a file that is not in the workspace tree"
            );
        }
        if let Ok(content) = jail.read(path, 1 << 16) {
            assert!(
                !String::from_utf8_lossy(&content.bytes).contains("TOP-SECRET"),
                "{path:?}"
            );
        }

        // What the OS would reach by following `workspace/path` naively.
        let naive = tree.workspace().join(path);
        if let Ok(metadata) = std::fs::metadata(&naive)
            && outside_ids.contains(&(metadata.dev(), metadata.ino()))
        {
            assert!(opened.is_err(), "{path:?} reaches outside but opened");
            let checked = jail.check(path);
            assert!(
                checked.as_ref().is_err_and(is_rule_violation),
                "{path:?} reaches outside but check gave {checked:?}"
            );
        }

        // `check` results are relative, `..`-free and link-free.
        if let Ok(relative) = jail.check(path) {
            assert!(relative.is_relative());
            let mut prefix = tree.workspace().to_path_buf();
            for component in relative.components() {
                assert!(
                    matches!(component, std::path::Component::Normal(_)),
                    "{relative:?}"
                );
                prefix.push(component);
                if let Ok(metadata) = std::fs::symlink_metadata(&prefix) {
                    assert!(!metadata.is_symlink(), "{path:?} resolved through a link");
                }
            }
        }

        // Listings never show anything from outside.
        if let Ok(listing) = jail.list(
            path,
            ListOptions {
                recursive: true,
                max_entries: 500,
            },
        ) {
            for entry in &listing.entries {
                let full = tree.workspace().join(&entry.path);
                let metadata = std::fs::symlink_metadata(&full).unwrap();
                if metadata.is_file() {
                    assert!(inside_ids.contains(&(metadata.dev(), metadata.ino())));
                }
            }
        }

        if !has_links {
            match lexical(path) {
                Err(expected) => {
                    assert_eq!(crate::outcome(&opened), expected, "{path:?}");
                    assert_eq!(crate::outcome(&jail.check(path)), expected, "{path:?}");
                }
                Ok(normal) if normal.as_os_str().is_empty() => {
                    assert_eq!(crate::outcome(&opened), "not_a_file", "{path:?}");
                }
                Ok(normal) => {
                    assert_eq!(
                        opened.is_ok(),
                        inside_paths.contains(&normal),
                        "{path:?} (oracle {normal:?}): {opened:?}"
                    );
                    assert_eq!(jail.check(path).unwrap(), normal, "{path:?}");
                }
            }
        }
    }

    // Writes last (they change the tree): none may touch the outside.
    for path in paths {
        let _ = jail.write_atomic(path, b"PWNED TOP-SECRET");
    }
    assert_eq!(
        tree.outside_snapshot(),
        before,
        "a write changed the outside"
    );
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 256,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn trees_with_links(
        nodes in prop::collection::vec(node(true), 0..10),
        paths in prop::collection::vec(path_string(), 1..12),
    ) {
        check_case(&nodes, &paths);
    }

    #[test]
    fn trees_without_links_agree_with_lexical_oracle(
        nodes in prop::collection::vec(node(false), 0..10),
        paths in prop::collection::vec(path_string(), 1..12),
    ) {
        check_case(&nodes, &paths);
    }
}

// Fixed regression cases: shapes that matter, kept as plain tests.

fn link(path: &[usize], target: usize) -> Node {
    Node {
        path: path.to_vec(),
        kind: Kind::Link(target),
    }
}

fn file(path: &[usize]) -> Node {
    Node {
        path: path.to_vec(),
        kind: Kind::File,
    }
}

fn dir(path: &[usize]) -> Node {
    Node {
        path: path.to_vec(),
        kind: Kind::Dir,
    }
}

fn paths(list: &[&str]) -> Vec<String> {
    list.iter().map(|p| (*p).to_owned()).collect()
}

#[test]
fn regression_link_to_parent_then_outside() {
    // l1 -> "..": `l1/outside/secret.txt` is the outside secret.
    check_case(
        &[link(&[5], 4)],
        &paths(&["l1/outside/secret.txt", "l1", "l1/outside", "l1/."]),
    );
}

#[test]
fn regression_link_to_self_dir_then_dot_dot() {
    // a/l1 -> ".": `a/l1/..` is the root, `a/l1/../..` is outside.
    check_case(
        &[dir(&[0]), link(&[0, 5], 5)],
        &paths(&["a/l1/..", "a/l1/../..", "a/l1/../../outside/f1"]),
    );
}

#[test]
fn regression_chain_through_absolute_inside_link() {
    // l1 -> @IN, l2 -> l1: `l2/../outside/secret.txt` climbs out of the root.
    check_case(
        &[link(&[5], 15), link(&[6], 10), file(&[3])],
        &paths(&["l2/f1", "l2/../outside/secret.txt", "l2/..", "l1/l2/f1"]),
    );
}

#[test]
fn regression_absolute_link_with_dot_dot() {
    check_case(&[link(&[5], 17)], &paths(&["l1/secret.txt", "l1", "l1/f1"]));
}

#[test]
fn regression_nested_parent_links() {
    // b/c/l1 -> "../../outside/secret.txt", a/l2 -> "a/../.." (relative to a/: outside).
    check_case(
        &[
            dir(&[1, 2]),
            link(&[1, 2, 5], 8),
            dir(&[0]),
            link(&[0, 6], 9),
        ],
        &paths(&[
            "b/c/l1",
            "a/l2",
            "a/l2/outside/secret.txt",
            "a/l2/workspace/b",
        ]),
    );
}

#[test]
fn regression_missing_component_then_dot_dot_into_link() {
    // `nope/../l1/secret.txt` must still resolve l1 (-> ../outside).
    check_case(
        &[link(&[5], 6)],
        &paths(&["nope/../l1/secret.txt", "f1/../l1/f1", "nope/../l1"]),
    );
}

#[test]
fn regression_file_used_as_directory() {
    check_case(
        &[file(&[3]), file(&[0, 3])],
        &paths(&["f1/..", "f1/../a/f1", "f1/x", "a/f1/.."]),
    );
}

#[test]
fn regression_unicode_names() {
    check_case(
        &[dir(&[7]), file(&[7, 8]), link(&[8], 0)],
        &paths(&["ü/日本", "日本/..", "ü/../ü/日本"]),
    );
}
