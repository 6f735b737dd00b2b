//! The soak's end checks: tasks, events, approvals, audit rows and files agree.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pp_test_support::http::Endpoint;
use pp_test_support::process::Pocketpilot;
use serde_json::Value;

use crate::{CLI_LIMIT, FILES, REQUEST_LIMIT, content, terminal, workspace_name};

/// What the end checks found.
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) violations: Vec<String>,
    pub(crate) states: BTreeMap<String, usize>,
    pub(crate) approved: usize,
    pub(crate) stale: usize,
    pub(crate) executions: usize,
    pub(crate) reasked: usize,
}

/// Cross-checks tasks (CLI), events (CLI), approvals and audit rows (API) and the files.
pub(crate) async fn verify(
    pocketpilot: &Pocketpilot,
    endpoint: &Endpoint,
    root: &Path,
    tasks: usize,
    approved_by_us: &BTreeSet<String>,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    let listed = pocketpilot
        .cli(&["tasks", "list", "--json", "--limit", "1000"], CLI_LIMIT)
        .await?
        .json()?;
    let listed = listed["tasks"].as_array().cloned().unwrap_or_default();
    let mut by_workspace: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for task in &listed {
        if let (Some(workspace), Some(id)) = (task["workspace"].as_str(), task["id"].as_str()) {
            by_workspace
                .entry(workspace.to_owned())
                .or_default()
                .push(id.to_owned());
        }
    }
    let mut approval_states: BTreeMap<String, String> = BTreeMap::new();
    for index in 0..tasks {
        let name = workspace_name(index);
        let ids = by_workspace.remove(&name).unwrap_or_default();
        let [id] = ids.as_slice() else {
            report.violations.push(format!(
                "workspace {name} has {} tasks, expected exactly 1",
                ids.len()
            ));
            continue;
        };
        let folder = root.join("ws").join(&name);
        check_task(
            pocketpilot,
            endpoint,
            id,
            &folder,
            &mut report,
            &mut approval_states,
        )
        .await?;
    }
    for (workspace, ids) in by_workspace {
        report
            .violations
            .push(format!("unexpected tasks {ids:?} in workspace {workspace}"));
    }
    for id in approved_by_us {
        match approval_states.get(id).map(String::as_str) {
            // Stale: the decision is recorded, the stale check refused to run it (only a
            // re-asked, already executed call can be stale here; `check_task` flags that).
            Some("approved" | "stale") => {}
            Some(state) => report.violations.push(format!(
                "lost approval: `approvals approve {id}` succeeded but the approval is {state}"
            )),
            None => report.violations.push(format!(
                "lost approval: `approvals approve {id}` succeeded but no task event names it"
            )),
        }
    }
    Ok(report)
}

/// The checks for one task.
async fn check_task(
    pocketpilot: &Pocketpilot,
    endpoint: &Endpoint,
    id: &str,
    folder: &Path,
    report: &mut Report,
    approval_states: &mut BTreeMap<String, String>,
) -> std::io::Result<()> {
    let task = pocketpilot
        .cli(&["tasks", "show", id, "--json"], CLI_LIMIT)
        .await?
        .json()?;
    let state = task["state"].as_str().unwrap_or("?").to_owned();
    *report.states.entry(state.clone()).or_default() += 1;
    if !terminal(&state) && state != "waiting_approval" {
        report.violations.push(format!(
            "task {id} is `{state}`: neither ended nor explicitly waiting"
        ));
    }
    let events = pocketpilot
        .cli(&["tasks", "events", id, "--json"], CLI_LIMIT)
        .await?
        .json()?;
    let events = events["events"].as_array().cloned().unwrap_or_default();

    // Approvals named by the events, and their stored state (via the API).
    let mut approvals: BTreeMap<String, Value> = BTreeMap::new();
    for event in &events {
        if event["type"] == "approval_required"
            && let Some(approval) = event["approval_id"].as_str()
        {
            let card = endpoint
                .request(
                    "GET",
                    &format!("/api/approvals/{approval}"),
                    None,
                    REQUEST_LIMIT,
                )
                .await?;
            if card.status != 200 {
                report.violations.push(format!(
                    "lost approval: task {id}'s event names approval {approval}, the API answers {}",
                    card.status
                ));
                continue;
            }
            approvals.insert(approval.to_owned(), card.json()?);
        }
    }
    let pending = approvals
        .values()
        .filter(|card| card["state"] == "pending")
        .count();
    match (state.as_str(), pending) {
        ("waiting_approval", 1) => {}
        ("waiting_approval", n) => report.violations.push(format!(
            "lost approval: task {id} is waiting with {n} pending approvals"
        )),
        (_, 0) => {}
        (_, n) => report.violations.push(format!(
            "task {id} is `{state}` but still has {n} pending approvals"
        )),
    }
    for (approval, card) in &approvals {
        let approval_state = card["state"].as_str().unwrap_or("?").to_owned();
        match approval_state.as_str() {
            "approved" => report.approved += 1,
            "stale" => report.stale += 1,
            _ => {}
        }
        approval_states.insert(approval.clone(), approval_state);
    }

    // A retry asks again only for a call whose result was never recorded. A retry that
    // starts again from the prompt begins a new conversation (`task_started`), whose
    // calls are new calls that ask again, whatever ids they reuse.
    let mut executed_calls = BTreeSet::new();
    let mut after_retry = false;
    for event in &events {
        match event["type"].as_str() {
            Some("task_started") => executed_calls.clear(),
            Some("tool_result") => {
                executed_calls.insert(event["call_id"].as_str().unwrap_or("").to_owned());
            }
            Some("task_retried") => after_retry = true,
            Some("approval_required") if after_retry => {
                after_retry = false;
                let call = event["call_id"].as_str().unwrap_or("");
                if executed_calls.contains(call) {
                    report.violations.push(format!(
                        "task {id}: the retry asked again for approval of call {call} ({}), \
                         which had already run (its result is event #{}); approving it again \
                         would run it twice",
                        event["name"].as_str().unwrap_or("?"),
                        events
                            .iter()
                            .find(|e| e["type"] == "tool_result" && e["call_id"] == call)
                            .and_then(|e| e["seq"].as_u64())
                            .unwrap_or(0)
                    ));
                }
            }
            _ => {}
        }
    }

    // Audit rows of executions: at most one per approval, only for approved ones.
    let audit = endpoint
        .get_json(
            &format!("/api/audit?task_id={id}&action=tool_executed&limit=1000"),
            REQUEST_LIMIT,
        )
        .await?;
    let mut executed_per_approval: BTreeMap<String, usize> = BTreeMap::new();
    let mut executed_per_file: BTreeMap<String, usize> = BTreeMap::new();
    for row in audit["entries"].as_array().into_iter().flatten() {
        let Some(approval) = row["approval_id"].as_str() else {
            report.violations.push(format!(
                "task {id}: a tool_executed audit row has no approval"
            ));
            continue;
        };
        *executed_per_approval
            .entry(approval.to_owned())
            .or_default() += 1;
        report.executions += 1;
        match approvals.get(approval) {
            Some(card) if card["state"] == "approved" => {
                if let Some(path) = card["arguments"]["path"].as_str() {
                    *executed_per_file.entry(path.to_owned()).or_default() += 1;
                }
            }
            Some(card) => report.violations.push(format!(
                "task {id}: approval {approval} executed but is {}",
                card["state"]
            )),
            None => report.violations.push(format!(
                "task {id}: approval {approval} executed but no event asked for it"
            )),
        }
    }
    for (approval, count) in &executed_per_approval {
        if *count > 1 {
            report.violations.push(format!(
                "double execution: approval {approval} of task {id} executed {count} times"
            ));
        }
    }
    for count in executed_per_file.values() {
        report.reasked += count.saturating_sub(1);
    }

    // Calls recorded as started (the write-ahead trace written right before an approved
    // call runs): a crash between the write and its recorded result leaves the file with
    // this trace and no `tool_executed` row, which is the truth the ledger can tell.
    let started_rows = endpoint
        .get_json(
            &format!("/api/audit?task_id={id}&action=tool_started&limit=1000"),
            REQUEST_LIMIT,
        )
        .await?;
    let mut started_per_file: BTreeMap<String, usize> = BTreeMap::new();
    for row in started_rows["entries"].as_array().into_iter().flatten() {
        let card = row["approval_id"].as_str().and_then(|a| approvals.get(a));
        if let Some(path) = card.and_then(|card| card["arguments"]["path"].as_str()) {
            *started_per_file.entry(path.to_owned()).or_default() += 1;
        }
    }

    // Events agree with the audit: one write result per audited execution. A retry that
    // continues after a recorded write repeats that result right after `task_retried`
    // (same call, same content: nothing ran again), so such a replay is not counted.
    let mut results: BTreeMap<String, String> = BTreeMap::new();
    let mut replaying = false;
    let mut write_results = 0;
    for event in events.iter() {
        if event["type"] == "task_retried" {
            replaying = true;
            continue;
        }
        if event["type"] != "tool_result" {
            replaying = false;
            continue;
        }
        if event["name"] != "write_file" {
            continue;
        }
        let call = event["call_id"].as_str().unwrap_or_default().to_owned();
        let content = event["content"].as_str().unwrap_or_default().to_owned();
        if replaying && results.get(&call) == Some(&content) {
            continue;
        }
        results.insert(call, content);
        write_results += 1;
    }
    let audited: usize = executed_per_approval.values().sum();
    if write_results != audited {
        report.violations.push(format!(
            "task {id}: {write_results} write results in the events but {audited} tool_executed audit rows"
        ));
    }

    check_files(
        id,
        &state,
        folder,
        &executed_per_file,
        &started_per_file,
        report,
    );
    Ok(())
}

/// Each file is absent or exactly what the script wrote, exists only when an execution
/// was audited (or, after a crash right after the write, recorded as started), and
/// nothing else is left in the workspace.
#[expect(
    clippy::disallowed_methods,
    reason = "the soak reads back its own temporary workspaces"
)]
fn check_files(
    id: &str,
    state: &str,
    folder: &Path,
    executed: &BTreeMap<String, usize>,
    started: &BTreeMap<String, usize>,
    report: &mut Report,
) {
    for file in FILES {
        let path = folder.join(file);
        let audited = executed.get(file).copied().unwrap_or(0);
        match std::fs::read(&path) {
            Ok(bytes) => {
                if bytes != content(file).as_bytes() {
                    report.violations.push(format!(
                        "half-written file: {} has {} bytes that differ from the {} the script wrote",
                        path.display(),
                        bytes.len(),
                        content(file).len()
                    ));
                }
                if audited == 0 && started.get(file).copied().unwrap_or(0) == 0 {
                    report.violations.push(format!(
                        "task {id}: {} exists but no tool_executed or tool_started audit row \
                         covers it",
                        path.display()
                    ));
                }
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                if audited > 0 {
                    report.violations.push(format!(
                        "task {id}: the audit says {file} was written but it is absent"
                    ));
                }
                if state == "completed" {
                    report.violations.push(format!(
                        "task {id} completed but {} is absent",
                        path.display()
                    ));
                }
            }
            Err(error) => report
                .violations
                .push(format!("cannot read {}: {error}", path.display())),
        }
    }
    if let Ok(entries) = std::fs::read_dir(folder) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !FILES.contains(&name.as_str()) {
                report.violations.push(format!(
                    "leftover in {}: {name} (a half-written temp file?)",
                    folder.display()
                ));
            }
        }
    }
}
