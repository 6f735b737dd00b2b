//! Every escape class the jail must refuse, and the inside cases it must allow.

use std::path::PathBuf;

use pp_gate::{JailError, ListOptions, MAX_SYMLINK_HOPS};
use pp_types::DenyRule;
use pretty_assertions::assert_eq;

use crate::{kind, outcome, setup};

/// Runs every path-taking operation on `path` and returns their outcomes.
fn all_ops(jail: &pp_gate::Jail, path: &str) -> [&'static str; 6] {
    [
        outcome(&jail.check(path)),
        outcome(&jail.exists(path)),
        outcome(&jail.open_file(path)),
        outcome(&jail.read(path, 1024)),
        outcome(&jail.fingerprint(path)),
        outcome(&jail.list(path, ListOptions::default())),
    ]
}

fn refused_everywhere(jail: &pp_gate::Jail, path: &str, expected: &'static str) {
    assert_eq!(all_ops(jail, path), [expected; 6], "path {path:?}");
}

#[test]
fn absolute_paths() {
    let (tree, jail) = setup();
    refused_everywhere(&jail, "/etc/passwd", "absolute");
    let outside = tree.outside().join("secret.txt");
    refused_everywhere(&jail, &outside.to_string_lossy(), "absolute");
    let inside = tree.workspace().join("top.txt");
    refused_everywhere(&jail, &inside.to_string_lossy(), "absolute");
    let error = jail.check("/etc/passwd").unwrap_err();
    assert_eq!(error.denial().map(|d| d.rule), Some(DenyRule::AbsolutePath));
}

#[test]
fn dot_dot_escapes() {
    let (_tree, jail) = setup();
    for path in [
        "..",
        "../",
        "../outside/secret.txt",
        "a/../../outside/secret.txt",
        "docs/../../outside/secret.txt",
        "./docs/./../..",
        "docs/../docs/../../outside",
        "nope/../../x",
    ] {
        refused_everywhere(&jail, path, "escapes");
    }
    let error = jail.check("../x").unwrap_err();
    assert_eq!(error.denial().map(|d| d.rule), Some(DenyRule::Escapes));
}

#[test]
fn dot_dot_that_stays_inside_is_fine() {
    let (_tree, jail) = setup();
    assert_eq!(
        jail.check("docs/../top.txt").unwrap(),
        PathBuf::from("top.txt")
    );
    assert_eq!(jail.read("docs/../top.txt", 100).unwrap().bytes, b"top");
    assert_eq!(jail.check("docs/..").unwrap(), PathBuf::new());
    assert_eq!(jail.check("").unwrap(), PathBuf::new());
    assert_eq!(jail.check(".").unwrap(), PathBuf::new());
}

#[test]
fn windows_forms_and_nul_are_invalid() {
    let (_tree, jail) = setup();
    for path in [
        "C:\\x",
        "C:x",
        "c:/windows/system32",
        "\\\\server\\share",
        "a\\..\\..\\x",
        "docs\\readme.txt",
        "a\0b",
        "docs/readme.txt\0",
    ] {
        refused_everywhere(&jail, path, "invalid");
        let error = jail.check(path).unwrap_err();
        assert_eq!(error.denial().map(|d| d.rule), Some(DenyRule::InvalidPath));
    }
    let reason = |path| match jail.check(path) {
        Err(JailError::InvalidPath { reason, .. }) => reason,
        other => panic!("{other:?}"),
    };
    assert_eq!(reason("C:\\x"), "has a drive prefix");
    assert_eq!(reason("\\\\server\\share"), "contains a backslash");
    assert_eq!(reason("a\0"), "contains a NUL byte");
}

#[cfg(unix)]
mod links {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn file_link_out_relative_and_absolute() {
        let (tree, jail) = setup();
        tree.symlink("leak.txt", "../outside/secret.txt");
        tree.symlink("leak_abs.txt", tree.outside().join("secret.txt"));
        tree.symlink("docs/deep_leak.txt", "../../outside/secret.txt");
        for path in [
            "leak.txt",
            "leak_abs.txt",
            "docs/deep_leak.txt",
            "./docs/../leak.txt",
        ] {
            refused_including_write(&jail, path);
        }
    }

    #[test]
    fn dir_link_out() {
        let (tree, jail) = setup();
        tree.symlink("out", "../outside");
        tree.symlink("out_abs", tree.outside());
        for path in [
            "out",
            "out/secret.txt",
            "out/dir/inner.txt",
            "out_abs/secret.txt",
            "out/nope",
        ] {
            refused_everywhere(&jail, path, "symlink_escape");
        }
    }

    #[test]
    fn chain_in_in_out() {
        let (tree, jail) = setup();
        tree.symlink("a", "b");
        tree.symlink("b", "docs/c");
        tree.symlink("docs/c", "../../outside/secret.txt");
        refused_including_write(&jail, "a");
        // A chain of directories, the last one out.
        tree.symlink("d1", "d2");
        tree.symlink("d2", "../outside/dir");
        refused_everywhere(&jail, "d1/inner.txt", "symlink_escape");
    }

    #[test]
    fn dangling_link_out() {
        let (tree, jail) = setup();
        tree.symlink("dangle", "../outside/not-yet.txt");
        tree.symlink("dangle_dir", "../outside/newdir");
        refused_including_write(&jail, "dangle");
        refused_everywhere(&jail, "dangle_dir/x.txt", "symlink_escape");
        let before = tree.outside_snapshot();
        assert_eq!(
            outcome(&jail.write_atomic("dangle", b"PWNED")),
            "symlink_escape"
        );
        assert_eq!(
            outcome(&jail.write_atomic("dangle_dir/x.txt", b"PWNED")),
            "symlink_escape"
        );
        assert_eq!(tree.outside_snapshot(), before);
        assert!(!tree.outside().join("not-yet.txt").exists());
        assert!(!tree.outside().join("newdir").exists());
    }

    #[test]
    fn dot_dot_inside_link_targets() {
        let (tree, jail) = setup();
        tree.symlink("docs/up", "../../outside");
        tree.symlink("docs/sibling", "../empty");
        tree.symlink("docs/self", "../docs/./readme.txt");
        refused_everywhere(&jail, "docs/up/secret.txt", "symlink_escape");
        assert_eq!(jail.check("docs/sibling").unwrap(), PathBuf::from("empty"));
        assert_eq!(jail.read("docs/self", 100).unwrap().bytes, b"inside readme");
        assert_eq!(
            jail.check("docs/self").unwrap(),
            PathBuf::from("docs/readme.txt")
        );
    }

    #[test]
    fn physical_dot_dot_after_a_link_cannot_climb_out() {
        let (tree, jail) = setup();
        // `deep/a/b/up` is the root; lexically `deep/a/b/up/..` is `deep/a/b`, but the
        // kernel (and the jail) go to the parent of the root.
        tree.dir("deep/a/b");
        tree.symlink("deep/a/b/up", "../../..");
        tree.symlink("here", ".");
        assert_eq!(jail.check("deep/a/b/up").unwrap(), PathBuf::new());
        refused_everywhere(&jail, "deep/a/b/up/..", "symlink_escape");
        refused_everywhere(&jail, "deep/a/b/up/../outside/secret.txt", "symlink_escape");
        refused_everywhere(&jail, "here/..", "symlink_escape");
        assert_eq!(jail.read("here/top.txt", 10).unwrap().bytes, b"top");
        // Through a link to a subdirectory `..` is the physical parent.
        tree.symlink("to_b", "deep/a/b");
        assert_eq!(jail.check("to_b/..").unwrap(), PathBuf::from("deep/a"));
    }

    #[test]
    fn absolute_link_targets_inside_are_translated() {
        let (tree, jail) = setup();
        tree.symlink("abs_in", tree.workspace().join("docs/readme.txt"));
        tree.symlink("abs_dir", tree.workspace().join("docs"));
        tree.symlink("abs_sneaky", tree.workspace().join("../outside/secret.txt"));
        tree.symlink("abs_root", tree.workspace());
        assert_eq!(jail.read("abs_in", 100).unwrap().bytes, b"inside readme");
        assert_eq!(
            jail.check("abs_dir/readme.txt").unwrap(),
            PathBuf::from("docs/readme.txt")
        );
        assert_eq!(jail.check("abs_root").unwrap(), PathBuf::new());
        refused_including_write(&jail, "abs_sneaky");
        refused_everywhere(&jail, "abs_root/..", "symlink_escape");
    }

    #[test]
    fn loops_and_long_chains() {
        let (tree, jail) = setup();
        tree.symlink("loop1", "loop2");
        tree.symlink("loop2", "loop1");
        tree.symlink("selfloop", "selfloop");
        refused_everywhere(&jail, "loop1", "too_many_links");
        refused_everywhere(&jail, "selfloop/x", "too_many_links");
        let error = jail.check("loop1").unwrap_err();
        assert_eq!(
            error.denial().map(|d| d.rule),
            Some(DenyRule::SymlinkEscape)
        );

        // A chain of exactly MAX_SYMLINK_HOPS links works; one more does not.
        for i in 0..=MAX_SYMLINK_HOPS {
            tree.symlink(&format!("chain{i}"), format!("chain{}", i + 1));
        }
        tree.symlink(&format!("chain{}", MAX_SYMLINK_HOPS + 1), "top.txt");
        // chainK..=chain41 is 42 - K links.
        assert_eq!(jail.read("chain2", 10).unwrap().bytes, b"top");
        assert_eq!(outcome(&jail.read("chain1", 10)), "too_many_links");
    }

    #[test]
    fn inside_links_work() {
        let (tree, jail) = setup();
        tree.symlink("alias.txt", "docs/readme.txt");
        tree.symlink("docs_link", "docs");
        assert_eq!(jail.read("alias.txt", 100).unwrap().bytes, b"inside readme");
        assert_eq!(
            jail.read("docs_link/readme.txt", 100).unwrap().bytes,
            b"inside readme"
        );
        assert_eq!(
            jail.check("alias.txt").unwrap(),
            PathBuf::from("docs/readme.txt")
        );
        assert!(jail.exists("docs_link").unwrap());
        tree.symlink("dangle_in", "docs/later.txt");
        assert!(!jail.exists("dangle_in").unwrap());
        assert_eq!(
            jail.check("dangle_in").unwrap(),
            PathBuf::from("docs/later.txt")
        );
    }

    #[test]
    fn listing_never_escapes() {
        let (tree, jail) = setup();
        tree.symlink("out", "../outside");
        tree.symlink("docs/out2", "../../outside/dir");
        tree.symlink("docs/self", "..");
        assert_eq!(
            outcome(&jail.list("../outside", ListOptions::default())),
            "escapes"
        );
        assert_eq!(
            outcome(&jail.list("out", ListOptions::default())),
            "symlink_escape"
        );
        let listing = jail
            .list(
                "",
                ListOptions {
                    recursive: true,
                    max_entries: 1000,
                },
            )
            .unwrap();
        let paths: Vec<_> = listing.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "docs",
                "docs/out2",
                "docs/readme.txt",
                "docs/self",
                "empty",
                "out",
                "top.txt"
            ]
        );
        for entry in &listing.entries {
            assert!(!entry.path.contains("secret") && !entry.path.contains("inner"));
        }
        let kinds: Vec<_> = listing
            .entries
            .iter()
            .filter(|e| e.kind == pp_gate::EntryKind::Symlink)
            .map(|e| e.path.as_str())
            .collect();
        assert_eq!(kinds, ["docs/out2", "docs/self", "out"]);
    }

    #[test]
    fn errors_never_reveal_the_outside_target() {
        let (tree, jail) = setup();
        tree.symlink("leak.txt", tree.outside().join("secret.txt"));
        tree.symlink("out", "../outside");
        tree.symlink("loop", "loop");
        let outside = tree.outside().to_string_lossy().into_owned();
        let base = tree.base().to_string_lossy().into_owned();
        for path in [
            "leak.txt",
            "out/secret.txt",
            "out",
            "loop",
            "../x",
            "/etc/passwd",
        ] {
            let errors = [
                jail.check(path).unwrap_err(),
                jail.open_file(path).unwrap_err(),
                jail.write_atomic(path, b"x").unwrap_err(),
                jail.list(path, ListOptions::default()).unwrap_err(),
            ];
            for error in errors {
                let message = error.to_string();
                let denial = error.denial().expect("rule violation").to_string();
                for text in [&message, &denial] {
                    assert!(!text.contains(&outside), "{text}");
                    assert!(!text.contains(&base), "{text}");
                    assert!(
                        !text.contains("secret") || path.contains("secret"),
                        "{text}"
                    );
                    assert!(text.contains(&format!("{path:?}")), "{text}");
                }
            }
        }
    }

    /// Every operation, writes included, refuses `path` as a symlink escape.
    fn refused_including_write(jail: &pp_gate::Jail, path: &str) {
        let ops = all_ops(jail, path);
        assert_eq!(ops, ["symlink_escape"; 6], "path {path:?}");
        let error = jail.write_atomic(path, b"PWNED").unwrap_err();
        assert_eq!(kind(&error), "symlink_escape", "write {path:?}");
    }
}
