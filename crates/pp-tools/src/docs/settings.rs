//! [`DocsSettings`]: how the document tools parse and what they may read and return.

use std::sync::Arc;

use pp_types::{Clock, SystemClock};

/// How the document tools parse and what they may read and return.
#[derive(Debug, Clone)]
pub struct DocsSettings {
    /// How to start the parser child (`pocketpilot __parse`) and its limits.
    pub parser: pp_docs::Parser,
    /// The largest document read (bytes); larger files are refused unparsed.
    pub max_input_bytes: u64,
    /// The most characters of text a call returns by default.
    pub max_output_chars: usize,
    /// The most files one folder call reads (`extract_invoice` on a folder).
    pub max_folder_files: usize,
    /// What day it is for the checks that compare dates (`extract_invoice`'s
    /// `future_date`): the system clock unless a test sets a [`pp_types::ManualClock`].
    pub clock: Arc<dyn Clock>,
}

impl DocsSettings {
    /// Settings with the default caps around `parser`: 64 MiB in, 100,000 characters
    /// out, 200 files per folder, on the system clock.
    pub fn new(parser: pp_docs::Parser) -> Self {
        Self {
            parser,
            max_input_bytes: 64 << 20,
            max_output_chars: 100_000,
            max_folder_files: 200,
            clock: Arc::new(SystemClock),
        }
    }
}
