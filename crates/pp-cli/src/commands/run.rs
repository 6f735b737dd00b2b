//! `pocketpilot run`: one task in the terminal, with approvals asked of the person.

use std::io::{BufRead as _, IsTerminal as _, Write as _};
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use pp_agent::{Agent, Outcome, Resolution, ResumeError};
use pp_model::ScriptedModel;
use pp_types::Checkpoint;
use serde_json::Value;

use crate::render::{LiveView, approval_card};
use crate::{Exit, env, exit, wiring};

/// Runs `prompt` in the workspace and returns the exit code.
pub(crate) async fn run(
    workspace: Option<PathBuf>,
    script: Option<PathBuf>,
    prompt: &str,
) -> anyhow::Result<u8> {
    let root = wiring::workspace_root(workspace)?;
    let model = load_model(script.as_deref())?;
    let interactive = std::io::stdin().is_terminal();
    let sink = LiveView;

    let segment = wiring::segment(&root, &[])?;
    let swept = segment.gate.jail().sweep_temp_files().unwrap_or(0);
    if swept > 0 {
        eprintln!("removed {swept} stray temporary file(s) left by an interrupted write");
    }
    eprintln!("workspace: {}", segment.gate.jail().root().display());
    let agent = Agent::new(&model, &segment.registry, &segment.gate, &sink);
    let mut outcome = agent
        .start(wiring::prompt_for(&segment.registry), prompt)
        .await;

    loop {
        let checkpoint = match outcome {
            Outcome::Completed { final_text, .. } => {
                println!("{final_text}");
                return Ok(exit::OK);
            }
            Outcome::Failed {
                reason, message, ..
            } => {
                eprintln!("task failed ({}): {message}", reason.as_str());
                return Ok(exit::FAILED);
            }
            Outcome::Suspended(checkpoint) => checkpoint,
        };
        eprintln!("{}", approval_card(&checkpoint));
        if !interactive {
            print_waiting(&checkpoint);
            return Ok(exit::WAITING_APPROVAL);
        }
        outcome = decide_and_resume(&root, &model, &sink, *checkpoint).await?;
    }
}

/// Asks the person until a decision is accepted, then resumes with a fresh gate.
async fn decide_and_resume(
    root: &Path,
    model: &ScriptedModel,
    sink: &LiveView,
    mut checkpoint: Checkpoint,
) -> anyhow::Result<Outcome> {
    loop {
        let resolution = ask(&checkpoint)?;
        // A fresh jail, tools and gate for every resume.
        let segment = wiring::segment(root, &[])?;
        let agent = Agent::new(model, &segment.registry, &segment.gate, sink);
        match agent.resume(checkpoint, resolution).await {
            Ok(outcome) => return Ok(outcome),
            Err(ResumeError::InvalidEdit {
                message,
                checkpoint: returned,
            }) => {
                eprintln!("the edited call was refused: {message}");
                eprintln!("{}", approval_card(&returned));
                checkpoint = *returned;
            }
            Err(error) => return Err(error.into()),
        }
    }
}

/// Reads the person's decision from the terminal.
fn ask(checkpoint: &Checkpoint) -> anyhow::Result<Resolution> {
    let stdin = std::io::stdin();
    loop {
        eprint!("[a]pprove, [r]eject, [e]dit arguments? ");
        std::io::stderr().flush()?;
        let mut line = String::new();
        if stdin.lock().read_line(&mut line)? == 0 {
            anyhow::bail!("stdin closed before a decision was made; nothing was run");
        }
        match line.trim().to_lowercase().as_str() {
            "a" | "approve" | "y" | "yes" => {
                return Ok(Resolution::Approve {
                    edited_arguments: None,
                });
            }
            "r" | "reject" | "n" | "no" => {
                eprint!("reason (optional): ");
                std::io::stderr().flush()?;
                let mut reason = String::new();
                stdin.lock().read_line(&mut reason)?;
                let reason = reason.trim();
                return Ok(Resolution::Reject {
                    reason: (!reason.is_empty()).then(|| reason.to_owned()),
                });
            }
            "e" | "edit" => match edit_arguments(&checkpoint.pending.arguments) {
                Ok(Some(edited)) => {
                    return Ok(Resolution::Approve {
                        edited_arguments: Some(edited),
                    });
                }
                Ok(None) => eprintln!("arguments unchanged; choose again"),
                Err(error) => eprintln!("{error:#}"),
            },
            other => eprintln!("unknown answer `{other}`: type a, r or e"),
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
    let original = serde_json::to_string_pretty(arguments)?;
    writeln!(file, "{original}")?;
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

/// Prints the pending approval for scripts and says why nothing was approved.
fn print_waiting(checkpoint: &Checkpoint) {
    let pending = serde_json::json!({
        "status": "waiting_approval",
        "tool": checkpoint.pending.call.name,
        "capability": checkpoint.pending.capability,
        "risk": checkpoint.pending.risk,
        "label": checkpoint.pending.preview.as_ref().map(|p| p.label),
        "arguments": checkpoint.pending.arguments,
    });
    println!("{pending}");
    eprintln!(
        "waiting for approval: stdin is not a terminal, and PocketPilot never approves on \
         its own. Run the same command in a terminal to approve, reject or edit the call."
    );
}

/// Loads the scripted model; without a script there is no model yet.
#[expect(
    clippy::disallowed_methods,
    reason = "the script path comes from the operator's command line, not from the model"
)]
fn load_model(script: Option<&Path>) -> anyhow::Result<ScriptedModel> {
    let Some(path) = script else {
        return Err(Exit::no_model(
            "no model is configured. Pass `--script FILE` to replay a scripted model \
             (see evals/cases for the format); real model providers are configured in \
             pocketpilot.toml once they are available",
        )
        .into());
    };
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("cannot read script {}", path.display()))
        .map_err(|error| Exit::usage(format!("{error:#}")))?;
    ScriptedModel::from_json(&text)
        .map_err(|error| Exit::usage(format!("{}: {error}", path.display())).into())
}
