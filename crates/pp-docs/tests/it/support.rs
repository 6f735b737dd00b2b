//! Small hand-written documents for the tests: PDFs built object by object (so a test
//! can break them on purpose) and Office packages built with `zip`.

#![allow(dead_code, reason = "each test binary uses part of the helpers")]

use std::io::Write;

/// A PDF whose objects are `objects` (numbered from 1; object 1 must be the catalog),
/// with a correct cross-reference table; `trailer` is added to the trailer dictionary.
pub(crate) fn pdf(objects: &[String], trailer: &str) -> Vec<u8> {
    let mut out = b"%PDF-1.4\n%\xE2\xE3\xCF\xD3\n".to_vec();
    let mut offsets = Vec::new();
    for (index, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n{object}\nendobj\n", index + 1).as_bytes());
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R {trailer} >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A stream object holding `content`.
pub(crate) fn stream(content: &str) -> String {
    format!(
        "<< /Length {} >>\nstream\n{content}\nendstream",
        content.len()
    )
}

/// A one-page PDF (A4) in Helvetica showing `content` (a content stream).
pub(crate) fn one_page_pdf(content: &str, trailer: &str) -> Vec<u8> {
    pdf(
        &[
            "<< /Type /Catalog /Pages 2 0 R >>".to_owned(),
            "<< /Type /Pages /Kids [3 0 R] /Count 1 >>".to_owned(),
            "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R \
             /Resources << /Font << /F1 5 0 R >> >> >>"
                .to_owned(),
            stream(content),
            "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
                .to_owned(),
        ],
        trailer,
    )
}

/// An invoice-like page whose generator drew every label first and every value later.
pub(crate) fn labels_first_pdf() -> Vec<u8> {
    one_page_pdf(
        "BT /F1 12 Tf 50 750 Td (Seller:) Tj ET\n\
         BT /F1 12 Tf 50 730 Td (Amount:) Tj ET\n\
         BT /F1 12 Tf 50 710 Td (Total:) Tj ET\n\
         BT /F1 12 Tf 200 710 Td (113.00) Tj ET\n\
         BT /F1 12 Tf 200 750 Td (ACME Trading Ltd) Tj ET\n\
         BT /F1 12 Tf 200 730 Td (100.00) Tj ET",
        "",
    )
}

/// A zip package of `parts` (name, content), deflated.
pub(crate) fn package(parts: &[(&str, &[u8])]) -> Vec<u8> {
    let mut writer = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for (name, content) in parts {
        writer.start_file(*name, options).unwrap();
        writer.write_all(content).unwrap();
    }
    writer.finish().unwrap().into_inner()
}

/// The parts every DOCX needs besides `word/document.xml`.
pub(crate) const DOCX_CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;

/// The package relationships of a DOCX.
pub(crate) const DOCX_RELS: &str = r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>"#;

/// A DOCX whose body is `body` (WordprocessingML inside `<w:body>`).
pub(crate) fn docx(body: &str) -> Vec<u8> {
    let document = format!(
        r#"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>{body}</w:body></w:document>"#
    );
    package(&[
        ("[Content_Types].xml", DOCX_CONTENT_TYPES.as_bytes()),
        ("_rels/.rels", DOCX_RELS.as_bytes()),
        ("word/document.xml", document.as_bytes()),
    ])
}
