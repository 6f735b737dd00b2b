//! A folder of invoices: per-file reports, duplicates across files, totals by seller and
//! by month, and all findings in one list.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Finding, FindingCode, InvoiceRecord, Money};

/// One file's checked record, as the tool returns it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InvoiceReport {
    /// The workspace path of the file read.
    pub file: String,
    /// The record's fields.
    #[serde(flatten)]
    pub record: InvoiceRecord,
    /// What the checks found.
    pub findings: Vec<Finding>,
    /// The fields the rules could not read (also a `missing_fields` finding).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub missing_fields: Vec<String>,
    /// The fields set by `corrections`.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub corrected: Vec<String>,
    /// The text in layout order, when a field is missing (to read it and correct).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub layout_text: Option<String>,
}

/// Sums over a group of invoices.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Totals {
    /// The seller's name or the month (`YYYY-MM`); `unknown` when the record lacks it.
    pub key: String,
    /// How many invoices.
    pub invoices: usize,
    /// Sum of amounts without tax.
    pub amount: Money,
    /// Sum of taxes.
    pub tax: Money,
    /// Sum of totals.
    pub total: Money,
}

/// A finding with the file it is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileFinding {
    /// The file.
    pub file: String,
    /// What was found.
    #[serde(flatten)]
    pub finding: Finding,
}

/// The folder's aggregates.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct FolderSummary {
    /// Totals per seller, by seller name.
    pub by_seller: Vec<Totals>,
    /// Totals per month of issue, oldest first.
    pub by_month: Vec<Totals>,
    /// Totals over every record.
    pub overall: Totals,
    /// Every finding of every file.
    pub findings: Vec<FileFinding>,
}

/// Adds a `duplicate_number` finding to every report whose invoice (code + number)
/// appears in another file too.
pub fn mark_duplicates(reports: &mut [InvoiceReport]) {
    let mut seen: BTreeMap<(String, String), Vec<usize>> = BTreeMap::new();
    for (index, report) in reports.iter().enumerate() {
        if let Some(number) = &report.record.number {
            let code = report.record.code.clone().unwrap_or_default();
            seen.entry((code, number.clone())).or_default().push(index);
        }
    }
    for ((code, number), indexes) in seen {
        if indexes.len() < 2 {
            continue;
        }
        let files: Vec<String> = indexes
            .iter()
            .filter_map(|index| reports.get(*index).map(|report| report.file.clone()))
            .collect();
        let name = if code.is_empty() {
            format!("number {number}")
        } else {
            format!("code {code} number {number}")
        };
        for index in indexes {
            if let Some(report) = reports.get_mut(index) {
                let others: Vec<&str> = files
                    .iter()
                    .filter(|file| **file != report.file)
                    .map(String::as_str)
                    .collect();
                report.findings.push(Finding {
                    code: FindingCode::DuplicateNumber,
                    message: format!(
                        "invoice {name} also appears in {} (count it once)",
                        others.join(", ")
                    ),
                });
            }
        }
    }
}

fn add(totals: &mut Totals, record: &InvoiceRecord) {
    totals.invoices += 1;
    totals.amount.0 += record.amount.map_or(0, Money::cents);
    totals.tax.0 += record.tax.map_or(0, Money::cents);
    totals.total.0 += record.total.map_or(0, Money::cents);
}

/// Totals by seller and by month, and every finding, over `reports`.
pub fn summarize(reports: &[InvoiceReport]) -> FolderSummary {
    let mut by_seller: BTreeMap<String, Totals> = BTreeMap::new();
    let mut by_month: BTreeMap<String, Totals> = BTreeMap::new();
    let mut overall = Totals {
        key: "all".to_owned(),
        ..Totals::default()
    };
    let mut findings = Vec::new();
    for report in reports {
        let record = &report.record;
        let seller = record
            .seller_name
            .clone()
            .unwrap_or_else(|| "unknown".to_owned());
        let month = record
            .issue_date
            .as_deref()
            .and_then(|date| date.get(..7))
            .unwrap_or("unknown")
            .to_owned();
        add(
            by_seller.entry(seller.clone()).or_insert_with(|| Totals {
                key: seller,
                ..Totals::default()
            }),
            record,
        );
        add(
            by_month.entry(month.clone()).or_insert_with(|| Totals {
                key: month,
                ..Totals::default()
            }),
            record,
        );
        add(&mut overall, record);
        findings.extend(report.findings.iter().map(|finding| FileFinding {
            file: report.file.clone(),
            finding: finding.clone(),
        }));
    }
    FolderSummary {
        by_seller: by_seller.into_values().collect(),
        by_month: by_month.into_values().collect(),
        overall,
        findings,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(file: &str, seller: &str, date: &str, number: &str, total: i64) -> InvoiceReport {
        InvoiceReport {
            file: file.to_owned(),
            record: InvoiceRecord {
                number: Some(number.to_owned()),
                seller_name: Some(seller.to_owned()),
                issue_date: Some(date.to_owned()),
                total: Some(Money(total)),
                ..InvoiceRecord::default()
            },
            findings: Vec::new(),
            missing_fields: Vec::new(),
            corrected: Vec::new(),
            layout_text: None,
        }
    }

    #[test]
    fn duplicates_and_totals_are_found_across_files() {
        let mut reports = vec![
            report("a.xml", "甲", "2024-05-01", "1", 100),
            report("b.pdf", "乙", "2024-05-20", "2", 250),
            report("c.pdf", "甲", "2024-06-02", "1", 100),
        ];
        mark_duplicates(&mut reports);
        assert_eq!(reports[0].findings.len(), 1);
        assert!(reports[0].findings[0].message.contains("c.pdf"));
        assert!(reports[1].findings.is_empty());
        let summary = summarize(&reports);
        let first = summary.by_seller.iter().find(|t| t.key == "甲").unwrap();
        assert_eq!(first.total, Money(200));
        assert_eq!(first.invoices, 2);
        assert_eq!(summary.by_month[0].key, "2024-05");
        assert_eq!(summary.by_month[0].total, Money(350));
        assert_eq!(summary.overall.invoices, 3);
        assert_eq!(summary.findings.len(), 2);
        let json = serde_json::to_value(&reports[0]).unwrap();
        assert_eq!(json["number"], "1");
        assert_eq!(json["findings"][0]["code"], "duplicate_number");
    }
}
