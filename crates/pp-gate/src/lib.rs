//! The PocketPilot gate: the race-free workspace jail ([`Jail`]) and the pure capability
//! policy ([`Gate`], [`evaluate_capability`]).
//!
//! Every filesystem access that starts from a string the model chose goes through
//! [`Jail`]: it refuses absolute paths, `..` escapes, links leading outside, NUL bytes,
//! backslashes and drive prefixes, and performs the actual open/create/rename through a
//! cap-std directory handle on the root, so a symlink swapped between check and open
//! cannot escape; [`Jail::walk`] visits a folder tree the same way, handle by handle, never
//! following links. [`Gate`] implements [`pp_types::Policy`]: path arguments through the
//! jail first, then the capability's action word; it never looks at tool names.
//!
//! This crate depends only on `pp-types` among PocketPilot crates, is synchronous, and
//! is the sole user of cap-std (and of the filesystem for model-supplied paths).
//!
//! ```
//! use pp_gate::{Jail, JailError, evaluate_capability};
//! use pp_types::{Capability, Decision};
//!
//! let dir = tempfile::tempdir()?;
//! let jail = Jail::new(dir.path())?;
//! jail.write_atomic("notes/today.txt", b"hello")?;
//! assert_eq!(jail.read("notes/today.txt", 1024)?.bytes, b"hello");
//! assert!(matches!(jail.check("../etc/passwd"), Err(JailError::Escapes { .. })));
//! assert!(matches!(jail.check("/etc/passwd"), Err(JailError::AbsolutePath { .. })));
//! assert_eq!(evaluate_capability(Some(&Capability::new("file:read"))), Decision::Allow);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod jail;
mod policy;

pub use error::{JailError, Result};
pub use jail::{
    Copied, DEFAULT_HASH_MAX_BYTES, EntryKind, EntryStat, FileContent, Jail, ListEntry,
    ListOptions, Listing, MAX_SWEEP_ENTRIES, MAX_SYMLINK_HOPS, MAX_WALK_DEPTH, Probe,
    RenameOutcome, TEMP_PREFIX, WalkDir, WalkEntry, WalkFlow, WalkVisitor, WriteOutcome,
};
pub use policy::{Gate, evaluate, evaluate_capability};
