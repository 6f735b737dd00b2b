//! The answer of `extract_invoice` on a folder, cut to the output cap.

use serde_json::Value;

/// The folder answer as text of at most about `max_chars` characters: when it is longer,
/// the records' `layout_text` goes first, then their `items`, then records from the end
/// (the totals and findings always stay); a `note` says what was left out.
pub(super) fn fit(answer: &mut Value, max_chars: usize) -> String {
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
