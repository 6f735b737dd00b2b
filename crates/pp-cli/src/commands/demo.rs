//! `pocketpilot demo`: a short guided tour of the gate, with no model and no network.

use std::io::IsTerminal as _;
use std::sync::Arc;

use anyhow::Context as _;
use pp_tasks::store::Store;
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, TaskService, TaskSettings, Workspaces,
};
use pp_types::{Actor, ApprovalState, TaskRecord, TaskState};
use serde_json::{Value, json};

use crate::commands::run::{Answer, ask_blocking};
use crate::exit;
use crate::live::LiveView;
use crate::output::outln;
use crate::render::{CARD_LINES, Fold, approval_card};
use crate::style::{Palette, terminal_columns};

/// Runs the tour; exits 0 whether or not a terminal is attached.
pub(crate) async fn run() -> anyhow::Result<u8> {
    let temp = tempfile::Builder::new()
        .prefix("pocketpilot-demo-")
        .tempdir()
        .context("cannot create a temporary directory for the demo")?;
    let workspace = temp.path().join("workspace");
    create_files(temp.path())?;
    let store = Arc::new(Store::open(&temp.path().join("demo.db"))?);
    let live = LiveView::new(false);
    let service = TaskService::build(
        store,
        TaskSettings::default(),
        Workspaces::single("demo", &workspace),
        ModelSource::Scripted,
        pp_tools::Toolbox::files(),
        Some(live.clone()),
    );
    let interactive = std::io::stdin().is_terminal();

    outln!("PocketPilot demo: the gate at work, with a scripted model and no network.")?;
    outln!("Throw-away workspace: {}", workspace.display())?;
    outln!("(it holds notes.txt; next to it, outside the workspace, is secret.txt)\n")?;

    outln!("1/3  A read. `read_file` declares the capability file:read, so it runs at once.")?;
    let task = start(
        &service,
        "What do my notes say?",
        json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
            {"content": "Your notes say: buy milk, call the bank."}
        ]),
    )
    .await?;
    outln!("     → {}\n", outcome(&task))?;

    outln!("2/3  An escape. The model asks for ../secret.txt. The jail refuses the path before")?;
    outln!("     anything is opened (rule: escapes); the model is told and changes course.")?;
    let task = start(
        &service,
        "Show me the secret next door",
        json!([
            {"tool_calls": [{"name": "read_file", "arguments": {"path": "../secret.txt"}}]},
            {"content": "That file is outside your workspace, so I cannot read it."}
        ]),
    )
    .await?;
    outln!("     → {}\n", outcome(&task))?;

    outln!("3/3  Writes. `write_file` declares file:write, so the task stops BEFORE touching the")?;
    outln!("     disk and waits for a person. One approval covers one call: the second write")?;
    outln!("     asks again.")?;
    let mut task = start(
        &service,
        "Write a summary, then a to-do list",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "summary.md", "content": "# Summary\n\nBuy milk; call the bank.\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "todo.md", "content": "- [ ] milk\n- [ ] bank\n"}}]},
            {"content": "Done."}
        ]),
    )
    .await?;
    while task.state == TaskState::WaitingApproval {
        let pending = service
            .store()
            .approvals_for_task(&task.id)?
            .into_iter()
            .rfind(|approval| approval.state == ApprovalState::Pending)
            .context("the task waits but has no pending approval")?;
        let view = service.approval_view(&pending.id).await?;
        live.pause();
        let palette = Palette::stdout();
        outln!(
            "{}",
            approval_card(&view, palette, Fold::Lines(CARD_LINES, terminal_columns()))
        )?;
        let request = if interactive {
            match ask_blocking(&view, palette).await? {
                Answer::Decided(request) => request,
                Answer::Interrupted => {
                    outln!("\n     Interrupted: nothing was written. The demo ends here.")?;
                    return Ok(exit::INTERRUPTED);
                }
            }
        } else {
            outln!("     No terminal is attached, so nobody can decide here: PocketPilot never")?;
            outln!("     approves on its own. (Demo-only scripted decision: rejecting.)")?;
            ResolveRequest {
                decision: Decision::Reject,
                edited_arguments: None,
                reason: Some("demo without a terminal".into()),
                actor: Actor::Operator,
                wait: true,
            }
        };
        task = match service.resolve(&pending.id, request).await {
            Ok(task) => task,
            Err(pp_tasks::Error::InvalidArguments(message)) => {
                outln!("     the edited call was refused: {message}")?;
                task
            }
            Err(error) => return Err(error.into()),
        };
    }
    outln!("     → {}", outcome(&task))?;
    let written: Vec<&str> = ["summary.md", "todo.md"]
        .into_iter()
        .filter(|name| workspace.join(name).exists())
        .collect();
    outln!(
        "     files written: {}\n",
        if written.is_empty() {
            "none".to_owned()
        } else {
            written.join(", ")
        }
    )?;
    outln!("That is the promise: the model decides whether to call a tool; it never decides")?;
    outln!("what the tool may touch, nor whether anything is written to disk.")?;
    outln!("Next: `pocketpilot run --script FILE \"…\"` or configure a model (README).")?;
    Ok(exit::OK)
}

async fn start(service: &TaskService, prompt: &str, script: Value) -> anyhow::Result<TaskRecord> {
    let task = service
        .create(CreateTask {
            prompt: prompt.to_owned(),
            workspace: None,
            actor: Actor::Operator,
            script: Some(script),
        })
        .await?;
    Ok(service.run_now(&task.id).await?)
}

fn outcome(task: &TaskRecord) -> String {
    crate::render::terminal_safe(&outcome_text(task)).into_owned()
}

fn outcome_text(task: &TaskRecord) -> String {
    match task.state {
        TaskState::Completed => format!("completed: {}", task.final_text.as_deref().unwrap_or("")),
        state => format!(
            "{}{}",
            state.as_str(),
            task.error
                .as_deref()
                .map(|e| format!(": {e}"))
                .unwrap_or_default()
        ),
    }
}

#[expect(
    clippy::disallowed_methods,
    reason = "the demo builds its own throw-away tree"
)]
fn create_files(base: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir(base.join("workspace"))?;
    std::fs::write(
        base.join("workspace/notes.txt"),
        "buy milk\ncall the bank\n",
    )?;
    std::fs::write(base.join("secret.txt"), "the neighbour's diary\n")?;
    Ok(())
}
