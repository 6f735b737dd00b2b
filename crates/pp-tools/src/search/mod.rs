//! Content search across the workspace: the `search_files` tool.
//!
//! The pieces: [`search_files`] is the tool (arguments, the walk, the summary lines);
//! [`rules`] holds the `.gitignore`/`.ignore` rules of the folders being walked (the
//! `ignore` crate's gitignore matcher, fed with ignore files read through the jail);
//! [`output`] collects result lines under the caps and is the `grep-searcher` sink.
//!
//! Where it reaches: only through [`pp_gate::Jail::walk`] (directory handles, links
//! never followed, every file opened relative to its folder's handle) and, for a single
//! file, [`pp_gate::Jail::open_file`]. The ripgrep crates only ever see open file
//! handles and bytes: their own directory walker is not used.

mod output;
mod rules;
mod search_files;

use std::sync::Arc;
use std::time::Duration;

use pp_agent::Tool;
use pp_gate::Jail;

use crate::Limits;
use crate::blocking::OffThread;

/// How much one `search_files` call may read, return and take.
///
/// Whatever a cap cuts is announced by a last line `[truncated: …]` naming the cap.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SearchLimits {
    /// Files larger than this are not searched (a notice counts them).
    pub max_file_bytes: u64,
    /// Largest number of bytes of result lines one call returns.
    pub max_output_bytes: usize,
    /// Longest a call may walk and search; past it the search stops and says so. The
    /// task's own interrupt (cancel, timeout) stops it earlier.
    pub max_duration: Duration,
}

impl Default for SearchLimits {
    /// 10 MiB per file, 64 KiB of results, 10 seconds.
    fn default() -> Self {
        Self::from(Limits::default())
    }
}

impl From<Limits> for SearchLimits {
    /// The file tools' read cap and output cap, and a ten-second time budget.
    fn from(limits: Limits) -> Self {
        Self {
            max_file_bytes: limits.max_read_bytes,
            max_output_bytes: limits.max_output_chars,
            max_duration: Duration::from_secs(10),
        }
    }
}

/// The `search_files` tool working inside `jail` (run off the async threads).
pub fn search_tool(jail: Arc<Jail>, limits: SearchLimits) -> Arc<dyn Tool> {
    Arc::new(OffThread(Arc::new(search_files::SearchFiles::new(
        jail, limits,
    ))))
}
