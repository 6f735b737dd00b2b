//! Plain-text invoices (an email body, a copied page): laid out on a grid and read by
//! the same label matcher as PDF and OFD pages.

use super::layout_match::{record_from_layout, text_page};
use super::{InvoiceDraft, Source};
use crate::DocsError;

/// The most text read (bytes).
const MAX_TEXT_BYTES: usize = 1 << 20;

/// Reads a plain-text invoice (UTF-8, else GB18030).
pub(crate) fn read(bytes: &[u8]) -> Result<InvoiceDraft, DocsError> {
    if bytes.len() > MAX_TEXT_BYTES {
        return Err(DocsError::TooLarge {
            limit: MAX_TEXT_BYTES as u64,
        });
    }
    if bytes.contains(&0) {
        return Err(DocsError::Unsupported(
            "a binary file, not a text invoice".to_owned(),
        ));
    }
    let text = super::xml::decode(bytes);
    let record = record_from_layout(&[text_page(&text)], Source::Text, 0.7);
    Ok(InvoiceDraft {
        record: Box::new(record),
        layout_text: text,
    })
}
