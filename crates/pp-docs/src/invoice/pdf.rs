//! PDF invoices: the positioned text of their pages (`crate::layout`), read by the label
//! matcher (labels and values paired by where they are drawn, not by stream order).

use super::layout_match::record_from_layout;
use super::{InvoiceDraft, Source};
use crate::DocsError;
use crate::layout::PageLayout;

/// The most pages read of one invoice file.
const MAX_PAGES: usize = 10;

/// Reads a PDF invoice.
pub(crate) fn read(bytes: &[u8]) -> Result<InvoiceDraft, DocsError> {
    let pages = pages(bytes)?;
    if pages.iter().all(|page| page.spans.is_empty()) {
        return Err(DocsError::Unsupported(
            "the PDF has no text layer (a scan?); PocketPilot does no OCR".to_owned(),
        ));
    }
    Ok(from_pages(&pages, Source::Pdf))
}

/// The record and layout text of positioned pages.
pub(crate) fn from_pages(pages: &[PageLayout], source: Source) -> InvoiceDraft {
    InvoiceDraft {
        record: Box::new(record_from_layout(pages, source, 0.8)),
        layout_text: crate::layout::render(pages),
    }
}

/// The first pages' positioned text.
fn pages(bytes: &[u8]) -> Result<Vec<PageLayout>, DocsError> {
    let mut pages = crate::extract::pdf_pages(bytes, None)?;
    pages.truncate(MAX_PAGES);
    Ok(pages)
}
