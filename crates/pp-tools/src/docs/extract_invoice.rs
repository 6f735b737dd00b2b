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

use super::input::{docs_error, read_document};
use super::invoice_answer::fit;
use super::invoice_arguments::{Arguments, corrections_of, take_fixes, unknown_file};
use super::settings::DocsSettings;
use crate::blocking::SyncTool;
use crate::files::common::{jail_error, respond};

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
    let Arguments { path, corrections } = crate::args::parse(arguments)?;
    let mut fixes = corrections_of(corrections)?;
    let probe = jail.probe(path).map_err(|error| jail_error(&error))?;
    let today = today_utc(settings.clock.as_ref());
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
mod tests;
