//! `extract_invoice`: Chinese VAT invoices from their XML, OFD, PDF or text, checked.
//!
//! The parser child turns one file's bytes into an [`InvoiceDraft`] ([`read`]): the
//! fields rules could read, how sure they are, and the text in layout order. Everything
//! else runs in the parent on plain values: [`validate()`](validate::validate) (the
//! findings), [`corrections`] (the model's fixes, re-validated like extracted values) and
//! [`folder`] (totals by seller and month, duplicate numbers across files).
//!
//! Money is integer cents ([`Money`]), never a float sum.

pub mod corrections;
pub mod folder;
mod layout_match;
pub mod money;
mod ofd;
mod pdf;
pub mod tax_id;
mod text;
pub mod validate;
pub mod words;
mod xml;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

pub use money::Money;
pub use validate::{Finding, FindingCode, validate};

use crate::{DocsError, Format};

/// The kind of invoice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InvoiceKind {
    /// A fully digital e-invoice (数电票, 20-digit number, no code).
    FullyDigital,
    /// A legacy special VAT invoice (增值税专用发票: code + 8-digit number).
    SpecialVat,
    /// A legacy ordinary VAT invoice (增值税普通发票, paper or electronic).
    OrdinaryVat,
    /// Anything else.
    #[default]
    Other,
}

/// Where a record was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    /// The e-invoice's XML data file (exact).
    Xml,
    /// An OFD container (its embedded XML when present, else its positioned text).
    Ofd,
    /// A PDF's positioned text.
    Pdf,
    /// Plain text.
    #[default]
    Text,
}

/// One line of goods or services.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct InvoiceItem {
    /// 项目名称 (often `*category*name`).
    pub name: String,
    /// 规格型号.
    pub spec: Option<String>,
    /// 单位.
    pub unit: Option<String>,
    /// 数量, as printed (a decimal).
    pub quantity: Option<String>,
    /// 单价, as printed (a decimal, often more than two places).
    pub unit_price: Option<String>,
    /// 金额 (without tax).
    pub amount: Option<Money>,
    /// 税率/征收率, as printed (`13%`, `免税`).
    pub tax_rate: Option<String>,
    /// 税额.
    pub tax: Option<Money>,
}

/// One invoice's fields, as read (and possibly corrected); see the module docs.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct InvoiceRecord {
    /// The kind of invoice.
    pub kind: InvoiceKind,
    /// 发票号码 (20 digits on a fully digital invoice, 8 on a legacy one).
    pub number: Option<String>,
    /// 发票代码 (legacy invoices only: 10 or 12 digits).
    pub code: Option<String>,
    /// 开票日期, ISO `YYYY-MM-DD`.
    pub issue_date: Option<String>,
    /// 购买方名称.
    pub buyer_name: Option<String>,
    /// 购买方统一社会信用代码/纳税人识别号.
    pub buyer_tax_id: Option<String>,
    /// 销售方名称.
    pub seller_name: Option<String>,
    /// 销售方统一社会信用代码/纳税人识别号.
    pub seller_tax_id: Option<String>,
    /// The lines.
    pub items: Vec<InvoiceItem>,
    /// 合计金额 (without tax).
    pub amount: Option<Money>,
    /// 合计税额.
    pub tax: Option<Money>,
    /// 价税合计 (小写).
    pub total: Option<Money>,
    /// 价税合计 (大写), as printed.
    pub total_in_words: Option<String>,
    /// 备注.
    pub remarks: Option<String>,
    /// Where the record was read from.
    pub source: Source,
    /// How sure the reader is of each field it filled, 0 to 1 (1: exact, from XML or a
    /// correction).
    pub confidence: BTreeMap<String, f32>,
}

/// The fields a record has, by name (what corrections and `missing_fields` use).
pub const FIELDS: [&str; 15] = [
    "kind",
    "number",
    "code",
    "issue_date",
    "buyer_name",
    "buyer_tax_id",
    "seller_name",
    "seller_tax_id",
    "items",
    "amount",
    "tax",
    "total",
    "total_in_words",
    "remarks",
    "source",
];

/// What the child process read of one invoice file, before validation.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct InvoiceDraft {
    /// The fields read, unvalidated (boxed: the draft travels in `JobOutput`).
    pub record: Box<InvoiceRecord>,
    /// The text in layout order, for the model when rules could not read a field.
    pub layout_text: String,
}

/// Reads one invoice file of `format` (XML, OFD, PDF or TXT).
pub fn read(bytes: &[u8], format: Format) -> Result<InvoiceDraft, DocsError> {
    match format {
        Format::Xml => xml::read(bytes),
        Format::Ofd => ofd::read(bytes),
        Format::Pdf => pdf::read(bytes),
        Format::Txt => text::read(bytes),
        other => Err(DocsError::Unsupported(format!(
            "{other} is not an invoice format; invoices are read from xml, ofd, pdf and txt"
        ))),
    }
}

/// Trims `value` and turns an empty string into `None`.
pub(crate) fn clean(value: &str) -> Option<String> {
    let trimmed = value.trim();
    (!trimmed.is_empty()).then(|| trimmed.to_owned())
}

/// `2024年05月12日`, `2024-05-12`, `2024/5/12`, `2024-05-12 10:11:12` → `2024-05-12`.
pub(crate) fn parse_date(value: &str) -> Option<String> {
    let digits: Vec<u32> = value
        .split(|c: char| !c.is_ascii_digit())
        .filter(|part| !part.is_empty())
        .take(3)
        .map(|part| part.parse::<u32>().ok())
        .collect::<Option<Vec<u32>>>()?;
    let [year, month, day] = digits.as_slice() else {
        return None;
    };
    let (year, month, day) = (*year, *month, *day);
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return None,
    };
    ((1900..=9999).contains(&year) && (1..=days).contains(&day))
        .then(|| format!("{year:04}-{month:02}-{day:02}"))
}

/// The kind a title names (`电子发票（增值税专用发票）`, `增值税普通发票`, …).
pub(crate) fn kind_from_title(title: &str) -> Option<InvoiceKind> {
    let title: String = title.chars().filter(|c| !c.is_whitespace()).collect();
    if title.contains("电子发票(") || title.contains("电子发票（") || title.contains("数电")
    {
        return Some(InvoiceKind::FullyDigital);
    }
    if title.contains("增值税专用发票") {
        return Some(InvoiceKind::SpecialVat);
    }
    if title.contains("增值税普通发票") || title.contains("增值税电子普通发票") {
        return Some(InvoiceKind::OrdinaryVat);
    }
    None
}

/// The kind a number and code suggest when no title said it.
pub(crate) fn kind_from_number(number: Option<&str>, code: Option<&str>) -> InvoiceKind {
    match (number, code) {
        (Some(number), None) if number.len() == 20 => InvoiceKind::FullyDigital,
        (_, Some(_)) => InvoiceKind::OrdinaryVat,
        _ => InvoiceKind::Other,
    }
}

/// Sets `confidence[field] = value` for every field the record has.
pub(crate) fn set_confidence(record: &mut InvoiceRecord, value: f32) {
    let present = [
        ("kind", record.kind != InvoiceKind::Other),
        ("number", record.number.is_some()),
        ("code", record.code.is_some()),
        ("issue_date", record.issue_date.is_some()),
        ("buyer_name", record.buyer_name.is_some()),
        ("buyer_tax_id", record.buyer_tax_id.is_some()),
        ("seller_name", record.seller_name.is_some()),
        ("seller_tax_id", record.seller_tax_id.is_some()),
        ("items", !record.items.is_empty()),
        ("amount", record.amount.is_some()),
        ("tax", record.tax.is_some()),
        ("total", record.total.is_some()),
        ("total_in_words", record.total_in_words.is_some()),
        ("remarks", record.remarks.is_some()),
    ];
    for (field, there) in present {
        if there {
            record.confidence.insert(field.to_owned(), value);
        }
    }
}

/// A decimal as printed without meaningless zeros: `2.500` → `2.5`, `3.00` → `3`.
pub(crate) fn normalize_decimal(value: &str) -> Option<String> {
    let value: String = value
        .trim()
        .chars()
        .filter(|c| !matches!(c, ',' | '¥' | '￥'))
        .collect();
    if value.is_empty() {
        return None;
    }
    if !value.contains('.') {
        return Some(value);
    }
    let trimmed = value.trim_end_matches('0').trim_end_matches('.');
    Some(if trimmed.is_empty() || trimmed == "-" {
        "0".to_owned()
    } else {
        trimmed.to_owned()
    })
}

/// A tax rate as printed: `0.13` → `13%`, `13%` → `13%`, `免税` stays.
pub(crate) fn normalize_rate(value: &str) -> Option<String> {
    let value = value.trim();
    if value.is_empty() {
        return None;
    }
    if value.ends_with('%') {
        return Some(value.to_owned());
    }
    match Money::parse(value) {
        // 0.13 read as cents is 13.
        Some(money) if value.starts_with("0.") || value == "0" => {
            Some(format!("{}%", money.cents()))
        }
        _ => Some(value.to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_normalised_and_checked() {
        assert_eq!(parse_date("2024年05月12日").as_deref(), Some("2024-05-12"));
        assert_eq!(parse_date("2024/5/2").as_deref(), Some("2024-05-02"));
        assert_eq!(
            parse_date("2024-02-29 10:11:12").as_deref(),
            Some("2024-02-29")
        );
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(parse_date("2024-13-01"), None);
        assert_eq!(parse_date("soon"), None);
    }

    #[test]
    fn titles_name_kinds() {
        assert_eq!(
            kind_from_title("电子发票（增值税专用发票）"),
            Some(InvoiceKind::FullyDigital)
        );
        assert_eq!(
            kind_from_title("电子发票(普通发票)"),
            Some(InvoiceKind::FullyDigital)
        );
        assert_eq!(
            kind_from_title("北京增值税专用发票"),
            Some(InvoiceKind::SpecialVat)
        );
        assert_eq!(
            kind_from_title("增值税电子普通发票"),
            Some(InvoiceKind::OrdinaryVat)
        );
        assert_eq!(kind_from_title("收据"), None);
    }

    #[test]
    fn decimals_and_rates_are_normalised() {
        assert_eq!(normalize_decimal("2.500").as_deref(), Some("2.5"));
        assert_eq!(normalize_decimal("3.00").as_deref(), Some("3"));
        assert_eq!(normalize_decimal("12").as_deref(), Some("12"));
        assert_eq!(normalize_rate("0.13").as_deref(), Some("13%"));
        assert_eq!(normalize_rate("0.06").as_deref(), Some("6%"));
        assert_eq!(normalize_rate("13%").as_deref(), Some("13%"));
        assert_eq!(normalize_rate("免税").as_deref(), Some("免税"));
    }
}
