//! `extract_invoice` on the invoice fixtures, with the parser run in-process.

use std::path::{Path, PathBuf};

use pp_docs::job::run_job;
use pretty_assertions::assert_eq;

use super::*;

#[test]
fn the_arguments_match_the_schema() {
    crate::args_check::assert_matches::<Arguments<'static>>("extract_invoice");
}

fn fixtures(folder: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../pp-docs/tests/fixtures/invoices")
        .join(folder)
}

/// A workspace with `folder`'s invoice files copied under `invoices/`.
fn workspace(folder: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("invoices");
    std::fs::create_dir_all(&target).unwrap();
    for entry in std::fs::read_dir(fixtures(folder)).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.ends_with(".json") {
            std::fs::copy(&path, target.join(name)).unwrap();
        }
    }
    dir
}

fn settings() -> DocsSettings {
    DocsSettings::new(pp_docs::Parser::new(
        PathBuf::from("/nonexistent"),
        Vec::new(),
    ))
}

fn call_with(dir: &Path, settings: &DocsSettings, arguments: &Value) -> Result<Value, ToolOutput> {
    let jail = Jail::new(dir).unwrap();
    let parse = |job: &Job, bytes: &[u8]| run_job(job, bytes);
    let text = run(&jail, settings, arguments, &parse, &|| false)?;
    Ok(serde_json::from_str(&text).unwrap())
}

fn call(dir: &Path, arguments: &Value) -> Result<Value, ToolOutput> {
    call_with(dir, &settings(), arguments)
}

fn codes(answer: &Value) -> Vec<String> {
    let mut codes: Vec<String> = answer["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["code"].as_str().unwrap().to_owned())
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

fn error_text(output: &ToolOutput) -> String {
    output_text(output)
}

#[test]
fn a_file_gives_one_checked_record() {
    let dir = workspace("good");
    let answer = call(dir.path(), &json!({"path": "invoices/digital-001.xml"})).unwrap();
    assert_eq!(answer["file"], "invoices/digital-001.xml");
    assert_eq!(answer["number"], "24312000000100000001");
    assert_eq!(answer["total"], "1130.00");
    assert_eq!(answer["source"], "xml");
    assert_eq!(answer["findings"], json!([]));
    assert!(answer.get("layout_text").is_none());
}

#[test]
fn the_future_date_check_reads_the_settings_clock() {
    // digital-001.xml was issued on 2024-05-12.
    const DAY: i64 = 86_400_000;
    let may_12 = 19_855 * DAY;
    let clock = Arc::new(pp_types::ManualClock::new(
        pp_types::Timestamp::from_millis(may_12 - 1),
    ));
    let mut settings = settings();
    settings.clock = clock.clone();
    let dir = workspace("good");
    let arguments = json!({"path": "invoices/digital-001.xml"});
    let answer = call_with(dir.path(), &settings, &arguments).unwrap();
    assert_eq!(answer["issue_date"], "2024-05-12");
    assert_eq!(codes(&answer), vec!["future_date"]);
    assert!(
        answer["findings"][0]["message"]
            .as_str()
            .unwrap()
            .contains("after today (2024-05-11)"),
        "{answer}"
    );
    clock.advance(std::time::Duration::from_millis(1));
    let answer = call_with(dir.path(), &settings, &arguments).unwrap();
    assert_eq!(answer["findings"], json!([]));
}

#[test]
fn a_folder_prefers_the_xml_and_sums_by_seller_and_month() {
    let dir = workspace("good");
    let answer = call(dir.path(), &json!({"path": "invoices"})).unwrap();
    assert_eq!(answer["files"], 6);
    assert_eq!(answer["errors"], json!([]));
    assert_eq!(answer["findings"], json!([]));
    let skipped = &answer["skipped"][0];
    assert_eq!(skipped["file"], "invoices/digital-001.pdf");
    assert!(
        skipped["reason"]
            .as_str()
            .unwrap()
            .contains("digital-001.xml")
    );
    let months: Vec<&str> = answer["by_month"]
        .as_array()
        .unwrap()
        .iter()
        .map(|totals| totals["key"].as_str().unwrap())
        .collect();
    assert_eq!(months, vec!["2024-04", "2024-05", "2024-06", "2025-03"]);
    let overall = &answer["overall"];
    assert_eq!(overall["invoices"], 6);
    // 1130 + 6949.50 + 2120 + 300 + 1356 + 200 (XML, OFD ×2, PDF ×2, text).
    assert_eq!(overall["total"], "12055.50");
    let seller = answer["by_seller"]
        .as_array()
        .unwrap()
        .iter()
        .find(|totals| totals["key"] == "上海乙方贸易有限公司")
        .unwrap();
    assert_eq!(seller["invoices"], 2);
    assert_eq!(seller["total"], "3250.00");
}

#[test]
fn a_broken_folder_shows_every_finding_code() {
    let dir = workspace("broken");
    let answer = call(dir.path(), &json!({"path": "invoices"})).unwrap();
    assert_eq!(
        codes(&answer),
        vec![
            "bad_number_format",
            "bad_tax_id",
            "duplicate_number",
            "future_date",
            "items_sum_mismatch",
            "missing_fields",
            "total_mismatch",
            "words_mismatch"
        ]
    );
    let missing = answer["invoices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["file"] == "invoices/missing-fields.pdf")
        .unwrap();
    assert_eq!(
        missing["missing_fields"],
        json!(["issue_date", "seller_name"])
    );
    assert!(
        missing["layout_text"]
            .as_str()
            .unwrap()
            .contains("发票号码")
    );
}

#[test]
fn corrections_are_applied_then_checked_again() {
    let dir = workspace("broken");
    let file = "invoices/missing-fields.pdf";
    let answer = call(
        dir.path(),
        &json!({"path": file, "corrections": {file: {"seller_name": "上海乙方贸易有限公司",
                                                     "issue_date": "2024-07-08"}}}),
    )
    .unwrap();
    assert_eq!(answer["findings"], json!([]));
    assert_eq!(answer["corrected"], json!(["issue_date", "seller_name"]));
    assert_eq!(answer["confidence"]["seller_name"], 1.0);

    // Never trusted: a corrected value goes through every check.
    let answer = call(
        dir.path(),
        &json!({"path": "invoices", "corrections": {file: {"seller_name": "某公司",
               "issue_date": "2099-01-01", "total": "5.00"}}}),
    )
    .unwrap();
    let record = answer["invoices"]
        .as_array()
        .unwrap()
        .iter()
        .find(|record| record["file"] == file)
        .unwrap();
    let codes: Vec<&str> = record["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| finding["code"].as_str().unwrap())
        .collect();
    assert_eq!(
        codes,
        vec!["total_mismatch", "words_mismatch", "future_date"]
    );
}

#[test]
fn corrections_to_unknown_fields_or_files_are_clear_errors() {
    let dir = workspace("broken");
    let file = "invoices/missing-fields.pdf";
    for (arguments, said) in [
        (
            json!({"path": file, "corrections": {file: {"totl": "1"}}}),
            "unknown field `totl`",
        ),
        (
            json!({"path": file, "corrections": {"invoices/other.pdf": {"total": "1"}}}),
            "not an invoice file of this call",
        ),
        (
            json!({"path": "invoices", "corrections": {"nope.pdf": {"total": "1"}}}),
            "not an invoice file of this call",
        ),
        (
            json!({"path": "invoices", "corrections": {file: {"total": "1.234"}}}),
            "`total` must be an amount",
        ),
        (
            json!({"path": file, "corrections": [1]}),
            "must be an object",
        ),
    ] {
        let error = call(dir.path(), &arguments).unwrap_err();
        assert!(error_text(&error).contains(said), "{error:?}");
    }
}

#[test]
fn escapes_are_denied_and_links_in_folders_skipped() {
    let outside = workspace("good");
    let dir = workspace("broken");
    for path in [
        "../invoices/dup-a.xml",
        "/etc/passwd",
        "invoices/../../x.xml",
    ] {
        let error = call(dir.path(), &json!({"path": path})).unwrap_err();
        assert!(matches!(error, ToolOutput::Denied(_)), "{path}: {error:?}");
    }
    let outside_file = outside.path().join("invoices/digital-001.xml");
    std::os::unix::fs::symlink(&outside_file, dir.path().join("invoices/link.xml")).unwrap();
    let error = call(dir.path(), &json!({"path": "invoices/link.xml"})).unwrap_err();
    assert!(matches!(error, ToolOutput::Denied(_)), "{error:?}");

    // A folder linked from inside the scanned folder (to outside, and to inside) is
    // skipped, never read.
    std::os::unix::fs::symlink(
        outside.path().join("invoices"),
        dir.path().join("invoices/out"),
    )
    .unwrap();
    std::fs::create_dir(dir.path().join("other")).unwrap();
    std::fs::copy(&outside_file, dir.path().join("other/inside.xml")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("other"), dir.path().join("invoices/in")).unwrap();
    let answer = call(dir.path(), &json!({"path": "invoices"})).unwrap();
    let files: Vec<&str> = answer["invoices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|record| record["file"].as_str().unwrap())
        .collect();
    assert_eq!(files.len(), 9, "{files:?}");
    assert!(
        files
            .iter()
            .all(|file| !file.contains("out/") && !file.contains("in/") && !file.contains("link")),
        "{files:?}"
    );
    let skipped: Vec<&str> = answer["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|skipped| skipped["file"].as_str().unwrap())
        .collect();
    for link in ["invoices/link.xml", "invoices/out", "invoices/in"] {
        assert!(skipped.contains(&link), "{link} not in {skipped:?}");
    }
    assert!(
        !answer.to_string().contains("100000001"),
        "nothing outside was read"
    );
}

#[test]
fn a_folder_is_capped() {
    let dir = workspace("broken");
    let mut settings = settings();
    settings.max_folder_files = 2;
    let answer = call_with(dir.path(), &settings, &json!({"path": "invoices"})).unwrap();
    assert_eq!(answer["files"], 2);
    assert_eq!(answer["truncated"], true);
    assert_eq!(answer["invoices"].as_array().unwrap().len(), 2);
}

#[test]
fn a_large_folder_answer_is_cut_with_a_note_keeping_the_totals() {
    let dir = workspace("broken");
    let full = call(dir.path(), &json!({"path": "invoices"})).unwrap();
    let mut settings = settings();
    settings.max_output_chars = full.to_string().chars().count() / 2;
    let cut = call_with(dir.path(), &settings, &json!({"path": "invoices"})).unwrap();
    let note = cut["note"].as_str().unwrap();
    assert!(note.contains("`layout_text` of every record"), "{note}");
    assert!(cut.to_string().chars().count() <= settings.max_output_chars);
    assert_eq!(cut["overall"], full["overall"]);
    assert_eq!(cut["findings"], full["findings"]);
}

#[test]
fn a_missing_path_or_another_format_is_an_error() {
    let dir = workspace("good");
    std::fs::write(dir.path().join("notes.md"), "# hi").unwrap();
    let error = call(dir.path(), &json!({"path": "nope"})).unwrap_err();
    assert!(error_text(&error).contains("does not exist"));
    let error = call(dir.path(), &json!({"path": "notes.md"})).unwrap_err();
    assert!(
        error_text(&error).contains("xml, ofd, pdf and txt"),
        "{error:?}"
    );
}
