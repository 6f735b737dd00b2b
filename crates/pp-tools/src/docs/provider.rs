//! [`DocsProvider`]: offers the document tools, bound to each segment's workspace jail.

use std::sync::Arc;

use super::extract_document::ExtractDocument;
use super::extract_invoice::ExtractInvoice;
use crate::blocking::OffThread;
use crate::{ProviderError, Provision, Scope, ToolProvider};

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
}

impl DocsSettings {
    /// Settings with the default caps around `parser`: 64 MiB in, 100,000 characters
    /// out, 200 files per folder.
    pub fn new(parser: pp_docs::Parser) -> Self {
        Self {
            parser,
            max_input_bytes: 64 << 20,
            max_output_chars: 100_000,
            max_folder_files: 200,
        }
    }
}

/// The document tool provider.
#[derive(Debug, Clone)]
pub struct DocsProvider {
    settings: Arc<DocsSettings>,
}

impl DocsProvider {
    /// A provider parsing with `settings`.
    pub fn new(settings: DocsSettings) -> Self {
        Self {
            settings: Arc::new(settings),
        }
    }

    /// The settings.
    pub fn settings(&self) -> &DocsSettings {
        &self.settings
    }
}

impl ToolProvider for DocsProvider {
    fn name(&self) -> &str {
        "docs"
    }

    fn provide(&self, scope: &Scope<'_>, provision: &mut Provision) -> Result<(), ProviderError> {
        // One line per tool (issue 10): extract_document, analyze_table, extract_invoice.
        let (jail, settings) = (scope.workspace, &self.settings);
        provision.tool(Arc::new(OffThread(Arc::new(ExtractDocument::new(
            Arc::clone(jail),
            Arc::clone(settings),
        )))));
        provision.tool(super::analyze_table::tool(scope, &self.settings));
        provision.tool(Arc::new(OffThread(Arc::new(ExtractInvoice::new(
            Arc::clone(jail),
            Arc::clone(settings),
        )))));
        Ok(())
    }
}
