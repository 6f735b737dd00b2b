//! `extract_document`: a document's text in reading order, for every [`Format`].

use serde::{Deserialize, Serialize};

use crate::{DocsError, Format};

/// What to extract.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtractOptions {
    /// Pages (or sheets, slides) to extract, like `"3-5,9"`; all when `None`.
    pub pages: Option<String>,
    /// The most characters of text to return (a visible marker shows the cut).
    pub max_chars: usize,
}

/// A document's text and what is known about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Document {
    /// The format read.
    pub format: Format,
    /// Pages (sheets for XLSX, slides for PPTX) in the whole document.
    pub pages: usize,
    /// The document's title, when it has one.
    pub title: Option<String>,
    /// The text encoding (TXT, CSV, HTML, Markdown, JSON), when the file had one.
    pub encoding: Option<String>,
    /// The text, in reading order.
    pub text: String,
    /// Whether `text` was cut at `max_chars`.
    pub truncated: bool,
}

/// Extracts the text of `bytes` read as `format`.
pub fn extract(
    _bytes: &[u8],
    format: Format,
    _options: &ExtractOptions,
) -> Result<Document, DocsError> {
    Err(DocsError::Unsupported(format!("{format} (not built yet)")))
}
