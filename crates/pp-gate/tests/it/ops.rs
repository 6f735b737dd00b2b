//! The jail's operations on ordinary paths: read, list, write, fingerprint, sweep.

use std::path::PathBuf;

use pp_gate::{EntryKind, FileContent, Jail, ListOptions, WriteOutcome};
use pp_test_support::TempTree;
use pretty_assertions::assert_eq;

use crate::{outcome, setup};

#[test]
fn new_requires_an_existing_directory() {
    let tree = TempTree::new();
    tree.file("file.txt", "x");
    assert_eq!(
        outcome(&Jail::new(&tree.workspace().join("file.txt"))),
        "root_invalid"
    );
    assert_eq!(
        outcome(&Jail::new(&tree.workspace().join("missing"))),
        "root_invalid"
    );
    let jail = Jail::new(&tree.base().join("workspace/../workspace/.")).unwrap();
    assert_eq!(jail.root(), tree.workspace());
}

#[test]
fn read_with_limit() {
    let (tree, jail) = setup();
    tree.file("ten.txt", "0123456789");
    assert_eq!(
        jail.read("ten.txt", 4).unwrap(),
        FileContent {
            bytes: b"0123".to_vec(),
            size: 10,
            truncated: true
        }
    );
    assert_eq!(
        jail.read("ten.txt", 10).unwrap(),
        FileContent {
            bytes: b"0123456789".to_vec(),
            size: 10,
            truncated: false
        }
    );
    assert_eq!(jail.read("ten.txt", 0).unwrap().truncated, true);
    assert_eq!(outcome(&jail.read("missing.txt", 10)), "not_found");
    assert_eq!(outcome(&jail.read("docs", 10)), "not_a_file");
    assert_eq!(outcome(&jail.read("", 10)), "not_a_file");
    assert_eq!(outcome(&jail.read(".", 10)), "not_a_file");
    assert_eq!(outcome(&jail.read("top.txt/x", 10)), "not_found");
}

#[test]
fn open_file_is_read_only() {
    use std::io::Write;
    let (_tree, jail) = setup();
    let mut file = jail.open_file("top.txt").unwrap();
    assert!(file.write_all(b"x").is_err());
}

#[cfg(unix)]
#[test]
fn sockets_are_not_files() {
    let (tree, jail) = setup();
    let _listener = std::os::unix::net::UnixListener::bind(tree.workspace().join("sock")).unwrap();
    assert_eq!(outcome(&jail.open_file("sock")), "not_a_file");
    assert_eq!(outcome(&jail.write_atomic("sock", b"x")), "not_a_file");
    let listing = jail.list("", ListOptions::default()).unwrap();
    let sock = listing.entries.iter().find(|e| e.path == "sock").unwrap();
    assert_eq!(sock.kind, EntryKind::Other);
}

#[test]
fn exists_and_check() {
    let (_tree, jail) = setup();
    assert!(jail.exists("top.txt").unwrap());
    assert!(jail.exists("docs").unwrap());
    assert!(jail.exists("").unwrap());
    assert!(!jail.exists("nope/deeper/x.txt").unwrap());
    assert_eq!(
        jail.check("nope/deeper/x.txt").unwrap(),
        PathBuf::from("nope/deeper/x.txt")
    );
    assert_eq!(
        jail.check("./docs//readme.txt").unwrap(),
        PathBuf::from("docs/readme.txt")
    );
    assert_eq!(
        jail.check("日本/ü.txt").unwrap(),
        PathBuf::from("日本/ü.txt")
    );
}

#[test]
fn list_flat_and_recursive() {
    let (tree, jail) = setup();
    tree.file("docs/sub/b.txt", "bb");
    tree.file("docs/a.txt", "a");
    let flat = jail.list("docs", ListOptions::default()).unwrap();
    let summary: Vec<_> = flat
        .entries
        .iter()
        .map(|e| {
            (
                e.path.as_str(),
                e.kind,
                if e.kind == EntryKind::File { e.size } else { 0 },
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("docs/a.txt", EntryKind::File, 1),
            ("docs/readme.txt", EntryKind::File, 13),
            ("docs/sub", EntryKind::Dir, 0),
        ]
    );
    assert!(!flat.truncated);
    assert!(flat.entries.iter().all(|e| e.modified.is_some()));

    for root in ["", "."] {
        let all = jail
            .list(
                root,
                ListOptions {
                    recursive: true,
                    max_entries: 100,
                },
            )
            .unwrap();
        let paths: Vec<_> = all.entries.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "docs",
                "docs/a.txt",
                "docs/readme.txt",
                "docs/sub",
                "docs/sub/b.txt",
                "empty",
                "top.txt"
            ]
        );
    }
    let capped = jail
        .list(
            "",
            ListOptions {
                recursive: true,
                max_entries: 3,
            },
        )
        .unwrap();
    assert_eq!(capped.entries.len(), 3);
    assert!(capped.truncated);
    let exact = jail
        .list(
            "docs",
            ListOptions {
                recursive: false,
                max_entries: 3,
            },
        )
        .unwrap();
    assert!(!exact.truncated);
    assert_eq!(
        outcome(&jail.list("top.txt", ListOptions::default())),
        "not_a_directory"
    );
    assert_eq!(
        outcome(&jail.list("missing", ListOptions::default())),
        "not_found"
    );
}

#[cfg(unix)]
#[test]
fn list_through_an_inside_link_shows_real_paths() {
    let (tree, jail) = setup();
    tree.symlink("docs_link", "docs");
    let listing = jail.list("docs_link", ListOptions::default()).unwrap();
    let paths: Vec<_> = listing.entries.iter().map(|e| e.path.as_str()).collect();
    assert_eq!(paths, ["docs/readme.txt"]);
}

#[test]
fn write_creates_parents_and_reports_created() {
    let (tree, jail) = setup();
    assert_eq!(
        jail.write_atomic("new/deep/file.txt", b"one").unwrap(),
        WriteOutcome { created: true }
    );
    assert_eq!(tree.read("new/deep/file.txt"), "one");
    assert_eq!(
        jail.write_atomic("new/deep/file.txt", b"two").unwrap(),
        WriteOutcome { created: false }
    );
    assert_eq!(tree.read("new/deep/file.txt"), "two");
    assert_eq!(
        jail.write_atomic("top.txt", b"").unwrap(),
        WriteOutcome { created: false }
    );
    assert_eq!(tree.read("top.txt"), "");
    assert_eq!(
        jail.write_atomic("./docs/../root.txt", b"r")
            .unwrap()
            .created,
        true
    );
    assert_eq!(tree.read("root.txt"), "r");
    // No temp files are left behind.
    let listing = jail
        .list(
            "",
            ListOptions {
                recursive: true,
                max_entries: 100,
            },
        )
        .unwrap();
    assert!(
        listing
            .entries
            .iter()
            .all(|e| !e.path.contains(".pocketpilot-tmp-"))
    );
}

#[test]
fn write_refuses_non_files() {
    let (_tree, jail) = setup();
    assert_eq!(outcome(&jail.write_atomic("", b"x")), "not_a_file");
    assert_eq!(outcome(&jail.write_atomic(".", b"x")), "not_a_file");
    assert_eq!(outcome(&jail.write_atomic("docs", b"x")), "not_a_file");
    assert_eq!(outcome(&jail.write_atomic("docs/", b"x")), "not_a_file");
    assert_eq!(outcome(&jail.write_atomic("new/", b"x")), "not_a_file");
    assert_eq!(outcome(&jail.write_atomic("new/.", b"x")), "not_a_file");
    assert!(
        !jail.exists("new").unwrap(),
        "no file named after the directory"
    );
    assert_eq!(
        outcome(&jail.write_atomic("top.txt/x", b"x")),
        "not_a_directory"
    );
    assert_eq!(outcome(&jail.write_atomic("../x", b"x")), "escapes");
    assert_eq!(outcome(&jail.write_atomic("/tmp/x", b"x")), "absolute");
}

#[cfg(unix)]
#[test]
fn write_through_a_link_inside_writes_the_target() {
    let (tree, jail) = setup();
    tree.symlink("alias.txt", "docs/readme.txt");
    tree.symlink("alias2.txt", "alias.txt");
    tree.symlink("docs_link", "docs");
    assert_eq!(
        jail.write_atomic("alias2.txt", b"via link")
            .unwrap()
            .created,
        false
    );
    assert_eq!(tree.read("docs/readme.txt"), "via link");
    assert!(
        std::fs::symlink_metadata(tree.workspace().join("alias.txt"))
            .unwrap()
            .is_symlink()
    );
    assert!(
        std::fs::symlink_metadata(tree.workspace().join("alias2.txt"))
            .unwrap()
            .is_symlink()
    );
    jail.write_atomic("docs_link/new.txt", b"n").unwrap();
    assert_eq!(tree.read("docs/new.txt"), "n");
    tree.symlink("later", "docs/later.txt");
    assert_eq!(jail.write_atomic("later", b"l").unwrap().created, true);
    assert_eq!(tree.read("docs/later.txt"), "l");
}

#[cfg(unix)]
#[test]
fn write_through_a_link_out_is_refused_and_outside_unchanged() {
    let (tree, jail) = setup();
    tree.symlink("leak.txt", "../outside/secret.txt");
    tree.symlink("leak_abs.txt", tree.outside().join("secret.txt"));
    tree.symlink("out", "../outside");
    let before = tree.outside_snapshot();
    for path in [
        "leak.txt",
        "leak_abs.txt",
        "out/secret.txt",
        "out/new.txt",
        "out/dir/new/x.txt",
    ] {
        assert_eq!(
            outcome(&jail.write_atomic(path, b"PWNED")),
            "symlink_escape",
            "{path}"
        );
    }
    assert_eq!(tree.outside_snapshot(), before);
    assert!(
        std::fs::symlink_metadata(tree.workspace().join("leak.txt"))
            .unwrap()
            .is_symlink()
    );
}

#[cfg(unix)]
#[test]
fn hard_link_to_outside_cannot_modify_the_outside_file() {
    use std::os::unix::fs::MetadataExt;
    let (tree, jail) = setup();
    let outside = tree.outside().join("secret.txt");
    let inside = tree.workspace().join("hard.txt");
    std::fs::hard_link(&outside, &inside).unwrap();
    assert_eq!(
        jail.write_atomic("hard.txt", b"replaced").unwrap().created,
        false
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "TOP-SECRET");
    assert_eq!(tree.read("hard.txt"), "replaced");
    let inside_ino = std::fs::metadata(&inside).unwrap().ino();
    let outside_ino = std::fs::metadata(&outside).unwrap().ino();
    assert_ne!(inside_ino, outside_ino, "the workspace entry is a new file");
    assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
}

#[cfg(unix)]
#[test]
fn overwrite_keeps_permissions() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, jail) = setup();
    let path = tree.file("script.sh", "#!/bin/sh\n");
    for mode in [0o750, 0o600, 0o444] {
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        jail.write_atomic("script.sh", b"#!/bin/sh\necho hi\n")
            .unwrap();
        let after = std::fs::metadata(&path).unwrap().permissions().mode() & 0o7777;
        assert_eq!(after, mode);
    }
    assert_eq!(tree.read("script.sh"), "#!/bin/sh\necho hi\n");
}

#[test]
fn fingerprint_absent_and_sha256() {
    let (tree, jail) = setup();
    tree.file("abc.txt", "abc");
    let fingerprint = jail.fingerprint("abc.txt").unwrap();
    assert!(
        fingerprint
            .ends_with(" sha256=ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        "{fingerprint}"
    );
    assert_eq!(jail.fingerprint("missing.txt").unwrap(), "absent");
    assert_eq!(jail.fingerprint("missing/dir/x").unwrap(), "absent");
    assert_eq!(outcome(&jail.fingerprint("docs")), "not_a_file");
    assert_eq!(outcome(&jail.fingerprint("")), "not_a_file");
    let before = jail.fingerprint("abc.txt").unwrap();
    jail.write_atomic("abc.txt", b"abd").unwrap();
    assert_ne!(jail.fingerprint("abc.txt").unwrap(), before);
}

#[cfg(target_os = "linux")]
/// A pid that is certainly not running: a child we started and reaped.
fn dead_pid() -> u32 {
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let pid = child.id();
    child.wait().unwrap();
    pid
}

#[cfg(target_os = "linux")]
#[test]
fn sweep_removes_dead_writers_temp_files_only() {
    let (tree, jail) = setup();
    let dead = dead_pid();
    let live = std::process::id();
    tree.file(&format!("docs/.pocketpilot-tmp-{dead}-0-1"), "half");
    tree.file(&format!(".pocketpilot-tmp-{dead}-3-4"), "half");
    tree.file(&format!("docs/.pocketpilot-tmp-{live}-0-1"), "in progress");
    tree.file(".pocketpilot-tmp-nopid", "unknown writer, fresh");
    tree.file("docs/.pocketpilot-tmpfile", "not ours");
    // A stray temp file outside, reachable only through a link, is never touched.
    tree.outside_file(&format!(".pocketpilot-tmp-{dead}-9-9"), "outside");
    tree.symlink("out", "../outside");
    let before = tree.outside_snapshot();

    assert_eq!(jail.sweep_temp_files().unwrap(), 2);
    assert!(!tree.exists(&format!("docs/.pocketpilot-tmp-{dead}-0-1")));
    assert!(!tree.exists(&format!(".pocketpilot-tmp-{dead}-3-4")));
    assert!(tree.exists(&format!("docs/.pocketpilot-tmp-{live}-0-1")));
    assert!(tree.exists(".pocketpilot-tmp-nopid"));
    assert!(tree.exists("docs/.pocketpilot-tmpfile"));
    assert_eq!(tree.outside_snapshot(), before);
    assert_eq!(jail.sweep_temp_files().unwrap(), 0);
}

#[test]
fn one_jail_serves_many_threads() {
    let (tree, jail) = setup();
    tree.file("docs/sub/x.txt", "x");
    let jail = std::sync::Arc::new(jail);
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let jail = std::sync::Arc::clone(&jail);
            std::thread::spawn(move || {
                for j in 0..50 {
                    let listing = jail
                        .list(
                            "",
                            ListOptions {
                                recursive: true,
                                max_entries: 100,
                            },
                        )
                        .unwrap();
                    assert!(listing.entries.iter().any(|e| e.path == "docs/sub/x.txt"));
                    assert_eq!(jail.read("top.txt", 10).unwrap().bytes, b"top");
                    jail.write_atomic(&format!("t{i}/f{j}.txt"), b"w").unwrap();
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
    assert_eq!(jail.sweep_temp_files().unwrap(), 0);
}
