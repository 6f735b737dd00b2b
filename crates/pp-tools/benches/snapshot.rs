//! Figures for a command's workspace snapshot (docs/revert.md, "Cost"): the card's
//! measure (a metadata walk) and the snapshot kept two ways — `FICLONE` into the store
//! with a copy where it fails (what pp-tasks' `Snapshots::put_file` does), and a plain
//! read-and-write copy — of a generated workspace (10,000 files of 100 KiB, 1 GiB in
//! all, each file different).
//!
//! Run with `scripts/snapshot-bench.sh [DIR]`: DIR (default: a temp folder) holds the
//! workspace and the store, so point it at a reflink filesystem (an XFS image mounted
//! with `reflink=1`) to see reflinks. Prints plain text; no harness. Time includes
//! hashing every kept byte (SHA-256); the page cache is warm (the files were just
//! written), so the figures are CPU and copy, not the disk. "space" is what the
//! filesystem's used blocks grew by (`df`, after `sync`).
#![allow(
    clippy::print_stdout,
    clippy::disallowed_methods,
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "a benchmark binary: prints figures and builds its fixture with std::fs"
)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use pp_gate::Jail;
use pp_tools::shell::tree::{self, Keeper};
use pp_tools::shell::{IgnoreRules, SnapshotRules};
use sha2::{Digest, Sha256};

const FOLDERS: usize = 100;
const FILES_PER_FOLDER: usize = 100;
const FILE_BYTES: usize = 100 * 1024;

/// The store's two ways of keeping a file.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Way {
    /// `Jail::create_copy_of`: FICLONE, else a copy while hashing.
    Clone,
    /// Read it whole, hash it, write it (the store's `put`).
    Copy,
}

struct Store {
    jail: Jail,
    way: Way,
    serial: u64,
    reflinked: u64,
}

impl Keeper for Store {
    fn keep(&mut self, _path: &str, file: &mut std::fs::File, _size: u64) -> Option<String> {
        self.serial += 1;
        let temp = format!("tmp/{}", self.serial);
        let sha = match self.way {
            Way::Clone => {
                let copied = self.jail.create_copy_of(&temp, file, u64::MAX).ok()?;
                self.reflinked += u64::from(copied.reflinked);
                copied.sha256
            }
            Way::Copy => {
                let mut bytes = Vec::new();
                file.read_to_end(&mut bytes).ok()?;
                let sha = hex(&Sha256::digest(&bytes));
                self.jail.write_atomic(&temp, &bytes).ok()?;
                sha
            }
        };
        let blob = format!("sha256/{}/{sha}", &sha[..2]);
        if !self.jail.exists(&format!("sha256/{}", &sha[..2])).ok()? {
            self.jail
                .create_dir_all(&format!("sha256/{}", &sha[..2]))
                .ok()?;
        }
        self.jail.rename(&temp, &blob, true).ok()?;
        Some(sha)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Bytes used on the filesystem holding `dir`, after a `sync`.
fn used(dir: &Path) -> u64 {
    let _ = std::process::Command::new("sync").status();
    let output = std::process::Command::new("df")
        .args(["-B1", "--output=used"])
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .nth(1)
        .and_then(|line| line.trim().parse().ok())
        .unwrap_or(0)
}

fn main() {
    let base: PathBuf = std::env::args()
        .nth(1)
        .filter(|arg| !arg.starts_with('-'))
        .map_or_else(
            || std::env::temp_dir().join("pp-snapshot-bench"),
            PathBuf::from,
        );
    let workspace = base.join("workspace");
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&workspace).unwrap();
    let started = Instant::now();
    let mut content = vec![0_u8; FILE_BYTES];
    for folder in 0..FOLDERS {
        let dir = workspace.join(format!("d{folder:03}"));
        std::fs::create_dir_all(&dir).unwrap();
        for file in 0..FILES_PER_FOLDER {
            let stamp = format!("{folder}/{file}");
            for (index, byte) in content.iter_mut().enumerate() {
                *byte = (index as u8)
                    .wrapping_mul(31)
                    .wrapping_add(folder as u8 ^ file as u8);
            }
            content[..stamp.len()].copy_from_slice(stamp.as_bytes());
            std::fs::write(dir.join(format!("f{file:03}.bin")), &content).unwrap();
        }
    }
    let total = (FOLDERS * FILES_PER_FOLDER * FILE_BYTES) as u64;
    println!(
        "workspace: {} files, {} MiB, written in {:.1} s at {}",
        FOLDERS * FILES_PER_FOLDER,
        total >> 20,
        started.elapsed().as_secs_f64(),
        base.display()
    );
    let jail = Jail::new(&workspace).unwrap();
    let rules = SnapshotRules {
        max_total_bytes: 2 << 30,
        max_file_bytes: 64 << 20,
        ignore: IgnoreRules::default(),
    };

    let started = Instant::now();
    let uncovered = tree::measure(&jail, &rules).unwrap();
    println!(
        "measure (the card's uncovered, metadata only): {:.3} s, uncovered {} files",
        started.elapsed().as_secs_f64(),
        uncovered.files
    );

    for (way, name) in [
        (Way::Clone, "FICLONE (copy where it fails)"),
        (Way::Copy, "copy (read + hash + write)"),
    ] {
        let store_dir = base.join(match way {
            Way::Clone => "store-clone",
            Way::Copy => "store-copy",
        });
        std::fs::create_dir_all(store_dir.join("tmp")).unwrap();
        let before = used(&base);
        let mut store = Store {
            jail: Jail::new(&store_dir).unwrap(),
            way,
            serial: 0,
            reflinked: 0,
        };
        let started = Instant::now();
        let tree = tree::walk(&jail, &rules, Some(&mut store)).unwrap();
        let elapsed = started.elapsed().as_secs_f64();
        let grew = used(&base).saturating_sub(before);
        println!(
            "snapshot, {name}: {elapsed:.2} s, kept {} MiB ({} reflinked files), space used +{} MiB",
            tree.kept_bytes >> 20,
            store.reflinked,
            grew >> 20
        );
    }
    let _ = std::fs::remove_dir_all(&base);
}
