//! `pocketpilot memory [show|edit|set @FILE]`: the operator's road to `memory.md` in the
//! data directory, through `pp_knowledge::MemoryService` (a compare-and-swap on the version,
//! audited as operator). The agent's road is `memory_write`, which asks for approval.

use std::io::{Read as _, Write as _};
use std::path::PathBuf;

use anyhow::Context as _;
use clap::Subcommand;
use pp_knowledge::{MemoryError, MemoryService};
use pp_tasks::ModelSource;

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::{Flags, absolute_path};
use crate::output::{errln, outln};
use crate::render::{json_safe, terminal_safe};
use crate::{Exit, exit};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum MemoryCommand {
    /// Print the memory.
    Show {
        /// Print one JSON object: `{"content": …, "version": …}`.
        #[arg(long)]
        json: bool,
    },
    /// Open the memory in `$VISUAL` (or `$EDITOR`) and save it when the editor exits.
    Edit {
        /// Who edits it (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Replace the memory with the content of a file: `@FILE`, or `@-` for stdin.
    Set {
        /// `@FILE` or `@-`.
        source: String,
        /// Who sets it (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
}

/// Runs a `memory` subcommand.
pub(crate) async fn run(flags: &Flags, command: MemoryCommand) -> anyhow::Result<u8> {
    // The memory lives outside every workspace: the current directory is not one here.
    let flags = &Flags {
        stored_tasks_only: true,
        ..flags.clone()
    };
    let app = App::open(flags, ModelSource::Scripted, None).await?;
    let memory = app.memory();
    match command {
        MemoryCommand::Show { json } => {
            let snapshot = memory.get().await?;
            if json {
                let value = serde_json::json!({
                    "content": snapshot.content,
                    "version": snapshot.version,
                });
                outln!("{}", json_safe(&value.to_string()))?;
            } else if snapshot.content.is_empty() {
                let place = if app.config.team {
                    "the team's, in the database".to_owned()
                } else {
                    app.config
                        .memory
                        .dir
                        .join("memory.md")
                        .display()
                        .to_string()
                };
                errln!("the memory is empty ({place}); `pocketpilot memory edit` writes it");
            } else {
                outln!("{}", terminal_safe(&snapshot.content).trim_end())?;
            }
        }
        MemoryCommand::Edit { who } => {
            let caller =
                acting::owner_only(&who, app.config.team, &app.service, "change the memory")
                    .await?;
            edit(&memory.as_user(caller.user.as_deref())).await?;
        }
        MemoryCommand::Set { source, who } => {
            let caller =
                acting::owner_only(&who, app.config.team, &app.service, "change the memory")
                    .await?;
            let memory = memory.as_user(caller.user.as_deref());
            let content = read_source(&source)?;
            let before = memory.get().await?;
            let after = memory.put_if_version(&before.version, content).await?;
            outln!("memory saved ({} bytes)", after.content.len())?;
        }
    }
    Ok(exit::OK)
}

/// `@FILE` or `@-` (stdin), as text.
#[expect(
    clippy::disallowed_methods,
    reason = "reads a file the operator named on the command line, not a model-supplied path"
)]
fn read_source(source: &str) -> anyhow::Result<String> {
    let Some(name) = source.strip_prefix('@') else {
        return Err(Exit::usage(format!(
            "expected @FILE or @- (stdin), not {source:?}: `pocketpilot memory set @notes.md`"
        ))
        .into());
    };
    if name == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the memory from stdin (it must be UTF-8 text)")?;
        return Ok(text);
    }
    let path = absolute_path(&PathBuf::from(name))?;
    std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {} (it must be UTF-8 text)", path.display()))
}

/// Opens the editor on the memory and saves it if the memory is still the version read
/// before editing; on a conflict the edited text is kept in a file named on stderr.
#[expect(
    clippy::disallowed_methods,
    reason = "reads back a temporary file this command created, not a model-supplied path"
)]
async fn edit(memory: &MemoryService) -> anyhow::Result<()> {
    let before = memory.get().await?;
    let mut file = tempfile::Builder::new()
        .prefix("pocketpilot-memory-")
        .suffix(".md")
        .tempfile()
        .context("cannot create a temporary file for editing")?;
    file.write_all(before.content.as_bytes())?;
    file.flush()?;
    crate::edit::run_editor(file.path(), "the memory was not changed")?;
    let edited = std::fs::read_to_string(file.path())
        .context("the edited memory is not UTF-8 text; the memory was not changed")?;
    if edited == before.content {
        outln!("memory unchanged")?;
        return Ok(());
    }
    match memory.put_if_version(&before.version, edited).await {
        Ok(after) => {
            outln!("memory saved ({} bytes)", after.content.len())?;
            Ok(())
        }
        Err(pp_knowledge::Error::Memory(MemoryError::VersionMismatch { .. })) => {
            let kept = file
                .into_temp_path()
                .keep()
                .context("cannot keep the edited text")?;
            Err(Exit::conflict(format!(
                "the memory changed while you were editing it (the console, the CLI or an \
                 approved memory_write); nothing was saved. Your text is kept in {}: run \
                 `pocketpilot memory edit` again and merge it, or `pocketpilot memory set @{}`",
                kept.display(),
                kept.display()
            ))
            .into())
        }
        Err(error) => Err(error.into()),
    }
}
