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
use pp_types::{Actor, ApprovalState, TaskRecord, TaskState};
use serde_json::Value;

use crate::acting::{self, UserArgs};
use crate::app::{App, read_script, sweep_workspaces};
use crate::card::Paged;
use crate::config::{Config, Flags};
use crate::interrupt::Stop;
use crate::keys::{self, Key, Line};
use crate::live::LiveView;
use crate::output::{errln, errprint, outln};
use crate::render::{Fold, approval_card, json_safe, terminal_safe};
use crate::report::{Counts, JsonFeed};
use crate::review::{self, Reviewed};
use crate::style::{Paint, Palette, terminal_columns, terminal_size};
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
    // Under root in a root-owned workspace the first step cannot offer `run_command`
    // before the containment probe (a sandbox child) answers: it starts now, beside
    // the model lookup and the store's opening.
    let shell = crate::shell::shell_provider(&config.shell, &config.home);
    if let Some(workspace) = config.workspaces.find(None) {
        shell.probe_ahead(&workspace.path);
    }
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
    let app = App::with_shell(config, models, Some(observer), shell).await?;
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
        let view = service.approval_view_checked(&pending.id).await?;
        // A changeset (the calls of one model turn) is reviewed as one.
        let changeset = match &view.changeset_id {
            Some(id) => Some((id.clone(), review::pending_cards(service, id).await?))
                .filter(|(_, cards)| cards.len() > 1),
            None => None,
        };
        ui.live.pause();
        if let Some(feed) = &ui.feed {
            feed.pump().await?;
        }
        let palette = Palette::stderr();
        // Team mode: a user who may not decide here (a member, a viewer, a workspace no
        // longer granted) is not asked; the approval waits for someone who may.
        let may_decide = service
            .authorize(&ui.caller, Action::Resolve(&record))
            .await
            .is_ok();
        // Where a decision is asked, `ask` shows each card, page by page.
        if !interactive || !may_decide {
            let cards = changeset
                .as_ref()
                .map_or_else(|| vec![view.clone()], |(_, cards)| cards.clone());
            for card in &cards {
                errln!(
                    "{}",
                    approval_card(card, palette, Fold::Window(terminal_columns()))
                );
            }
        }
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
        let reviewed = match changeset {
            Some((id, cards)) => review::decide_changeset(service, &record, &id, cards, ui).await?,
            None => review::decide_one(service, &record, view, ui).await?,
        };
        record = match reviewed {
            Reviewed::Task(record) => *record,
            Reviewed::Exit(code) => return Ok(code),
        };
    }
}

/// The question at each approval card.
pub(crate) const QUESTION: &str = "[a]pprove  [r]eject  [e]dit  [d]etails  [?] help › ";

/// The `?` help.
const HELP: &str = "  a  approve: run this one call as shown
  r  reject: the model is told (you may give a reason; Esc goes back)
  e  edit the call in $VISUAL/$EDITOR (through the shell); its new change is shown and asked about again
  d  show everything (the full change and the arguments) in $PAGER
  space  the card's next page (a long change: a, r and e wait until every
         changed line has been on screen, or d showed everything)
  ?  this help        Ctrl+C  stop here; the approval stays pending";

/// The `?` help's lines for a changeset.
const CHANGESET_HELP: &str = "  n  next call: leave this one for later (it is asked again)
  A  approve every call not decided yet, once each has been shown";

/// The person's answer at a card.
pub(crate) enum Answer {
    /// Resolve the approval so.
    Decided(ResolveRequest),
    /// `e`: these arguments instead; their card is shown and asked about before
    /// anything runs.
    Edited(Value),
    /// `n` in a changeset: decide this call later; `shown` when every changed line of
    /// it has been on screen.
    Next { shown: bool },
    /// `A` in a changeset whose calls have all been shown: approve every call not
    /// decided yet.
    ApproveAll,
    /// Ctrl+C: leave it pending.
    Interrupted,
}

/// Where a card stands in the changeset under review.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Position {
    /// Its place, from 0.
    pub(crate) index: usize,
    /// How many calls wait in the changeset.
    pub(crate) size: usize,
    /// Whether every other call of it has been on screen whole (`A` is live once this
    /// one has been too).
    pub(crate) all_shown: bool,
}

/// [`ask`] on a blocking thread: waiting for a key (or the editor, or the pager) never
/// holds up an async worker.
pub(crate) async fn ask_blocking(
    view: &ApprovalView,
    palette: Palette,
    position: Option<Position>,
) -> anyhow::Result<Answer> {
    let view = view.clone();
    tokio::task::spawn_blocking(move || ask(&view, palette, position)).await?
}

/// Shows the card (page by page when it does not fit the window, drawn again when the
/// window is resized), with what `a` does when it would not simply apply the call as
/// shown, and reads the person's decision, one key at a time. The decision keys (and
/// `A` in a changeset) wait until every changed line has been on screen.
pub(crate) fn ask(
    view: &ApprovalView,
    palette: Palette,
    position: Option<Position>,
) -> anyhow::Result<Answer> {
    let request = |decision, edited_arguments, reason| {
        Answer::Decided(ResolveRequest {
            decision,
            edited_arguments,
            reason,
            seen_fingerprint: None,
            actor: Actor::Operator,
            wait: true,
            via: Some(pp_types::Via::Cli),
            remote_user: None,
        })
    };
    let hint = crate::review::approve_hint(view).map(|hint| palette.paint(Paint::Yellow, &hint));
    let mut card = Paged::new(view, palette, terminal_size()).with_footer(hint);
    card.show();
    loop {
        discard_type_ahead();
        let mut question = palette.paint(Paint::Yellow, QUESTION);
        let key = loop {
            match keys::read_key(&std::mem::take(&mut question), Some(card.size()))? {
                // Enter alone, Escape, arrows: nothing happens.
                Key::Ignored => {}
                // The same page again, laid out for the new size, and the question.
                Key::Resized => {
                    errln!();
                    card.resize(terminal_size());
                    card.show();
                    question = palette.paint(Paint::Yellow, QUESTION);
                }
                key => break key,
            }
        };
        let unseen = card.unseen();
        match key {
            Key::Char('a' | 'r' | 'e') if unseen > 0 => {
                errln!("{}", card.not_yet());
            }
            Key::Char(' ') if card.is_paged() => {
                errln!("next page");
                card.next();
                card.show();
            }
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
                match crate::edit::edit_arguments(&view.tool, &view.arguments) {
                    Ok(Some(edited)) => return Ok(Answer::Edited(edited)),
                    Ok(None) => errln!("arguments unchanged; choose again"),
                    Err(error) => errln!("{error:#}"),
                }
            }
            Key::Char('d') => {
                errln!("details");
                if show_details(view, palette)? {
                    card.saw_everything();
                }
            }
            Key::Char('n') if position.is_some() => {
                errln!("next");
                return Ok(Answer::Next { shown: unseen == 0 });
            }
            Key::Char('A') => match position {
                Some(position) if position.all_shown && unseen > 0 => {
                    errln!("{}", card.not_yet());
                }
                Some(position) if position.all_shown => {
                    errln!("approve all");
                    return Ok(Answer::ApproveAll);
                }
                Some(position) => errln!(
                    "\r\x1b[K{}",
                    crate::style::fit(
                        &format!(
                            "not yet: A approves all {} calls once each was shown; n: next call",
                            position.size
                        ),
                        terminal_columns()
                    )
                ),
                None => errln!("`A` is for a turn with several calls; press a to approve this one"),
            },
            Key::Char('?' | 'h') => {
                errln!("help\n{HELP}");
                if position.is_some() {
                    errln!("{CHANGESET_HELP}");
                }
            }
            Key::Char(' ') => {}
            Key::Char(other) => {
                errln!("`{other}` answers nothing: press a, r, e, d, or ? for help");
            }
            Key::Interrupt => return Ok(Answer::Interrupted),
            Key::End | Key::Ignored | Key::Resized => closed()?,
        }
    }
}

fn closed() -> anyhow::Result<()> {
    anyhow::bail!("stdin closed before a decision was made; nothing was run")
}

/// Pipes the whole card (every line of the change, and the arguments) into `$PAGER`;
/// prints it when there is no pager or it cannot start. Whether all of it was shown:
/// printed, or the pager took it all and exited successfully.
fn show_details(view: &ApprovalView, palette: Palette) -> anyhow::Result<bool> {
    let text = format!("{}\n", approval_card(view, palette, Fold::Nothing));
    if let Some(pager) = env::pager() {
        let child = std::process::Command::new("sh")
            .arg("-c")
            .arg(&pager)
            .stdin(std::process::Stdio::piped())
            .spawn();
        if let Ok(mut child) = child {
            // A pager quit early closes its input: not an error, but not all was shown.
            let written = child
                .stdin
                .take()
                .is_some_and(|mut stdin| stdin.write_all(text.as_bytes()).is_ok());
            let status = child.wait()?;
            // 127: the shell could not find the pager.
            if status.code() != Some(127) {
                return Ok(written && status.success());
            }
        }
    }
    errprint!("{text}");
    Ok(true)
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
    let line = format!(
        "{state} · {} · {:.1}s",
        counts.describe(),
        ui.started.elapsed().as_secs_f64()
    );
    let line = match stderr_columns() {
        Some(columns) => crate::style::fit(&line, columns),
        None => line,
    };
    errln!("{}", Palette::stderr().paint(Paint::Dim, &line));
}

/// The width to cut stderr's lines to: a terminal's (so that no line wraps), none when
/// stderr goes to a file or a pipe (where every line is kept whole).
fn stderr_columns() -> Option<usize> {
    std::io::stderr()
        .is_terminal()
        .then(|| terminal_columns().max(20))
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
    let lines = crate::commands::revert::change_lines(&changes);
    let columns = stderr_columns();
    for (at, line) in lines.iter().enumerate() {
        // A change's line is cut in its path: its id (for `pocketpilot revert`) and
        // state stay on it.
        let id = at
            .checked_sub(1)
            .and_then(|at| changes.get(at))
            .and_then(|change| line.rfind(&format!("  {}", change.id)));
        let line = match (columns, id) {
            (Some(columns), Some(id)) => {
                crate::style::fit_keeping(&line[..id], &line[id..], columns)
            }
            (Some(columns), None) => crate::style::fit(line, columns),
            (None, _) => line.clone(),
        };
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
pub(crate) fn print_hints(id: &str) {
    errln!(
        "Resolve it from anywhere:\n  pocketpilot approvals approve {id}\n  pocketpilot \
         approvals reject {id} --reason \"…\"\nor in the console (pocketpilot serve).",
        id = crate::render::one_line(id)
    );
}
