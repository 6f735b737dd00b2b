//! What a run reports besides the live view: the closing summary's counts and the
//! `run --json` event feed.

use std::sync::Arc;

use pp_tasks::{AuditFilter, TaskService};
use pp_types::{Event, EventKind, TaskId, TaskRecord};

use crate::output::outln;
use crate::render::json_safe;

/// What a task did, counted from its events and its audit rows.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Counts {
    steps: u32,
    tool_calls: usize,
    denials: usize,
    approvals: usize,
    files_changed: usize,
    tokens: Option<u64>,
}

impl Counts {
    /// Reads `task`'s events and audit rows.
    pub(crate) async fn read(service: &TaskService, task: &TaskId) -> anyhow::Result<Self> {
        let events = service.task_events(task, 0).await?;
        let audit = service
            .list_audit(AuditFilter {
                task_id: Some(task.clone()),
                action: Some("tool_executed".to_owned()),
                limit: 10_000,
                ..AuditFilter::default()
            })
            .await?;
        let events: Vec<Event> = events.into_iter().map(|stored| stored.event).collect();
        Ok(Self::count(
            &events,
            audit.iter().filter_map(|entry| entry.target.as_deref()),
        ))
    }

    /// Counts `events`; `targets` are the paths the approved calls wrote.
    pub(crate) fn count<'a>(events: &[Event], targets: impl Iterator<Item = &'a str>) -> Self {
        let mut counts = Self::default();
        for event in events {
            counts.steps = counts.steps.max(event.step + 1);
            match &event.kind {
                EventKind::ToolCall { .. } => counts.tool_calls += 1,
                EventKind::ToolDenied { .. } => counts.denials += 1,
                EventKind::ApprovalRequired { .. } => counts.approvals += 1,
                EventKind::AssistantMessage {
                    usage: Some(usage), ..
                } => *counts.tokens.get_or_insert(0) += usage.total(),
                _ => {}
            }
        }
        let targets: std::collections::BTreeSet<&str> = targets.collect();
        counts.files_changed = targets.len();
        counts
    }

    /// `2 steps · 3 tool calls · 1 denied · 1 approval · 1 file changed · 812 tokens`.
    pub(crate) fn describe(&self) -> String {
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        let steps = usize::try_from(self.steps).unwrap_or(usize::MAX);
        let mut parts = vec![
            plural(steps, "step", "steps"),
            plural(self.tool_calls, "tool call", "tool calls"),
            format!("{} denied", self.denials),
            plural(self.approvals, "approval", "approvals"),
            plural(self.files_changed, "file changed", "files changed"),
        ];
        if let Some(tokens) = self.tokens {
            parts.push(format!("{tokens} tokens"));
        }
        parts.join(" · ")
    }
}

/// How Ctrl+C ended a run (exit code 130), as `run --json`'s `result` line says in
/// `interrupted` (`null` when it did not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Interrupted {
    /// At an approval card: nothing ran and the approval stays pending.
    ApprovalPending,
    /// While the task ran: it was cancelled once the running call had stopped.
    TaskCancelled,
    /// A second Ctrl+C: `run` left at once with the cancel recorded; the task is still
    /// `running` in the store until recovery ends it `cancelled`.
    CancelRequested,
}

/// `run --json`: prints the task's stored events on stdout as they are stored (the
/// objects the API's event stream sends as `data:`), one per line, then a `result` line.
pub(crate) struct JsonFeed {
    service: TaskService,
    task: TaskId,
    /// The sequence number of the last event printed; held while printing so the poller
    /// and the final drain never interleave or repeat.
    last: Arc<tokio::sync::Mutex<i64>>,
    /// Polls the store while the task runs; aborted on drop.
    poller: tokio::task::JoinHandle<()>,
}

/// How often `run --json` looks for new events while a segment runs.
const JSON_POLL: std::time::Duration = std::time::Duration::from_millis(200);

impl JsonFeed {
    /// Starts following `task`.
    pub(crate) fn start(service: &TaskService, task: &TaskId) -> Self {
        let service = service.clone();
        let last = Arc::new(tokio::sync::Mutex::new(0));
        let poller = {
            let (service, task, last) = (service.clone(), task.clone(), Arc::clone(&last));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(JSON_POLL).await;
                    if print_new(&service, &task, &last).await.is_err() {
                        return;
                    }
                }
            })
        };
        Self {
            service,
            task: task.clone(),
            last,
            poller,
        }
    }

    /// Prints what was stored since the last call.
    pub(crate) async fn pump(&self) -> anyhow::Result<()> {
        print_new(&self.service, &self.task, &self.last).await
    }

    /// Prints the remaining events and the `result` line; `interrupted` says how Ctrl+C
    /// ended the run, if it did (exit code 130 either way).
    pub(crate) async fn finish(
        &self,
        record: &TaskRecord,
        approval: Option<&str>,
        interrupted: Option<Interrupted>,
    ) -> anyhow::Result<()> {
        self.poller.abort();
        self.pump().await?;
        let result = serde_json::json!({
            "type": "result",
            "task_id": record.id,
            "state": record.state,
            "final_text": record.final_text,
            "failure_reason": record.failure_reason,
            "error": record.error,
            "approval_id": approval,
            "interrupted": interrupted,
        });
        outln!("{}", json_safe(&result.to_string()))?;
        Ok(())
    }
}

impl Drop for JsonFeed {
    fn drop(&mut self) {
        self.poller.abort();
    }
}

async fn print_new(
    service: &TaskService,
    task: &TaskId,
    last: &tokio::sync::Mutex<i64>,
) -> anyhow::Result<()> {
    let mut last = last.lock().await;
    let events = service.task_events(task, *last).await?;
    for event in events {
        if event.seq > *last {
            outln!("{}", json_safe(&serde_json::to_string(&event)?))?;
            *last = event.seq;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_steps_calls_denials_approvals_distinct_files_and_tokens() {
        let events: Vec<Event> = serde_json::from_value(serde_json::json!([
            {"step": 0, "type": "assistant_message", "usage": {"prompt_tokens": 10, "completion_tokens": 2}},
            {"step": 0, "type": "tool_call", "call_id": "1", "name": "read_file", "arguments": "{}"},
            {"step": 0, "type": "tool_denied", "call_id": "1", "name": "read_file", "rule": "escapes", "message": "no", "denials": 1},
            {"step": 1, "type": "assistant_message", "usage": {"prompt_tokens": 20, "completion_tokens": 3}},
            {"step": 1, "type": "tool_call", "call_id": "2", "name": "write_file", "arguments": "{}"},
            {"step": 1, "type": "approval_required", "call_id": "2", "name": "write_file", "capability": "file:write", "risk": "high", "arguments": {}}
        ]))
        .unwrap();
        let counts = Counts::count(&events, ["a.txt", "b.txt", "a.txt"].into_iter());
        assert_eq!(
            counts.describe(),
            "2 steps · 2 tool calls · 1 denied · 1 approval · 2 files changed · 35 tokens"
        );
        assert_eq!(
            Counts::count(&[], std::iter::empty()).describe(),
            "0 steps · 0 tool calls · 0 denied · 0 approvals · 0 files changed"
        );
    }
}
