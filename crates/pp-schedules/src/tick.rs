//! One tick: fires each due schedule (its latest due occurrence, counting the missed
//! ones) or pauses it when it cannot fire any more, and says what became of each.

use std::collections::{BTreeSet, HashSet};
use std::path::PathBuf;

use pp_store::{FireOccurrence, Fired, NewTask, Schedule};
use pp_tasks::Workspaces;
use pp_types::{Actor, TaskId, Timestamp};

use crate::book::ScheduleBook;
use crate::error::{Result, SchedulerError};
use crate::folder::stored_workspace;
use crate::timetable::Timetable;

/// At most this many due schedules are fired per tick; the rest wait for the next one.
pub const TICK_LIMIT: usize = 1000;

/// What one tick did to one due schedule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TickOutcome {
    /// A task was created (`missed`: occurrences before this one that did not fire).
    Fired {
        /// The task.
        task: TaskId,
        /// The occurrence fired.
        occurrence: Timestamp,
        /// Missed occurrences recorded with it.
        missed: u64,
    },
    /// The occurrence was skipped: the previous task (or the chat session's turn) is
    /// still active.
    Skipped {
        /// The task still active.
        task: TaskId,
    },
    /// The schedule was paused (its workspace or chat session is gone).
    Paused {
        /// Why.
        reason: String,
    },
    /// Another process fired this occurrence first (or the schedule changed meanwhile).
    Lost,
    /// Firing failed (the store failed); the next tick tries again.
    Failed {
        /// What went wrong.
        error: String,
    },
}

/// What one tick did, per due schedule, in the order they were due.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TickReport {
    /// `(schedule id, outcome)`.
    pub outcomes: Vec<(String, TickOutcome)>,
}

impl TickReport {
    /// The tasks this tick created.
    pub fn fired(&self) -> Vec<TaskId> {
        self.outcomes
            .iter()
            .filter_map(|(_, outcome)| match outcome {
                TickOutcome::Fired { task, .. } => Some(task.clone()),
                _ => None,
            })
            .collect()
    }
}

/// One tick's work: fires the due schedules one after the other (`stored_folders`:
/// stored folders resolve, outside team mode).
pub(crate) async fn tick_once(
    book: &ScheduleBook,
    workspaces: &Workspaces,
    stored_folders: bool,
    script: Option<&serde_json::Value>,
    now: Timestamp,
) -> Result<TickReport> {
    let due = book.due(now, TICK_LIMIT).await?;
    // Which workspace folders are there, looked at once per tick on the blocking pool
    // (not once per schedule: a tick may fire a thousand).
    let folders: Vec<PathBuf> = due
        .iter()
        .filter_map(|schedule| {
            stored_workspace(workspaces, stored_folders, &schedule.spec.workspace)
        })
        .map(|workspace| workspace.path.clone())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let present: HashSet<PathBuf> = tokio::task::spawn_blocking(move || {
        folders
            .into_iter()
            .filter(|folder| folder.is_dir())
            .collect()
    })
    .await
    .map_err(|error| SchedulerError::Internal(format!("blocking work did not finish: {error}")))?;
    let mut outcomes = Vec::with_capacity(due.len());
    for schedule in due {
        let outcome = fire_one(
            book,
            (workspaces, stored_folders),
            &present,
            script,
            &schedule,
            now,
        )
        .await
        .unwrap_or_else(|error| TickOutcome::Failed {
            error: error.to_string(),
        });
        outcomes.push((schedule.id, outcome));
    }
    Ok(TickReport { outcomes })
}

/// Fires one due schedule, or pauses it when it cannot fire any more (`present`: the
/// workspace folders that exist).
async fn fire_one(
    book: &ScheduleBook,
    (workspaces, folders): (&Workspaces, bool),
    present: &HashSet<PathBuf>,
    script: Option<&serde_json::Value>,
    schedule: &Schedule,
    now: Timestamp,
) -> Result<TickOutcome> {
    let Some(expected_next) = schedule.next_fire_at else {
        return Ok(TickOutcome::Lost);
    };
    let pause = async |reason: String| -> Result<TickOutcome> {
        Ok(if book.pause(&schedule.id, expected_next, &reason).await? {
            TickOutcome::Paused { reason }
        } else {
            TickOutcome::Lost
        })
    };
    let spec = &schedule.spec;
    let timetable = match Timetable::parse(&spec.cron, &spec.time_zone) {
        Ok(timetable) => timetable,
        // Stored schedules were valid when created; a newer build may know fewer zones.
        Err(error) => return pause(format!("it can no longer be read: {error}")).await,
    };
    let Some(workspace) = stored_workspace(workspaces, folders, &spec.workspace) else {
        return pause(format!(
            "workspace `{}` is no longer configured",
            spec.workspace
        ))
        .await;
    };
    if !present.contains(&workspace.path) {
        return pause(format!(
            "the folder of workspace `{}` ({}) is gone",
            spec.workspace,
            workspace.path.display()
        ))
        .await;
    }
    let Some(due) = timetable.due(expected_next, now) else {
        return Ok(TickOutcome::Lost);
    };
    let fired = book
        .fire(FireOccurrence {
            schedule_id: schedule.id.clone(),
            expected_next,
            expected_updated: schedule.updated_at,
            occurrence: due.occurrence,
            missed: due.missed,
            next_fire_at: due.next,
            task: NewTask {
                prompt: spec.prompt.clone(),
                workspace: workspace.name.clone(),
                workspace_path: workspace.path.display().to_string(),
                created_by: Actor::Scheduler,
                origin: Some(spec.name.clone()),
                script: script.cloned(),
            },
        })
        .await?;
    Ok(match fired {
        Fired::Task(task) => TickOutcome::Fired {
            task: task.id,
            occurrence: due.occurrence,
            missed: due.missed,
        },
        Fired::Skipped { task } => TickOutcome::Skipped { task },
        Fired::Paused { reason } => TickOutcome::Paused { reason },
        Fired::Lost => TickOutcome::Lost,
    })
}
