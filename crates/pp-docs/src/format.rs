//! The formats PocketPilot reads, named by a file's extension.

use serde::{Deserialize, Serialize};

/// A document format. Serialised in lower case (`"pdf"`, `"docx"`, …), as the tools
/// report it in `format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// PDF.
    Pdf,
    /// Word (Office Open XML).
    Docx,
    /// Excel (Office Open XML).
    Xlsx,
    /// PowerPoint (Office Open XML).
    Pptx,
    /// HTML.
    Html,
    /// Markdown.
    Markdown,
    /// Plain text.
    Txt,
    /// Comma (or other delimiter) separated values.
    Csv,
    /// JSON.
    Json,
    /// XML (the fully digital e-invoice's data file).
    Xml,
    /// OFD, the Chinese fixed-layout format (a zip of XML) of e-invoices.
    Ofd,
}

impl Format {
    /// Every format, in a stable order (for messages and docs).
    pub const ALL: [Format; 11] = [
        Format::Pdf,
        Format::Docx,
        Format::Xlsx,
        Format::Pptx,
        Format::Html,
        Format::Markdown,
        Format::Txt,
        Format::Csv,
        Format::Json,
        Format::Xml,
        Format::Ofd,
    ];

    /// The format's name as serialised.
    pub fn name(self) -> &'static str {
        match self {
            Format::Pdf => "pdf",
            Format::Docx => "docx",
            Format::Xlsx => "xlsx",
            Format::Pptx => "pptx",
            Format::Html => "html",
            Format::Markdown => "markdown",
            Format::Txt => "txt",
            Format::Csv => "csv",
            Format::Json => "json",
            Format::Xml => "xml",
            Format::Ofd => "ofd",
        }
    }

    /// The format a path's extension names (case-insensitive); `None` for others.
    pub fn from_path(path: &str) -> Option<Format> {
        let extension = path.rsplit_once('.')?.1.to_ascii_lowercase();
        Some(match extension.as_str() {
            "pdf" => Format::Pdf,
            "docx" => Format::Docx,
            "xlsx" | "xlsm" => Format::Xlsx,
            "pptx" => Format::Pptx,
            "html" | "htm" => Format::Html,
            "md" | "markdown" => Format::Markdown,
            "txt" | "text" | "log" => Format::Txt,
            "csv" | "tsv" => Format::Csv,
            "json" => Format::Json,
            "xml" => Format::Xml,
            "ofd" => Format::Ofd,
            _ => return None,
        })
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extensions_name_formats_case_insensitively() {
        assert_eq!(Format::from_path("a/B.PDF"), Some(Format::Pdf));
        assert_eq!(Format::from_path("t.tsv"), Some(Format::Csv));
        assert_eq!(Format::from_path("inv.ofd"), Some(Format::Ofd));
        assert_eq!(Format::from_path("noext"), None);
        assert_eq!(Format::from_path("x.exe"), None);
        for format in Format::ALL {
            let json = serde_json::to_string(&format).unwrap_or_default();
            assert_eq!(json, format!("\"{}\"", format.name()));
        }
    }
}
