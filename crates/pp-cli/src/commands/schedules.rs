//! `pocketpilot schedules list|show|add|edit|enable|disable|run|remove`: schedules that
//! create tasks at cron times. Works on the store directly; the tasks are run by
//! `pocketpilot serve` (whose scheduler also does the firing), and their writes wait
//! for a person like any other.

use std::path::PathBuf;

use clap::Subcommand;
use pp_schedules::{
    Overlap, ScheduleEventView, ScheduleRequest, ScheduleView, Scheduler, SchedulerError,
};
use pp_types::Actor;
use serde_json::json;

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::{Config, Flags, real_path};
use crate::output::{errln, outln};
use crate::render::{json_safe, one_line, shorten};
use crate::{Exit, exit};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum SchedulesCommand {
    /// List schedules by name, with their next fire time.
    List {
        /// Print one JSON object: `{"schedules": […]}` (as `GET /api/schedules`).
        #[arg(long)]
        json: bool,
    },
    /// Show one schedule (by name or id) with its recent history.
    Show {
        /// The schedule's name or id.
        schedule: String,
        /// Print one JSON object (as `GET /api/schedules/{id}`).
        #[arg(long)]
        json: bool,
    },
    /// Add a schedule; it fires from its next occurrence on, inside `pocketpilot serve`.
    Add {
        /// A unique name.
        #[arg(long)]
        name: String,
        /// Five cron fields (`0 9 * * 1`) or an alias (`@daily`).
        #[arg(long, value_name = "EXPR")]
        cron: String,
        /// An IANA time zone (default: this machine's).
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// The prompt each fire's task gets.
        #[arg(long)]
        prompt: String,
        /// A configured workspace (its name or its folder) or, outside team mode, another
        /// folder (stored as its canonical path); default: the default workspace.
        #[arg(long, value_name = "DIR")]
        workspace: Option<String>,
        /// `skip` (default: skip an occurrence while the previous task is active) or
        /// `queue`.
        #[arg(long, value_name = "skip|queue")]
        overlap: Option<String>,
        /// Create it disabled.
        #[arg(long)]
        disabled: bool,
        /// Print the schedule as one JSON object.
        #[arg(long)]
        json: bool,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Change a schedule: the options given replace the stored values.
    Edit {
        /// The schedule's name or id.
        schedule: String,
        /// A new name.
        #[arg(long)]
        name: Option<String>,
        /// A new expression.
        #[arg(long, value_name = "EXPR")]
        cron: Option<String>,
        /// A new time zone.
        #[arg(long, value_name = "ZONE")]
        tz: Option<String>,
        /// A new prompt.
        #[arg(long)]
        prompt: Option<String>,
        /// A new workspace (as for `add`: a configured one's name or folder, or outside
        /// team mode another folder).
        #[arg(long, value_name = "DIR")]
        workspace: Option<String>,
        /// `skip` or `queue`.
        #[arg(long, value_name = "skip|queue")]
        overlap: Option<String>,
        /// Print the schedule as one JSON object.
        #[arg(long)]
        json: bool,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Enable a schedule (from its next occurrence; nothing missed is caught up).
    Enable {
        /// The schedule's name or id.
        schedule: String,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Disable a schedule.
    Disable {
        /// The schedule's name or id.
        schedule: String,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Fire a schedule now: creates its task (run by `pocketpilot serve`).
    Run {
        /// The schedule's name or id.
        schedule: String,
        /// Print `{"task_id", "task"}`.
        #[arg(long)]
        json: bool,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Remove a schedule and its history (the tasks it created stay).
    Remove {
        /// The schedule's name or id.
        schedule: String,
        /// Who acts (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
}

impl SchedulesCommand {
    /// Who acts, for the subcommands that change something (owners only in team mode).
    fn who(&self) -> Option<&UserArgs> {
        match self {
            Self::List { .. } | Self::Show { .. } => None,
            Self::Add { who, .. }
            | Self::Edit { who, .. }
            | Self::Enable { who, .. }
            | Self::Disable { who, .. }
            | Self::Run { who, .. }
            | Self::Remove { who, .. } => Some(who),
        }
    }
}

/// Runs a `schedules` subcommand.
pub(crate) async fn run(flags: &Flags, command: SchedulesCommand) -> anyhow::Result<u8> {
    match scheduled(flags, command).await {
        Ok(code) => Ok(code),
        Err(error) => match error.downcast::<SchedulerError>() {
            Ok(error) => {
                errln!("error: {error} ({})", error.code());
                Ok(match error {
                    SchedulerError::Store(_) | SchedulerError::Internal(_) => exit::FAILED,
                    SchedulerError::NameTaken(_) | SchedulerError::SessionBusy { .. } => {
                        exit::CONFLICT
                    }
                    _ => exit::USAGE,
                })
            }
            Err(error) => Err(error),
        },
    }
}

async fn scheduled(flags: &Flags, command: SchedulesCommand) -> anyhow::Result<u8> {
    let workspace_arg = match &command {
        SchedulesCommand::Add { workspace, .. } | SchedulesCommand::Edit { workspace, .. } => {
            workspace.clone()
        }
        _ => None,
    };
    let (app, workspace) = open(flags, workspace_arg.as_deref()).await?;
    let mut user = None;
    if let Some(who) = command.who() {
        user = acting::owner_only(who, app.config.team, &app.service, "change schedules")
            .await?
            .user;
    }
    // Changes are audited as the operator, or in team mode as the `--user` who made them.
    let mut scheduler =
        Scheduler::new(app.service.clone(), app.store.clone()).as_user(user.as_deref());
    if !app.config.team {
        // The folder `open` checked is stored as its canonical path.
        scheduler = scheduler.with_folders();
    }
    match command {
        SchedulesCommand::List { json } => {
            let schedules = scheduler.list().await?;
            let views: Vec<ScheduleView> = schedules.iter().map(ScheduleView::from).collect();
            if json {
                outln!("{}", json_safe(&json!({ "schedules": views }).to_string()))?;
            } else if views.is_empty() {
                outln!("no schedules")?;
            } else {
                for view in &views {
                    outln!("{}", row(view))?;
                }
            }
        }
        SchedulesCommand::Show { schedule, json } => {
            let found = scheduler.find(&schedule).await?;
            let history = scheduler.history(&found.id, 20).await?;
            let view = ScheduleView::from(&found);
            let history: Vec<ScheduleEventView> =
                history.iter().map(ScheduleEventView::from).collect();
            if json {
                let mut body = json!(view);
                body["history"] = json!(history);
                outln!("{}", json_safe(&body.to_string()))?;
            } else {
                print_show(&view, &history)?;
            }
        }
        SchedulesCommand::Add {
            name,
            cron,
            tz,
            prompt,
            overlap,
            disabled,
            json,
            ..
        } => {
            let request = ScheduleRequest {
                name,
                cron,
                time_zone: tz,
                prompt,
                workspace,
                session: None,
                overlap: parse_overlap(overlap.as_deref())?.unwrap_or_default(),
                enabled: !disabled,
            };
            let created = scheduler.create(request, Actor::Operator).await?;
            print_one(&ScheduleView::from(&created), json, "added")?;
        }
        SchedulesCommand::Edit {
            schedule,
            name,
            cron,
            tz,
            prompt,
            overlap,
            json,
            ..
        } => {
            let current = scheduler.find(&schedule).await?;
            let spec = current.spec;
            let request = ScheduleRequest {
                name: name.unwrap_or(spec.name),
                cron: cron.unwrap_or(spec.cron),
                time_zone: Some(tz.unwrap_or(spec.time_zone)),
                prompt: prompt.unwrap_or(spec.prompt),
                workspace: Some(workspace.unwrap_or(spec.workspace)),
                session: spec.session,
                overlap: parse_overlap(overlap.as_deref())?.unwrap_or(spec.overlap),
                enabled: current.enabled,
            };
            let edited = scheduler.edit(&current.id, request).await?;
            print_one(&ScheduleView::from(&edited), json, "changed")?;
        }
        SchedulesCommand::Enable { schedule, .. } => {
            let changed = scheduler.set_enabled(&schedule, true).await?;
            print_one(&ScheduleView::from(&changed), false, "enabled")?;
        }
        SchedulesCommand::Disable { schedule, .. } => {
            let changed = scheduler.set_enabled(&schedule, false).await?;
            print_one(&ScheduleView::from(&changed), false, "disabled")?;
        }
        SchedulesCommand::Run { schedule, json, .. } => {
            let task = scheduler.run_now(&schedule, Actor::Operator).await?;
            if json {
                outln!(
                    "{}",
                    json_safe(&json!({ "task_id": task.id, "task": task }).to_string())
                )?;
            } else {
                outln!("{}", task.id)?;
                errln!(
                    "fired {}: task {} is queued; `pocketpilot serve` runs it, and its \
                     writes wait for approval (pocketpilot approvals list)",
                    one_line(&schedule),
                    task.id
                );
            }
        }
        SchedulesCommand::Remove { schedule, .. } => {
            scheduler.remove(&schedule).await?;
            errln!("removed schedule {}", one_line(&schedule));
        }
    }
    Ok(exit::OK)
}

/// The app, and the workspace `--workspace` designates as the schedule stores it: a
/// configured workspace's name (given its name or its folder), or outside team mode
/// another folder, checked as `serve --workspace DIR` checks it and stored as its
/// canonical absolute path (so it resolves in every later command and process). In team
/// mode `--workspace` must name a configured workspace.
async fn open(flags: &Flags, workspace: Option<&str>) -> anyhow::Result<(App, Option<String>)> {
    let Some(given) = workspace else {
        return Ok((App::stored(flags).await?, None));
    };
    let stored_flags = Flags {
        stored_tasks_only: true,
        ..flags.clone()
    };
    let config = Config::load(&stored_flags)?;
    if config.workspaces.find(Some(given)).is_some() {
        let app = App::with_config(config, pp_tasks::ModelSource::Scripted, None).await?;
        return Ok((app, Some(given.to_owned())));
    }
    let path = PathBuf::from(given);
    if !path.is_dir() {
        return Err(Exit::usage(format!(
            "--workspace {given}: neither a configured workspace nor a folder"
        ))
        .into());
    }
    let real = real_path(&path);
    if let Some(found) = config
        .workspaces
        .list
        .iter()
        .find(|w| real_path(&w.path) == real)
    {
        let name = found.name.clone();
        let app = App::with_config(config, pp_tasks::ModelSource::Scripted, None).await?;
        return Ok((app, Some(name)));
    }
    if config.team {
        return Err(Exit::usage(format!(
            "--workspace {given}: in team mode a schedule names a configured workspace \
             (each worker maps the name to its own folder); configure [[workspace]] for it"
        ))
        .into());
    }
    // Checked as a one-off workspace (not one holding PocketPilot's own files).
    let config = Config::load(&Flags {
        workspace: Some(real.clone()),
        ..stored_flags
    })?;
    let app = App::with_config(config, pp_tasks::ModelSource::Scripted, None).await?;
    Ok((app, Some(real.display().to_string())))
}

fn parse_overlap(text: Option<&str>) -> anyhow::Result<Option<Overlap>> {
    text.map(|text| {
        Overlap::parse(text)
            .ok_or_else(|| Exit::usage(format!("--overlap must be skip or queue, not `{text}`")))
    })
    .transpose()
    .map_err(Into::into)
}

/// One line: name, state, expression and zone, next fire, last task.
fn row(view: &ScheduleView) -> String {
    let state = match (&view.paused_reason, view.enabled) {
        (Some(_), _) => "paused",
        (None, true) => "enabled",
        (None, false) => "disabled",
    };
    let next = view
        .next_fire_at
        .map_or_else(|| "-".to_owned(), |at| at.to_rfc3339_seconds());
    let last = match (&view.last_task_id, view.last_task_state) {
        (Some(id), Some(state)) => format!("{id} {}", state.as_str()),
        (Some(id), None) => id.to_string(),
        _ => "-".to_owned(),
    };
    format!(
        "{}  {:<8}  {} ({})  next {next}  last {last}  {}",
        one_line(&view.name),
        state,
        one_line(&view.cron),
        one_line(&view.time_zone),
        one_line(&shorten(&view.prompt, 60)),
    )
}

fn print_one(view: &ScheduleView, json: bool, what: &str) -> anyhow::Result<()> {
    if json {
        outln!("{}", json_safe(&serde_json::to_string(view)?))?;
    } else {
        outln!("{}", row(view))?;
        errln!("{what} schedule {} ({})", one_line(&view.name), view.id);
    }
    Ok(())
}

fn print_show(view: &ScheduleView, history: &[ScheduleEventView]) -> anyhow::Result<()> {
    outln!("{}", row(view))?;
    outln!("  id         {}", view.id)?;
    outln!("  workspace  {}", one_line(&view.workspace))?;
    outln!("  overlap    {}", view.overlap.as_str())?;
    if let Some(reason) = &view.paused_reason {
        outln!("  paused     {}", one_line(reason))?;
    }
    outln!("  prompt     {}", one_line(&view.prompt))?;
    for event in history {
        let task = event
            .task_id
            .as_ref()
            .map_or_else(String::new, |id| format!(" task {id}"));
        let missed = if event.missed > 0 {
            format!(" missed {}", event.missed)
        } else {
            String::new()
        };
        let detail = event
            .detail
            .as_deref()
            .map_or_else(String::new, |detail| format!(" ({})", one_line(detail)));
        let kind = serde_json::to_value(event.kind)?;
        outln!(
            "  {}  {}{task}{missed}{detail}",
            event.at.to_rfc3339_seconds(),
            kind.as_str().unwrap_or_default()
        )?;
    }
    Ok(())
}
