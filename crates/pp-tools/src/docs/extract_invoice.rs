//! `extract_invoice`: Chinese VAT invoices read, checked and summed.
//!
//! ## What it does
//! On a file (`.xml` fully digital e-invoice data, `.ofd`, `.pdf`, `.txt`): one record
//! `{file, kind, number, code, issue_date, buyer_name, buyer_tax_id, seller_name,
//! seller_tax_id, items, amount, tax, total, total_in_words, remarks, source, confidence,
//! findings, missing_fields?, corrected?, layout_text?}` (money as decimal strings in
//! integer cents). On a folder: every invoice file below it (recursively through the jail,
//! at most [`DocsSettings::max_folder_files`]; symbolic links, to files or folders, are
//! skipped like in every jail walk; of files sharing a stem the XML is read, then OFD,
//! PDF, TXT), then totals by seller and by month, and every finding, `duplicate_number`
//! across files included. Each file is parsed in its own limited child process; the
//! checks ([`pp_docs::invoice::validate()`]) run here, on extracted and corrected values
//! alike. When a field cannot be read the record names it in `missing_fields` and carries
//! `layout_text`, so the model can read it and call again with
//! `corrections: {"<file>": {"<field>": value}}`. The tool never writes: a summary is an
//! ordinary `write_file`, which stops for approval.
//!
//! ## Capabilities needed
//! `file:read` (allowed without approval), risk low; `path` is a path parameter.
//!
//! ## Example
//! ```json
//! {"path": "invoices", "corrections": {"invoices/a.pdf": {"seller_name": "某公司"}}}
//! ```
//! ```json
//! {"path":"invoices","files":3,"invoices":[{"file":"invoices/a.pdf","number":"…",…}],
//!  "by_seller":[…],"by_month":[…],"overall":{…},"findings":[{"file":"…","code":
//!  "total_mismatch","message":"…"}],"skipped":[],"errors":[],"truncated":false}
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;

use pp_agent::ToolContext;
use pp_docs::invoice::folder::{InvoiceReport, mark_duplicates, summarize};
use pp_docs::invoice::validate::{missing_fields, today_utc};
use pp_docs::invoice::{corrections, validate};
use pp_docs::{DocsError, Format, Job, JobOutput};
use pp_gate::{EntryKind, Jail, ListOptions};
use pp_types::{ToolOutput, ToolSpec};

use super::input::read_spec;
use serde_json::{Map, Value, json};

use super::DocsSettings;
use super::input::{docs_error, read_document};
use crate::blocking::SyncTool;
use crate::files::common::{jail_error, required_str, respond};

/// What the model reads about the tool.
const DESCRIPTION: &str = "Read Chinese VAT invoices (fully digital e-invoice XML, OFD, \
PDF, plain text) from a file or a folder (recursively) and check them. Returns per \
invoice: kind, number, code, issue_date, buyer/seller name and tax id, items, amount, tax, \
total, total_in_words, remarks, source, confidence and findings (total_mismatch, \
items_sum_mismatch, words_mismatch, bad_tax_id, bad_number_format, future_date, \
duplicate_number, missing_fields); for a folder also totals by seller and by month and \
all findings. When fields are missing, read them in `layout_text` and call again with \
`corrections: {\"<file>\": {\"<field>\": value}}` (corrected values are checked again). \
Read-only: write a summary with write_file.";

/// Most characters of layout text returned per record.
const MAX_LAYOUT_CHARS: usize = 6_000;

/// Invoice formats in order of preference when several files share a stem.
const PREFERENCE: [Format; 4] = [Format::Xml, Format::Ofd, Format::Pdf, Format::Txt];

/// Parses one job (the parser child in the tool; in-process in unit tests).
type Parse<'a> = &'a dyn Fn(&Job, &[u8]) -> Result<JobOutput, DocsError>;

/// The `extract_invoice` tool.
pub(crate) struct ExtractInvoice {
    /// The only way to the filesystem.
    jail: Arc<Jail>,
    settings: Arc<DocsSettings>,
    spec: ToolSpec,
}

/// A file left out of a folder call, and why.
fn skipped(file: &str, reason: &str) -> Value {
    json!({"file": file, "reason": reason})
}

impl ExtractInvoice {
    pub(crate) fn new(jail: Arc<Jail>, settings: Arc<DocsSettings>) -> Self {
        let spec = read_spec(
            "extract_invoice",
            DESCRIPTION,
            json!({
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "Invoice file (.xml, .ofd, .pdf, .txt) or folder, \
                                        relative to the workspace root"
                    },
                    "corrections": {
                        "type": "object",
                        "description": "Fixes by file then field, e.g. {\"inv/a.pdf\": \
                                        {\"seller_name\": \"某公司\", \"total\": \"1130.00\"}}; \
                                        checked like extracted values",
                        "additionalProperties": {"type": "object"}
                    }
                },
                "required": ["path"],
                "additionalProperties": false
            }),
        );
        Self {
            jail,
            settings,
            spec,
        }
    }

    fn run(&self, context: &ToolContext, arguments: &Value) -> Result<String, ToolOutput> {
        let parse = |job: &Job, bytes: &[u8]| {
            self.settings
                .parser
                .run_until(job, bytes, context.deadline, &|| context.should_stop())
        };
        let stop = || context.should_stop();
        run(&self.jail, &self.settings, arguments, &parse, &stop)
    }
}

impl SyncTool for ExtractInvoice {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn call(&self, context: &ToolContext, arguments: &Value) -> ToolOutput {
        respond(self.run(context, arguments))
    }
}

/// The corrections argument: file → field → value.
fn corrections_of(arguments: &Value) -> Result<BTreeMap<String, Map<String, Value>>, ToolOutput> {
    let mut out = BTreeMap::new();
    match arguments.get("corrections") {
        None | Some(Value::Null) => {}
        Some(Value::Object(files)) => {
            for (file, fields) in files {
                let Value::Object(fields) = fields else {
                    return Err(ToolOutput::error(format!(
                        "corrections for `{file}` must be an object of field → value, like \
                         {{\"seller_name\": \"某公司\"}}"
                    )));
                };
                out.insert(file.clone(), fields.clone());
            }
        }
        Some(_) => {
            return Err(ToolOutput::error(
                "argument `corrections` must be an object: {\"<file>\": {\"<field>\": value}}",
            ));
        }
    }
    Ok(out)
}

fn encode(value: Result<Value, serde_json::Error>) -> Result<String, ToolOutput> {
    value
        .and_then(|value| serde_json::to_string(&value))
        .map_err(|error| ToolOutput::error(format!("cannot encode the result: {error}")))
}

/// The whole call, with the parser and the stop check passed in.
fn run(
    jail: &Jail,
    settings: &DocsSettings,
    arguments: &Value,
    parse: Parse<'_>,
    stop: &dyn Fn() -> bool,
) -> Result<String, ToolOutput> {
    let path = required_str(arguments, "path")?;
    let mut fixes = corrections_of(arguments)?;
    let probe = jail.probe(path).map_err(|error| jail_error(&error))?;
    let today = today_utc(&pp_types::SystemClock);
    match probe.kind {
        None => Err(ToolOutput::error(format!(
            "`{path}` does not exist; give an invoice file or a folder of them"
        ))),
        Some(EntryKind::Dir) => {
            let mut answer = folder(jail, settings, path, &mut fixes, parse, stop, &today)?;
            Ok(fit(&mut answer, settings.max_output_chars))
        }
        Some(EntryKind::File) => {
            let fields = take_fixes(&mut fixes, path, &probe.resolved.to_string_lossy());
            if let Some(file) = fixes.keys().next() {
                return Err(unknown_file(file, &[path.to_owned()]));
            }
            let report = one_file(jail, settings, path, fields.as_ref(), parse, &today)?;
            encode(serde_json::to_value(&report))
        }
        Some(_) => Err(ToolOutput::error(format!(
            "`{path}` is neither a file nor a folder"
        ))),
    }
}

/// The corrections addressed to `file` (by the path given or the resolved one).
fn take_fixes(
    fixes: &mut BTreeMap<String, Map<String, Value>>,
    file: &str,
    resolved: &str,
) -> Option<Map<String, Value>> {
    let trimmed = file.trim_start_matches("./");
    fixes
        .remove(file)
        .or_else(|| fixes.remove(trimmed))
        .or_else(|| fixes.remove(resolved))
}

fn unknown_file(file: &str, files: &[String]) -> ToolOutput {
    let mut shown: Vec<&str> = files.iter().take(20).map(String::as_str).collect();
    if files.len() > 20 {
        shown.push("…");
    }
    ToolOutput::error(format!(
        "corrections name `{file}`, which is not an invoice file of this call; its files: {}",
        shown.join(", ")
    ))
}

/// Reads, corrects and checks one file; a file the jail refuses or the parser cannot
/// read is an error.
fn one_file(
    jail: &Jail,
    settings: &DocsSettings,
    file: &str,
    fixes: Option<&Map<String, Value>>,
    parse: Parse<'_>,
    today: &str,
) -> Result<InvoiceReport, ToolOutput> {
    let (bytes, format) = read_document(jail, file, settings.max_input_bytes)?;
    if !PREFERENCE.contains(&format) {
        return Err(ToolOutput::error(format!(
            "`{file}` is {format}; invoices are read from xml, ofd, pdf and txt files"
        )));
    }
    let output =
        parse(&Job::Invoice { format }, &bytes).map_err(|error| docs_error(file, &error))?;
    let JobOutput::Invoice(draft) = output else {
        return Err(ToolOutput::error(format!(
            "`{file}`: the parser answered with something other than an invoice"
        )));
    };
    let mut record = *draft.record;
    let corrected = match fixes {
        Some(fields) => corrections::apply(&mut record, fields)
            .map_err(|error| ToolOutput::error(format!("corrections for `{file}`: {error}")))?,
        None => Vec::new(),
    };
    let findings = validate(&record, today);
    let missing: Vec<String> = missing_fields(&record)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let layout_text = (!missing.is_empty()).then(|| {
        let mut text: String = draft.layout_text.chars().take(MAX_LAYOUT_CHARS).collect();
        if draft.layout_text.chars().count() > MAX_LAYOUT_CHARS {
            text.push_str(&format!("\n[truncated at {MAX_LAYOUT_CHARS} characters]"));
        }
        text
    });
    Ok(InvoiceReport {
        file: file.to_owned(),
        record,
        findings,
        missing_fields: missing,
        corrected,
        layout_text,
    })
}

/// The stem of a path (`a/b.pdf` → `a/b`) and its invoice format, if it has one.
fn invoice_format(path: &str) -> Option<(String, Format)> {
    let format = Format::from_path(path).filter(|format| PREFERENCE.contains(format))?;
    let stem = path.rsplit_once('.').map_or(path, |(stem, _)| stem);
    Some((stem.to_owned(), format))
}

fn folder(
    jail: &Jail,
    settings: &DocsSettings,
    path: &str,
    fixes: &mut BTreeMap<String, Map<String, Value>>,
    parse: Parse<'_>,
    stop: &dyn Fn() -> bool,
    today: &str,
) -> Result<Value, ToolOutput> {
    let cap = settings.max_folder_files;
    let listing = jail
        .list(
            path,
            ListOptions {
                recursive: true,
                max_entries: cap.saturating_mul(20).max(1_000),
            },
        )
        .map_err(|error| jail_error(&error))?;
    let mut skipped_files: Vec<Value> = Vec::new();
    let skipped_link = |path: &str| {
        skipped(
            path,
            "a symbolic link (links are not followed in folder walks)",
        )
    };
    // Stem → the best file of that stem.
    let mut chosen: BTreeMap<String, (Format, String)> = BTreeMap::new();
    for entry in &listing.entries {
        let Some((stem, format)) = invoice_format(&entry.path) else {
            continue;
        };
        if entry.kind != EntryKind::File {
            if entry.kind == EntryKind::Symlink {
                skipped_files.push(skipped_link(&entry.path));
            }
            continue;
        }
        let rank = |format: Format| PREFERENCE.iter().position(|f| *f == format);
        match chosen.get(&stem) {
            Some((kept, kept_path)) if rank(*kept) <= rank(format) => skipped_files.push(skipped(
                &entry.path,
                &format!("the same invoice is read from `{kept_path}`"),
            )),
            previous => {
                if let Some((_, previous_path)) = previous {
                    skipped_files.push(skipped(
                        previous_path,
                        &format!("the same invoice is read from `{}`", entry.path),
                    ));
                }
                chosen.insert(stem, (format, entry.path.clone()));
            }
        }
    }
    // Symlinked folders are listed as links too: say they were skipped.
    for entry in &listing.entries {
        if entry.kind == EntryKind::Symlink && invoice_format(&entry.path).is_none() {
            skipped_files.push(skipped_link(&entry.path));
        }
    }
    let mut files: Vec<String> = chosen.into_values().map(|(_, file)| file).collect();
    files.sort();
    let mut truncated = listing.truncated;
    if files.len() > cap {
        truncated = true;
        files.truncate(cap);
    }
    if let Some(file) = fixes.keys().find(|file| !files.contains(file)) {
        return Err(unknown_file(file, &files));
    }
    let mut invoices = Vec::new();
    let mut errors = Vec::new();
    for file in &files {
        if stop() {
            truncated = true;
            break;
        }
        let fields = fixes.remove(file);
        match one_file(jail, settings, file, fields.as_ref(), parse, today) {
            Ok(report) => invoices.push(report),
            Err(output) => {
                if fields.is_some()
                    && let ToolOutput::Error { message } = &output
                    && message.starts_with("corrections for")
                {
                    return Err(output);
                }
                errors.push(json!({"file": file, "error": output_text(&output)}));
            }
        }
    }
    mark_duplicates(&mut invoices);
    let summary = summarize(&invoices);
    let encoded = |value: Result<Value, serde_json::Error>| {
        value.map_err(|error| ToolOutput::error(format!("cannot encode the result: {error}")))
    };
    Ok(json!({
        "path": path,
        "files": files.len(),
        "invoices": encoded(serde_json::to_value(&invoices))?,
        "by_seller": encoded(serde_json::to_value(&summary.by_seller))?,
        "by_month": encoded(serde_json::to_value(&summary.by_month))?,
        "overall": encoded(serde_json::to_value(&summary.overall))?,
        "findings": encoded(serde_json::to_value(&summary.findings))?,
        "skipped": skipped_files,
        "errors": errors,
        "truncated": truncated,
    }))
}

/// The folder answer as text of at most about `max_chars` characters: when it is longer,
/// the records' `layout_text` goes first, then their `items`, then records from the end
/// (the totals and findings always stay); a `note` says what was left out.
fn fit(answer: &mut Value, max_chars: usize) -> String {
    let length = |answer: &Value| answer.to_string().chars().count();
    if length(answer) <= max_chars {
        return answer.to_string();
    }
    // Room for the note itself.
    let max_chars_left = max_chars.saturating_sub(400);
    let mut notes = Vec::new();
    for field in ["layout_text", "items"] {
        let mut removed = false;
        if let Some(records) = answer["invoices"].as_array_mut() {
            for record in records {
                if let Some(object) = record.as_object_mut() {
                    removed |= object.remove(field).is_some();
                }
            }
        }
        if removed {
            notes.push(format!("`{field}` of every record"));
        }
        if length(answer) <= max_chars_left {
            break;
        }
    }
    let mut dropped = 0usize;
    while length(answer) > max_chars_left
        && answer["invoices"]
            .as_array()
            .is_some_and(|records| !records.is_empty())
    {
        if let Some(records) = answer["invoices"].as_array_mut() {
            records.pop();
            dropped += 1;
        }
    }
    if dropped > 0 {
        notes.push(format!("the last {dropped} record(s)"));
        answer["truncated"] = Value::Bool(true);
    }
    answer["note"] = Value::String(format!(
        "left out to fit {max_chars} characters: {}; call on a single file (or a smaller \
         folder) to see everything",
        notes.join(", ")
    ));
    answer.to_string()
}

fn output_text(output: &ToolOutput) -> String {
    match output {
        ToolOutput::Error { message } => message.clone(),
        ToolOutput::Denied(denial) => format!("refused: {}", denial.message),
        ToolOutput::Success { content } => content.clone(),
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests build workspaces (and links out of them) behind the jail's back"
)]
mod tests {
    use std::path::{Path, PathBuf};

    use pp_docs::job::run_job;
    use pretty_assertions::assert_eq;

    use super::*;

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

    fn call_with(
        dir: &Path,
        settings: &DocsSettings,
        arguments: &Value,
    ) -> Result<Value, ToolOutput> {
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
        std::os::unix::fs::symlink(dir.path().join("other"), dir.path().join("invoices/in"))
            .unwrap();
        let answer = call(dir.path(), &json!({"path": "invoices"})).unwrap();
        let files: Vec<&str> = answer["invoices"]
            .as_array()
            .unwrap()
            .iter()
            .map(|record| record["file"].as_str().unwrap())
            .collect();
        assert_eq!(files.len(), 9, "{files:?}");
        assert!(
            files.iter().all(|file| !file.contains("out/")
                && !file.contains("in/")
                && !file.contains("link")),
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
}
