//! Invoice reading on the generated fixtures (scripts/fixtures/invoices.py): every field
//! of every good invoice right, every finding code triggered by its broken example, and
//! corrections re-validated.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use pp_docs::Format;
use pp_docs::invoice::folder::{InvoiceReport, mark_duplicates};
use pp_docs::invoice::{FindingCode, InvoiceDraft, corrections, read, validate};
use serde_json::Value;

const TODAY: &str = "2026-01-01";

fn fixtures(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/invoices")
        .join(folder)
}

/// The invoice files of a fixture folder (not the expected/corrections JSON).
fn invoice_files(folder: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures(folder))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            matches!(
                path.extension().and_then(|e| e.to_str()),
                Some("xml" | "ofd" | "pdf" | "txt")
            )
        })
        .collect();
    files.sort();
    files
}

fn read_file(path: &Path) -> InvoiceDraft {
    let format = Format::from_path(&path.to_string_lossy()).unwrap();
    read(&std::fs::read(path).unwrap(), format)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

fn expected(path: &Path) -> Value {
    let mut name = path.file_name().unwrap().to_os_string();
    name.push(".expected.json");
    serde_json::from_slice(&std::fs::read(path.with_file_name(name)).unwrap()).unwrap()
}

/// Compares every expected field (each item's fields one by one); returns (right, total,
/// the wrong ones).
fn score(got: &Value, want: &Value) -> (usize, usize, Vec<String>) {
    let (mut right, mut total, mut wrong) = (0, 0, Vec::new());
    for (field, value) in want.as_object().unwrap() {
        if field == "items" {
            let items = value.as_array().unwrap();
            let got_items = got["items"].as_array().cloned().unwrap_or_default();
            if got_items.len() != items.len() {
                wrong.push(format!(
                    "items: {} lines, want {}",
                    got_items.len(),
                    items.len()
                ));
            }
            for (index, item) in items.iter().enumerate() {
                for (key, value) in item.as_object().unwrap() {
                    total += 1;
                    let got = got_items.get(index).map_or(&Value::Null, |item| &item[key]);
                    if got == value {
                        right += 1;
                    } else {
                        wrong.push(format!("items[{index}].{key}: {got} != {value}"));
                    }
                }
            }
            continue;
        }
        total += 1;
        let got = &got[field];
        if got == value {
            right += 1;
        } else {
            wrong.push(format!("{field}: {got} != {value}"));
        }
    }
    (right, total, wrong)
}

#[test]
#[allow(
    clippy::print_stdout,
    reason = "the accuracy figures are part of the report"
)]
fn every_field_of_every_good_invoice_is_right() {
    let mut by_source: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut failures = Vec::new();
    for path in invoice_files("good") {
        let draft = read_file(&path);
        let want = expected(&path);
        let got = serde_json::to_value(&draft.record).unwrap();
        let (right, total, wrong) = score(&got, &want);
        let entry = by_source
            .entry(want["source"].as_str().unwrap().to_owned())
            .or_default();
        entry.0 += right;
        entry.1 += total;
        if !wrong.is_empty() {
            failures.push(format!(
                "{}: {wrong:#?}\nlayout text:\n{}",
                path.display(),
                draft.layout_text
            ));
        }
        let findings = validate(&draft.record, TODAY);
        assert_eq!(findings, Vec::new(), "{}", path.display());
    }
    for (source, (right, total)) in &by_source {
        println!("invoice field accuracy, {source}: {right}/{total}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(by_source.len(), 4, "xml, ofd, pdf and text are all covered");
}

#[test]
fn every_finding_code_has_a_failing_example() {
    let mut seen: Vec<FindingCode> = Vec::new();
    let mut reports = Vec::new();
    for path in invoice_files("broken") {
        let draft = read_file(&path);
        let findings = validate(&draft.record, TODAY);
        let codes: Vec<&str> = findings
            .iter()
            .map(|finding| finding.code.as_str())
            .collect();
        let want: Vec<String> =
            serde_json::from_value(expected(&path)["findings"].clone()).unwrap();
        assert_eq!(codes, want, "{}: {findings:#?}", path.display());
        seen.extend(findings.iter().map(|finding| finding.code));
        reports.push(InvoiceReport {
            file: path.file_name().unwrap().to_string_lossy().into_owned(),
            record: *draft.record,
            findings,
            missing_fields: Vec::new(),
            corrected: Vec::new(),
            layout_text: None,
        });
    }
    mark_duplicates(&mut reports);
    let duplicated: Vec<&str> = reports
        .iter()
        .filter(|report| {
            report
                .findings
                .iter()
                .any(|finding| finding.code == FindingCode::DuplicateNumber)
        })
        .map(|report| report.file.as_str())
        .collect();
    assert_eq!(duplicated, vec!["dup-a.xml", "dup-b.txt"]);
    seen.push(FindingCode::DuplicateNumber);
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 8, "every finding code is triggered: {seen:?}");
}

#[test]
fn corrections_fill_missing_fields_and_are_validated_again() {
    let path = fixtures("broken").join("missing-fields.pdf");
    let draft = read_file(&path);
    assert!(draft.layout_text.contains("发票号码"));
    let before = validate(&draft.record, TODAY);
    assert_eq!(before.len(), 1);
    assert!(
        before[0].message.contains("issue_date"),
        "{}",
        before[0].message
    );
    assert!(
        before[0].message.contains("seller_name"),
        "{}",
        before[0].message
    );

    let fixes: Value = serde_json::from_slice(
        &std::fs::read(path.with_file_name("missing-fields.pdf.corrections.json")).unwrap(),
    )
    .unwrap();
    let mut record = draft.record.clone();
    corrections::apply(&mut record, fixes.as_object().unwrap()).unwrap();
    assert_eq!(validate(&record, TODAY), Vec::new());

    // A correction is checked like an extracted value: never trusted.
    let mut record = draft.record;
    let bad = serde_json::json!({"seller_name": "某公司", "issue_date": "2099-12-31",
                                 "seller_tax_id": "91350100M000100Y44", "total": "1.00"});
    corrections::apply(&mut record, bad.as_object().unwrap()).unwrap();
    let codes: Vec<FindingCode> = validate(&record, TODAY).iter().map(|f| f.code).collect();
    assert_eq!(
        codes,
        vec![
            FindingCode::TotalMismatch,
            FindingCode::WordsMismatch,
            FindingCode::BadTaxId,
            FindingCode::FutureDate
        ]
    );
}
