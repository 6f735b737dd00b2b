//! `pocketpilot tasks [list|show ID|events ID|cancel ID|retry ID]`: the store directly;
//! in team mode `cancel` and `retry` act for `--user NAME` (`acting.rs`).

use clap::Subcommand;
use pp_tasks::{Action, TaskFilter};
use pp_types::{Actor, TaskId, TaskState};

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::Flags;
use crate::output::outln;
use crate::render::{json_safe, live_lines, one_line, shorten};
use crate::style::{Palette, terminal_columns};
use crate::{Exit, exit};

/// What to show.
#[derive(Debug, Subcommand)]
pub(crate) enum TasksCommand {
    /// List tasks, newest first.
    List {
        /// Only tasks in this state (queued, running, waiting_approval, completed, …).
        #[arg(long)]
        state: Option<String>,
        /// Only tasks whose prompt contains this text (case-insensitive).
        #[arg(long, short = 'q')]
        query: Option<String>,
        /// Only tasks of the workspace with this name.
        #[arg(long)]
        workspace: Option<String>,
        /// Only tasks started by this actor (operator, scheduler, webhook, mcp_client).
        #[arg(long, value_name = "ACTOR")]
        created_by: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print one JSON object: `{"tasks": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Show one task.
    Show {
        /// The task id.
        id: String,
        /// Print the task as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Show a task's events.
    Events {
        /// The task id.
        id: String,
        /// Print one JSON object: `{"events": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Cancel a task that has not ended.
    Cancel {
        /// The task id.
        id: String,
        /// Print the task as one JSON object.
        #[arg(long)]
        json: bool,
        /// Who cancels (team mode).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Retry an interrupted task from its last checkpoint.
    Retry {
        /// The task id.
        id: String,
        /// Print the task as one JSON object.
        #[arg(long)]
        json: bool,
        /// Who retries (team mode).
        #[command(flatten)]
        who: UserArgs,
    },
}

/// Runs a `tasks` subcommand.
pub(crate) async fn run(flags: &Flags, command: TasksCommand) -> anyhow::Result<u8> {
    let app = App::stored(flags).await?;
    let service = &app.service;
    match command {
        TasksCommand::List {
            state,
            query,
            workspace,
            created_by,
            limit,
            json,
        } => {
            let state = state
                .map(|name| {
                    TaskState::parse(&name)
                        .ok_or_else(|| Exit::usage(format!("unknown state `{name}`")))
                })
                .transpose()?;
            let created_by = created_by
                .map(|name| {
                    Actor::parse(&name).ok_or_else(|| {
                        Exit::usage(format!(
                            "unknown actor `{name}`; expected one of {}",
                            Actor::NAMES.join(", ")
                        ))
                    })
                })
                .transpose()?;
            let tasks = service
                .search_tasks(TaskFilter {
                    query,
                    state,
                    workspace,
                    created_by,
                    before: None,
                    limit,
                })
                .await?
                .tasks;
            if json {
                outln!(
                    "{}",
                    json_safe(&serde_json::json!({ "tasks": tasks }).to_string())
                )?;
            } else if tasks.is_empty() {
                outln!("no tasks")?;
            } else {
                for task in tasks {
                    outln!(
                        "{}  {:<16}  {}  {}",
                        task.id,
                        task.state.as_str(),
                        task.created_at,
                        one_line(&shorten(&task.prompt, 60))
                    )?;
                }
            }
        }
        TasksCommand::Show { id, json } => {
            let task = service.task(&TaskId(id)).await?;
            let changes = app.service.changes().of_task(&task.id).await?;
            if json {
                let mut value = serde_json::to_value(&task)?;
                value["changes_on_disk"] = serde_json::to_value(&changes)?;
                outln!("{}", json_safe(&value.to_string()))?;
            } else {
                outln!("{}", json_safe(&serde_json::to_string_pretty(&task)?))?;
                outln!("{}", usage_line(&task.usage, app.config.tasks.max_tokens))?;
                for line in crate::commands::revert::change_lines(&changes) {
                    outln!("{line}")?;
                }
            }
        }
        TasksCommand::Events { id, json } => {
            let id = TaskId(id);
            service.task(&id).await?;
            let events = service.task_events(&id, 0).await?;
            if json {
                outln!(
                    "{}",
                    json_safe(&serde_json::json!({ "events": events }).to_string())
                )?;
            } else {
                let palette = Palette::stdout();
                let columns = terminal_columns().saturating_sub(7);
                for stored in events {
                    let mut lines = live_lines(&stored.event, palette, columns);
                    if lines.is_empty() {
                        lines.push(format!("         {}", stored.event.type_name()));
                    }
                    for (index, line) in lines.iter().enumerate() {
                        if index == 0 {
                            outln!("#{:<5} {line}", stored.seq)?;
                        } else {
                            outln!("       {line}")?;
                        }
                    }
                }
            }
        }
        TasksCommand::Cancel { id, json, who } => {
            let caller = who.caller(app.config.team, service).await?;
            let stored = service.task(&TaskId(id)).await?;
            acting::authorize(service, &caller, Action::Cancel(&stored)).await?;
            let task = app.service.cancel_as(&stored.id, &caller).await?;
            // Cancelled, or under way (still running): both accepted, exit 0.
            outln!("{}", cancel_output(&task, json)?)?;
        }
        TasksCommand::Retry { id, json, who } => {
            let caller = who.caller(app.config.team, service).await?;
            let id = TaskId(id);
            let stored = service.task(&id).await?;
            acting::authorize(service, &caller, Action::Retry(&stored)).await?;
            app.config.refuse_private_inside(pp_tasks::Workspace {
                name: stored.workspace,
                path: stored.workspace_path.into(),
            })?;
            let task = app.service.retry_as(&id, &caller).await?;
            print_task(&task, json)?;
        }
    }
    Ok(exit::OK)
}

/// What `tasks cancel` prints: the task (JSON with `cancel_requested`, as the API's
/// cancel answers), or its id and state. A task still `running` after the cancel is
/// one whose running call has not stopped yet: the cancel is under way.
fn cancel_output(task: &pp_types::TaskRecord, json: bool) -> anyhow::Result<String> {
    let requested = task.state == TaskState::Running;
    if json {
        let mut value = serde_json::to_value(task)?;
        if let Some(object) = value.as_object_mut() {
            object.insert("cancel_requested".to_owned(), requested.into());
        }
        return Ok(json_safe(&value.to_string()).into_owned());
    }
    Ok(if requested {
        format!(
            "{}  running (cancel requested: it becomes cancelled once its running call has \
             stopped)",
            task.id
        )
    } else {
        format!("{}  {}", task.id, task.state.as_str())
    })
}

fn print_task(task: &pp_types::TaskRecord, json: bool) -> anyhow::Result<()> {
    if json {
        outln!("{}", json_safe(&serde_json::to_string(task)?))?;
    } else {
        outln!("{}  {}", task.id, task.state.as_str())?;
    }
    Ok(())
}

/// `tasks show`'s usage line: tokens (with the budget, when one is set), their cached and
/// reasoning parts, the model calls and the cost estimate.
fn usage_line(usage: &pp_types::TaskUsage, budget: Option<u64>) -> String {
    let mut line = format!("usage: {} tokens", thousands(usage.total_tokens));
    if let Some(budget) = budget {
        line.push_str(&format!(" of a {} budget", thousands(budget)));
    }
    line.push_str(&format!(
        " (prompt {}, {} cached; completion {}, {} reasoning) over {} model call{}",
        thousands(usage.prompt_tokens),
        thousands(usage.cached_tokens),
        thousands(usage.completion_tokens),
        thousands(usage.reasoning_tokens),
        usage.model_calls,
        if usage.model_calls == 1 { "" } else { "s" },
    ));
    match &usage.cost {
        Some(cost) => line.push_str(&format!(
            "; cost about {} {}",
            amount(cost.amount),
            cost.currency
        )),
        None if usage.model_calls > 0 => line.push_str("; cost unknown (no price for the model)"),
        None => {}
    }
    line
}

/// `1234567` → `1,234,567`.
fn thousands(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// Two decimals, or four for amounts under a cent.
fn amount(value: f64) -> String {
    if value < 0.01 {
        format!("{value:.4}")
    } else {
        format!("{value:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pp_types::{Cost, TaskUsage};

    #[test]
    fn the_usage_line_names_tokens_parts_calls_and_cost() {
        let usage = TaskUsage {
            prompt_tokens: 3500,
            completion_tokens: 200,
            cached_tokens: 2000,
            reasoning_tokens: 80,
            total_tokens: 3700,
            model_calls: 2,
            cost: Some(Cost {
                amount: 0.006,
                currency: "USD".into(),
            }),
        };
        assert_eq!(
            usage_line(&usage, Some(1_000_000)),
            "usage: 3,700 tokens of a 1,000,000 budget (prompt 3,500, 2,000 cached; \
             completion 200, 80 reasoning) over 2 model calls; cost about 0.0060 USD"
        );
        let unpriced = TaskUsage {
            cost: None,
            model_calls: 1,
            ..usage
        };
        assert!(
            usage_line(&unpriced, None)
                .ends_with("over 1 model call; cost unknown (no price for the model)")
        );
        assert_eq!(
            usage_line(&TaskUsage::default(), None),
            "usage: 0 tokens (prompt 0, 0 cached; completion 0, 0 reasoning) over 0 model calls"
        );
        assert_eq!(amount(12.345), "12.35");
    }
}
