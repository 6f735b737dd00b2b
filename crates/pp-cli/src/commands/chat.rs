//! `pocketpilot chat`: a conversation in the terminal. Each message is one turn of a
//! stored session, and each turn is an ordinary task, shown with `run`'s live view and
//! approval cards (`run::follow`). Ctrl+C during a turn cancels that turn only.
//!
//! Without a terminal on stdin each input line is one turn, so a chat can be scripted;
//! a turn that needs an approval then stops the chat (exit 3), as `run` does.

use std::io::{BufRead as _, IsTerminal as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use anyhow::Context as _;
use pp_chat::NewSession;
use pp_tasks::{Action, Caller, TaskService};
use pp_types::{Actor, TaskId, TaskState};
use serde_json::Value;

use crate::acting::{self, UserArgs};
use crate::app::{App, read_script};
use crate::commands::run::{OnInterrupt, Ui, follow, open_live};
use crate::commands::sessions::print_sessions;
use crate::config::{Config, Flags};
use crate::keys::{self, Line};
use crate::live::LiveView;
use crate::output::{errln, outln};
use crate::render::{json_safe, one_line};
use crate::report::JsonFeed;
use crate::style::{Paint, Palette};
use crate::{Exit, exit};

/// What `pocketpilot chat` was asked for.
pub(crate) struct ChatOptions {
    /// `--session ID`: continue this session.
    pub(crate) session: Option<String>,
    /// `--script FILE`: every turn replays this script instead of calling a model.
    pub(crate) script: Option<PathBuf>,
    /// `--json`: each turn's events on stdout, as `run --json` prints them.
    pub(crate) json: bool,
    /// `--user NAME` (team mode): who chats.
    pub(crate) who: UserArgs,
}

/// How many sessions `/sessions` lists (the most recently used).
const SESSIONS_SHOWN: usize = 20;

/// The commands typed at the prompt.
const COMMANDS: &str = "/new  start a new session    /sessions  list sessions    /exit  leave \
                        (also Ctrl+D)";

/// Runs the conversation; returns the exit code (see docs/terminal.md).
pub(crate) async fn run(mut flags: Flags, options: ChatOptions) -> anyhow::Result<u8> {
    if flags.workspace.is_none() {
        let stored = match &options.session {
            Some(id) => stored_workspace(&flags, id).await?,
            None => None,
        };
        flags.workspace = match stored {
            Some(path) => Some(path),
            None => Some(std::env::current_dir().context("cannot read the current directory")?),
        };
    }
    let config = Config::load(&flags)?;
    let script = options.script.as_deref().map(read_script).transpose()?;
    let live = LiveView::new(options.json);
    let app = open_live(config, script.is_some(), &live).await?;
    let caller = options.who.caller(app.config.team, &app.service).await?;
    let mut chat = Chat {
        app,
        caller,
        live,
        script,
        json: options.json,
        session: None,
        current: Arc::new(Mutex::new(None)),
        failed: false,
    };
    if let Some(id) = options.session {
        chat.resume(&id).await?;
    }
    let interactive = std::io::stdin().is_terminal();
    if interactive {
        errln!("{COMMANDS}");
    }
    let watcher = interrupt_watcher(
        chat.app.service.clone(),
        Arc::clone(&chat.current),
        chat.caller.clone(),
    );
    let code = chat.converse(interactive).await;
    watcher.abort();
    code
}

/// Where a continued session's turns ran (its last turn's workspace folder), so
/// `--session ID` without `--workspace` works from any directory; `None` before the
/// first turn.
async fn stored_workspace(flags: &Flags, id: &str) -> anyhow::Result<Option<PathBuf>> {
    let app = App::stored(flags).await?;
    let view = match app.sessions().session(id).await {
        Ok(view) => view,
        Err(pp_tasks::Error::NotFound { .. }) => return Err(no_session(id).into()),
        Err(error) => return Err(error.into()),
    };
    let Some(last) = view.turns.last() else {
        return Ok(None);
    };
    let task = app.service.task(&last.task_id).await?;
    Ok(Some(PathBuf::from(task.workspace_path)))
}

/// The usage error for an unknown `--session`.
fn no_session(id: &str) -> Exit {
    Exit::usage(format!(
        "there is no session {}: `pocketpilot sessions list` shows them",
        one_line(id)
    ))
}

/// The conversation's state.
struct Chat {
    app: App,
    /// Who chats (team mode: the `--user`; each turn passes the API's checks).
    caller: Caller,
    live: Arc<LiveView>,
    script: Option<Value>,
    json: bool,
    /// The session the next message goes to; `None` until the first message (or after
    /// `/new`): a session is created when there is something to put in it.
    session: Option<String>,
    /// The turn running now, which Ctrl+C cancels.
    current: Arc<Mutex<Option<TaskId>>>,
    /// Whether a turn failed or was cancelled (line mode exits 1 at the end).
    failed: bool,
}

/// What to do after a line of input.
enum Next {
    Continue,
    Exit(u8),
}

impl Chat {
    /// Continues session `id`: says how many turns it has and shows the last answer.
    /// A turn whose process stopped (a closed terminal) is marked `interrupted` first,
    /// as `serve` does at start-up, so it no longer blocks the next message.
    async fn resume(&mut self, id: &str) -> anyhow::Result<()> {
        if self.caller.user.is_some() {
            let creator = self.app.sessions().session_user(id).await?;
            let creator = creator.as_deref();
            let action = Action::OwnSession { id, creator };
            acting::authorize(&self.app.service, &self.caller, action).await?;
        }
        self.app.service.recover().await?;
        let view = match self.app.sessions().session(id).await {
            Ok(view) => view,
            Err(pp_tasks::Error::NotFound { .. }) => return Err(no_session(id).into()),
            Err(error) => return Err(error.into()),
        };
        errln!(
            "session {} · {} turn{} · workspace {}",
            one_line(&view.session.id),
            view.turns.len(),
            if view.turns.len() == 1 { "" } else { "s" },
            one_line(&view.session.workspace)
        );
        if let Some(last) = view.turns.last() {
            let dim = |text: &str| Palette::stderr().paint(Paint::Dim, text);
            errln!("{}", dim(&format!("you › {}", one_line(&last.prompt))));
            if let Some(answer) = &last.final_text {
                errln!("{}", dim(&format!("model › {}", one_line(answer))));
            } else if !last.state.is_terminal() {
                errln!(
                    "{}",
                    dim(&format!("(the last turn is {})", last.state.as_str()))
                );
            }
        }
        self.session = Some(view.session.id);
        self.print_session_line()?;
        Ok(())
    }

    /// `--json`: one `{"type":"session",…}` line whenever the session changes.
    fn print_session_line(&self) -> anyhow::Result<()> {
        if self.json
            && let Some(id) = &self.session
        {
            let line = serde_json::json!({"type": "session", "session_id": id});
            outln!("{}", json_safe(&line.to_string()))?;
        }
        Ok(())
    }

    /// Reads and answers messages until the person leaves or the input ends.
    async fn converse(&mut self, interactive: bool) -> anyhow::Result<u8> {
        loop {
            let input = if interactive {
                prompt_line().await?
            } else {
                read_plain_line().await?
            };
            let line = match input {
                Line::Done(line) => line,
                Line::Cancelled => continue,
                Line::Interrupt if interactive => {
                    errln!();
                    return Ok(exit::OK);
                }
                Line::Interrupt => return Ok(exit::INTERRUPTED),
                Line::End if interactive => {
                    errln!();
                    return Ok(exit::OK);
                }
                Line::End => return Ok(if self.failed { exit::FAILED } else { exit::OK }),
            };
            if let Next::Exit(code) = self.handle(&line, interactive).await? {
                return Ok(code);
            }
        }
    }

    /// One line: a command or a message.
    async fn handle(&mut self, line: &str, interactive: bool) -> anyhow::Result<Next> {
        match line.trim() {
            "" => Ok(Next::Continue),
            "/exit" | "/quit" => Ok(Next::Exit(if self.failed && !interactive {
                exit::FAILED
            } else {
                exit::OK
            })),
            "/new" => {
                self.session = None;
                errln!("a new session starts with your next message");
                Ok(Next::Continue)
            }
            "/sessions" => {
                let sessions = self.app.sessions().sessions(SESSIONS_SHOWN).await?;
                print_sessions(&sessions, self.session.as_deref(), true)?;
                Ok(Next::Continue)
            }
            "/help" | "/?" => {
                errln!("{COMMANDS}");
                Ok(Next::Continue)
            }
            command if command.starts_with('/') && !command.contains(char::is_whitespace) => {
                errln!(
                    "unknown command {}: {COMMANDS}",
                    one_line(command.split_whitespace().next().unwrap_or(command))
                );
                Ok(Next::Continue)
            }
            message => self.turn(message).await,
        }
    }

    /// Sends `message` as the next turn and follows it to its end.
    async fn turn(&mut self, message: &str) -> anyhow::Result<Next> {
        let started = Instant::now();
        let service = &self.app.service;
        let sessions = self.app.sessions().as_user(self.caller.user.as_deref());
        let session = match &self.session {
            Some(id) => id.clone(),
            None => {
                if let Some(workspace) = service.workspaces().find(None) {
                    let workspace = &workspace.name;
                    acting::authorize(service, &self.caller, Action::Work { workspace }).await?;
                }
                let record = sessions
                    .create_session(NewSession {
                        workspace: None,
                        title: None,
                        actor: Actor::Operator,
                    })
                    .await?;
                errln!("session {}", one_line(&record.id));
                self.session = Some(record.id.clone());
                self.print_session_line()?;
                record.id
            }
        };
        if self.caller.user.is_some() {
            // Every turn: the session's workspace must still be granted.
            let view = sessions.session(&session).await?;
            let workspace = &view.session.workspace;
            acting::authorize(service, &self.caller, Action::Work { workspace }).await?;
        }
        let task = match sessions
            .send_message(
                &session,
                message.to_owned(),
                Actor::Operator,
                self.script.clone(),
            )
            .await
        {
            Ok(task) => task,
            Err(pp_tasks::Error::SessionBusy { task_id, .. }) => {
                self.failed = true;
                errln!(
                    "not sent: the session's last turn (task {task_id}) has not ended; resolve \
                     its approval (pocketpilot approvals list) or cancel it (pocketpilot tasks \
                     cancel {task_id}), or start a new session with /new"
                );
                return Ok(Next::Continue);
            }
            Err(error) => return Err(error.into()),
        };
        set(&self.current, Some(task.id.clone()));
        let feed = self.json.then(|| JsonFeed::start(service, &task.id));
        let ui = Ui {
            live: Arc::clone(&self.live),
            feed,
            started,
            interrupt: OnInterrupt::CancelTask,
            caller: self.caller.clone(),
            stop: crate::interrupt::Stop::inactive(),
        };
        let outcome = match service.run_now(&task.id).await {
            Ok(record) => follow(service, record, &ui).await,
            Err(error) => Err(error.into()),
        };
        set(&self.current, None);
        let code = outcome?;
        match code {
            exit::OK => {}
            exit::WAITING_APPROVAL => {
                errln!(
                    "the session continues once it is resolved: pocketpilot chat --session {}",
                    one_line(&session)
                );
                return Ok(Next::Exit(code));
            }
            exit::CONFLICT => {
                self.failed = true;
            }
            _ => {
                self.failed = true;
                let state = service.task(&task.id).await.map(|task| task.state);
                if matches!(state, Ok(TaskState::Cancelled)) {
                    errln!("this turn was cancelled; the session goes on");
                }
            }
        }
        Ok(Next::Continue)
    }
}

fn set(slot: &Mutex<Option<TaskId>>, value: Option<TaskId>) {
    *slot.lock().unwrap_or_else(PoisonError::into_inner) = value;
}

/// Ctrl+C while a turn runs (the terminal is not in raw mode then, so it arrives as
/// SIGINT) cancels that turn (audited as `caller`); at any other time it ends the
/// program as usual.
fn interrupt_watcher(
    service: TaskService,
    current: Arc<Mutex<Option<TaskId>>>,
    caller: pp_tasks::Caller,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            let turn = current
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            match turn {
                Some(task) => {
                    errln!("\ninterrupted: cancelling this turn…");
                    if let Err(error) = service.cancel_as(&task, &caller).await {
                        errln!("{error}");
                    }
                }
                None => interrupted_between_turns(),
            }
        }
    })
}

/// Handling SIGINT took its default away; between turns it keeps its meaning (only
/// line mode gets here: at the terminal's prompt Ctrl+C arrives as a key).
#[expect(
    clippy::exit,
    reason = "the blocking read of stdin cannot be cancelled, so returning would hang"
)]
fn interrupted_between_turns() {
    errln!();
    std::process::exit(i32::from(exit::INTERRUPTED));
}

/// The prompt on a terminal: `you › `, read with echo in raw mode (Ctrl+C and Ctrl+D
/// arrive as keys), on a blocking thread.
async fn prompt_line() -> anyhow::Result<Line> {
    let prompt = Palette::stderr().paint(Paint::Bold, "you › ");
    Ok(tokio::task::spawn_blocking(move || keys::read_line(&prompt)).await??)
}

/// One line of plain (non-terminal) input; `End` at the end of the input.
async fn read_plain_line() -> anyhow::Result<Line> {
    tokio::task::spawn_blocking(|| {
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line)? {
            0 => Ok(Line::End),
            _ => Ok(Line::Done(line.trim().to_owned())),
        }
    })
    .await?
}
