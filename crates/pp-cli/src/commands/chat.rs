//! `pocketpilot chat`: a conversation in the terminal. Each message is one turn of a
//! stored session, and each turn is an ordinary task, shown with `run`'s live view and
//! approval cards (`run::follow`). Ctrl+C during a turn cancels that turn only.
//!
//! Without a terminal on stdin each input line is one turn, so a chat can be scripted;
//! a turn that needs an approval then stops the chat (exit 3), as `run` does.
//!
//! On a terminal the prompt is a line editor (rustyline, on a blocking thread): cursor
//! keys, Ctrl+R, multi-line messages (a trailing `\` or Alt+Enter) and the history of
//! earlier messages, kept across chats in the data directory's `chat_history` (0600).

use std::io::{BufRead as _, IsTerminal as _};
use std::path::{Path, PathBuf};
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
use crate::keys::Line;
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
    let mut editor = None;
    if interactive {
        errln!("{COMMANDS}");
        let history = chat.app.config.home.join(HISTORY_FILE);
        editor = Some(LineEditor::open(history).await?);
    }
    let watcher = interrupt_watcher(
        chat.app.service.clone(),
        Arc::clone(&chat.current),
        chat.caller.clone(),
    )?;
    let code = chat.converse(editor).await;
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

    /// Reads and answers messages until the person leaves or the input ends: from the
    /// line `editor` on a terminal, else line by line.
    async fn converse(&mut self, mut editor: Option<LineEditor>) -> anyhow::Result<u8> {
        let interactive = editor.is_some();
        loop {
            let input = match &mut editor {
                Some(editor) => editor.read().await?,
                None => read_plain_line().await?,
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
///
/// The handler is installed here, before the line editor first reads: the editor swaps
/// in its own SIGINT handler while it reads and puts back the one it found, so one
/// installed while it reads would be undone.
fn interrupt_watcher(
    service: TaskService,
    current: Arc<Mutex<Option<TaskId>>>,
    caller: pp_tasks::Caller,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let mut interrupts = Interrupts::install()?;
    Ok(tokio::spawn(async move {
        loop {
            if !interrupts.next().await {
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
    }))
}

/// SIGINT, handled from the moment this is made.
struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    fn install() -> std::io::Result<Self> {
        Ok(Self {
            #[cfg(unix)]
            signal: tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?,
        })
    }

    /// Waits for the next Ctrl+C; `false` when none can come any more.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        return self.signal.recv().await.is_some();
        #[cfg(not(unix))]
        return tokio::signal::ctrl_c().await.is_ok();
    }
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

/// The history of messages typed at the prompt, in the data directory.
const HISTORY_FILE: &str = "chat_history";

/// How many messages the history keeps (the file is cut back to these when it holds
/// twice as many).
const HISTORY_KEPT: usize = 1000;

/// The prompt's line editor.
type Editor = rustyline::Editor<Continuation, rustyline::history::DefaultHistory>;

/// The prompt on a terminal: `you › `, read by rustyline in raw mode on a blocking thread
/// (Ctrl+C and Ctrl+D arrive as keys), with the history kept in `history`.
struct LineEditor {
    /// `None` while a line is being read on a blocking thread.
    editor: Option<Editor>,
    history: PathBuf,
}

impl LineEditor {
    /// The editor, with the earlier messages from `history` loaded (none, with a
    /// warning, when the file cannot be read: the chat works without them).
    async fn open(history: PathBuf) -> anyhow::Result<Self> {
        let file = history.clone();
        let editor = tokio::task::spawn_blocking(move || -> anyhow::Result<Editor> {
            let config = rustyline::Config::builder()
                // Terminal in, terminal out: stdout may be a pipe (`--json`).
                .behavior(rustyline::Behavior::PreferTerm)
                .max_history_size(HISTORY_KEPT)?
                .history_ignore_dups(true)?
                // A message that starts with a space is not kept (as in bash's
                // `HISTCONTROL=ignorespace`): the way to type a secret.
                .history_ignore_space(true)
                .auto_add_history(false)
                .build();
            let mut editor = Editor::with_config(config)?;
            editor.set_helper(Some(Continuation));
            editor.bind_sequence(
                rustyline::KeyEvent(rustyline::KeyCode::Enter, rustyline::Modifiers::ALT),
                rustyline::EventHandler::Simple(rustyline::Cmd::Newline),
            );
            match history::load(&file) {
                Ok(messages) => {
                    for message in messages {
                        editor.add_history_entry(message)?;
                    }
                }
                Err(error) => errln!(
                    "warning: cannot read the chat history {}: {error:#}",
                    file.display()
                ),
            }
            Ok(editor)
        })
        .await??;
        Ok(Self {
            editor: Some(editor),
            history,
        })
    }

    /// Reads one message (Enter), a trailing `\` joined with the next line; a message is
    /// added to the history and appended to its file.
    async fn read(&mut self) -> anyhow::Result<Line> {
        let mut editor = self
            .editor
            .take()
            .context("the line editor is already reading")?;
        let file = self.history.clone();
        let (editor, line) = tokio::task::spawn_blocking(move || {
            let line = read_message(&mut editor, &file);
            (editor, line)
        })
        .await?;
        self.editor = Some(editor);
        line
    }
}

/// [`LineEditor::read`] on the blocking thread.
fn read_message(editor: &mut Editor, history_file: &Path) -> anyhow::Result<Line> {
    let styled = Palette::stderr().paint(Paint::Bold, "you › ");
    let typed = match editor.readline(&("you › ", styled.as_str())) {
        Ok(typed) => typed,
        Err(rustyline::error::ReadlineError::Interrupted) => return Ok(Line::Interrupt),
        Err(rustyline::error::ReadlineError::Eof) => return Ok(Line::End),
        Err(error) => return Err(error.into()),
    };
    let message = joined(&typed);
    if !message.trim().is_empty()
        && editor.add_history_entry(message.as_str())?
        && let Err(error) = history::append(history_file, &message)
    {
        // The message is still sent; only its recall in a later chat is lost.
        errln!(
            "warning: cannot add to the chat history {}: {error:#}",
            history_file.display()
        );
    }
    Ok(Line::Done(message.trim().to_owned()))
}

/// The message typed: a `\` at the end of a line continued it on the next one.
fn joined(typed: &str) -> String {
    typed.replace("\\\n", "\n")
}

/// Enter on a line that ends with `\` starts a new line instead of sending.
struct Continuation;

impl rustyline::validate::Validator for Continuation {
    fn validate(
        &self,
        context: &mut rustyline::validate::ValidationContext<'_>,
    ) -> rustyline::Result<rustyline::validate::ValidationResult> {
        Ok(if context.input().ends_with('\\') {
            rustyline::validate::ValidationResult::Incomplete
        } else {
            rustyline::validate::ValidationResult::Valid(None)
        })
    }
}

impl rustyline::completion::Completer for Continuation {
    type Candidate = String;
}

impl rustyline::hint::Hinter for Continuation {
    type Hint = String;
}

impl rustyline::highlight::Highlighter for Continuation {}

impl rustyline::Helper for Continuation {}

/// The history file: one message a line, as a JSON string (a message may span lines),
/// oldest first; private (0600) since a prompt may hold a secret.
#[expect(
    clippy::disallowed_methods,
    reason = "the history file is in the data directory, never a model-supplied path"
)]
mod history {
    use std::fs::{File, OpenOptions};
    use std::io::{BufRead as _, BufReader, Write as _};
    use std::path::Path;

    use super::HISTORY_KEPT;

    /// The messages in `path` (none when it does not exist), the last [`HISTORY_KEPT`];
    /// the file is made private if it was not, and cut back when it has grown to twice
    /// that.
    pub(super) fn load(path: &Path) -> anyhow::Result<Vec<String>> {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(error) => return Err(error.into()),
        };
        make_private(&file)?;
        let mut messages = Vec::new();
        for line in BufReader::new(file).lines() {
            // A line that is not a JSON string (a torn write) is skipped.
            if let Ok(message) = serde_json::from_str::<String>(&line?) {
                messages.push(message);
            }
        }
        if messages.len() >= 2 * HISTORY_KEPT {
            messages.drain(..messages.len() - HISTORY_KEPT);
            rewrite(path, &messages)?;
        }
        let skip = messages.len().saturating_sub(HISTORY_KEPT);
        messages.drain(..skip);
        Ok(messages)
    }

    /// Adds `message` at the end of `path`, created 0600 (one write, so two chats
    /// appending at once do not mix their lines).
    pub(super) fn append(path: &Path, message: &str) -> anyhow::Result<()> {
        let mut options = OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path)?;
        make_private(&file)?;
        let mut line = serde_json::to_string(message)?;
        line.push('\n');
        file.write_all(line.as_bytes())?;
        Ok(())
    }

    /// Replaces the file with `messages`, through a private temporary file.
    fn rewrite(path: &Path, messages: &[String]) -> anyhow::Result<()> {
        let dir = path.parent().unwrap_or_else(|| Path::new("."));
        let mut temp = tempfile::NamedTempFile::new_in(dir)?;
        for message in messages {
            writeln!(temp, "{}", serde_json::to_string(message)?)?;
        }
        temp.persist(path)?;
        Ok(())
    }

    /// Takes group and other permissions away from a file that has them.
    fn make_private(file: &File) -> std::io::Result<()> {
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode = file.metadata()?.permissions().mode();
            if mode & 0o077 != 0 {
                file.set_permissions(std::fs::Permissions::from_mode(mode & 0o600))?;
            }
        }
        #[cfg(not(unix))]
        let _ = file;
        Ok(())
    }

    #[cfg(test)]
    mod tests {
        #![allow(clippy::unwrap_used, reason = "tests")]

        use super::*;

        #[test]
        fn messages_round_trip_including_newlines_and_the_file_is_private() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("chat_history");
            assert!(load(&path).unwrap().is_empty());
            append(&path, "one").unwrap();
            append(&path, "two\nlines \\ and \"quotes\"").unwrap();
            assert_eq!(
                load(&path).unwrap(),
                ["one", "two\nlines \\ and \"quotes\""]
            );
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt as _;
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600);
                std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
                load(&path).unwrap();
                let mode = std::fs::metadata(&path).unwrap().permissions().mode();
                assert_eq!(mode & 0o777, 0o600, "a wider mode is fixed on load");
            }
        }

        #[test]
        fn a_torn_line_is_skipped_and_a_long_file_is_cut_back() {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("chat_history");
            std::fs::write(&path, "\"kept\"\n\"torn\n").unwrap();
            assert_eq!(load(&path).unwrap(), ["kept"]);
            for index in 0..2 * HISTORY_KEPT {
                append(&path, &format!("m{index}")).unwrap();
            }
            let loaded = load(&path).unwrap();
            assert_eq!(loaded.len(), HISTORY_KEPT);
            assert_eq!(
                loaded.last().unwrap(),
                &format!("m{}", 2 * HISTORY_KEPT - 1)
            );
            let lines = std::fs::read_to_string(&path).unwrap().lines().count();
            assert_eq!(lines, HISTORY_KEPT, "the file was cut back");
        }
    }
}
