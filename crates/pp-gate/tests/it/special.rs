//! Special files (issue 8, finding 3): a FIFO at a path, or renamed over a file while
//! it is being read, makes every jail operation return (refused), never hang.
//!
//! A hang cannot be asserted directly; each call runs on a worker thread and the test
//! fails if a call has not returned after a few seconds (that means blocked, not slow).

#![cfg(target_os = "linux")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use pp_gate::{Jail, JailError};
use rustix::fs::{CWD, Mode, mkfifoat};

use crate::outcome;

/// How long one call may take before the test calls it blocked.
const BLOCKED_AFTER: Duration = Duration::from_secs(5);
/// Reads raced against the FIFO swapper: at least this many, and until the swapper
/// has swapped `RACE_SWAPS` times, but never more than `MAX_READS`.
const RACE_READS: u64 = 3_000;
const RACE_SWAPS: u64 = 500;
const MAX_READS: u64 = 1_000_000;

fn mkfifo(path: &Path) {
    mkfifoat(CWD, path, Mode::from_raw_mode(0o644)).unwrap();
}

/// Runs `f` on a worker thread; fails the test if it has not returned in time.
fn must_return<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = mpsc::channel();
    thread::spawn(move || {
        let _ = sender.send(f());
    });
    receiver
        .recv_timeout(BLOCKED_AFTER)
        .expect("blocked: the jail call did not return")
}

#[test]
fn a_fifo_at_the_path_is_refused_without_blocking() {
    let tree = pp_test_support::TempTree::new();
    mkfifo(&tree.workspace().join("pipe"));
    let jail = Arc::new(Jail::new(tree.workspace()).unwrap());
    let outcomes = must_return(move || {
        [
            outcome(&jail.read("pipe", 10)),
            outcome(&jail.open_file("pipe")),
            outcome(&jail.fingerprint("pipe")),
            outcome(&jail.fingerprint_with("pipe", 0)),
            outcome(&jail.write_atomic("pipe", b"x")),
            outcome(&jail.write_atomic_unless("pipe", b"x", &|| false)),
            outcome(&jail.write_atomic_from("pipe", &mut &b"x"[..], 10, &|| false)),
        ]
    });
    assert_eq!(outcomes, ["not_a_file"; 7]);
    // The FIFO is still there, untouched.
    let probe = Jail::new(tree.workspace()).unwrap().probe("pipe").unwrap();
    assert_eq!(probe.kind, Some(pp_gate::EntryKind::Other));
}

/// Sets the flag when dropped, so the swapper stops even if the test fails.
struct StopOnDrop(Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

#[test]
fn reads_return_while_a_fifo_is_renamed_over_the_file() {
    let tree = pp_test_support::TempTree::new();
    let workspace = tree.workspace().to_path_buf();
    tree.file("f.txt", "regular");
    let jail = Arc::new(Jail::new(&workspace).unwrap());

    let stop = Arc::new(AtomicBool::new(false));
    let _stop_on_drop = StopOnDrop(Arc::clone(&stop));
    let swaps = Arc::new(AtomicU64::new(0));
    let swapper = {
        let stop = Arc::clone(&stop);
        let swaps = Arc::clone(&swaps);
        thread::spawn(move || {
            let target = workspace.join("f.txt");
            let fifo = workspace.join("f.fifo");
            let regular = workspace.join("f.regular");
            while !stop.load(Ordering::Relaxed) {
                mkfifo(&fifo);
                std::fs::rename(&fifo, &target).unwrap();
                std::fs::write(&regular, "regular").unwrap();
                std::fs::rename(&regular, &target).unwrap();
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    while swaps.load(Ordering::Relaxed) == 0 {
        thread::yield_now();
    }

    // The reader reports after every call; a missing report means a blocked call.
    let (sender, receiver) = mpsc::channel();
    {
        let jail = Arc::clone(&jail);
        let swaps = Arc::clone(&swaps);
        thread::spawn(move || {
            let mut i = 0_u64;
            while (i < RACE_READS || swaps.load(Ordering::Relaxed) < RACE_SWAPS) && i < MAX_READS {
                i += 1;
                let result = match i % 3 {
                    0 => jail.read("f.txt", 100).map(|content| content.bytes),
                    1 => jail.open_file("f.txt").map(|file| {
                        let mut bytes = Vec::new();
                        std::io::Read::read_to_end(&mut &file, &mut bytes).unwrap();
                        bytes
                    }),
                    _ => jail.fingerprint("f.txt").map(|_| b"regular".to_vec()),
                };
                if sender.send(result).is_err() {
                    return;
                }
            }
        });
    }
    let (mut files, mut refused) = (0_u64, 0_u64);
    loop {
        let result = match receiver.recv_timeout(BLOCKED_AFTER) {
            Ok(result) => result,
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                panic!("blocked: a read did not return while a FIFO was swapped in")
            }
        };
        match result {
            Ok(bytes) => {
                assert_eq!(bytes, b"regular");
                files += 1;
            }
            Err(JailError::NotAFile { .. }) => refused += 1,
            Err(other) => panic!("unexpected error: {other:?}"),
        }
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(files + refused >= RACE_READS);
    println!(
        "{files} regular reads, {refused} refused, {} swaps",
        swaps.load(Ordering::Relaxed)
    );
}
