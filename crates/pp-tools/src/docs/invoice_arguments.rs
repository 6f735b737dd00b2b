//! The arguments of `extract_invoice`: the path, and the corrections by file then field,
//! and how the corrections are matched to the files of a call.

use std::collections::BTreeMap;

use pp_types::ToolOutput;
use serde::{Deserialize, Deserializer, de};
use serde_json::{Map, Value};

/// The arguments of `extract_invoice`.
#[derive(Debug, Deserialize)]
pub(crate) struct Arguments<'a> {
    /// An invoice file or a folder of them, relative to the workspace root.
    pub(crate) path: &'a str,
    /// Fixes by file, then field.
    pub(crate) corrections: Option<Corrections>,
}

/// `corrections`: an object of file → fields; each file's fields are checked to be an
/// object too ([`corrections_of`]).
#[derive(Debug)]
pub(crate) struct Corrections(Map<String, Value>);

impl<'de> Deserialize<'de> for Corrections {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Map::deserialize(deserializer)
            .map(Self)
            .map_err(|_| de::Error::custom("must be an object: {\"<file>\": {\"<field>\": value}}"))
    }
}

/// The corrections argument: file → field → value.
pub(super) fn corrections_of(
    corrections: Option<Corrections>,
) -> Result<BTreeMap<String, Map<String, Value>>, ToolOutput> {
    let mut out = BTreeMap::new();
    for (file, fields) in corrections.map(|files| files.0).unwrap_or_default() {
        let Value::Object(fields) = fields else {
            return Err(ToolOutput::error(format!(
                "corrections for `{file}` must be an object of field → value, like \
                 {{\"seller_name\": \"某公司\"}}"
            )));
        };
        out.insert(file, fields);
    }
    Ok(out)
}

/// The corrections addressed to `file` (by the path given or the resolved one).
pub(super) fn take_fixes(
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

pub(super) fn unknown_file(file: &str, files: &[String]) -> ToolOutput {
    let mut shown: Vec<&str> = files.iter().take(20).map(String::as_str).collect();
    if files.len() > 20 {
        shown.push("…");
    }
    ToolOutput::error(format!(
        "corrections name `{file}`, which is not an invoice file of this call; its files: {}",
        shown.join(", ")
    ))
}
