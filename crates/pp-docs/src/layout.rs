//! Positioned text: what a PDF page shows where, so text can follow the visual layout
//! (invoice generators often draw every label first and every value later).
//!
//! Coordinates are PDF points with the origin at the **top-left** of the page: `y` grows
//! downward. A span is a run of text in one font on one baseline.
//!
//! This module only groups and renders what the readers place: the PDF reader
//! ([`crate::extract::pdf_pages`]) and the OFD invoice reader build the pages.

use serde::{Deserialize, Serialize};

/// A run of text at a position.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutSpan {
    /// Left edge, in points from the page's left.
    pub x: f32,
    /// Top edge, in points from the page's top.
    pub y: f32,
    /// Width in points.
    pub width: f32,
    /// Height (font size) in points.
    pub height: f32,
    /// The text.
    pub text: String,
}

/// One page's spans, in no particular order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageLayout {
    /// The page number, from 1.
    pub page: usize,
    /// Page width in points.
    pub width: f32,
    /// Page height in points.
    pub height: f32,
    /// The spans.
    pub spans: Vec<LayoutSpan>,
}

/// Spans that share a line (their vertical extents overlap), left to right.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LayoutLine {
    /// The line's top, in points from the page's top.
    pub y: f32,
    /// The spans, left to right.
    pub spans: Vec<LayoutSpan>,
}

/// The spans of `page` grouped into lines: spans whose vertical extents overlap (by
/// at least half the smaller height) share a line; lines run top to bottom, spans left
/// to right.
pub fn lines(page: &PageLayout) -> Vec<LayoutLine> {
    let mut spans: Vec<&LayoutSpan> = page
        .spans
        .iter()
        .filter(|span| !span.text.trim().is_empty())
        .collect();
    spans.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)));
    // Each line: its spans and its vertical extent so far.
    let mut lines: Vec<(f32, f32, Vec<LayoutSpan>)> = Vec::new();
    for span in spans {
        let (top, bottom) = (span.y, span.y + span.height.max(0.1));
        let joined = lines
            .iter_mut()
            .rev()
            .take(3)
            .find(|(line_top, line_bottom, _)| {
                let overlap = bottom.min(*line_bottom) - top.max(*line_top);
                let smaller = (bottom - top).min(*line_bottom - *line_top);
                overlap >= smaller * 0.5
            });
        match joined {
            Some((line_top, line_bottom, members)) => {
                *line_top = line_top.min(top);
                *line_bottom = line_bottom.max(bottom);
                members.push(span.clone());
            }
            None => lines.push((top, bottom, vec![span.clone()])),
        }
    }
    let mut lines: Vec<LayoutLine> = lines
        .into_iter()
        .map(|(top, _, mut spans)| {
            spans.sort_by(|a, b| a.x.total_cmp(&b.x));
            LayoutLine { y: top, spans }
        })
        .collect();
    lines.sort_by(|a, b| a.y.total_cmp(&b.y));
    lines
}

/// The text of `pages` as seen: lines top to bottom, spans left to right; a gap wider
/// than about two characters becomes spaces roughly proportional to it (so columns stay
/// readable), a small gap one space. Pages are introduced by `--- page N ---` lines
/// (unless the text is page 1 alone); a
/// page without any text says so (no OCR is done).
pub fn render(pages: &[PageLayout]) -> String {
    let mut out = String::new();
    for page in pages {
        if pages.len() > 1 || page.page != 1 {
            out.push_str(&format!("--- page {} ---\n", page.page));
        }
        let lines = lines(page);
        if lines.is_empty() {
            out.push_str(&format!(
                "[page {} has no text layer (scanned?); PocketPilot does no OCR]\n",
                page.page
            ));
            continue;
        }
        for line in &lines {
            out.push_str(&render_line(line));
            out.push('\n');
        }
    }
    out.truncate(out.trim_end().len());
    out
}

/// One line: spans left to right, gaps kept roughly to scale.
fn render_line(line: &LayoutLine) -> String {
    let mut text = String::new();
    let mut end: Option<f32> = None;
    for span in &line.spans {
        if let Some(end) = end {
            let gap = span.x - end;
            let char_width = (span.height * 0.5).max(1.0);
            if gap > char_width * 2.0 {
                // Wide gaps: one space per ~character width, at least two, at most 40.
                let spaces = ((gap / char_width).round() as usize).clamp(2, 40);
                text.push_str(&" ".repeat(spaces));
            } else if gap > char_width * 0.25
                || !(text.ends_with(' ') || span.text.starts_with(' '))
                    && needs_space(&text, &span.text)
            {
                text.push(' ');
            }
        }
        text.push_str(&span.text);
        end = Some(end.map_or(span.x + span.width, |end: f32| end.max(span.x + span.width)));
    }
    text.trim_end().to_owned()
}

/// Whether two touching runs of text need a space between them: not between two CJK
/// characters (Chinese is written without spaces), not after an opening or before a
/// closing punctuation.
fn needs_space(before: &str, after: &str) -> bool {
    let (Some(last), Some(first)) = (before.chars().last(), after.chars().next()) else {
        return false;
    };
    !(is_cjk(last) && is_cjk(first)
        || "([{（【《".contains(last)
        || ")]},.:;%）】》，。：；".contains(first))
}

/// Whether `c` is a CJK ideograph or CJK punctuation/full-width form.
fn is_cjk(c: char) -> bool {
    matches!(c as u32, 0x2E80..=0x9FFF | 0xF900..=0xFAFF | 0xFF00..=0xFFEF | 0x20000..=0x2FFFF)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn span(x: f32, y: f32, text: &str) -> LayoutSpan {
        LayoutSpan {
            x,
            y,
            width: 10.0 * text.chars().count() as f32,
            height: 10.0,
            text: text.to_owned(),
        }
    }

    #[test]
    fn labels_drawn_first_and_values_later_share_their_lines() {
        // Drawing order: every label, then every value (as invoice generators do).
        let page = PageLayout {
            page: 1,
            width: 595.0,
            height: 842.0,
            spans: vec![
                span(50.0, 100.0, "名称:"),
                span(50.0, 120.0, "金额:"),
                span(120.0, 101.0, "北京某某科技有限公司"),
                span(120.0, 119.5, "113.00"),
            ],
        };
        assert_eq!(
            render(&[page]),
            "名称:        北京某某科技有限公司\n金额:        113.00"
        );
    }

    #[test]
    fn lines_go_top_to_bottom_and_pages_are_marked() {
        let first = PageLayout {
            page: 3,
            width: 100.0,
            height: 100.0,
            spans: vec![span(10.0, 50.0, "b"), span(10.0, 10.0, "a")],
        };
        let empty = PageLayout {
            page: 4,
            width: 100.0,
            height: 100.0,
            spans: vec![span(10.0, 50.0, "  ")],
        };
        let lines = lines(&first);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].spans[0].text, "a");
        assert_eq!(
            render(&[first, empty]),
            "--- page 3 ---\na\nb\n--- page 4 ---\n\
             [page 4 has no text layer (scanned?); PocketPilot does no OCR]"
        );
    }

    #[test]
    fn touching_latin_runs_get_a_space_cjk_runs_do_not() {
        let line = LayoutLine {
            y: 0.0,
            spans: vec![
                span(0.0, 0.0, "Total"),
                span(50.0, 0.0, "due"),
                span(80.0, 0.0, "发票"),
                span(100.0, 0.0, "号码"),
            ],
        };
        assert_eq!(render_line(&line), "Total due 发票号码");
    }
}
