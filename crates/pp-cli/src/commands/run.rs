//! `pocketpilot run`: one task in the terminal, stored like every other task, with
//! approvals asked of the person at the terminal.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context as _;
use pp_tasks::{
    Action, ApprovalView, Caller, CreateTask, Decision, ModelSource, ResolveRequest, TaskService,
};
use pp_types::{Actor, ApprovalId, ApprovalState, TaskRecord, TaskState};
use serde_json::Value;

use crate::acting::{self, UserArgs};
use crate::app::{App, read_script, sweep_workspaces};
use crate::config::{Config, Flags};
use crate::interrupt::Stop;
use crate::keys::{self, Key, Line};
use crate::live::LiveView;
use crate::output::{errln, errprint, outln};
use crate::render::{CARD_LINES, Fold, approval_card, json_safe, terminal_safe};
use crate::report::{Counts, Interrupted, JsonFeed};
use crate::style::{Paint, Palette, terminal_columns};
use crate::{Exit, env, exit, models};

/// Runs `prompt` and returns the exit code; `json` prints the task's events on stdout,
/// one JSON object per line, then a `result` line.
pub(crate) async fn run(
    mut flags: Flags,
    script: Option<PathBuf>,
    prompt: &str,
    json: bool,
    who: &UserArgs,
) -> anyhow::Result<u8> {
    let started = Instant::now();
    // Exit 3 (waiting) or 1 (failed) says more than a reader that went away: `run … |
    // head` keeps its own exit code.
    crate::output::keep_exit_code_when_stdout_closes();
    if flags.workspace.is_none() {
        flags.workspace =
            Some(std::env::current_dir().context("cannot read the current directory")?);
    }
    let config = Config::load(&flags)?;
    let script = script.as_deref().map(read_script).transpose()?;
    let live = LiveView::new(json);
    let app = open_live(config, script.is_some(), &live).await?;
    let service = &app.service;
    let caller = who.caller(app.config.team, service).await?;
    if let Some(workspace) = service.workspaces().find(None) {
        let workspace = &workspace.name;
        acting::authorize(service, &caller, Action::Work { workspace }).await?;
    }
    let request = CreateTask {
        prompt: prompt.to_owned(),
        workspace: None,
        actor: Actor::Operator,
        script,
    };
    let task = service.create_as_user(request, caller.user.clone()).await?;
    errln!("task {} (stored in {})", task.id, app.config.store_url);
    let feed = json.then(|| JsonFeed::start(service, &task.id));
    let ui = Ui {
        stop: Stop::active(&live, &caller),
        live,
        feed,
        started,
        interrupt: OnInterrupt::LeavePending,
        caller,
    };
    let record = ui
        .stop
        .guarded(
            service,
            &task.id,
            ui.feed.as_ref(),
            service.run_now(&task.id),
        )
        .await?;
    let code = follow(service, record, &ui).await;
    app.mcp.shutdown().await;
    code
}

/// Opens the task service with the live view as its observer and the configured model streaming into it (or only scripted tasks when
/// `scripted`); says which model and workspace are used and sweeps stray temp files.
/// Shared by `run` and `chat`.
pub(crate) async fn open_live(
    config: Config,
    scripted: bool,
    live: &Arc<LiveView>,
) -> anyhow::Result<App> {
    let models = if scripted {
        ModelSource::Scripted
    } else {
        match models::find(&config).await? {
            models::Found::Chosen(chosen) => {
                errln!("model: {}", chosen.reason);
                ModelSource::Provider(streaming(chosen, live))
            }
            models::Found::Nothing(message) => return Err(Exit::no_model(message).into()),
        }
    };
    let observer: Arc<dyn pp_agent::EventSink> = live.clone();
    let app = App::with_config(config, models, Some(observer)).await?;
    let workspace = app.service.workspaces().find(None);
    if let Some(workspace) = workspace {
        errln!("workspace: {}", workspace.path.display());
    }
    sweep_workspaces(workspace);
    app.start_mcp().await;
    Ok(app)
}

/// The configured provider with its streamed text sent to the live view.
fn streaming(chosen: models::Chosen, live: &Arc<LiveView>) -> Arc<dyn pp_agent::Model> {
    let live = Arc::clone(live);
    match pp_model::HttpModel::new(&chosen.settings) {
        Ok(model) => Arc::new(model.with_observer(Arc::new(move |delta| live.delta(delta)))),
        Err(_) => chosen.model,
    }
}

/// What `follow` reports through.
pub(crate) struct Ui {
    /// The live view (paused before each card and question).
    pub(crate) live: Arc<LiveView>,
    /// `--json`: the events printed on stdout.
    pub(crate) feed: Option<JsonFeed>,
    /// When the command started, for the summary's wall time.
    pub(crate) started: Instant,
    /// What Ctrl+C at an approval question does.
    pub(crate) interrupt: OnInterrupt,
    /// Who decides at the cards (team mode: the `--user`, with the API's checks).
    pub(crate) caller: Caller,
    /// What Ctrl+C does while the task runs here (`run`: stops it, `interrupt.rs`).
    pub(crate) stop: Stop,
}

/// What Ctrl+C at an approval question does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OnInterrupt {
    /// `run`: stop here, exit 130; the approval stays pending for later.
    LeavePending,
    /// `chat`: cancel the task (this turn only), so the conversation can go on.
    CancelTask,
}

/// Reports how a task ended, asking the person at each approval; returns the exit code.
pub(crate) async fn follow(
    service: &TaskService,
    mut record: TaskRecord,
    ui: &Ui,
) -> anyhow::Result<u8> {
    let interactive = std::io::stdin().is_terminal();
    loop {
        record = ui.stop.settle(service, record).await?;
        if record.state != TaskState::WaitingApproval {
            ui.live.pause();
            summary(service, &record, ui).await;
            print_changes(service, &record).await;
            if let Some(feed) = &ui.feed {
                feed.finish(&record, None, ui.stop.interrupted(&record))
                    .await?;
            }
            return match record.state {
                TaskState::Completed => {
                    if ui.feed.is_none() {
                        outln!("{}", terminal_safe(&record.final_text.unwrap_or_default()))?;
                    }
                    Ok(exit::OK)
                }
                state => {
                    let error = record
                        .error
                        .as_deref()
                        .map(|error| format!(": {}", terminal_safe(error)))
                        .unwrap_or_default();
                    errln!("task {} {}{error}", record.id, state.as_str());
                    Ok(ui.stop.exit_code(&record))
                }
            };
        }
        let pending = service
            .approvals_for_task(&record.id)
            .await?
            .into_iter()
            .find(|approval| approval.state == ApprovalState::Pending)
            .context("the task waits for approval but has no pending approval")?;
        let mut view = service.approval_view_checked(&pending.id).await?;
        ui.live.pause();
        if let Some(feed) = &ui.feed {
            feed.pump().await?;
        }
        let palette = Palette::stderr();
        errln!(
            "{}",
            approval_card(&view, palette, Fold::Lines(CARD_LINES, terminal_columns()))
        );
        // Team mode: a user who may not decide here (a member, a viewer, a workspace no
        // longer granted) is not asked; the approval waits for someone who may.
        let may_decide = service
            .authorize(&ui.caller, Action::Resolve(&record))
            .await
            .is_ok();
        if interactive && !may_decide {
            errln!(
                "you may not decide on this approval: it waits for an owner or an approver of \
                 its workspace"
            );
        }
        if !interactive || !may_decide {
            summary(service, &record, ui).await;
            print_waiting(&view, ui.feed.is_none())?;
            if let Some(feed) = &ui.feed {
                feed.finish(&record, Some(&view.id), None).await?;
            }
            return Ok(exit::WAITING_APPROVAL);
        }
        record = loop {
            let mut request = match ask_blocking(&view, palette).await? {
                Answer::Decided(request) => request,
                Answer::Interrupted if ui.interrupt == OnInterrupt::CancelTask => {
                    errln!("\ninterrupted: nothing was run; cancelling this turn.");
                    acting::authorize(service, &ui.caller, Action::Cancel(&record)).await?;
                    match service.cancel_as(&record.id, &ui.caller).await {
                        Ok(cancelled) => break cancelled,
                        // Resolved elsewhere first: follow the task as it is now.
                        Err(pp_tasks::Error::InvalidState { .. }) => {
                            break service.task(&record.id).await?;
                        }
                        Err(error) => return Err(error.into()),
                    }
                }
                Answer::Interrupted => {
                    errln!("\ninterrupted: nothing was run and the approval stays pending.");
                    print_hints(&view.id);
                    if let Some(feed) = &ui.feed {
                        let at_card = Some(Interrupted::ApprovalPending);
                        feed.finish(&record, Some(&view.id), at_card).await?;
                    }
                    return Ok(exit::INTERRUPTED);
                }
            };
            // The grant as it is now, after the person's answer.
            acting::authorize(service, &ui.caller, Action::Resolve(&record)).await?;
            if request.decision == Decision::Approve {
                request.seen_fingerprint = seen_fingerprint(service, &view, &request).await;
            }
            let resolve = service.resolve_for(&pending.id, request, &ui.caller);
            match ui
                .stop
                .guarded(service, &record.id, ui.feed.as_ref(), resolve)
                .await
            {
                Ok(record) => break record,
                // The target changed while the card was on screen: nothing ran; show
                // the card as it is now and ask again.
                Err(pp_tasks::Error::ChangedSinceSeen(message)) => {
                    errln!("{message}");
                    view = service.approval_view_checked(&pending.id).await?;
                    errln!(
                        "{}",
                        approval_card(&view, palette, Fold::Lines(CARD_LINES, terminal_columns()))
                    );
                }
                Err(pp_tasks::Error::InvalidArguments(message)) => {
                    errln!("the edited call was refused: {message}");
                }
                Err(error @ pp_tasks::Error::AlreadyResolved { .. }) => {
                    errln!("{error}: someone else decided first");
                    return Ok(exit::CONFLICT);
                }
                Err(error) => return Err(error.into()),
            }
        };
    }
}

/// The fingerprint of the target as the card showed it (`view`'s precheck), or, for an
/// edited call, as its precheck sees it now; `None` when the tool reports no target or
/// the edit is invalid (the resolve refuses that itself).
async fn seen_fingerprint(
    service: &TaskService,
    view: &ApprovalView,
    request: &ResolveRequest,
) -> Option<String> {
    match &request.edited_arguments {
        Some(edited) => {
            let id = ApprovalId(view.id.clone());
            let precheck = service.precheck(&id, Some(edited)).await.ok()??;
            precheck.fingerprint
        }
        None => view.precheck.as_ref()?.fingerprint.clone(),
    }
}

/// The question at each approval card.
pub(crate) const QUESTION: &str = "[a]pprove  [r]eject  [e]dit  [d]etails  [?] help › ";

/// The `?` help.
const HELP: &str = "  a  approve: run this one call as shown
  r  reject: the model is told (you may give a reason; Esc goes back)
  e  edit the call's arguments in $VISUAL/$EDITOR, then run the edited call
  d  show everything (the full change and the arguments) in $PAGER
  ?  this help        Ctrl+C  stop here; the approval stays pending";

/// The person's answer at a card.
pub(crate) enum Answer {
    /// Resolve the approval so.
    Decided(ResolveRequest),
    /// Ctrl+C: leave it pending.
    Interrupted,
}

/// [`ask`] on a blocking thread: waiting for a key (or the editor, or the pager) never
/// holds up an async worker.
pub(crate) async fn ask_blocking(view: &ApprovalView, palette: Palette) -> anyhow::Result<Answer> {
    let view = view.clone();
    tokio::task::spawn_blocking(move || ask(&view, palette)).await?
}

/// Reads the person's decision from the terminal, one key at a time.
pub(crate) fn ask(view: &ApprovalView, palette: Palette) -> anyhow::Result<Answer> {
    let request = |decision, edited_arguments, reason| {
        Answer::Decided(ResolveRequest {
            decision,
            edited_arguments,
            reason,
            seen_fingerprint: None,
            actor: Actor::Operator,
            wait: true,
        })
    };
    loop {
        discard_type_ahead();
        let mut question = palette.paint(Paint::Yellow, QUESTION);
        let key = loop {
            match keys::read_key(&std::mem::take(&mut question))? {
                // Enter alone, Escape, arrows: nothing happens.
                Key::Ignored => {}
                key => break key,
            }
        };
        match key {
            Key::Char('a') => {
                errln!("approve");
                return Ok(request(Decision::Approve, None, None));
            }
            Key::Char('r') => {
                errln!("reject");
                match keys::read_line("reason (optional; Enter to send, Esc to go back): ")? {
                    Line::Done(reason) => {
                        let reason = (!reason.is_empty()).then_some(reason);
                        return Ok(request(Decision::Reject, None, reason));
                    }
                    Line::Cancelled => {}
                    Line::Interrupt => return Ok(Answer::Interrupted),
                    Line::End => closed()?,
                }
            }
            Key::Char('e') => {
                errln!("edit");
                match edit_arguments(&view.arguments) {
                    Ok(Some(edited)) => return Ok(request(Decision::Approve, Some(edited), None)),
                    Ok(None) => errln!("arguments unchanged; choose again"),
                    Err(error) => errln!("{error:#}"),
                }
            }
            Key::Char('d') => {
                errln!("details");
                show_details(view, palette)?;
            }
            Key::Char('?' | 'h') => {
                errln!("help\n{HELP}");
            }
            Key::Char(other) => {
                errln!("`{other}` answers nothing: press a, r, e, d, or ? for help");
            }
            Key::Interrupt => return Ok(Answer::Interrupted),
            Key::End | Key::Ignored => closed()?,
        }
    }
}

fn closed() -> anyhow::Result<()> {
    anyhow::bail!("stdin closed before a decision was made; nothing was run")
}

/// Pipes the whole card (every line of the change, and the arguments) into `$PAGER`;
/// prints it when there is no pager or it cannot start.
fn show_details(view: &ApprovalView, palette: Palette) -> anyhow::Result<()> {
    let text = format!("{}\n", approval_card(view, palette, Fold::Nothing));
    if let Some(pager) = env::pager() {
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&pager)
            .stdin(std::process::Stdio::piped())
            .spawn();
        if let Ok(mut child) = child {
            if let Some(mut stdin) = child.stdin.take() {
                // A pager quit early closes its input: not an error.
                let _ = stdin.write_all(text.as_bytes());
            }
            let status = child.wait()?;
            // 127: the shell could not find the pager.
            if status.code() != Some(127) {
                return Ok(());
            }
        }
    }
    errprint!("{text}");
    Ok(())
}

/// The one-line summary on stderr when a run stops: steps, tool calls, denials,
/// approvals, files changed (from the audit ledger), tokens when known, wall time.
async fn summary(service: &TaskService, record: &TaskRecord, ui: &Ui) {
    let Ok(counts) = Counts::read(service, &record.id).await else {
        return;
    };
    let state = match record.state {
        TaskState::WaitingApproval => "waiting for approval".to_owned(),
        state => state.as_str().replace('_', " "),
    };
    errln!(
        "{}",
        Palette::stderr().paint(
            Paint::Dim,
            &format!(
                "{state} · {} · {:.1}s",
                counts.describe(),
                ui.started.elapsed().as_secs_f64()
            )
        )
    );
}

/// The task's "Changes on disk" on stderr when the run ended, if there are any: what
/// really changed, whatever the model's last sentence says.
async fn print_changes(service: &TaskService, record: &TaskRecord) {
    let Ok(changes) = service.changes().of_task(&record.id).await else {
        return;
    };
    if changes.is_empty() {
        return;
    }
    for line in crate::commands::revert::change_lines(&changes) {
        errln!("{line}");
    }
}

/// Throws away whatever was typed before the question is shown, so keys pressed while
/// an earlier card was on screen (or a pasted `a\na\n`) never answer a card nobody saw.
fn discard_type_ahead() {
    #[cfg(unix)]
    {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            // Best effort: failing to flush must not stop the person from answering.
            let _ = rustix::termios::tcflush(&stdin, rustix::termios::QueueSelector::IFlush);
        }
    }
}

/// Opens the editor on the arguments as JSON; `None` when nothing changed.
#[expect(
    clippy::disallowed_methods,
    reason = "reads back a temporary file this command created, not a model-supplied path"
)]
fn edit_arguments(arguments: &Value) -> anyhow::Result<Option<Value>> {
    let mut file = tempfile::Builder::new()
        .prefix("pocketpilot-arguments-")
        .suffix(".json")
        .tempfile()
        .context("cannot create a temporary file for editing")?;
    writeln!(file, "{}", serde_json::to_string_pretty(arguments)?)?;
    file.flush()?;
    let editor = env::editor();
    let status = std::process::Command::new(&editor)
        .arg(file.path())
        .status()
        .with_context(|| format!("cannot start the editor {}", editor.to_string_lossy()))?;
    if !status.success() {
        anyhow::bail!("the editor exited with {status}; nothing was changed");
    }
    let text = std::fs::read_to_string(file.path())?;
    let edited: Value = serde_json::from_str(&text)
        .with_context(|| "the edited arguments are not valid JSON; try again")?;
    Ok((&edited != arguments).then_some(edited))
}

/// Prints the pending approval for scripts (unless `--json` prints its own `result`
/// line) and says how to resolve it.
fn print_waiting(view: &ApprovalView, json_line: bool) -> std::io::Result<()> {
    if json_line {
        let pending = serde_json::json!({
            "status": pp_types::TaskState::WaitingApproval,
            "task_id": view.task_id,
            "approval_id": view.id,
            "tool": view.tool,
            "capability": view.capability,
            "risk": view.risk,
            "label": view.label,
            "arguments": view.arguments,
        });
        outln!("{}", json_safe(&pending.to_string()))?;
    }
    errln!(
        "waiting for approval: stdin is not a terminal, and PocketPilot never approves on its \
         own."
    );
    print_hints(&view.id);
    Ok(())
}

/// How to resolve an approval from anywhere.
fn print_hints(id: &str) {
    errln!(
        "Resolve it from anywhere:\n  pocketpilot approvals approve {id}\n  pocketpilot \
         approvals reject {id} --reason \"…\"\nor in the console (pocketpilot serve).",
        id = crate::render::one_line(id)
    );
}
