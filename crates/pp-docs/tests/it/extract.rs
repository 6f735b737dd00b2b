//! `extract` in-process on hand-made documents: the PDF layout, DOCX, errors.

use crate::support;
use pp_docs::extract::{ExtractOptions, extract, pdf_pages};
use pp_docs::{DocsError, Format, layout};
use pretty_assertions::assert_eq;

fn options(pages: Option<&str>) -> ExtractOptions {
    ExtractOptions {
        pages: pages.map(str::to_owned),
        max_chars: 10_000,
    }
}

#[test]
fn labels_drawn_first_come_out_beside_their_values() {
    let document = extract(&support::labels_first_pdf(), Format::Pdf, &options(None)).unwrap();
    assert_eq!(document.pages, 1);
    let lines: Vec<Vec<&str>> = document
        .text
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        lines,
        [
            vec!["Seller:", "ACME", "Trading", "Ltd"],
            vec!["Amount:", "100.00"],
            vec!["Total:", "113.00"],
        ],
        "{}",
        document.text
    );
}

#[test]
fn layout_spans_have_top_left_coordinates() {
    let pages = pdf_pages(&support::labels_first_pdf(), None).unwrap();
    assert_eq!(pages.len(), 1);
    let page = &pages[0];
    assert_eq!((page.page, page.width, page.height), (1, 595.0, 842.0));
    let seller = page
        .spans
        .iter()
        .find(|span| span.text.contains("Seller"))
        .unwrap();
    let total = page
        .spans
        .iter()
        .find(|span| span.text.contains("Total"))
        .unwrap();
    // Drawn at baseline 750 and 710 from the bottom: about 80 and 120 from the top.
    assert!((seller.y - 80.0).abs() < 14.0, "{seller:?}");
    assert!(total.y > seller.y + 30.0, "{total:?}");
    assert!((seller.x - 50.0).abs() < 1.0, "{seller:?}");
    let lines = layout::lines(page);
    assert_eq!(lines.len(), 3);
    assert!(
        lines[2]
            .spans
            .iter()
            .any(|span| span.text.contains("113.00"))
    );
}

#[test]
fn a_page_without_text_says_so() {
    let pdf = support::one_page_pdf("0 0 1 rg 100 100 200 200 re f", "");
    let document = extract(&pdf, Format::Pdf, &options(None)).unwrap();
    assert_eq!(
        document.text,
        "[page 1 has no text layer (scanned?); PocketPilot does no OCR]"
    );
}

#[test]
fn pages_beyond_the_document_name_the_page_count() {
    let error = extract(
        &support::labels_first_pdf(),
        Format::Pdf,
        &options(Some("2")),
    )
    .unwrap_err();
    assert!(matches!(error, DocsError::BadRequest(_)), "{error:?}");
    assert!(error.to_string().contains("has 1 page"), "{error}");
    let error = pdf_pages(&support::labels_first_pdf(), Some(&[3])).unwrap_err();
    assert!(error.to_string().contains("has 1 page"), "{error}");
}

#[test]
fn an_encrypted_pdf_is_refused_as_encrypted() {
    let encrypt = "/Encrypt << /Filter /Standard /V 1 /R 2 /Length 40 /P -4 \
                   /O <0102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F20> \
                   /U <A1A2A3A4A5A6A7A8A9AAABACADAEAFB0B1B2B3B4B5B6B7B8B9BABBBCBDBEBFC0> >> \
                   /ID [<00112233445566778899AABBCCDDEEFF> <00112233445566778899AABBCCDDEEFF>]";
    let pdf = support::one_page_pdf("BT /F1 12 Tf 50 750 Td (secret) Tj ET", encrypt);
    let error = extract(&pdf, Format::Pdf, &options(None)).unwrap_err();
    assert_eq!(error, DocsError::Encrypted);
}

#[test]
fn not_a_pdf_at_all_is_malformed() {
    let error = extract(b"hello", Format::Pdf, &options(None)).unwrap_err();
    assert!(matches!(error, DocsError::Malformed(_)), "{error:?}");
}

#[test]
fn a_docx_comes_out_as_markdown_with_its_table() {
    let body = r#"<w:p><w:r><w:t>发票清单</w:t></w:r></w:p>
        <w:tbl><w:tr><w:tc><w:p><w:r><w:t>名称</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>金额</w:t></w:r></w:p></w:tc></w:tr>
        <w:tr><w:tc><w:p><w:r><w:t>咨询费</w:t></w:r></w:p></w:tc><w:tc><w:p><w:r><w:t>100.00</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"#;
    let document = extract(&support::docx(body), Format::Docx, &options(None)).unwrap();
    assert_eq!(document.pages, 1);
    assert!(document.text.contains("发票清单"), "{}", document.text);
    assert!(
        document.text.contains("| 咨询费 | 100.00 |"),
        "{}",
        document.text
    );
}

#[test]
fn text_is_capped_with_a_marker() {
    let text = "a".repeat(50);
    let document = extract(
        text.as_bytes(),
        Format::Txt,
        &ExtractOptions {
            pages: None,
            max_chars: 10,
        },
    )
    .unwrap();
    assert!(document.truncated);
    assert_eq!(
        document.text,
        "aaaaaaaaaa\n[… truncated at 10 characters of 50]"
    );
}
