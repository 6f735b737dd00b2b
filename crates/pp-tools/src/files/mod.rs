//! The file tools and what they share.
//!
//! One tool per file, each with its own `Arguments` type (read by [`crate::args`]);
//! [`common`] holds the jail-error mapping, the truncation marker, text decoding and
//! the unified diff used by the write previews;
//! [`entries`] what the entry tools (`move_file`, `delete_file`, `make_dir`) share;
//! [`glob`] is the small pattern matcher behind `list_files`' `pattern`.

pub(crate) mod common;
mod delete_file;
mod edit_file;
pub(crate) mod entries;
mod glob;
mod list_files;
mod make_dir;
mod move_file;
mod read_file;
mod write_file;

use std::sync::Arc;

use pp_agent::{RegistryError, Tool, ToolRegistry};
use pp_gate::Jail;

use crate::blocking::OffThread;

/// How much one call of a file tool may read or return.
///
/// The caps keep one call from flooding the model's context or the process's memory;
/// whatever a cap cuts is announced in the output with a `[truncated: …]` marker that
/// says how to get the rest.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest number of bytes read from one file (`read_file`, `edit_file`, previews).
    /// `read_file` shows the readable prefix of a larger file; `edit_file` refuses it.
    pub max_read_bytes: u64,
    /// Largest number of characters of text a tool returns, and of a preview's diff or
    /// content.
    pub max_output_chars: usize,
    /// Largest number of entries `list_files` shows.
    pub max_list_entries: usize,
    /// Largest number of entries `list_files` examines while filtering by `pattern`;
    /// bounds the walk of a huge tree when few entries match.
    pub max_scan_entries: usize,
    /// Largest file whose content is hashed into an approval's fingerprint; larger files
    /// are fingerprinted by their metadata only (device, inode, size, mtime, ctime), so a
    /// preview of a write to a huge file stays cheap (`[approvals] hash_max_bytes`).
    pub hash_max_bytes: u64,
}

impl Default for Limits {
    /// 10 MiB per file, 64 KiB of output text, 1000 listed entries, 20 000 scanned,
    /// content hashed up to 64 MiB.
    fn default() -> Self {
        Self {
            max_read_bytes: 10 * 1024 * 1024,
            max_output_chars: 64 * 1024,
            max_list_entries: 1000,
            max_scan_entries: 20_000,
            hash_max_bytes: 64 * 1024 * 1024,
        }
    }
}

/// The file tools (`list_files`, `read_file`, `write_file`, `edit_file`, `move_file`,
/// `delete_file`, `make_dir`, in that order) working inside `jail`, with the default
/// [`Limits`].
pub fn file_tools(jail: Arc<Jail>) -> Vec<Arc<dyn Tool>> {
    file_tools_with(jail, Limits::default())
}

/// The file tools working inside `jail` with the given `limits`.
pub fn file_tools_with(jail: Arc<Jail>, limits: Limits) -> Vec<Arc<dyn Tool>> {
    vec![
        Arc::new(OffThread(Arc::new(list_files::ListFiles::new(
            Arc::clone(&jail),
            limits,
        )))),
        Arc::new(OffThread(Arc::new(read_file::ReadFile::new(
            Arc::clone(&jail),
            limits,
        )))),
        Arc::new(OffThread(Arc::new(write_file::WriteFile::new(
            Arc::clone(&jail),
            limits,
        )))),
        Arc::new(OffThread(Arc::new(edit_file::EditFile::new(
            Arc::clone(&jail),
            limits,
        )))),
        Arc::new(OffThread(Arc::new(move_file::MoveFile::new(
            Arc::clone(&jail),
            limits,
        )))),
        Arc::new(OffThread(Arc::new(delete_file::DeleteFile::new(
            Arc::clone(&jail),
            limits,
        )))),
        Arc::new(OffThread(Arc::new(make_dir::MakeDir::new(jail)))),
    ]
}

/// Registers the file tools, with the default [`Limits`], into `registry`.
pub fn register_file_tools(
    registry: &mut ToolRegistry,
    jail: Arc<Jail>,
) -> Result<(), RegistryError> {
    register_file_tools_with(registry, jail, Limits::default())
}

/// Registers the file tools with the given `limits` into `registry`.
pub fn register_file_tools_with(
    registry: &mut ToolRegistry,
    jail: Arc<Jail>,
    limits: Limits,
) -> Result<(), RegistryError> {
    file_tools_with(jail, limits)
        .into_iter()
        .try_for_each(|tool| registry.register(tool))
}
