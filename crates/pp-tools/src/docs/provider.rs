//! [`DocsProvider`]: offers the document tools, bound to each segment's workspace jail.

use std::sync::Arc;

use super::analyze_table::AnalyzeTable;
use super::extract_document::ExtractDocument;
use super::extract_invoice::ExtractInvoice;
use super::settings::DocsSettings;
use crate::blocking::OffThread;
use crate::{ProviderError, Provision, Scope, ToolProvider};

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
        provision.tool(Arc::new(OffThread(Arc::new(AnalyzeTable::new(
            Arc::clone(jail),
            Arc::clone(settings),
        )))));
        provision.tool(Arc::new(OffThread(Arc::new(ExtractInvoice::new(
            Arc::clone(jail),
            Arc::clone(settings),
        )))));
        Ok(())
    }
}
