//! The formats PocketPilot reads, named by a file's extension.

pp_types::wire_enum! {
    /// A document format. Serialised in lower case (`"pdf"`, `"docx"`, …), as the tools
    /// report it in `format`.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Format {
        /// PDF.
        Pdf => "pdf",
        /// Word (Office Open XML).
        Docx => "docx",
        /// Excel (Office Open XML).
        Xlsx => "xlsx",
        /// PowerPoint (Office Open XML).
        Pptx => "pptx",
        /// HTML.
        Html => "html",
        /// Markdown.
        Markdown => "markdown",
        /// Plain text.
        Txt => "txt",
        /// Comma (or other delimiter) separated values.
        Csv => "csv",
        /// JSON.
        Json => "json",
        /// XML (the fully digital e-invoice's data file).
        Xml => "xml",
        /// OFD, the Chinese fixed-layout format (a zip of XML) of e-invoices.
        Ofd => "ofd",
    }
}

impl Format {
    /// The format's name as serialised (its wire name, [`Format::as_str`]).
    pub fn name(self) -> &'static str {
        self.as_str()
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
