//! HTML: the visible text, without scripts, styles and comments.
//!
//! A small tag stripper, not a browser: block elements (`p`, `div`, `br`, `li`,
//! `tr`, headings, …) start a new line, table cells are separated by a tab, the common
//! entities are decoded, runs of blanks collapse. The `<title>` is the title (not
//! repeated in the text).

use super::text::decode;
use super::{Extracted, single_page};
use crate::DocsError;

/// Elements whose content is never text.
const HIDDEN: [&str; 5] = ["script", "style", "noscript", "template", "svg"];

/// Elements that start a new line.
const BLOCKS: [&str; 24] = [
    "p",
    "div",
    "br",
    "li",
    "tr",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "table",
    "ul",
    "ol",
    "section",
    "article",
    "header",
    "footer",
    "blockquote",
    "pre",
    "hr",
    "title",
    "dt",
    "dd",
];

/// The text of an HTML page.
pub(super) fn extract(bytes: &[u8], pages: Option<&str>) -> Result<Extracted, DocsError> {
    single_page(pages)?;
    let (source, encoding) = decode(bytes);
    let (text, title) = strip(&source);
    Ok(Extracted {
        pages: 1,
        title,
        encoding: Some(encoding.to_owned()),
        text,
    })
}

/// The visible text of `html` and its title.
fn strip(html: &str) -> (String, Option<String>) {
    let mut out = String::with_capacity(html.len() / 2);
    let mut title: Option<String> = None;
    let mut in_title = false;
    let mut rest = html;
    while let Some(open) = rest.find('<') {
        let chunk = &rest[..open];
        if in_title {
            title.get_or_insert_with(String::new).push_str(chunk);
        } else {
            out.push_str(chunk);
        }
        rest = &rest[open..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |end| &after[end + 3..]);
            continue;
        }
        let Some(close) = rest.find('>') else {
            // A `<` that opens no tag: text.
            out.push_str(rest);
            rest = "";
            break;
        };
        let tag = &rest[1..close];
        rest = &rest[close + 1..];
        let closing = tag.starts_with('/');
        let name: String = tag
            .trim_start_matches('/')
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric())
            .collect::<String>()
            .to_ascii_lowercase();
        if !closing && HIDDEN.contains(&name.as_str()) && !tag.ends_with('/') {
            // Skip to the matching end tag (case-insensitive).
            let end = format!("</{name}");
            rest = find_ascii_case_insensitive(rest, &end).map_or("", |at| {
                let after = &rest[at..];
                after.find('>').map_or("", |gt| &after[gt + 1..])
            });
            continue;
        }
        if name == "title" {
            in_title = !closing;
        }
        if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push('\t');
        }
    }
    out.push_str(rest);
    let title = title
        .map(|title| tidy(&decode_entities(&title)))
        .filter(|title| !title.is_empty());
    (tidy(&decode_entities(&out)), title)
}

/// Where `needle` (ASCII) starts in `haystack`, ignoring ASCII case.
fn find_ascii_case_insensitive(haystack: &str, needle: &str) -> Option<usize> {
    let needle = needle.as_bytes();
    haystack
        .as_bytes()
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

/// `text` with the common named and every numeric character reference decoded.
fn decode_entities(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let Some(semi) = rest[..rest.len().min(12)].find(';') else {
            out.push('&');
            rest = &rest[1..];
            continue;
        };
        let entity = &rest[1..semi];
        let decoded = match entity {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            "yen" => Some('¥'),
            "copy" => Some('©'),
            _ => entity.strip_prefix('#').and_then(|number| {
                let code = match number.strip_prefix(['x', 'X']) {
                    Some(hex) => u32::from_str_radix(hex, 16).ok(),
                    None => number.parse().ok(),
                };
                code.and_then(char::from_u32)
            }),
        };
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &rest[semi + 1..];
            }
            None => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// Blanks collapsed within lines (tabs kept as one tab), lines trimmed, empty lines
/// dropped.
fn tidy(text: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for line in text.lines() {
        let mut tidy = String::new();
        let mut blank: Option<char> = None;
        for c in line.chars() {
            if c == '\t' || c.is_whitespace() {
                if c == '\t' || blank.is_none() {
                    blank = Some(if c == '\t' { '\t' } else { ' ' });
                }
            } else {
                if let Some(blank) = blank.take()
                    && !tidy.is_empty()
                {
                    tidy.push(blank);
                }
                tidy.push(c);
            }
        }
        if !tidy.is_empty() {
            lines.push(tidy);
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn scripts_styles_and_comments_are_dropped() {
        let html = "<html><head><title>发票 &amp; 清单</title>\
            <style>body { color: red }</style><SCRIPT type='x'>alert('<p>no</p>')</script>\
            </head><body><!-- hidden --><h1>Invoice</h1><p>Total:&nbsp;<b>113.00</b></p>\
            <table><tr><td>A</td><td>1</td></tr><tr><td>B</td><td>2</td></tr></table>\
            <p>1 &lt; 2 &#x4E2D;&#25991;</p></body></html>";
        let (text, title) = strip(html);
        assert_eq!(title.as_deref(), Some("发票 & 清单"));
        assert_eq!(text, "Invoice\nTotal: 113.00\nA\t1\nB\t2\n1 < 2 中文");
        assert!(!text.contains("alert") && !text.contains("color"), "{text}");
    }

    #[test]
    fn broken_markup_never_panics() {
        for html in [
            "<",
            "a < b",
            "<script>never closed",
            "<!-- open",
            "&#xFFFFFFFF;",
            "&",
        ] {
            let _ = strip(html);
        }
        assert_eq!(strip("a < b").0, "a < b");
    }

    #[test]
    fn gbk_html_is_decoded() {
        let (gbk, _, _) = encoding_rs::GBK.encode("<p>价税合计（大写）壹佰壹拾叁元整，销售方</p>");
        let extracted = extract(&gbk, None).unwrap();
        assert_eq!(extracted.text, "价税合计（大写）壹佰壹拾叁元整，销售方");
    }
}
