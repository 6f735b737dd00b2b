//! TXT, CSV, Markdown, JSON and XML: the bytes decoded to text.
//!
//! UTF-8 first (a BOM is dropped; UTF-16 with a BOM is honoured), otherwise the
//! encoding is guessed with `chardetng` and decoded with `encoding_rs`: GBK and GB18030
//! files (common Chinese exports) come out right. The encoding is reported.

use encoding_rs::{Encoding, UTF_8};

use super::{Extracted, single_page};
use crate::{DocsError, Format};

/// How many bytes the encoding detector looks at.
const DETECT_BYTES: usize = 256 << 10;

/// The text of a plain-text file.
pub(super) fn extract(
    bytes: &[u8],
    format: Format,
    pages: Option<&str>,
) -> Result<Extracted, DocsError> {
    single_page(pages)?;
    let (text, encoding) = decode(bytes);
    let title = match format {
        Format::Markdown => markdown_title(&text),
        _ => None,
    };
    Ok(Extracted {
        pages: 1,
        title,
        encoding: Some(encoding.to_owned()),
        text,
    })
}

/// `bytes` as text and the name of the encoding they were read in: UTF-8 (BOM-aware),
/// UTF-16 with a BOM, else the encoding `chardetng` guesses (GBK, GB18030, Big5,
/// Shift_JIS, windows-1252, …). Undecodable bytes become U+FFFD.
pub fn decode(bytes: &[u8]) -> (String, &'static str) {
    if let Some((encoding, bom)) = Encoding::for_bom(bytes) {
        let (text, _) = encoding.decode_without_bom_handling(&bytes[bom..]);
        return (text.into_owned(), encoding.name());
    }
    if let Ok(text) = std::str::from_utf8(bytes) {
        return (text.to_owned(), UTF_8.name());
    }
    let mut detector = chardetng::EncodingDetector::new();
    let sample = &bytes[..bytes.len().min(DETECT_BYTES)];
    detector.feed(sample, sample.len() == bytes.len());
    let encoding = detector.guess(None, true);
    let (text, _) = encoding.decode_without_bom_handling(bytes);
    (text.into_owned(), encoding.name())
}

/// The text of the first `# ` heading.
fn markdown_title(text: &str) -> Option<String> {
    text.lines()
        .map(str::trim)
        .find_map(|line| line.strip_prefix("# "))
        .map(|title| title.trim().to_owned())
        .filter(|title| !title.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn utf8_with_and_without_bom() {
        assert_eq!(decode("发票".as_bytes()), ("发票".to_owned(), "UTF-8"));
        let mut with_bom = vec![0xEF, 0xBB, 0xBF];
        with_bom.extend_from_slice("a,b\n".as_bytes());
        assert_eq!(decode(&with_bom), ("a,b\n".to_owned(), "UTF-8"));
    }

    #[test]
    fn gbk_text_is_detected_and_decoded() {
        let original = "销售方名称,金额,税额\n北京某某科技有限公司,1000.00,130.00\n\
                        购买方名称,上海示例贸易有限公司\n";
        let (gbk, _, _) = encoding_rs::GBK.encode(original);
        assert!(std::str::from_utf8(&gbk).is_err());
        let (text, encoding) = decode(&gbk);
        assert_eq!(text, original);
        assert!(encoding == "GBK" || encoding == "gb18030", "{encoding}");
    }

    #[test]
    fn utf16_with_bom() {
        let mut bytes = vec![0xFF, 0xFE];
        for unit in "税额".encode_utf16() {
            bytes.extend_from_slice(&unit.to_le_bytes());
        }
        assert_eq!(decode(&bytes), ("税额".to_owned(), "UTF-16LE"));
    }

    #[test]
    fn markdown_reports_its_title_and_one_page() {
        let doc = extract(b"intro\n# Report 2024\n\ntext", Format::Markdown, None).unwrap();
        assert_eq!(doc.title.as_deref(), Some("Report 2024"));
        assert_eq!(doc.pages, 1);
        assert_eq!(doc.encoding.as_deref(), Some("UTF-8"));
        let error = extract(b"x", Format::Txt, Some("2")).err().unwrap();
        assert!(error.to_string().contains("has 1 page"), "{error}");
    }
}
