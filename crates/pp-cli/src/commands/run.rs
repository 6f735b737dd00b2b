//! `pocketpilot run`: one task in the terminal, stored like every other task, with
//! approvals asked of the person at the terminal.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context as _;
use pp_tasks::{CreateTask, Decision, ModelSource, ResolveRequest, TaskService};
use pp_types::{Actor, ApprovalState, TaskRecord, TaskState};
use serde_json::Value;

use crate::app::{App, read_script, sweep_workspaces};
use crate::config::{Config, Flags};
use crate::output::{errln, errprint, outln};
use crate::render::{LiveView, approval_card, json_safe, terminal_safe};
use crate::{Exit, env, exit, models};

/// Runs `prompt` and returns the exit code.
pub(crate) async fn run(
    mut flags: Flags,
    script: Option<PathBuf>,
    prompt: &str,
) -> anyhow::Result<u8> {
    if flags.workspace.is_none() {
        flags.workspace =
            Some(std::env::current_dir().context("cannot read the current directory")?);
    }
    let config = Config::load(&flags)?;
    let script = script.as_deref().map(read_script).transpose()?;
    let models = match &script {
        Some(_) => ModelSource::Scripted,
        None => match models::find(&config).await? {
            models::Found::Chosen(chosen) => {
                errln!("model: {}", chosen.reason);
                ModelSource::Provider(chosen.model)
            }
            models::Found::Nothing(message) => return Err(Exit::no_model(message).into()),
        },
    };
    let app = App::with_config(config, models, Some(Arc::new(LiveView)))?;
    let service = &app.service;
    let workspace = service.workspaces().find(None);
    if let Some(workspace) = workspace {
        errln!("workspace: {}", workspace.path.display());
    }
    sweep_workspaces(workspace);
    let task = service
        .create(CreateTask {
            prompt: prompt.to_owned(),
            workspace: None,
            actor: Actor::Operator,
            script,
        })
        .await?;
    errln!(
        "task {} (stored in {})",
        task.id,
        app.config.database().display()
    );
    let record = service.run_now(&task.id).await?;
    follow(service, record).await
}

/// Reports how a task ended, asking the person at each approval; returns the exit code.
pub(crate) async fn follow(service: &TaskService, mut record: TaskRecord) -> anyhow::Result<u8> {
    let interactive = std::io::stdin().is_terminal();
    loop {
        match record.state {
            TaskState::Completed => {
                outln!("{}", terminal_safe(&record.final_text.unwrap_or_default()))?;
                return Ok(exit::OK);
            }
            TaskState::WaitingApproval => {}
            state => {
                let error = record
                    .error
                    .as_deref()
                    .map(|error| format!(": {}", terminal_safe(error)))
                    .unwrap_or_default();
                errln!("task {} {}{error}", record.id, state.as_str());
                return Ok(exit::FAILED);
            }
        }
        let pending = service
            .store()
            .approvals_for_task(&record.id)?
            .into_iter()
            .rfind(|approval| approval.state == ApprovalState::Pending)
            .context("the task waits for approval but has no pending approval")?;
        let view = service.approval_view(&pending.id).await?;
        errln!("{}", approval_card(&view));
        if !interactive {
            print_waiting(&view)?;
            return Ok(exit::WAITING_APPROVAL);
        }
        record = loop {
            let request = ask(&view.arguments)?;
            match service.resolve(&pending.id, request).await {
                Ok(record) => break record,
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

/// Reads the person's decision from the terminal.
pub(crate) fn ask(arguments: &Value) -> anyhow::Result<ResolveRequest> {
    let stdin = std::io::stdin();
    let request = |decision, edited_arguments, reason| ResolveRequest {
        decision,
        edited_arguments,
        reason,
        actor: Actor::Operator,
        wait: true,
    };
    loop {
        discard_type_ahead();
        errprint!("[a]pprove, [r]eject, [e]dit arguments? ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            anyhow::bail!("stdin closed before a decision was made; nothing was run");
        }
        match line.trim().to_lowercase().as_str() {
            "a" | "approve" | "y" | "yes" => return Ok(request(Decision::Approve, None, None)),
            "r" | "reject" | "n" | "no" => {
                errprint!("reason (optional): ");
                std::io::stderr().flush()?;
                let mut reason = String::new();
                stdin.lock().read_line(&mut reason)?;
                let reason = reason.trim();
                let reason = (!reason.is_empty()).then(|| reason.to_owned());
                return Ok(request(Decision::Reject, None, reason));
            }
            "e" | "edit" => match edit_arguments(arguments) {
                Ok(Some(edited)) => return Ok(request(Decision::Approve, Some(edited), None)),
                Ok(None) => errln!("arguments unchanged; choose again"),
                Err(error) => errln!("{error:#}"),
            },
            other => errln!("unknown answer `{other}`: type a, r or e"),
        }
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

/// Prints the pending approval for scripts and says how to resolve it.
fn print_waiting(view: &pp_tasks::ApprovalView) -> std::io::Result<()> {
    let pending = serde_json::json!({
        "status": "waiting_approval",
        "task_id": view.task_id,
        "approval_id": view.id,
        "tool": view.tool,
        "capability": view.capability,
        "risk": view.risk,
        "label": view.label,
        "arguments": view.arguments,
    });
    outln!("{}", json_safe(&pending.to_string()))?;
    errln!(
        "waiting for approval: stdin is not a terminal, and PocketPilot never approves on its \
         own. Resolve it from anywhere:\n  pocketpilot approvals approve {id}\n  pocketpilot \
         approvals reject {id} --reason \"…\"\nor in the console (pocketpilot serve).",
        id = view.id
    );
    Ok(())
}
