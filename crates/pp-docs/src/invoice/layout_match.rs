//! Fields from positioned text (PDF pages, OFD pages, plain text laid out on a grid):
//! labels are found wherever they were drawn and their values are the text to the
//! right of them on the same line (or just below), never the next thing in stream order
//! (generators often draw every label first and every value later).

use crate::layout::{LayoutSpan, PageLayout};

use super::{
    InvoiceItem, InvoiceKind, InvoiceRecord, Money, Source, clean, kind_from_number,
    kind_from_title, normalize_decimal, normalize_rate, parse_date, set_confidence,
};

/// A span with its page folded into `y` (pages stacked), its text without whitespace
/// for label matching.
#[derive(Debug, Clone)]
struct Span {
    x: f32,
    y: f32,
    width: f32,
    height: f32,
    text: String,
    compact: String,
}

impl Span {
    fn right(&self) -> f32 {
        self.x + self.width
    }
    fn center_x(&self) -> f32 {
        self.x + self.width / 2.0
    }
    fn same_line(&self, other: &Span) -> bool {
        let overlap = (self.y + self.height).min(other.y + other.height) - self.y.max(other.y);
        overlap >= self.height.min(other.height).max(0.1) * 0.5
    }
}

/// Labels of a record's fields, matched at the start of a span (whitespace ignored).
const NUMBER: &[&str] = &["发票号码"];
const CODE: &[&str] = &["发票代码"];
const DATE: &[&str] = &["开票日期"];
const NAME: &[&str] = &["名称"];
const TAX_ID: &[&str] = &[
    "统一社会信用代码/纳税人识别号",
    "统一社会信用代码",
    "纳税人识别号",
];
const WORDS: &[&str] = &["价税合计（大写）", "价税合计(大写)", "价税合计"];
const FIGURES: &[&str] = &["（小写）", "(小写)"];
const SUM: &[&str] = &["合计"];
const REMARKS: &[&str] = &["备注"];
const BUYER: &[&str] = &["购买方", "购方", "买方"];
const SELLER: &[&str] = &["销售方", "销方", "卖方"];
const ITEM_HEADER: &[&str] = &["项目名称", "货物或应税劳务、服务名称", "货物或应税劳务"];
/// Every label (a value never starts with one).
const ALL_LABELS: &[&[&str]] = &[
    NUMBER,
    CODE,
    DATE,
    NAME,
    TAX_ID,
    WORDS,
    FIGURES,
    SUM,
    REMARKS,
    ITEM_HEADER,
];

fn compact(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_whitespace())
        .map(|c| match c {
            '(' => '（',
            ')' => '）',
            ':' => '：',
            other => other,
        })
        .collect()
}

/// The byte offset in `text` just after `label` when `text` starts with it (whitespace
/// in `text` ignored, brackets and colons in either width).
fn after_label(text: &str, label: &str) -> Option<usize> {
    let label = compact(label);
    let mut wanted = label.chars().peekable();
    for (index, character) in text.char_indices() {
        let Some(next) = wanted.peek() else {
            return Some(index);
        };
        if character.is_whitespace() {
            continue;
        }
        if compact(&character.to_string()).starts_with(*next) {
            wanted.next();
        } else {
            return None;
        }
    }
    wanted.peek().is_none().then_some(text.len())
}

/// The value written after a label in the same span (`名称：某公司` → `某公司`).
fn remainder(text: &str, end: usize) -> Option<String> {
    let rest = text.get(end..)?;
    let rest = rest.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '：' | ':'));
    clean(rest)
}

fn is_label(span: &Span) -> bool {
    ALL_LABELS.iter().any(|labels| {
        labels
            .iter()
            .any(|label| span.compact.starts_with(&compact(label)))
    })
}

/// Where a label was found: the span and the value inside it, if any.
struct Hit<'a> {
    span: &'a Span,
    inline: Option<String>,
    /// The section the label's own text names (`购买方名称`).
    section: Option<Side>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Buyer,
    Seller,
}

struct Matcher {
    spans: Vec<Span>,
}

impl Matcher {
    fn new(pages: &[PageLayout]) -> Self {
        let mut spans = Vec::new();
        let mut offset = 0.0f32;
        for page in pages {
            for span in &page.spans {
                if span.text.trim().is_empty() {
                    continue;
                }
                spans.push(Span {
                    x: span.x,
                    y: span.y + offset,
                    width: span.width,
                    height: span.height.max(1.0),
                    compact: compact(&span.text),
                    text: span.text.clone(),
                });
            }
            offset += page.height.max(1.0) + 100.0;
        }
        spans.sort_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)));
        Self { spans }
    }

    /// Every span that starts with one of `labels` (optionally after a side's name).
    fn hits(&self, labels: &[&str]) -> Vec<Hit<'_>> {
        let mut hits = Vec::new();
        for span in &self.spans {
            let mut found = None;
            for label in labels {
                if let Some(end) = after_label(&span.text, label) {
                    found = Some((end, None));
                    break;
                }
                for (side, names) in [(Side::Buyer, BUYER), (Side::Seller, SELLER)] {
                    for name in names {
                        if let Some(end) = after_label(&span.text, &format!("{name}{label}")) {
                            found = Some((end, Some(side)));
                        }
                    }
                }
                if found.is_some() {
                    break;
                }
            }
            if let Some((end, section)) = found {
                hits.push(Hit {
                    span,
                    inline: remainder(&span.text, end),
                    section,
                });
            }
        }
        hits
    }

    /// The text to the right of `label` on its line (consecutive spans joined), else the
    /// text just below it; never a label.
    fn value_near(&self, label: &Span) -> Option<String> {
        let mut right: Vec<&Span> = self
            .spans
            .iter()
            .filter(|span| {
                !std::ptr::eq(*span, label)
                    && span.same_line(label)
                    && span.x >= label.right() - 1.0
            })
            .collect();
        right.sort_by(|a, b| a.x.total_cmp(&b.x));
        let mut parts: Vec<&str> = Vec::new();
        let mut end = label.right();
        for span in right {
            if is_label(span) || (!parts.is_empty() && span.x - end > span.height * 1.5) {
                break;
            }
            parts.push(span.text.trim());
            end = span.right();
        }
        if !parts.is_empty() {
            return clean(&parts.join(""));
        }
        self.spans
            .iter()
            .filter(|span| {
                span.y > label.y + label.height * 0.5
                    && span.y < label.y + label.height * 2.5
                    && span.x < label.right() + label.height
                    && span.right() > label.x
                    && !is_label(span)
            })
            .min_by(|a, b| a.y.total_cmp(&b.y).then(a.x.total_cmp(&b.x)))
            .and_then(|span| clean(&span.text))
    }

    fn value_of(&self, hit: &Hit<'_>) -> Option<String> {
        hit.inline.clone().or_else(|| self.value_near(hit.span))
    }

    /// The first value of any of `labels`.
    fn field(&self, labels: &[&str]) -> Option<String> {
        self.hits(labels).iter().find_map(|hit| self.value_of(hit))
    }

    /// Section anchors (`购买方`, `销售方` written on their own).
    fn anchors(&self) -> Vec<(Side, &Span)> {
        let mut anchors = Vec::new();
        for span in &self.spans {
            for (side, names) in [(Side::Buyer, BUYER), (Side::Seller, SELLER)] {
                let anchor = names.iter().any(|name| {
                    span.compact.starts_with(name)
                        && !ALL_LABELS.iter().any(|labels| {
                            labels
                                .iter()
                                .any(|label| span.compact.contains(&compact(label)))
                        })
                });
                if anchor {
                    anchors.push((side, span));
                }
            }
        }
        anchors
    }

    /// Which side a label belongs to: its own text, else the nearest section anchor
    /// to its left (or above), else the order of appearance (`index`: buyer first).
    fn side_of(&self, hit: &Hit<'_>, anchors: &[(Side, &Span)], index: usize) -> Side {
        if let Some(side) = hit.section {
            return side;
        }
        let label = hit.span;
        anchors
            .iter()
            .filter(|(_, anchor)| anchor.x <= label.x + 1.0)
            .min_by(|(_, a), (_, b)| {
                let distance = |anchor: &Span| {
                    (label.x - anchor.x) + 2.0 * (label.y - (anchor.y + anchor.height / 2.0)).abs()
                };
                distance(a).total_cmp(&distance(b))
            })
            .map(|(side, _)| *side)
            .unwrap_or(if index == 0 {
                Side::Buyer
            } else {
                Side::Seller
            })
    }

    /// `(buyer, seller)` values of a label that appears once per side.
    fn sides(&self, labels: &[&str]) -> (Option<String>, Option<String>) {
        let anchors = self.anchors();
        let (mut buyer, mut seller) = (None, None);
        for (index, hit) in self.hits(labels).iter().enumerate() {
            let value = self.value_of(hit);
            match self.side_of(hit, &anchors, index) {
                Side::Buyer if buyer.is_none() => buyer = value,
                Side::Seller if seller.is_none() => seller = value,
                _ => {}
            }
        }
        (buyer, seller)
    }

    /// The amounts written right of `合计` on its line: (amount, tax).
    fn sum_line(&self) -> (Option<Money>, Option<Money>, Option<f32>) {
        for hit in self.hits(SUM) {
            let mut values: Vec<Money> = Vec::new();
            if let Some(inline) = &hit.inline {
                values.extend(inline.split_whitespace().filter_map(Money::parse));
            }
            let mut right: Vec<&Span> = self
                .spans
                .iter()
                .filter(|span| span.same_line(hit.span) && span.x >= hit.span.right() - 1.0)
                .collect();
            right.sort_by(|a, b| a.x.total_cmp(&b.x));
            for span in right {
                values.extend(span.text.split_whitespace().filter_map(Money::parse));
            }
            if !values.is_empty() || hit.inline.is_none() {
                return (
                    values.first().copied(),
                    values.get(1).copied(),
                    Some(hit.span.y),
                );
            }
        }
        (None, None, None)
    }

    fn title_kind(&self) -> Option<InvoiceKind> {
        self.spans
            .iter()
            .find_map(|span| kind_from_title(&span.text))
    }

    fn items(&self, until: Option<f32>) -> Vec<InvoiceItem> {
        let Some(header) = self.hits(ITEM_HEADER).into_iter().next() else {
            return Vec::new();
        };
        let header = header.span;
        let columns: Vec<(Column, f32)> = self
            .spans
            .iter()
            .filter(|span| span.same_line(header))
            .filter_map(|span| Column::of(&span.compact).map(|column| (column, span.center_x())))
            .collect();
        if columns.is_empty() {
            return Vec::new();
        }
        let bottom = until.unwrap_or(f32::MAX);
        let mut rows: Vec<Vec<&Span>> = Vec::new();
        for span in self
            .spans
            .iter()
            .filter(|span| span.y > header.y + header.height * 0.5 && span.y < bottom - 0.5)
            .filter(|span| !span.same_line(header))
        {
            match rows.last_mut() {
                Some(row) if row.first().is_some_and(|first| first.same_line(span)) => {
                    row.push(span);
                }
                _ => rows.push(vec![span]),
            }
        }
        let mut items: Vec<InvoiceItem> = Vec::new();
        for row in rows {
            let mut cells: Vec<(Column, String)> = Vec::new();
            for span in row {
                let column = columns
                    .iter()
                    .min_by(|a, b| {
                        (a.1 - span.center_x())
                            .abs()
                            .total_cmp(&(b.1 - span.center_x()).abs())
                    })
                    .map(|(column, _)| *column);
                if let Some(column) = column {
                    match cells.iter_mut().find(|(existing, _)| *existing == column) {
                        Some((_, text)) => text.push_str(span.text.trim()),
                        None => cells.push((column, span.text.trim().to_owned())),
                    }
                }
            }
            let only_name = cells.iter().all(|(column, _)| *column == Column::Name);
            if let (true, Some(last)) = (only_name, items.last_mut()) {
                // A name wrapped onto the next line.
                for (_, text) in &cells {
                    last.name.push_str(text);
                }
                continue;
            }
            let mut item = InvoiceItem::default();
            for (column, text) in cells {
                match column {
                    Column::Name => item.name = text,
                    Column::Spec => item.spec = clean(&text),
                    Column::Unit => item.unit = clean(&text),
                    Column::Quantity => item.quantity = normalize_decimal(&text),
                    Column::UnitPrice => item.unit_price = normalize_decimal(&text),
                    Column::Amount => item.amount = Money::parse(&text),
                    Column::TaxRate => item.tax_rate = normalize_rate(&text),
                    Column::Tax => item.tax = Money::parse(&text),
                }
            }
            if !item.name.is_empty() || item.amount.is_some() {
                items.push(item);
            }
        }
        items
    }
}

/// A column of the lines' table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    Name,
    Spec,
    Unit,
    Quantity,
    UnitPrice,
    Amount,
    TaxRate,
    Tax,
}

impl Column {
    fn of(header: &str) -> Option<Column> {
        Some(if header.contains("名称") || header.starts_with("货物") {
            Column::Name
        } else if header.contains("规格") {
            Column::Spec
        } else if header.contains("单位") {
            Column::Unit
        } else if header.contains("数量") {
            Column::Quantity
        } else if header.contains("单价") {
            Column::UnitPrice
        } else if header.contains("金额") {
            Column::Amount
        } else if header.contains("税率") || header.contains("征收率") {
            Column::TaxRate
        } else if header.contains("税额") {
            Column::Tax
        } else {
            return None;
        })
    }
}

/// Reads a record from positioned text; `confidence` is what each filled field gets.
pub(crate) fn record_from_layout(
    pages: &[PageLayout],
    source: Source,
    confidence: f32,
) -> InvoiceRecord {
    let matcher = Matcher::new(pages);
    let digits = |value: Option<String>| {
        value.map(|text| {
            text.chars()
                .filter(|c| !c.is_whitespace())
                .collect::<String>()
        })
    };
    let number = digits(matcher.field(NUMBER));
    let code = digits(matcher.field(CODE));
    let (buyer_name, seller_name) = matcher.sides(NAME);
    let (buyer_tax_id, seller_tax_id) = matcher.sides(TAX_ID);
    let (amount, tax, sum_y) = matcher.sum_line();
    let kind = matcher
        .title_kind()
        .unwrap_or_else(|| kind_from_number(number.as_deref(), code.as_deref()));
    let words = matcher.field(WORDS).map(|words| {
        words
            .trim_start_matches(|c: char| c.is_whitespace() || matches!(c, '⊗' | 'ⓧ'))
            .to_owned()
    });
    let mut record = InvoiceRecord {
        kind,
        number,
        code,
        issue_date: matcher.field(DATE).and_then(|date| parse_date(&date)),
        buyer_name,
        buyer_tax_id: digits(buyer_tax_id),
        seller_name,
        seller_tax_id: digits(seller_tax_id),
        items: matcher.items(sum_y),
        amount,
        tax,
        total: matcher
            .field(FIGURES)
            .and_then(|value| Money::parse(&value)),
        total_in_words: words.and_then(|words| clean(&words)),
        remarks: matcher.field(REMARKS),
        source,
        ..InvoiceRecord::default()
    };
    set_confidence(&mut record, confidence);
    record
}

/// Lays plain text out on a grid (5 points per column, CJK characters two columns,
/// 12 points per line) so the same matcher reads it: cells are separated by two or more
/// spaces or a tab.
pub(crate) fn text_page(text: &str) -> PageLayout {
    let mut spans = Vec::new();
    let width = |text: &str| -> usize {
        text.chars()
            .map(|c| if (c as u32) < 0x1100 { 1 } else { 2 })
            .sum()
    };
    let mut lines = 0usize;
    for (row, line) in text.lines().enumerate() {
        lines = row + 1;
        let line = line.replace('\t', "    ");
        let mut column = 0usize;
        let mut cell = String::new();
        let mut cell_start = 0usize;
        let mut spaces = 0usize;
        let push = |cell: &mut String, start: usize, spans: &mut Vec<LayoutSpan>| {
            let trimmed = cell.trim_end();
            if !trimmed.is_empty() {
                spans.push(LayoutSpan {
                    x: start as f32 * 5.0,
                    y: row as f32 * 12.0,
                    width: width(trimmed) as f32 * 5.0,
                    height: 10.0,
                    text: trimmed.to_owned(),
                });
            }
            cell.clear();
        };
        for character in line.chars() {
            if character == ' ' || character == '\u{3000}' {
                spaces += 1;
            } else {
                if spaces >= 2 || cell.is_empty() {
                    push(&mut cell, cell_start, &mut spans);
                    cell_start = column;
                } else if spaces == 1 {
                    cell.push(' ');
                }
                spaces = 0;
                cell.push(character);
            }
            column += width(&character.to_string());
        }
        push(&mut cell, cell_start, &mut spans);
    }
    PageLayout {
        page: 1,
        width: 600.0,
        height: lines as f32 * 12.0,
        spans,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(x: f32, y: f32, text: &str) -> LayoutSpan {
        LayoutSpan {
            x,
            y,
            width: text.chars().count() as f32 * 9.0,
            height: 9.0,
            text: text.to_owned(),
        }
    }

    /// A fully digital invoice laid out as the generators do, spans in the order a
    /// generator drawing labels first would emit them.
    fn page() -> PageLayout {
        let labels = vec![
            span(200.0, 20.0, "电子发票（增值税专用发票）"),
            span(400.0, 40.0, "发票号码："),
            span(400.0, 55.0, "开票日期："),
            span(20.0, 80.0, "购买方信息"),
            span(300.0, 80.0, "销售方信息"),
            span(30.0, 95.0, "名称："),
            span(310.0, 95.0, "名称："),
            span(30.0, 110.0, "统一社会信用代码/纳税人识别号："),
            span(310.0, 110.0, "统一社会信用代码/纳税人识别号："),
            span(20.0, 140.0, "项目名称"),
            span(120.0, 140.0, "规格型号"),
            span(180.0, 140.0, "单位"),
            span(220.0, 140.0, "数量"),
            span(270.0, 140.0, "单价"),
            span(330.0, 140.0, "金额"),
            span(390.0, 140.0, "税率/征收率"),
            span(480.0, 140.0, "税额"),
            span(20.0, 200.0, "合计"),
            span(20.0, 220.0, "价税合计（大写）"),
            span(350.0, 220.0, "（小写）"),
            span(20.0, 240.0, "备注"),
        ];
        let values = vec![
            span(445.0, 40.0, "24442000000123456789"),
            span(445.0, 55.0, "2024年05月12日"),
            span(57.0, 95.0, "北京甲方科技有限公司"),
            span(337.0, 95.0, "上海乙方贸易有限公司"),
            span(30.0, 123.0, "91110000600037341L"),
            span(310.0, 123.0, "91350100M000100Y43"),
            span(20.0, 155.0, "*信息技术服务*软件开发"),
            span(120.0, 155.0, "V2"),
            span(180.0, 155.0, "项"),
            span(222.0, 155.0, "2"),
            span(265.0, 155.0, "500.00"),
            span(325.0, 155.0, "1000.00"),
            span(400.0, 155.0, "13%"),
            span(478.0, 155.0, "130.00"),
            span(325.0, 200.0, "¥1000.00"),
            span(478.0, 200.0, "¥130.00"),
            span(170.0, 220.0, "⊗壹仟壹佰叁拾圆整"),
            span(390.0, 220.0, "¥1130.00"),
            span(60.0, 240.0, "项目编号 A-7"),
        ];
        PageLayout {
            page: 1,
            width: 595.0,
            height: 400.0,
            spans: labels.into_iter().chain(values).collect(),
        }
    }

    #[test]
    fn labels_drawn_first_are_matched_by_layout() {
        let record = record_from_layout(&[page()], Source::Pdf, 0.8);
        assert_eq!(record.kind, InvoiceKind::FullyDigital);
        assert_eq!(record.number.as_deref(), Some("24442000000123456789"));
        assert_eq!(record.issue_date.as_deref(), Some("2024-05-12"));
        assert_eq!(record.buyer_name.as_deref(), Some("北京甲方科技有限公司"));
        assert_eq!(record.seller_name.as_deref(), Some("上海乙方贸易有限公司"));
        assert_eq!(record.buyer_tax_id.as_deref(), Some("91110000600037341L"));
        assert_eq!(record.seller_tax_id.as_deref(), Some("91350100M000100Y43"));
        assert_eq!(record.amount, Some(Money(100_000)));
        assert_eq!(record.tax, Some(Money(13_000)));
        assert_eq!(record.total, Some(Money(113_000)));
        assert_eq!(record.total_in_words.as_deref(), Some("壹仟壹佰叁拾圆整"));
        assert_eq!(record.remarks.as_deref(), Some("项目编号 A-7"));
        assert_eq!(
            record.items,
            vec![InvoiceItem {
                name: "*信息技术服务*软件开发".to_owned(),
                spec: Some("V2".to_owned()),
                unit: Some("项".to_owned()),
                quantity: Some("2".to_owned()),
                unit_price: Some("500".to_owned()),
                amount: Some(Money(100_000)),
                tax_rate: Some("13%".to_owned()),
                tax: Some(Money(13_000)),
            }]
        );
        assert_eq!(record.confidence.get("number"), Some(&0.8));
    }

    #[test]
    fn a_missing_value_is_not_taken_from_the_next_label() {
        let mut page = page();
        page.spans
            .retain(|span| span.text != "北京甲方科技有限公司");
        let record = record_from_layout(&[page], Source::Pdf, 0.8);
        assert_eq!(record.buyer_name, None);
        assert_eq!(record.seller_name.as_deref(), Some("上海乙方贸易有限公司"));
    }

    #[test]
    fn plain_text_is_laid_out_on_a_grid() {
        let page = text_page("名称：甲  税号：1\n  项目名称    金额\n\t*a*b   1.00");
        let texts: Vec<&str> = page.spans.iter().map(|span| span.text.as_str()).collect();
        assert_eq!(
            texts,
            vec!["名称：甲", "税号：1", "项目名称", "金额", "*a*b", "1.00"]
        );
        assert_eq!(page.spans[1].x, 50.0);
        assert_eq!(page.spans[4].y, 24.0);
    }
}
