//! `extract_document`: a document's text in reading order, for every [`Format`].
//!
//! One module per family: `pdf` (positioned text laid out as on the page, see
//! [`crate::layout`]), `office` (DOCX, XLSX, PPTX as Markdown: tables, headers and
//! footers, notes), `html` (text without scripts and styles) and `text` (TXT, CSV,
//! Markdown, JSON, XML: decoded, UTF-8 first, then detected, GBK/GB18030 included).
//! OFD (the e-invoice container) is not extracted: `extract_invoice` reads it.
//!
//! "Pages" are PDF pages, XLSX sheets and PPTX slides; DOCX, HTML and the text formats
//! are one page. The selection (`"3-5,9"`) is checked against the page count; the text
//! is capped at [`ExtractOptions::max_chars`] with a visible marker.

mod html;
mod office;
mod pdf;
mod text;

use serde::{Deserialize, Serialize};

use crate::{DocsError, Format};

pub use pdf::pdf_pages;
pub use text::decode;

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

/// What a family's extractor returns before the cap.
struct Extracted {
    pages: usize,
    title: Option<String>,
    encoding: Option<String>,
    text: String,
}

/// Extracts the text of `bytes` read as `format`.
pub fn extract(
    bytes: &[u8],
    format: Format,
    options: &ExtractOptions,
) -> Result<Document, DocsError> {
    let pages = options.pages.as_deref();
    let extracted = match format {
        Format::Pdf => pdf::extract(bytes, pages)?,
        Format::Docx | Format::Xlsx | Format::Pptx => office::extract(bytes, format, pages)?,
        Format::Html => html::extract(bytes, pages)?,
        Format::Markdown | Format::Txt | Format::Csv | Format::Json | Format::Xml => {
            text::extract(bytes, format, pages)?
        }
        Format::Ofd => {
            return Err(DocsError::Unsupported(
                "OFD documents are not extracted as text; use extract_invoice for OFD \
                 e-invoices"
                    .to_owned(),
            ));
        }
    };
    let (text, truncated) = cap(extracted.text, options.max_chars);
    Ok(Document {
        format,
        pages: extracted.pages,
        title: extracted.title,
        encoding: extracted.encoding,
        text,
        truncated,
    })
}

/// The pages `spec` selects (1-based, ascending, no duplicates) of a document with
/// `count` pages; all of them when `spec` is `None`.
pub fn select_pages(spec: Option<&str>, count: usize) -> Result<Vec<usize>, DocsError> {
    let Some(spec) = spec else {
        return Ok((1..=count).collect());
    };
    let bad = |why: String| {
        DocsError::BadRequest(format!(
            "pages `{spec}`: {why}; write pages like \"3\", \"3-5\" or \"1,3-5,9\" \
             (numbered from 1)"
        ))
    };
    let number = |text: &str| -> Result<usize, DocsError> {
        let text = text.trim();
        match text.parse::<usize>() {
            Ok(0) => Err(bad("pages are numbered from 1, not 0".to_owned())),
            Ok(number) => Ok(number),
            Err(_) => Err(bad(format!("`{text}` is not a page number"))),
        }
    };
    let mut selected = std::collections::BTreeSet::new();
    for part in spec.split(',') {
        if part.trim().is_empty() {
            return Err(bad("an empty item".to_owned()));
        }
        let (first, last) = match part.split_once('-') {
            Some((first, last)) => (number(first)?, number(last)?),
            None => {
                let page = number(part)?;
                (page, page)
            }
        };
        if first > last {
            return Err(bad(format!("the range {first}-{last} runs backwards")));
        }
        if last > count {
            let noun = if count == 1 { "page" } else { "pages" };
            return Err(DocsError::BadRequest(format!(
                "pages `{spec}`: the document has {count} {noun}; page {last} does not exist"
            )));
        }
        selected.extend(first..=last);
    }
    Ok(selected.into_iter().collect())
}

/// `text` cut to `max_chars` characters with a visible marker, and whether it was cut.
pub fn cap(text: String, max_chars: usize) -> (String, bool) {
    let Some((cut, _)) = text.char_indices().nth(max_chars) else {
        return (text, false);
    };
    let total = text.chars().count();
    let mut shown = text[..cut].to_owned();
    shown.push_str(&format!(
        "\n[… truncated at {max_chars} characters of {total}]"
    ));
    (shown, true)
}

/// The error for a page selection on a one-page format, or nothing.
fn single_page(pages: Option<&str>) -> Result<(), DocsError> {
    select_pages(pages, 1).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn page_selections_are_parsed_sorted_and_deduplicated() {
        assert_eq!(select_pages(None, 3).unwrap(), [1, 2, 3]);
        assert_eq!(select_pages(Some("3-5,9"), 10).unwrap(), [3, 4, 5, 9]);
        assert_eq!(select_pages(Some(" 2 , 1-2 "), 2).unwrap(), [1, 2]);
    }

    #[test]
    fn bad_page_selections_say_what_is_wrong() {
        let message = |spec: &str| select_pages(Some(spec), 7).unwrap_err().to_string();
        assert!(message("0").contains("numbered from 1"), "{}", message("0"));
        assert!(message("5-3").contains("backwards"), "{}", message("5-3"));
        assert!(message("abc").contains("`abc` is not a page number"));
        assert!(message("1,,2").contains("empty item"));
        assert!(message("").contains("empty item"));
        let beyond = message("6-8");
        assert!(
            beyond.contains("has 7 pages") && beyond.contains("page 8"),
            "{beyond}"
        );
    }

    #[test]
    fn the_cap_marks_the_cut_with_both_counts() {
        assert_eq!(cap("héllo".to_owned(), 5), ("héllo".to_owned(), false));
        let (text, truncated) = cap("发票号码12345".to_owned(), 4);
        assert!(truncated);
        assert_eq!(text, "发票号码\n[… truncated at 4 characters of 9]");
    }

    #[test]
    fn ofd_is_refused_with_a_pointer_to_extract_invoice() {
        let error = extract(b"PK", Format::Ofd, &ExtractOptions::default()).unwrap_err();
        assert!(error.to_string().contains("extract_invoice"), "{error}");
    }
}
