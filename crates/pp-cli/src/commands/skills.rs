//! `pocketpilot skills [list|show NAME|add DIR|remove NAME]`: the operator's skills,
//! changed through `pp_knowledge::SkillsService` (validated, audited as operator).

use std::path::PathBuf;

use clap::Subcommand;
use pp_knowledge::SkillSummary;
use pp_tasks::ModelSource;

use crate::acting::{self, UserArgs};
use crate::app::App;
use crate::config::{Flags, absolute_path};
use crate::exit;
use crate::output::{errln, outln};
use crate::render::{json_safe, one_line, terminal_safe};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum SkillsCommand {
    /// List every skill, valid or not (invalid ones with the reason).
    List {
        /// Print one JSON object: `{"skills": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Show one skill: where it is, its SKILL.md and its files.
    Show {
        /// The skill's name.
        name: String,
        /// Print the skill as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Copy a skill folder (holding SKILL.md) into the data directory, validating it.
    Add {
        /// The folder; its name must be the skill's name.
        dir: PathBuf,
        /// Who adds it (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Remove a skill from the data directory.
    Remove {
        /// The skill's name.
        name: String,
        /// Who removes it (team mode: an owner).
        #[command(flatten)]
        who: UserArgs,
    },
}

/// Runs a `skills` subcommand.
pub(crate) async fn run(flags: &Flags, command: SkillsCommand) -> anyhow::Result<u8> {
    // Skills live outside every workspace: the current directory is not one here.
    let flags = &Flags {
        stored_tasks_only: true,
        ..flags.clone()
    };
    let app = App::open(flags, ModelSource::Scripted, None).await?;
    let skills = app.skills();
    match command {
        SkillsCommand::List { json } => {
            let list = skills.list().await?;
            if json {
                outln!(
                    "{}",
                    json_safe(&serde_json::json!({ "skills": list }).to_string())
                )?;
            } else if list.is_empty() {
                let place = if app.config.team {
                    "the team's database".to_owned()
                } else {
                    app.config.skills.home.display().to_string()
                };
                outln!(
                    "no skills (add one with `pocketpilot skills add DIR`; they live in {place})"
                )?;
            } else {
                for skill in &list {
                    outln!("{}", summary_line(skill))?;
                }
            }
        }
        SkillsCommand::Show { name, json } => {
            let view = skills.show(&name).await?;
            if json {
                outln!("{}", json_safe(&serde_json::to_string(&view)?))?;
            } else {
                outln!("{}", summary_line(&view.summary))?;
                if !view.other_fields.is_empty() {
                    outln!(
                        "ignored fields: {} (they never change what needs approval)",
                        one_line(&view.other_fields.join(", "))
                    )?;
                }
                if !view.files.is_empty() {
                    outln!("files:")?;
                    for file in &view.files {
                        outln!("  {}", one_line(file))?;
                    }
                }
                if let Some(text) = &view.skill_md {
                    outln!("\n{}", terminal_safe(text).trim_end())?;
                }
            }
        }
        SkillsCommand::Add { dir, who } => {
            let caller =
                acting::owner_only(&who, app.config.team, &app.service, "change the skills")
                    .await?;
            let dir = absolute_path(&dir)?;
            let (name, skipped) = skills.as_user(caller.user.as_deref()).install(dir).await?;
            for link in skipped {
                errln!("not copied (a link or special file): {}", one_line(&link));
            }
            outln!("added skill {name}")?;
        }
        SkillsCommand::Remove { name, who } => {
            let caller =
                acting::owner_only(&who, app.config.team, &app.service, "change the skills")
                    .await?;
            skills
                .as_user(caller.user.as_deref())
                .remove(&name, None)
                .await?;
            outln!("removed skill {}", one_line(&name))?;
        }
    }
    Ok(exit::OK)
}

/// `name  valid|invalid  source  description-or-reason`.
fn summary_line(skill: &SkillSummary) -> String {
    let (state, text) = if skill.valid {
        ("valid", skill.description.as_str())
    } else {
        ("invalid", skill.reason.as_deref().unwrap_or(""))
    };
    let source = if skill.read_only {
        format!("{} (read-only)", skill.source)
    } else {
        skill.source.clone()
    };
    format!(
        "{}  {state:<7}  {}  {}",
        one_line(&skill.name),
        one_line(&source),
        one_line(text)
    )
}
