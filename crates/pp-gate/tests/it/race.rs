//! Time-of-check/time-of-use races: a concurrent attacker swaps links while the jail
//! reads. No read may ever return the outside content.

#![cfg(unix)]

use std::io::Read;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use pp_gate::Jail;
use pp_test_support::TempTree;

const TRIES: u64 = 20_000;
const DEADLINE: Duration = Duration::from_secs(30);

#[derive(Debug, Default)]
struct Counts {
    tries: u64,
    successes: u64,
    refusals: u64,
    other_errors: u64,
    leaks: u64,
    flips: u64,
}

/// Runs `flip` in a loop on another thread while reading `path` through the jail.
fn race(jail: &Jail, path: &str, flip: impl Fn() + Send + 'static) -> Counts {
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let flipper = {
        let stop = Arc::clone(&stop);
        let flips = Arc::clone(&flips);
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                flip();
                flips.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut counts = Counts::default();
    let start = Instant::now();
    while counts.tries < TRIES && start.elapsed() < DEADLINE {
        counts.tries += 1;
        // Alternate between the two read entry points.
        let result = if counts.tries % 2 == 0 {
            jail.read(path, 1024).map(|content| content.bytes)
        } else {
            jail.open_file(path).map(|mut file| {
                let mut bytes = Vec::new();
                let _ = file.read_to_end(&mut bytes);
                bytes
            })
        };
        match result {
            Ok(bytes) if String::from_utf8_lossy(&bytes).contains("TOP-SECRET") => {
                counts.leaks += 1
            }
            Ok(_) => counts.successes += 1,
            Err(error) if error.denial().is_some() => counts.refusals += 1,
            Err(_) => counts.other_errors += 1,
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    counts.flips = flips.load(Ordering::Relaxed);
    counts
}

fn tree() -> TempTree {
    let tree = TempTree::new();
    tree.file("inside_dir/secret.txt", "inside");
    tree.outside_file("secret.txt", "TOP-SECRET");
    tree
}

/// Replaces `link` with a fresh symlink to `target` atomically (rename over it).
fn point(workspace: &Path, link: &str, target: &str) {
    let temp = workspace.join(format!(".prep-{link}"));
    let _ = std::fs::remove_file(&temp);
    std::os::unix::fs::symlink(target, &temp).unwrap();
    std::fs::rename(&temp, workspace.join(link)).unwrap();
}

#[test]
fn flipping_a_symlink_never_leaks() {
    let tree = tree();
    point(tree.workspace(), "flip", "inside_dir");
    let jail = Jail::new(tree.workspace()).unwrap();
    let workspace = tree.workspace().to_path_buf();
    let counts = race(&jail, "flip/secret.txt", move || {
        point(&workspace, "flip", "inside_dir");
        point(&workspace, "flip", "../outside");
    });
    println!("flip link race (jail): {counts:?}");
    assert_eq!(counts.leaks, 0, "{counts:?}");
    assert!(counts.flips > 0);
}

#[test]
fn swapping_a_real_directory_for_a_link_never_leaks() {
    // The jail opens the link-free path it resolved (`inside_dir/secret.txt`); here the
    // attacker swaps that very directory for a link out, so only cap-std's
    // beneath-the-root open stands between the read and the secret.
    let tree = tree();
    let jail = Jail::new(tree.workspace()).unwrap();
    let workspace = tree.workspace().to_path_buf();
    let counts = race(&jail, "inside_dir/secret.txt", move || {
        let dir = workspace.join("inside_dir");
        let real = workspace.join("inside_dir.real");
        std::fs::rename(&dir, &real).unwrap();
        point(&workspace, "inside_dir", "../outside");
        std::fs::remove_file(&dir).unwrap();
        std::fs::rename(&real, &dir).unwrap();
    });
    println!("directory swap race (jail): {counts:?}");
    assert_eq!(counts.leaks, 0, "{counts:?}");
    assert!(counts.flips > 0);
}

#[test]
fn racing_writes_never_touch_the_outside() {
    let tree = tree();
    point(tree.workspace(), "flip", "inside_dir");
    let jail = Jail::new(tree.workspace()).unwrap();
    let before = tree.outside_snapshot();
    let stop = Arc::new(AtomicBool::new(false));
    let flipper = {
        let stop = Arc::clone(&stop);
        let workspace = tree.workspace().to_path_buf();
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                point(&workspace, "flip", "inside_dir");
                point(&workspace, "flip", "../outside");
            }
        })
    };
    let start = Instant::now();
    let (mut written, mut refused, mut failed) = (0, 0, 0);
    for _ in 0..2_000 {
        if start.elapsed() > DEADLINE {
            break;
        }
        match jail.write_atomic("flip/secret.txt", b"PWNED") {
            Ok(_) => written += 1,
            Err(error) if error.denial().is_some() => refused += 1,
            Err(error) => {
                failed += 1;
                if failed < 3 {
                    println!("write race error: {error:?}");
                }
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    println!("write race: {written} landed inside, {refused} refused, {failed} other errors");
    assert_eq!(tree.outside_snapshot(), before);
}
