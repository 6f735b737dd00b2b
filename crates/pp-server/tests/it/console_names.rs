//! The console's names are the Rust enums' names: its lists of event types, task and
//! approval states, actors, change kinds and error codes (JavaScript in `assets/`) are
//! read here and compared with `ALL`/`NAMES` of the enums that define them, so a name
//! added or renamed in Rust and not in the console fails this test.
#![expect(
    clippy::disallowed_methods,
    reason = "reads this crate's own console assets (as build.rs does), not model paths"
)]

use std::collections::BTreeSet;

use pp_server::ErrorCode;
use pp_types::{Actor, ApprovalState, AuditAction, ChangeKind, EventType, TaskState};

/// The text of `assets/{name}`.
fn asset(name: &str) -> String {
    let path = format!("{}/assets/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{path}: {error}"))
}

/// Every JavaScript file of the console, with its text.
fn assets() -> Vec<(String, String)> {
    let directory = format!("{}/assets", env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for entry in std::fs::read_dir(&directory).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|extension| extension == "js") {
            let text = std::fs::read_to_string(&path).unwrap();
            files.push((path.display().to_string(), text));
        }
    }
    files
}

/// The bracketed literal (`[…]` or `{…}`) that follows `marker` in `source`.
fn literal_after<'a>(source: &'a str, marker: &str) -> &'a str {
    let start = source
        .find(marker)
        .unwrap_or_else(|| panic!("`{marker}` not found"));
    let rest = &source[start + marker.len()..];
    let open = rest
        .find(['[', '{'])
        .unwrap_or_else(|| panic!("no literal after `{marker}`"));
    let mut depth = 0;
    for (index, c) in rest[open..].char_indices() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => {
                depth -= 1;
                if depth == 0 {
                    return &rest[open..=open + index];
                }
            }
            _ => {}
        }
    }
    panic!("unclosed literal after `{marker}`")
}

/// The body of `function {name}(` in `source`, up to the next top-level `}`.
fn function_body<'a>(source: &'a str, name: &str) -> &'a str {
    let marker = format!("function {name}(");
    let start = source
        .find(&marker)
        .unwrap_or_else(|| panic!("`{marker}` not found"));
    let end = source[start..]
        .find("\n}\n")
        .unwrap_or_else(|| panic!("`{marker}` never ends"));
    &source[start..start + end]
}

/// Every `"…"` string in `text`, in order.
fn quoted(text: &str) -> Vec<String> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// The keys of an object literal written one `key: value` per line.
fn keys(object: &str) -> BTreeSet<String> {
    object
        .lines()
        .filter_map(|line| line.trim().split_once(':'))
        .map(|(key, _)| key.trim().trim_matches('"').to_owned())
        .filter(|key| !key.is_empty() && key.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .collect()
}

/// The `case "…":` labels in `text`.
fn cases(text: &str) -> BTreeSet<String> {
    text.split("case \"")
        .skip(1)
        .filter_map(|rest| rest.split_once('"'))
        .map(|(label, _)| label.to_owned())
        .collect()
}

/// The `"…"` strings compared with `{subject} === "…"` in `text`.
fn compared(text: &str, subject: &str) -> BTreeSet<String> {
    let marker = format!("{subject} === \"");
    text.split(marker.as_str())
        .skip(1)
        .filter_map(|rest| rest.split_once('"'))
        .map(|(value, _)| value.to_owned())
        .collect()
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|name| (*name).to_owned()).collect()
}

fn assert_subset(found: &BTreeSet<String>, known: &BTreeSet<String>, what: &str) {
    let unknown: Vec<&String> = found.difference(known).collect();
    assert!(unknown.is_empty(), "{what}: unknown names {unknown:?}");
}

#[test]
fn event_types_are_the_event_kinds() {
    let all = set(&EventType::NAMES);
    let listed = quoted(literal_after(&asset("api.js"), "const EVENT_TYPES ="));
    assert_eq!(listed, EventType::NAMES, "api.js EVENT_TYPES");
    let timeline = asset("timeline.js");
    assert_eq!(
        cases(function_body(&timeline, "eventRow")),
        all,
        "timeline.js eventRow: one row per event type"
    );
    for (file, list) in [
        ("app.js", "const COUNT_EVENTS ="),
        ("approvals.js", "const CARD_EVENTS ="),
        ("decisions.js", "const REFRESH_EVENTS ="),
        ("chat.js", "const FOLDED ="),
        ("timeline.js", "const MODEL_ROWS ="),
    ] {
        let found: BTreeSet<String> = quoted(literal_after(&asset(file), list))
            .into_iter()
            .collect();
        assert_subset(&found, &all, &format!("{file} {list}"));
    }
    assert_subset(&cases(&timeline), &all, "timeline.js cases");
    // `resync` is the console's own: api.js tells listeners the stream reconnected.
    let mut seen = all;
    seen.insert("resync".to_owned());
    for (path, text) in assets() {
        assert_subset(
            &compared(&text, "stored.type"),
            &seen,
            &format!("{path} stored.type"),
        );
    }
}

#[test]
fn states_actors_and_kinds_are_the_enums() {
    let task_states = set(&TaskState::NAMES);
    let approval_states = set(&ApprovalState::NAMES);
    assert_eq!(
        quoted(literal_after(&asset("tasks.js"), "const TASK_STATES =")),
        TaskState::NAMES,
        "tasks.js TASK_STATES"
    );
    assert_eq!(
        quoted(literal_after(
            &asset("approvals.js"),
            "const APPROVAL_STATES ="
        )),
        ApprovalState::NAMES,
        "approvals.js APPROVAL_STATES"
    );
    let labelled = keys(literal_after(&asset("dom.js"), "const STATE_LABELS ="));
    let states: BTreeSet<String> = task_states.union(&approval_states).cloned().collect();
    assert_eq!(
        labelled, states,
        "dom.js STATE_LABELS: every task and approval state"
    );
    for (file, list) in [
        ("chat.js", "const ACTIVE ="),
        ("taskpage.js", "const ACTIVE ="),
        ("taskpage.js", "const RETRYABLE ="),
        ("timeline.js", "const ACTIVE ="),
        ("timeline.js", "const RETRYABLE ="),
    ] {
        let found: BTreeSet<String> = quoted(literal_after(&asset(file), list))
            .into_iter()
            .collect();
        assert_subset(&found, &task_states, &format!("{file} {list}"));
    }
    let words = keys(literal_after(&asset("card.js"), "const RESOLVED_WORDS ="));
    assert_subset(&words, &approval_states, "card.js RESOLVED_WORDS");

    let actors = set(&Actor::NAMES);
    assert_eq!(
        quoted(literal_after(&asset("audit.js"), "const ACTORS =")),
        Actor::NAMES,
        "audit.js ACTORS"
    );
    let started_by = keys(literal_after(&asset("dom.js"), "const STARTED_BY ="));
    assert_subset(&started_by, &actors, "dom.js STARTED_BY");
    let unattended = keys(literal_after(&asset("card.js"), "const UNATTENDED_BY ="));
    assert_subset(&unattended, &actors, "card.js UNATTENDED_BY");

    let kinds = keys(literal_after(&asset("changes.js"), "const KIND_WORDS ="));
    assert_eq!(kinds, set(&ChangeKind::NAMES), "changes.js KIND_WORDS");

    let audit = asset("audit.js");
    let login_line = audit
        .lines()
        .find(|line| line.starts_with("const LOGIN ="))
        .expect("audit.js names the login action");
    for name in quoted(login_line) {
        assert!(
            AuditAction::parse(&name).is_some(),
            "audit.js LOGIN `{name}`"
        );
    }
}

#[test]
fn error_codes_the_console_reads_are_api_codes() {
    let known = set(&ErrorCode::NAMES);
    let mut checked = 0;
    for (path, text) in assets() {
        let codes = compared(&text, "error.code");
        checked += codes.len();
        assert_subset(&codes, &known, &path);
    }
    assert!(
        checked >= 10,
        "only {checked} error codes found in the console"
    );
}
