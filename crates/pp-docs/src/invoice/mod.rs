//! `extract_invoice`: Chinese VAT invoices from their XML, OFD, PDF or text, checked.

use serde::{Deserialize, Serialize};

use crate::{DocsError, Format};

/// What the child process read of one invoice file, before validation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InvoiceDraft {
    /// The text in layout order, for the model when rules could not read a field.
    pub layout_text: String,
}

/// Reads one invoice file of `format`.
pub fn read(_bytes: &[u8], format: Format) -> Result<InvoiceDraft, DocsError> {
    Err(DocsError::Unsupported(format!("{format} (not built yet)")))
}
