//! The team soak's end checks: tasks and the global feed, the follower's view of it,
//! approvals against the audit, and the unique files against every host's folders.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use pp_test_support::http::Endpoint;
use pp_types::Timestamp;
use serde_json::Value;

use std::path::Path;

use crate::{
    HOSTS, Host, REQUEST_LIMIT, Shared, WORKSPACES, lock, output_content, output_name,
    shared_workspace, workspace_name, writes,
};

/// What the checks need.
pub(crate) struct Context<'a> {
    /// The owner's endpoint on serve A.
    pub(crate) admin: &'a Endpoint,
    pub(crate) hosts: &'a [Host],
    pub(crate) shared: &'a Shared,
    pub(crate) tasks: usize,
    pub(crate) approval_percent: u8,
    pub(crate) seed: u64,
    pub(crate) killed: bool,
    pub(crate) deadline: Instant,
}

/// What every check found (printed whether or not it passed).
#[derive(Debug, Default)]
pub(crate) struct Report {
    pub(crate) lines: Vec<String>,
    /// When the last `task_completed` was stored (ms since the epoch).
    pub(crate) last_completed_ms: Option<i64>,
}

/// The whole global feed, read as JSON pages after the run.
async fn feed(admin: &Endpoint) -> std::io::Result<Vec<Value>> {
    let mut events = Vec::new();
    let mut after = 0;
    loop {
        let page = admin
            .get_json(
                &format!("/api/events?after={after}&limit=5000"),
                REQUEST_LIMIT,
            )
            .await?;
        let got = page["events"].as_array().cloned().unwrap_or_default();
        let Some(last) = got.last().and_then(|event| event["seq"].as_u64()) else {
            return Ok(events);
        };
        if last <= after {
            return Err(std::io::Error::other(format!(
                "GET /api/events?after={after} answered seq {last}"
            )));
        }
        after = last;
        events.extend(got);
    }
}

/// Every audit row with `action`, paged newest first.
async fn audit(admin: &Endpoint, action: &str) -> std::io::Result<Vec<Value>> {
    let mut rows = Vec::new();
    let mut before: Option<i64> = None;
    loop {
        let mut path = format!("/api/audit?action={action}&limit=1000");
        if let Some(before) = before {
            path.push_str(&format!("&before={before}"));
        }
        let page = admin.get_json(&path, REQUEST_LIMIT).await?;
        let entries = page["entries"].as_array().cloned().unwrap_or_default();
        let oldest = entries
            .iter()
            .filter_map(|entry| entry["id"].as_i64())
            .min();
        let full = entries.len() == 1000;
        rows.extend(entries);
        match oldest {
            Some(oldest) if full => before = Some(oldest),
            _ => return Ok(rows),
        }
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or("(none)").to_owned()
}

/// Runs every check, appending violations; the report says what each found.
pub(crate) async fn verify(
    context: &Context<'_>,
    violations: &mut Vec<String>,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    let tasks: BTreeMap<String, usize> = lock(context.shared).tasks.clone();

    // The feed: increasing, once each; one task_completed per task.
    let events = feed(context.admin).await?;
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|event| event["seq"].as_u64())
        .collect();
    if seqs.len() != events.len() {
        violations.push("events without a seq in the feed".to_owned());
    }
    if seqs.windows(2).any(|pair| pair[0] >= pair[1]) {
        violations.push("the feed's seqs are not strictly increasing".to_owned());
    }
    let mut completed: BTreeMap<String, usize> = BTreeMap::new();
    let mut interrupted: BTreeMap<String, usize> = BTreeMap::new();
    let mut starts: BTreeMap<String, usize> = BTreeMap::new();
    for event in &events {
        let task = text(&event["task_id"]);
        match event["type"].as_str() {
            Some("task_completed") => {
                *completed.entry(task).or_default() += 1;
                let at = serde_json::from_value::<Timestamp>(event["at"].clone()).ok();
                report.last_completed_ms =
                    report.last_completed_ms.max(at.map(Timestamp::as_millis));
            }
            Some("task_interrupted") => *interrupted.entry(task).or_default() += 1,
            Some("task_started") => *starts.entry(task).or_default() += 1,
            _ => {}
        }
    }
    for (id, index) in &tasks {
        match completed.get(id) {
            Some(1) => {}
            Some(n) => violations.push(format!("task {index} ({id}) completed {n} times")),
            None => violations.push(format!("task {index} ({id}) has no task_completed")),
        }
    }
    for (id, n) in &completed {
        if !tasks.contains_key(id) {
            violations.push(format!("task_completed ×{n} for unknown task {id}"));
        }
    }
    let interruptions: usize = interrupted.values().sum();
    report.lines.push(format!(
        "tasks: {} created, {} with exactly one task_completed; {interruptions} interruption(s) \
         of {} task(s)",
        tasks.len(),
        completed.values().filter(|n| **n == 1).count(),
        interrupted.len()
    ));
    if tasks.len() != context.tasks {
        violations.push(format!(
            "{} of {} tasks were created",
            tasks.len(),
            context.tasks
        ));
    }

    // The follower saw exactly the feed.
    let newest = seqs.last().copied().unwrap_or(0);
    let wait_until = context
        .deadline
        .min(Instant::now() + Duration::from_secs(30));
    while lock(context.shared).seen.last().copied().unwrap_or(0) < newest
        && Instant::now() < wait_until
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    {
        let record = lock(context.shared);
        let seen = &record.seen;
        let unique: BTreeSet<u64> = seen.iter().copied().collect();
        let stored: BTreeSet<u64> = seqs.iter().copied().collect();
        let lost: Vec<u64> = stored.difference(&unique).copied().collect();
        let extra: Vec<u64> = unique.difference(&stored).copied().collect();
        let twice = seen.len() - unique.len();
        let ordered = seen.windows(2).all(|pair| pair[0] < pair[1]);
        report.lines.push(format!(
            "events: {} in the feed; the SSE follower saw {} ({} lost, {twice} twice, {} not \
             in the feed, {}; {} reconnects)",
            stored.len(),
            seen.len(),
            lost.len(),
            extra.len(),
            if ordered {
                "increasing"
            } else {
                "OUT OF ORDER"
            },
            record.reconnects
        ));
        if !lost.is_empty() {
            violations.push(format!(
                "the follower lost {} event(s), first {:?}; errors {:?}",
                lost.len(),
                lost.first(),
                record.sse_errors.iter().take(3).collect::<Vec<_>>()
            ));
        }
        if twice > 0 {
            violations.push(format!("the follower saw {twice} event(s) twice"));
        }
        if !extra.is_empty() {
            violations.push(format!(
                "the follower saw {} event(s) the feed does not hold, first {:?}",
                extra.len(),
                extra.first()
            ));
        }
        if !ordered {
            violations.push("the follower saw events out of order".to_owned());
        }
    }

    // Approvals: every race one 2xx and one 409; approved once, executed once.
    let races = lock(context.shared).races.clone();
    let mut clean_races = 0;
    for (id, outcomes) in &races {
        let mut sorted = outcomes.clone();
        sorted.sort();
        let won = sorted.iter().filter(|o| *o == "2xx").count();
        let lost = sorted
            .iter()
            .filter(|o| *o == "409 already_resolved")
            .count();
        if won == 1 && lost == 1 {
            clean_races += 1;
        } else if won == 1 && sorted.iter().any(|o| o == crate::serve_kill::SOLO) {
            // The serve-kill round's approval: approved alone through B.
        } else if won == 1 && context.killed && sorted.iter().any(|o| o.starts_with("error")) {
            lock(context.shared).notes.push(format!(
                "approval {id}: one resolve went to the killed process: {sorted:?}"
            ));
        } else {
            violations.push(format!(
                "approval {id}: the two concurrent resolves got {sorted:?}, expected one 2xx \
                 and one 409 already_resolved"
            ));
        }
    }
    let approved_rows = audit(context.admin, "approval_approved").await?;
    let mut approved: BTreeMap<String, usize> = BTreeMap::new();
    let mut approved_task: BTreeMap<String, String> = BTreeMap::new();
    for row in &approved_rows {
        let id = text(&row["approval_id"]);
        approved_task.insert(id.clone(), text(&row["task_id"]));
        *approved.entry(id).or_default() += 1;
    }
    for (id, n) in &approved {
        if *n != 1 {
            violations.push(format!("approval {id} was approved {n} times (audit)"));
        }
        if !races.contains_key(id) {
            violations.push(format!(
                "approval {id} was approved but never sent by the racers"
            ));
        }
    }
    // A decision refused at run time (the file changed since the approval was asked:
    // a retried call whose first run did write) is audited as `approval_stale`.
    let stale: BTreeSet<String> = audit(context.admin, "approval_stale")
        .await?
        .iter()
        .map(|row| text(&row["approval_id"]))
        .collect();
    for (id, outcomes) in &races {
        if outcomes.iter().any(|o| o == "2xx") && !approved.contains_key(id) && !stale.contains(id)
        {
            violations.push(format!(
                "approval {id}: a 2xx resolve but neither approval_approved nor approval_stale"
            ));
        }
    }
    let is_write = |row: &&Value| row["tool"].as_str() == Some("write_file");
    let executed_rows = audit(context.admin, "tool_executed").await?;
    let mut by_approval: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_task: BTreeMap<String, usize> = BTreeMap::new();
    // When each task's write first ran (ms): no approval of the task may be asked later.
    let mut written_at: BTreeMap<String, i64> = BTreeMap::new();
    for row in executed_rows.iter().filter(is_write) {
        *by_approval.entry(text(&row["approval_id"])).or_default() += 1;
        *by_task.entry(text(&row["task_id"])).or_default() += 1;
        if let Some(at) = millis(&row["at"]) {
            let first = written_at.entry(text(&row["task_id"])).or_insert(at);
            *first = (*first).min(at);
        }
    }
    // `tool_started` is committed right before an approved call runs: one without its
    // outcome is a write a kill may have cut (the ledger says so); it counts as the
    // task's one run when the task was interrupted.
    let mut ended: BTreeSet<String> = by_approval.keys().cloned().collect();
    ended.extend(
        audit(context.admin, "tool_failed")
            .await?
            .iter()
            .map(|row| text(&row["approval_id"])),
    );
    let mut cut = BTreeSet::new();
    let mut cut_by_task: BTreeMap<String, usize> = BTreeMap::new();
    for row in audit(context.admin, "tool_started")
        .await?
        .iter()
        .filter(is_write)
    {
        let (id, task) = (text(&row["approval_id"]), text(&row["task_id"]));
        if ended.contains(&id) {
            continue;
        }
        if interrupted.contains_key(&task) {
            *cut_by_task.entry(task).or_default() += 1;
            cut.insert(id);
        } else {
            violations.push(format!(
                "approval {id}: tool_started without an outcome, yet task {task} was never \
                 interrupted"
            ));
        }
    }
    let mut unexecuted = 0;
    for id in approved.keys() {
        match by_approval.get(id) {
            Some(1) => {}
            Some(n) => violations.push(format!("approval {id} executed {n} times")),
            None if cut.contains(id) => {}
            None => {
                let task = approved_task.get(id).cloned().unwrap_or_default();
                if interrupted.contains_key(&task) {
                    // Its process died between the decision and the write; the retried
                    // task asked again (checked per task below).
                    unexecuted += 1;
                } else {
                    violations.push(format!("approval {id} approved but never executed"));
                }
            }
        }
    }
    for id in by_approval.keys() {
        if !approved.contains_key(id) {
            violations.push(format!(
                "a write ran under approval {id}, which was not approved"
            ));
        }
    }
    let writers = tasks
        .values()
        .filter(|index| writes(**index, context.approval_percent))
        .count();
    // A retry continues after the last recorded result (issue 29, item 3): a write whose
    // result is recorded is never asked again, so each task's write is recorded at most
    // once, whatever was killed. A call cut after `tool_started` may or may not have
    // written; it is asked again as a new approval that says "this call may already
    // have run", and if it did write, that approval is refused at run time as stale.
    // So: exactly one write recorded or cut per writing task, at most one recorded.
    for (id, index) in &tasks {
        let runs = by_task.get(id).copied().unwrap_or(0);
        let cuts = cut_by_task.get(id).copied().unwrap_or(0);
        if writes(*index, context.approval_percent) {
            if runs + cuts == 0 || runs > 1 {
                violations.push(format!(
                    "task {index} ({id}): its write ran {runs} times (+{cuts} cut by a kill); \
                     a retry must not run a recorded write again"
                ));
            }
        } else if runs + cuts > 0 {
            violations.push(format!(
                "task {index} ({id}): a read-only task wrote {runs} times"
            ));
        }
    }
    report.lines.push(format!(
        "approvals: {} raced (one 2xx + one 409 in {clean_races}); {} approved ({} once each); \
         {} stale; {} writes executed for {writers} writing tasks, {} more cut by a kill \
         after tool_started (file checked below); {unexecuted} approved call(s) of \
         interrupted tasks asked again before running",
        races.len(),
        approved.len(),
        approved.values().filter(|n| **n == 1).count(),
        stale.len(),
        by_approval.values().sum::<usize>(),
        cut.len(),
    ));

    asked_twice(context, &written_at, &cut, &mut report, violations).await?;

    // Files: each write in its workspace's shared folder (every host reaches the same
    // files through its own path), exact content, in no other workspace.
    let (mut placed, mut misplaced) = (0, 0);
    let shared_root = context
        .hosts
        .first()
        .and_then(|host| host.root.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    for (id, index) in &tasks {
        let places = by_task.get(id).copied().unwrap_or(0).max(1);
        let mut found = Vec::new();
        for workspace in 0..WORKSPACES {
            let name = workspace_name(workspace);
            let path = shared_workspace(&shared_root, &name).join(output_name(*index));
            if let Ok(content) = read(&path).await {
                found.push(("shared", name, content));
            }
        }
        let expected = output_content(*index, context.seed);
        if writes(*index, context.approval_percent) {
            let right = found.iter().all(|(_, workspace, content)| {
                *workspace == workspace_name(*index) && *content == expected
            });
            match found.len() {
                1 if right => placed += 1,
                count if right && count >= 1 && count <= places => placed += 1,
                _ => {
                    misplaced += 1;
                    violations.push(format!(
                        "{}: expected in exactly one host's {} (at most {places} after \
                         reruns) with {expected:?}, found {:?}",
                        output_name(*index),
                        workspace_name(*index),
                        found
                    ));
                }
            }
        } else if !found.is_empty() {
            misplaced += 1;
            violations.push(format!(
                "{} (a read-only task) exists: {found:?}",
                output_name(*index)
            ));
        }
    }
    report.lines.push(format!(
        "files: {placed} of {writers} unique files in their workspace's shared folder with \
         their content ({misplaced} wrong)"
    ));

    // The kill.
    if context.killed {
        let running = {
            let record = lock(context.shared);
            record
                .running_at_kill
                .or(record.serve_kill.as_ref().map(|round| round.running))
                .unwrap_or(0)
        };
        report.lines.push(format!(
            "kill: {running} task(s) running at the kill; {interruptions} interruption(s) \
             afterwards"
        ));
        if interruptions == 0 {
            if running > 0 {
                violations.push(format!(
                    "the victim was killed with {running} task(s) running somewhere, yet no \
                     task was interrupted (none running on the victim?)"
                ));
            } else {
                lock(context.shared)
                    .notes
                    .push("no task was running at the kill moment".to_owned());
            }
        }
    } else if interruptions > 0 {
        violations.push(format!(
            "{interruptions} interruption(s) without a kill ({})",
            HOSTS.join("/")
        ));
    }
    Ok(report)
}

/// A feed or audit time in ms since the epoch.
fn millis(value: &Value) -> Option<i64> {
    serde_json::from_value::<Timestamp>(value.clone())
        .ok()
        .map(Timestamp::as_millis)
}

/// Every approval row (`GET /api/approvals`, each state), by task.
async fn approvals_by_task(admin: &Endpoint) -> std::io::Result<BTreeMap<String, Vec<Value>>> {
    let mut by_task: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for state in ["pending", "approved", "rejected", "stale", "cancelled"] {
        let page = admin
            .get_json(
                &format!("/api/approvals?state={state}&limit=1000"),
                REQUEST_LIMIT,
            )
            .await?;
        for row in page["approvals"].as_array().into_iter().flatten() {
            by_task
                .entry(text(&row["task_id"]))
                .or_default()
                .push(row.clone());
        }
    }
    Ok(by_task)
}

/// Retry asks nothing twice (issue 29, item 3): no approval of a task was asked after
/// its write ran (a recorded write is continued from, never asked again), and every
/// approval asked again for a call cut after `tool_started` says it may already have
/// run (`may_have_run`). The serve-kill round's task is reported on its own.
async fn asked_twice(
    context: &Context<'_>,
    written_at: &BTreeMap<String, i64>,
    cut: &BTreeSet<String>,
    report: &mut Report,
    violations: &mut Vec<String>,
) -> std::io::Result<()> {
    let approvals = approvals_by_task(context.admin).await?;
    let tasks = lock(context.shared).tasks.clone();
    let (mut again, mut flagged, mut after_write) = (0, 0, 0);
    for (task, rows) in &approvals {
        let index = tasks.get(task).copied().unwrap_or(usize::MAX);
        let mut rows: Vec<&Value> = rows.iter().collect();
        rows.sort_by_key(|row| millis(&row["created_at"]).unwrap_or(0));
        if rows.len() > 1 {
            again += rows.len() - 1;
        }
        for row in &rows {
            let id = text(&row["id"]);
            let created = millis(&row["created_at"]).unwrap_or(0);
            if let Some(written) = written_at.get(task)
                && created > *written
            {
                after_write += 1;
                violations.push(format!(
                    "task {index} ({task}): approval {id} asked after its write ran: a \
                     person was asked twice for one change"
                ));
            }
            if row["may_have_run"] == true {
                flagged += 1;
            }
        }
        // A cut call's task asks again with the notice.
        let cut_here = rows.iter().any(|row| cut.contains(&text(&row["id"])));
        if cut_here && rows.len() > 1 && !rows.iter().any(|row| row["may_have_run"] == true) {
            violations.push(format!(
                "task {index} ({task}): a call cut after tool_started was asked again without \
                 \"this call may already have run\""
            ));
        }
    }
    report.lines.push(format!(
        "asked twice: {after_write} approval(s) asked after their task's write ran; {again} \
         asked again after a kill, {flagged} of them saying \"this call may already have run\""
    ));
    if let Some(round) = lock(context.shared).serve_kill.clone() {
        let rows = approvals.get(&round.task).map_or(0, Vec::len);
        let ran = written_at.contains_key(&round.task);
        report.lines.push(format!(
            "serve kill: B killed right after approving {} ({}; file {} at the kill; {} \
             running); its task asked {} approval(s) in all, its write recorded: {}",
            round.approval,
            round.answer,
            if round.file_seen {
                "written"
            } else {
                "not seen"
            },
            round.running,
            rows,
            if ran { "yes" } else { "no (cut or not run)" }
        ));
        if round.answer != "2xx" {
            violations.push(format!(
                "serve kill: approving {} through B answered {}",
                round.approval, round.answer
            ));
        }
    }
    Ok(())
}

/// A file's content, read off the async threads.
async fn read(path: &std::path::Path) -> std::io::Result<String> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || {
        #[expect(
            clippy::disallowed_methods,
            reason = "the team soak reads back its own temporary folders"
        )]
        std::fs::read_to_string(path)
    })
    .await
    .map_err(|error| std::io::Error::other(error.to_string()))?
}
