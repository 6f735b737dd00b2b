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
