//! Cancellable and streamed atomic writes: an abort or an oversized upload leaves the
//! target untouched and no temp file behind.

use std::cell::Cell;
use std::io::Read;

use pp_gate::{Jail, WriteOutcome};
use pp_test_support::TempTree;
use pretty_assertions::assert_eq;

use crate::{kind, outcome, setup};

/// Names in the workspace (recursively) that start with the temp prefix.
fn temp_files(tree: &TempTree) -> Vec<String> {
    let mut found = Vec::new();
    let mut pending = vec![tree.workspace().to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                pending.push(entry.path());
            } else if entry
                .file_name()
                .to_string_lossy()
                .starts_with(pp_gate::TEMP_PREFIX)
            {
                found.push(entry.path().display().to_string());
            }
        }
    }
    found
}

#[test]
fn abort_before_the_rename_leaves_the_target_untouched() {
    let (tree, jail) = setup();
    let asked = Cell::new(0);
    let abort = || {
        asked.set(asked.get() + 1);
        // The content is complete in a temp file at this point.
        assert_eq!(temp_files(&tree).len(), 1);
        true
    };
    let error = jail
        .write_atomic_unless("top.txt", b"replaced", &abort)
        .unwrap_err();
    assert_eq!(kind(&error), "aborted");
    assert!(error.denial().is_none());
    assert_eq!(asked.get(), 1);
    assert_eq!(tree.read("top.txt"), "top");
    assert_eq!(temp_files(&tree), Vec::<String>::new());

    // A new file is not created either.
    let error = jail
        .write_atomic_unless("docs/new.txt", b"new", &|| true)
        .unwrap_err();
    assert_eq!(kind(&error), "aborted");
    assert!(!tree.exists("docs/new.txt"));
    assert_eq!(temp_files(&tree), Vec::<String>::new());
}

#[test]
fn not_aborting_writes() {
    let (tree, jail) = setup();
    assert_eq!(
        jail.write_atomic_unless("top.txt", b"replaced", &|| false)
            .unwrap(),
        WriteOutcome { created: false }
    );
    assert_eq!(tree.read("top.txt"), "replaced");
    // Rule violations are still refused first, and the abort check is never reached.
    let error = jail
        .write_atomic_unless("../x.txt", b"x", &|| panic!("not asked"))
        .unwrap_err();
    assert_eq!(kind(&error), "escapes");
}

#[test]
fn streamed_writes_copy_everything_up_to_the_limit() {
    let (tree, jail) = setup();
    let content: Vec<u8> = (0..200_000_u32).map(|i| (i % 251) as u8).collect();
    let outcome = jail
        .write_atomic_from(
            "uploads/data.bin",
            &mut content.as_slice(),
            content.len() as u64,
            &|| false,
        )
        .unwrap();
    assert_eq!(outcome, WriteOutcome { created: true });
    assert_eq!(
        std::fs::read(tree.workspace().join("uploads/data.bin")).unwrap(),
        content
    );
    assert_eq!(temp_files(&tree), Vec::<String>::new());
}

#[test]
fn too_much_content_is_refused_and_the_target_untouched() {
    let (tree, jail) = setup();
    let content = vec![b'x'; 100_001];
    let error = jail
        .write_atomic_from("top.txt", &mut content.as_slice(), 100_000, &|| false)
        .unwrap_err();
    assert!(
        matches!(
            error,
            pp_gate::JailError::TooLarge {
                ref path,
                max_bytes: 100_000
            } if path == "top.txt"
        ),
        "{error:?}"
    );
    assert!(error.denial().is_none());
    assert_eq!(tree.read("top.txt"), "top");
    assert_eq!(temp_files(&tree), Vec::<String>::new());

    // A new file is not created.
    assert_eq!(
        outcome(&jail.write_atomic_from("new.txt", &mut &b"abc"[..], 2, &|| false)),
        "too_large"
    );
    assert!(!tree.exists("new.txt"));
    // Exactly the limit is fine.
    jail.write_atomic_from("new.txt", &mut &b"ab"[..], 2, &|| false)
        .unwrap();
    assert_eq!(tree.read("new.txt"), "ab");
}

/// A reader that yields `chunks` chunks of 1 KiB and then fails.
struct Failing {
    chunks: u32,
}

impl Read for Failing {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        if self.chunks == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionReset,
                "upload broke",
            ));
        }
        self.chunks -= 1;
        let len = buffer.len().min(1024);
        buffer[..len].fill(b'y');
        Ok(len)
    }
}

#[test]
fn a_failing_reader_leaves_the_target_untouched() {
    let (tree, jail) = setup();
    let error = jail
        .write_atomic_from("top.txt", &mut Failing { chunks: 3 }, 1 << 20, &|| false)
        .unwrap_err();
    assert_eq!(kind(&error), "io");
    assert_eq!(tree.read("top.txt"), "top");
    assert_eq!(temp_files(&tree), Vec::<String>::new());
}

#[test]
fn a_streamed_write_can_be_aborted_midway() {
    let (tree, jail) = setup();
    let mut endless = std::io::repeat(b'z');
    let asked = Cell::new(0_u32);
    // Abort on the fifth check: in the middle of the copy.
    let abort = || {
        asked.set(asked.get() + 1);
        asked.get() >= 5
    };
    let error = jail
        .write_atomic_from("top.txt", &mut endless, u64::MAX, &abort)
        .unwrap_err();
    assert_eq!(kind(&error), "aborted");
    assert_eq!(asked.get(), 5);
    assert_eq!(tree.read("top.txt"), "top");
    assert_eq!(temp_files(&tree), Vec::<String>::new());

    // And aborted at the very end too (after the last chunk, before the rename).
    let asked = Cell::new(0_u32);
    let abort = || {
        asked.set(asked.get() + 1);
        asked.get() >= 3
    };
    let error = jail
        .write_atomic_from("top.txt", &mut &b"short"[..], 100, &abort)
        .unwrap_err();
    assert_eq!(kind(&error), "aborted");
    assert_eq!(tree.read("top.txt"), "top");
    assert_eq!(temp_files(&tree), Vec::<String>::new());
}

#[test]
fn streamed_writes_follow_the_jail_rules() {
    let tree = TempTree::new();
    tree.outside_file("secret.txt", "TOP-SECRET");
    let jail = Jail::new(tree.workspace()).unwrap();
    let before = tree.outside_snapshot();
    for path in ["../outside/secret.txt", "/etc/passwd", "a\\b", ""] {
        let result = jail.write_atomic_from(path, &mut &b"x"[..], 10, &|| false);
        assert!(result.is_err(), "{path}");
    }
    assert_eq!(tree.outside_snapshot(), before);
}

/// A file's permission bits, owner and group.
#[cfg(unix)]
fn mode_and_owner(tree: &TempTree, path: &str) -> (u32, u32, u32) {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let metadata = std::fs::metadata(tree.workspace().join(path)).unwrap();
    (
        metadata.permissions().mode() & 0o7777,
        metadata.uid(),
        metadata.gid(),
    )
}

#[cfg(unix)]
#[test]
fn restore_file_gives_the_recorded_mode_and_never_creates_or_replaces() {
    use std::os::unix::fs::PermissionsExt;
    let (tree, jail) = setup();
    std::fs::set_permissions(
        tree.workspace().join("top.txt"),
        std::fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let recorded = jail.file_mode("top.txt").unwrap().unwrap();
    assert_eq!(recorded.mode, 0o640);
    assert_eq!(jail.file_mode("nothing.txt").unwrap(), None);
    assert_eq!(
        jail.file_mode("docs").unwrap(),
        None,
        "a folder has no file mode"
    );

    // A deleted file comes back with its mode, not a new file's.
    std::fs::remove_file(tree.workspace().join("top.txt")).unwrap();
    let private = pp_types::FileMode {
        mode: 0o600,
        ..recorded
    };
    jail.restore_file("top.txt", b"back", Some(&private), false)
        .unwrap();
    assert_eq!(tree.read("top.txt"), "back");
    assert_eq!(mode_and_owner(&tree, "top.txt").0, 0o600);
    // Over an existing file the recorded mode wins over the file's.
    jail.restore_file("top.txt", b"again", Some(&recorded), true)
        .unwrap();
    assert_eq!(mode_and_owner(&tree, "top.txt").0, 0o640);

    // Without `replace`, something at the path is left alone.
    let refused = jail.restore_file("docs/readme.txt", b"x", Some(&recorded), false);
    assert_eq!(outcome(&refused), "already_exists");
    assert_eq!(tree.read("docs/readme.txt"), "inside readme");
    // A folder that is gone is not created again.
    let refused = jail.restore_file("gone/a.txt", b"x", Some(&recorded), false);
    assert_eq!(outcome(&refused), "not_found");
    assert!(!tree.exists("gone"));
    // A folder swapped for a link leading outside is refused; nothing is written there.
    tree.symlink("out", tree.outside().join("dir"));
    let before = tree.outside_snapshot();
    let refused = jail.restore_file("out/new.txt", b"x", Some(&recorded), false);
    assert_eq!(outcome(&refused), "symlink_escape");
    assert_eq!(tree.outside_snapshot(), before);
    assert_eq!(temp_files(&tree), Vec::<String>::new());
}

#[cfg(unix)]
#[test]
fn restore_file_gives_the_owner_back_where_the_process_may_else_drops_setuid() {
    let (tree, jail) = setup();
    let mode = pp_types::FileMode {
        mode: 0o4755,
        uid: Some(4242),
        gid: Some(4343),
    };
    jail.restore_file("tool", b"#!/bin/sh\n", Some(&mode), false)
        .unwrap();
    let probe = tempfile::NamedTempFile::new().unwrap();
    if std::os::unix::fs::chown(probe.path(), Some(4242), Some(4343)).is_ok() {
        assert_eq!(mode_and_owner(&tree, "tool"), (0o4755, 4242, 4343));
    } else {
        // Not root: the file stays the process's, without setuid.
        assert_eq!(mode_and_owner(&tree, "tool").0, 0o755);
    }
}
