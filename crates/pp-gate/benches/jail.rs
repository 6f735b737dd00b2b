//! Figures for the workspace jail: the cost of a guarded open against a plain one, the
//! cost of `check`, and a TOCTOU race run against a naive canonicalize-then-open guard
//! and against the jail.
//!
//! Run with `cargo bench -p pp-gate` (release). Prints plain text; no harness. A word
//! after `--` runs only the groups whose name contains it: `open`, `fingerprint`, `race`,
//! `move`
//! (`cargo bench -p pp-gate -- fingerprint`).
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures and builds its fixture with std::fs"
)]

use std::hint::black_box;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use pp_gate::Jail;
use pp_test_support::TempTree;

const OPEN_ITERATIONS: u32 = 100_000;
const RACE_TRIES: u64 = 200_000;
const RACE_DEADLINE: Duration = Duration::from_secs(60);

fn main() {
    let tree = TempTree::new();
    tree.file("small.txt", "hello, small file\n");
    tree.file("docs/a/b/small.txt", "hello, small file\n");
    tree.file("inside_dir/secret.txt", "inside");
    tree.outside_file("secret.txt", "TOP-SECRET");
    let jail = Jail::new(tree.workspace()).unwrap();
    let filter = std::env::args()
        .skip(1)
        .find(|argument| !argument.starts_with('-'));
    let wanted = |group: &str| filter.as_deref().is_none_or(|word| group.contains(word));
    println!("pp-gate bench ({OPEN_ITERATIONS} iterations each)");
    if wanted("open") {
        opens(&tree, &jail);
    }
    if wanted("fingerprint") {
        fingerprints(&tree, &jail);
    }
    if wanted("race") {
        races(&tree, &jail);
    }
    if wanted("move") {
        moves(&tree, &jail);
    }
}

/// Moves through the jail (`renameat2` with `RENAME_NOREPLACE` between folder handles)
/// against `std::fs::rename`, and a folder created and removed.
fn moves(tree: &TempTree, jail: &Jail) {
    const MOVES: u32 = 20_000;
    tree.file("moves/a.txt", "moving");
    tree.dir("moves/sub");
    let (a, b) = (
        tree.workspace().join("moves/a.txt"),
        tree.workspace().join("moves/b.txt"),
    );
    let mut there = false;
    let plain = per_op_n(MOVES, || {
        let (from, to) = if there { (&b, &a) } else { (&a, &b) };
        std::fs::rename(from, to).unwrap();
        there = !there;
    });
    if there {
        std::fs::rename(&b, &a).unwrap();
    }
    let mut there = false;
    let guarded = per_op_n(MOVES, || {
        let (from, to) = if there {
            ("moves/sub/a.txt", "moves/a.txt")
        } else {
            ("moves/a.txt", "moves/sub/a.txt")
        };
        black_box(jail.rename(from, to, false).unwrap());
        there = !there;
    });
    let folder = per_op_n(MOVES, || {
        black_box(jail.create_dir_all("moves/new/inner").unwrap());
        jail.remove_empty_dir("moves/new/inner").unwrap();
        jail.remove_empty_dir("moves/new").unwrap();
    });
    println!("  std::fs::rename (same folder)              {plain:>8.0} ns/op");
    println!(
        "  jail.rename (2 folders, NOREPLACE)         {guarded:>8.0} ns/op  ({:.1}x)",
        guarded / plain
    );
    println!("  jail.create_dir_all (2) + 2 removals       {folder:>8.0} ns/op");
}

/// Guarded opens and checks against plain ones.
fn opens(tree: &TempTree, jail: &Jail) {
    let plain_path = tree.workspace().join("small.txt");
    let plain = per_op(|| {
        let mut file = std::fs::File::open(&plain_path).unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        black_box(bytes);
    });
    let guarded = per_op(|| {
        let mut file = jail.open_file("small.txt").unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        black_box(bytes);
    });
    let guarded_deep = per_op(|| {
        let mut file = jail.open_file("docs/a/b/small.txt").unwrap();
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes).unwrap();
        black_box(bytes);
    });
    let read = per_op(|| {
        black_box(jail.read("small.txt", 4096).unwrap());
    });
    let check = per_op(|| {
        black_box(jail.check("docs/a/b/small.txt").unwrap());
    });
    let check_missing = per_op(|| {
        black_box(jail.check("docs/a/new/file.txt").unwrap());
    });
    let check_escape = per_op(|| {
        black_box(jail.check("docs/../../outside/secret.txt").unwrap_err());
    });
    println!("  std::fs::File::open + read (1 component)   {plain:>8.0} ns/op");
    println!(
        "  jail.open_file + read (1 component)        {guarded:>8.0} ns/op  ({:.1}x)",
        guarded / plain
    );
    println!("  jail.open_file + read (4 components)       {guarded_deep:>8.0} ns/op");
    println!("  jail.read(max 4096)                        {read:>8.0} ns/op");
    println!("  jail.check (4 components, existing)        {check:>8.0} ns/op");
    println!("  jail.check (4 components, 2 missing)       {check_missing:>8.0} ns/op");
    println!("  jail.check (lexical escape)                {check_escape:>8.0} ns/op");
}

/// Fingerprints and probes, huge sparse file included.
fn fingerprints(tree: &TempTree, jail: &Jail) {
    // Issue 8, finding 1: a fingerprint must stay cheap for huge files (metadata only
    // above the hash limit), not hash gigabytes on the caller's thread.
    let big = tree.file("big.txt", "");
    std::fs::File::options()
        .write(true)
        .open(&big)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    tree.file("one-mib.txt", &"x".repeat(1 << 20));
    let fingerprint_big = per_op_n(10_000, || {
        black_box(jail.fingerprint("big.txt").unwrap());
    });
    let fingerprint_small = per_op(|| {
        black_box(jail.fingerprint("small.txt").unwrap());
    });
    let fingerprint_mib = per_op_n(200, || {
        black_box(jail.fingerprint("one-mib.txt").unwrap());
    });
    let probe_big = per_op(|| {
        black_box(jail.probe("big.txt").unwrap());
    });
    println!(
        "  jail.fingerprint (8 GiB sparse, metadata)  {:>8.1} us/op",
        fingerprint_big / 1_000.0
    );
    println!(
        "  jail.fingerprint (18 B, hashed)            {:>8.1} us/op",
        fingerprint_small / 1_000.0
    );
    println!(
        "  jail.fingerprint (1 MiB, hashed)           {:>8.1} us/op",
        fingerprint_mib / 1_000.0
    );
    println!(
        "  jail.probe (8 GiB sparse)                  {:>8.1} us/op",
        probe_big / 1_000.0
    );
}

/// TOCTOU races: a naive guard against the jail.
fn races(tree: &TempTree, jail: &Jail) {
    let workspace = tree.workspace().to_path_buf();
    let jail_read = |path: &str| match jail.read(path, 1024) {
        Ok(content) => Outcome::Read(content.bytes),
        Err(error) if error.denial().is_some() => Outcome::Refused,
        Err(_) => Outcome::Failed,
    };
    point(&workspace, "flip", "inside_dir");
    let flip_link = |workspace: &Path| {
        point(workspace, "flip", "inside_dir");
        point(workspace, "flip", "../outside");
    };
    println!("race 1: flip `flip` between inside_dir and ../outside; read flip/secret.txt");
    let naive = race(&workspace, "flip/secret.txt", flip_link, |path| {
        naive_read(&workspace, path)
    });
    println!("  naive canonicalize+starts_with then open: {naive}");
    let guarded = race(&workspace, "flip/secret.txt", flip_link, jail_read);
    println!("  pp_gate::Jail:                            {guarded}");

    // The jail opens the link-free path it resolved; swapping that very directory for a
    // link out leaves only cap-std's beneath-the-root open between the read and the secret.
    let swap_dir = |workspace: &Path| {
        let dir = workspace.join("inside_dir");
        let real = workspace.join("inside_dir.real");
        std::fs::rename(&dir, &real).unwrap();
        point(workspace, "inside_dir", "../outside");
        std::fs::remove_file(&dir).unwrap();
        std::fs::rename(&real, &dir).unwrap();
    };
    println!(
        "race 2: swap the real inside_dir for a link to ../outside; read inside_dir/secret.txt"
    );
    let naive = race(&workspace, "inside_dir/secret.txt", swap_dir, |path| {
        naive_read(&workspace, path)
    });
    println!("  naive canonicalize+starts_with then open: {naive}");
    let guarded = race(&workspace, "inside_dir/secret.txt", swap_dir, jail_read);
    println!("  pp_gate::Jail:                            {guarded}");
}

/// Average nanoseconds per call of `f` over `OPEN_ITERATIONS` calls (after a warm-up).
fn per_op(f: impl FnMut()) -> f64 {
    per_op_n(OPEN_ITERATIONS, f)
}

/// Average nanoseconds per call of `f` over `iterations` calls (after a warm-up).
fn per_op_n(iterations: u32, mut f: impl FnMut()) -> f64 {
    for _ in 0..iterations.min(1_000) {
        f();
    }
    let start = Instant::now();
    for _ in 0..iterations {
        f();
    }
    start.elapsed().as_nanos() as f64 / f64::from(iterations)
}

enum Outcome {
    Read(Vec<u8>),
    Refused,
    Failed,
}

/// The original design's guard: resolve, check the prefix, then open the string again.
fn naive_read(workspace: &Path, path: &str) -> Outcome {
    let candidate = workspace.join(path);
    let Ok(resolved) = std::fs::canonicalize(&candidate) else {
        return Outcome::Failed;
    };
    if !resolved.starts_with(workspace) {
        return Outcome::Refused;
    }
    match std::fs::read(&candidate) {
        Ok(bytes) => Outcome::Read(bytes),
        Err(_) => Outcome::Failed,
    }
}

#[derive(Default)]
struct Counts {
    tries: u64,
    reads: u64,
    refusals: u64,
    failures: u64,
    leaks: u64,
    flips: u64,
    elapsed: Duration,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tries {} | inside reads {} | refusals {} | other errors {} | LEAKS {} | flips {} | {:.1}s",
            self.tries,
            self.reads,
            self.refusals,
            self.failures,
            self.leaks,
            self.flips,
            self.elapsed.as_secs_f64()
        )
    }
}

/// Replaces `link` with a fresh symlink to `target` atomically (rename over it).
fn point(workspace: &Path, link: &str, target: &str) {
    let temp: PathBuf = workspace.join(format!(".prep-{link}"));
    let _ = std::fs::remove_file(&temp);
    std::os::unix::fs::symlink(target, &temp).unwrap();
    std::fs::rename(&temp, workspace.join(link)).unwrap();
}

fn race(workspace: &Path, path: &str, flip: fn(&Path), read: impl Fn(&str) -> Outcome) -> Counts {
    let stop = Arc::new(AtomicBool::new(false));
    let flips = Arc::new(AtomicU64::new(0));
    let flipper = {
        let stop = Arc::clone(&stop);
        let flips = Arc::clone(&flips);
        let workspace = workspace.to_path_buf();
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                flip(&workspace);
                flips.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut counts = Counts::default();
    let start = Instant::now();
    while counts.tries < RACE_TRIES && start.elapsed() < RACE_DEADLINE {
        counts.tries += 1;
        match read(path) {
            Outcome::Read(bytes) if bytes.starts_with(b"TOP-SECRET") => counts.leaks += 1,
            Outcome::Read(_) => counts.reads += 1,
            Outcome::Refused => counts.refusals += 1,
            Outcome::Failed => counts.failures += 1,
        }
    }
    counts.elapsed = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    flipper.join().unwrap();
    counts.flips = flips.load(Ordering::Relaxed);
    counts
}
