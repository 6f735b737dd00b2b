//! `pocketpilot demo`: a short guided tour of the gate, with no model and no network.

use std::io::IsTerminal as _;
use std::sync::Arc;

use anyhow::Context as _;
use pp_store::Store;
use pp_store::StoreUrl;
use pp_tasks::{
    CreateTask, Decision, ModelSource, ResolveRequest, TaskService, TaskSettings, Workspaces,
};
use pp_types::{Actor, ApprovalState, TaskRecord, TaskState};
use serde_json::{Value, json};

use crate::commands::run::{Answer, ask_blocking};
use crate::exit;
use crate::live::LiveView;
use crate::output::outln;
use crate::render::{Fold, approval_card};
use crate::style::{Palette, terminal_columns};

/// Runs the tour; exits 0 whether or not a terminal is attached.
pub(crate) async fn run() -> anyhow::Result<u8> {
    let temp = tempfile::Builder::new()
        .prefix("pocketpilot-demo-")
        .tempdir()
        .context("cannot create a temporary directory for the demo")?;
    let workspace = temp.path().join("workspace");
    create_files(temp.path())?;
    let store = Store::connect(
        &StoreUrl::Sqlite(temp.path().join("demo.db")),
        Arc::new(pp_types::SystemClock),
    )
    .await?;
    let live = LiveView::new(false);
    let service = TaskService::build(
        store,
        TaskSettings::default(),
        Workspaces::single("demo", &workspace),
        ModelSource::Scripted,
        pp_tools::Toolbox::files().with(Arc::new(crate::app::docs_provider(
            &crate::config::DocsConfig::default(),
        ))),
        Some(live.clone()),
    );
    let interactive = std::io::stdin().is_terminal();

    outln!("PocketPilot demo: the gate at work, with a scripted model and no network.")?;
    outln!("Throw-away workspace: {}", workspace.display())?;
    outln!("(it holds notes.txt and invoices/; outside the workspace is secret.txt)\n")?;

    outln!("1/4  A read. `read_file` declares the capability file:read, so it runs at once.")?;
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

    outln!("2/4  An escape. The model asks for ../secret.txt. The jail refuses the path before")?;
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

    outln!("3/4  Writes. `write_file` declares file:write, so the task stops BEFORE touching the")?;
    outln!("     disk and waits for a person. One approval covers one call: the second write")?;
    outln!("     asks again.")?;
    let task = start(
        &service,
        "Write a summary, then a to-do list",
        json!([
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "summary.md", "content": "# Summary\n\nBuy milk; call the bank.\n"}}]},
            {"tool_calls": [{"name": "write_file", "arguments": {"path": "todo.md", "content": "- [ ] milk\n- [ ] bank\n"}}]},
            {"content": "Done."}
        ]),
    )
    .await?;
    let Some(task) = settle(&service, &live, interactive, task).await? else {
        return Ok(exit::INTERRUPTED);
    };
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
    if !invoices(&service, &live, interactive, &workspace).await? {
        return Ok(exit::INTERRUPTED);
    }
    outln!("That is the promise: the model decides whether to call a tool; it never decides")?;
    outln!("what the tool may touch, nor whether anything is written to disk.")?;
    outln!("Next: `pocketpilot run --script FILE \"…\"` or configure a model (README).")?;
    Ok(exit::OK)
}

/// Decides every approval the task stops for (asks on a terminal, otherwise rejects);
/// `None` when the person interrupted.
async fn settle(
    service: &TaskService,
    live: &LiveView,
    interactive: bool,
    mut task: TaskRecord,
) -> anyhow::Result<Option<TaskRecord>> {
    while task.state == TaskState::WaitingApproval {
        let pending = service
            .approvals_for_task(&task.id)
            .await?
            .into_iter()
            .find(|approval| approval.state == ApprovalState::Pending)
            .context("the task waits but has no pending approval")?;
        let view = service.approval_view(&pending.id).await?;
        live.pause();
        let palette = Palette::stdout();
        // On a terminal, `ask` shows the card (page by page when it is long).
        if !interactive {
            outln!(
                "{}",
                approval_card(&view, palette, Fold::Window(terminal_columns()))
            )?;
        }
        let request = if interactive {
            loop {
                match ask_blocking(&view, palette, None).await? {
                    Answer::Decided(request) => break request,
                    Answer::Interrupted => {
                        outln!("\n     Interrupted: nothing was written. The demo ends here.")?;
                        return Ok(None);
                    }
                    // The demo's calls are decided as they are; `run` shows an edited
                    // call's change and asks again.
                    Answer::Edited(_) | Answer::Next { .. } | Answer::ApproveAll => {
                        outln!("     The demo decides its calls as shown: press a or r.")?;
                    }
                }
            }
        } else {
            outln!("     No terminal is attached, so nobody can decide here: PocketPilot never")?;
            outln!("     approves on its own. (Demo-only scripted decision: rejecting.)")?;
            ResolveRequest {
                decision: Decision::Reject,
                edited_arguments: None,
                reason: Some("demo without a terminal".into()),
                seen_fingerprint: None,
                actor: Actor::Operator,
                wait: true,
                via: Some(pp_types::Via::Cli),
                remote_user: None,
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
    Ok(Some(task))
}

/// Step 4: a folder of invoices read and checked, a total that does not add up pointed
/// out, and the summary CSV written only after approval. `false` when interrupted.
async fn invoices(
    service: &TaskService,
    live: &LiveView,
    interactive: bool,
    workspace: &std::path::Path,
) -> anyhow::Result<bool> {
    outln!("4/4  Invoices. `extract_invoice` (file:read) reads the folder invoices/ at once: an")?;
    outln!("     XML e-invoice, a PDF and another XML, each parsed in a limited child process,")?;
    outln!("     then checked (sums, 大写 words, tax ids, number format, dates, duplicates).")?;
    let task = start(
        service,
        "Check my invoices and write a summary CSV",
        json!([
            {"tool_calls": [{"name": "extract_invoice", "arguments": {"path": "invoices"}}]},
            {"content": "One total does not add up: invoices/2024-07-ops.xml says 3280.00, but \
                         3000.00 + 180.00 = 3180.00. Here is the summary to check.",
             "tool_calls": [{"name": "write_file", "arguments": {"path": "summary.csv", "content": SUMMARY_CSV}}]},
            {"content": "The summary is written only if you approved it."}
        ]),
    )
    .await?;
    for line in invoice_lines(service, &task).await? {
        outln!("     {line}")?;
    }
    outln!("     The summary is a write_file of a CSV, so it stops for approval like any write.")?;
    let Some(task) = settle(service, live, interactive, task).await? else {
        return Ok(false);
    };
    outln!("     → {}", outcome(&task))?;
    outln!(
        "     summary.csv written: {}\n",
        if workspace.join("summary.csv").exists() {
            "yes"
        } else {
            "no"
        }
    )?;
    Ok(true)
}

/// The summary the scripted model writes.
const SUMMARY_CSV: &str = "file,number,issue_date,seller,amount,tax,total,findings\n\
invoices/2024-05-software.xml,24312000000100000001,2024-05-12,上海乙方贸易有限公司,1000.00,130.00,1130.00,\n\
invoices/2024-06-lunch.pdf,24312000000100000004,2024-06-18,广州戊方餐饮管理有限公司,283.02,16.98,300.00,\n\
invoices/2024-07-ops.xml,24312000000200000001,2024-07-01,上海乙方贸易有限公司,3000.00,180.00,3280.00,total_mismatch\n";

/// What `extract_invoice` returned in `task`, in a few lines: files, total, findings.
async fn invoice_lines(service: &TaskService, task: &TaskRecord) -> anyhow::Result<Vec<String>> {
    let mut lines = Vec::new();
    for stored in service.task_events(&task.id, 0).await? {
        let pp_types::EventKind::ToolResult { name, content, .. } = stored.event.kind else {
            continue;
        };
        if name != "extract_invoice" {
            continue;
        }
        let answer: Value = serde_json::from_str(&content)?;
        lines.push(format!(
            "extract_invoice: {} invoice(s), total {} (tax {})",
            answer["files"],
            answer["overall"]["total"].as_str().unwrap_or("?"),
            answer["overall"]["tax"].as_str().unwrap_or("?")
        ));
        for finding in answer["findings"].as_array().into_iter().flatten() {
            lines.push(
                crate::render::terminal_safe(&format!(
                    "finding {} in {}: {}",
                    finding["code"].as_str().unwrap_or("?"),
                    finding["file"].as_str().unwrap_or("?"),
                    finding["message"].as_str().unwrap_or("?")
                ))
                .into_owned(),
            );
        }
    }
    if lines.is_empty() {
        lines.push(format!("extract_invoice did not answer: {}", outcome(task)));
    }
    Ok(lines)
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

/// The demo's invoices (generated by scripts/fixtures/invoices.py): two good ones and one
/// whose total is not amount + tax.
const INVOICES: [(&str, &[u8]); 3] = [
    (
        "2024-05-software.xml",
        include_bytes!("../../../pp-docs/tests/fixtures/invoices/good/digital-001.xml"),
    ),
    (
        "2024-06-lunch.pdf",
        include_bytes!("../../../pp-docs/tests/fixtures/invoices/good/digital-004.pdf"),
    ),
    (
        "2024-07-ops.xml",
        include_bytes!("../../../pp-docs/tests/fixtures/invoices/broken/total-mismatch.xml"),
    ),
];

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
    let invoices = base.join("workspace/invoices");
    std::fs::create_dir(&invoices)?;
    for (name, bytes) in INVOICES {
        std::fs::write(invoices.join(name), bytes)?;
    }
    Ok(())
}
