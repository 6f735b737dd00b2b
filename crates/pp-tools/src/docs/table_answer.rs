//! The answer of `analyze_table`: the child's rows as JSON that fits the output cap.

use pp_docs::table::TableInfo;
use pp_docs::table::bounded::json_chars;
use pp_docs::table::ops::{Op, ResultSet};
use pp_types::ToolOutput;
use serde_json::{Value, json};

/// The answer as JSON of at most `max_chars` characters: rows are dropped from the end
/// until it fits, and `truncated` and `note` say so (and say which cells the child cut).
/// Every row is measured once and the answer written once.
pub(crate) fn answer(
    path: &str,
    op: Op,
    mut result: ResultSet,
    info: &TableInfo,
    max_chars: usize,
) -> Result<String, ToolOutput> {
    let mut notes = Vec::new();
    if info.truncated {
        notes.push(format!(
            "only the first {} rows of the file were read; results cover those rows",
            info.rows
        ));
    }
    if result.cut_cells > 0 {
        notes.push(format!(
            "{} cell(s) cut to fit the {max_chars}-character output limit (a cut text ends \
             with {})",
            result.cut_cells,
            pp_docs::table::bounded::CUT_MARK
        ));
    }
    let cut_note = |keep: usize| {
        format!(
            "rows cut to {keep} to fit the {max_chars}-character output limit; pass \
             `columns` or a smaller `limit`"
        )
    };
    let envelope = |result: &ResultSet, notes: &[String]| {
        let mut value = json!({
            "path": path,
            "op": op,
            "columns": result.columns,
            "rows": [],
            "truncated": result.truncated,
            "total_rows": result.total_rows,
            "table": info,
        });
        if !notes.is_empty() {
            value["note"] = Value::from(notes.join("; "));
        }
        value
    };
    let lengths: Vec<usize> = result
        .rows
        .iter()
        .map(|row| 2 + row.len().saturating_sub(1) + row.iter().map(json_chars).sum::<usize>())
        .collect();
    let rows_chars = |keep: usize| lengths[..keep].iter().sum::<usize>() + keep.saturating_sub(1);
    let mut keep = lengths.len();
    let mut final_notes = notes.clone();
    if result.cut_for_size {
        final_notes.push(cut_note(keep));
    }
    if json_chars(&envelope(&result, &final_notes)) + rows_chars(keep) > max_chars {
        // The note with the most digits it can have, so the final one is no longer.
        let mut widest = notes.clone();
        widest.push(cut_note(keep));
        result.truncated = true;
        let base = json_chars(&envelope(&result, &widest));
        if base > max_chars {
            return Err(ToolOutput::error(format!(
                "the answer is larger than {max_chars} characters even without rows; name \
                 fewer `columns`"
            )));
        }
        while keep > 0 && base + rows_chars(keep) > max_chars {
            keep -= 1;
        }
        final_notes = notes;
        final_notes.push(cut_note(keep));
    }
    result.rows.truncate(keep);
    let mut value = envelope(&result, &final_notes);
    value["rows"] = Value::from(std::mem::take(&mut result.rows));
    let text = serde_json::to_string(&value)
        .map_err(|error| ToolOutput::error(format!("cannot write the answer: {error}")))?;
    if text.chars().count() > max_chars {
        return Err(ToolOutput::error(format!(
            "cannot fit the answer into {max_chars} characters; name fewer `columns`"
        )));
    }
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_over_the_cap_drop_rows_and_say_so() {
        let result = ResultSet {
            columns: vec!["a".to_owned()],
            rows: (0..100)
                .map(|index| vec![json!(format!("value {index}"))])
                .collect(),
            truncated: false,
            total_rows: 100,
            cut_cells: 0,
            cut_for_size: false,
        };
        let info = TableInfo {
            rows: 100,
            columns: 1,
            truncated: false,
            sheet: None,
            sheets: Vec::new(),
            encoding: Some("UTF-8".to_owned()),
            delimiter: Some(','),
        };
        let text = answer("t.csv", Op::Head, result, &info, 600).unwrap();
        assert!(text.chars().count() <= 600, "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["truncated"], json!(true));
        assert!(
            value["note"].as_str().unwrap().contains("600-character"),
            "{value}"
        );
        let rows = value["rows"].as_array().unwrap().len();
        assert!(rows > 0 && rows < 100, "{rows}");
    }
}
