//! Opens what every store-backed command needs: configuration, the data directory, the
//! database and the task service.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context as _;
use pp_agent::EventSink;
use pp_chat::Sessions;
use pp_knowledge::{Imported, MemoryService, SkillsService, TeamKnowledge};
use pp_store::Store;
use pp_tasks::{ModelSource, TaskService};
use pp_tools::docs::{DocsProvider, DocsSettings};
use pp_tools::shell::ShellProvider;
use pp_tools::{MemoryProvider, SkillsProvider, Toolbox};
use pp_types::SystemClock;
use pp_users::Users;

use crate::config::{Config, DocsConfig, Flags};
use crate::mcp_tools::{McpClients, McpProvider};
use crate::output::errln;
use crate::{Exit, home, models};

/// Configuration plus an open task service.
pub(crate) struct App {
    /// The resolved configuration.
    pub(crate) config: Config,
    /// The service over the data directory's database.
    pub(crate) service: TaskService,
    /// That database, for the schedules and channels kept in it beside the tasks (their
    /// services are built from it and the task service).
    pub(crate) store: Store,
    /// The configured MCP servers (`[[mcp.server]]`), started lazily or by
    /// [`App::start_mcp`]; their tools reach every segment through the "mcp" provider.
    pub(crate) mcp: Arc<McpClients>,
}

impl App {
    /// Loads the configuration, creates the data directory and opens the database.
    pub(crate) async fn open(
        flags: &Flags,
        models: ModelSource,
        observer: Option<Arc<dyn EventSink>>,
    ) -> anyhow::Result<Self> {
        Self::with_config(Config::load(flags)?, models, observer).await
    }

    /// [`App::open`] for commands that only read or change what is stored (tasks,
    /// sessions): stored tasks carry their own workspace, so the current directory is
    /// not taken as a default one, and no model is needed.
    pub(crate) async fn stored(flags: &Flags) -> anyhow::Result<Self> {
        let flags = Flags {
            stored_tasks_only: true,
            ..flags.clone()
        };
        Self::open(&flags, ModelSource::Scripted, None).await
    }

    /// Like [`App::open`] with an already loaded configuration.
    pub(crate) async fn with_config(
        config: Config,
        models: ModelSource,
        observer: Option<Arc<dyn EventSink>>,
    ) -> anyhow::Result<Self> {
        let shell = crate::shell::shell_provider(&config.shell, &config.home);
        Self::with_shell(config, models, observer, shell).await
    }

    /// Like [`App::with_config`] with the `run_command` provider already built from
    /// `config` (by a caller that took its containment probe ahead:
    /// [`pp_tools::shell::ShellProvider::probe_ahead`]).
    pub(crate) async fn with_shell(
        mut config: Config,
        models: ModelSource,
        observer: Option<Arc<dyn EventSink>>,
        shell: ShellProvider,
    ) -> anyhow::Result<Self> {
        home::ensure(&config.home)?;
        home::ensure_skills(&config.skills.home)?;
        let store = Store::connect(&config.store_url, Arc::new(SystemClock))
            .await
            .with_context(|| format!("cannot open the database {}", config.store_url))?;
        if config.team {
            team_knowledge(&mut config, &store).await?;
        }
        let mcp = Arc::new(crate::mcp_tools::clients(
            &config,
            config.mcp.servers.clone(),
        ));
        let service = TaskService::build(
            store.clone(),
            config.tasks.clone(),
            config.workspaces.clone(),
            models,
            Toolbox::files()
                .with(Arc::new(SkillsProvider::new(config.skills.clone())))
                .with(Arc::new(MemoryProvider::new(config.memory.clone())))
                .with(Arc::new(docs_provider(&config.docs)))
                .with(Arc::new(shell))
                .with(Arc::new(McpProvider::new(&mcp))),
            observer,
        )
        .with_data_dir(config.home.clone())
        .with_memory(config.memory.memory());
        Ok(Self {
            config,
            service,
            store,
            mcp,
        })
    }

    /// Starts the `start = "startup"` MCP servers, saying which could not be started
    /// (their tools are then not offered; the command goes on).
    pub(crate) async fn start_mcp(&self) {
        for error in self.mcp.start_eager().await {
            errln!("warning: {error}");
        }
    }

    /// The operator's skills service over the configured skills folders, auditing into
    /// this app's store.
    pub(crate) fn skills(&self) -> SkillsService {
        SkillsService::new(self.config.skills.clone(), self.store.clone())
    }

    /// The team's users and the console's logins in this app's store.
    pub(crate) fn users(&self) -> Users {
        Users::new(self.service.clone(), self.store.clone())
    }

    /// The chat sessions in this app's store.
    pub(crate) fn sessions(&self) -> Sessions {
        Sessions::new(self.service.clone(), self.store.clone())
    }

    /// The operator's memory service over `memory.md` in the data directory, auditing
    /// into this app's store.
    pub(crate) fn memory(&self) -> MemoryService {
        MemoryService::new(self.config.memory.clone(), self.store.clone())
    }
}

/// Team mode: the memory and skills become the team's, in the database, read through
/// this process's mirror in `team-cache/` of the data directory. The first process of a
/// team imports the memory and skills it had (`[team] shared_dir`, else its data
/// directory's) once; after that a configured `shared_dir` is refused.
async fn team_knowledge(config: &mut Config, store: &Store) -> anyhow::Result<()> {
    let team = TeamKnowledge::open(store.clone(), &config.home.join("team-cache"))
        .context("cannot prepare the team's memory and skills")?;
    let source = config
        .team_dir
        .clone()
        .unwrap_or_else(|| config.home.clone());
    let imported = team
        .import_once(&source, &config.memory, &config.skills)
        .await
        .context("cannot import the team's memory and skills into the database")?;
    let config_file = config.file.as_deref().map_or_else(
        || "the configuration file".to_owned(),
        |file| file.display().to_string(),
    );
    match imported {
        Imported::Earlier(earlier) if config.team_dir.is_some() => {
            return Err(
                Exit::usage(pp_knowledge::shared_dir_refusal(&earlier, &config_file)).into(),
            );
        }
        Imported::Now {
            memory,
            skills,
            skipped,
        } if memory || !skills.is_empty() || !skipped.is_empty() => {
            errln!(
                "imported into the team's database from {}: {}{}",
                source.display(),
                if memory { "the memory, " } else { "" },
                match skills.len() {
                    0 => "no skills".to_owned(),
                    _ => format!("skills {}", skills.join(", ")),
                }
            );
            for skill in skipped {
                errln!("not imported: skill {skill}");
            }
            if config.team_dir.is_some() {
                errln!(
                    "the team's memory and skills now live in the database: remove \
                     `shared_dir` from the [team] table of {config_file}"
                );
            }
        }
        Imported::Now { .. } if config.team_dir.is_some() => {
            errln!(
                "`[team] shared_dir` held no memory or skills; the team's live in the \
                 database: remove `shared_dir` from the [team] table of {config_file}"
            );
        }
        Imported::Now { .. } | Imported::Earlier(_) => {}
    }
    config.memory = team.memory(&config.memory);
    config.skills = team.skills(&config.skills);
    Ok(())
}

/// The document tools, parsing in children of this very binary (`pocketpilot __parse`)
/// under `config`'s limits. Should the binary's path be unknown, `pocketpilot` is looked
/// up on PATH (a call then fails with a clear message if it is not there).
pub(crate) fn docs_provider(config: &DocsConfig) -> DocsProvider {
    let program = std::env::current_exe().unwrap_or_else(|_| "pocketpilot".into());
    let parser =
        pp_docs::Parser::new(program, vec!["__parse".to_owned()]).with_limits(config.parser);
    let mut settings = DocsSettings::new(parser);
    settings.max_input_bytes = config.max_input_bytes;
    settings.max_output_chars = config.max_output_chars;
    DocsProvider::new(settings)
}

/// Removes temp files an interrupted write left in each workspace, saying so.
pub(crate) fn sweep_workspaces<'a>(workspaces: impl IntoIterator<Item = &'a pp_tasks::Workspace>) {
    for workspace in workspaces {
        if let Ok(jail) = pp_gate::Jail::new(&workspace.path)
            && let Ok(removed) = jail.sweep_temp_files()
            && removed > 0
        {
            errln!(
                "removed {removed} stray temporary file(s) left by an interrupted write in \
                 workspace {}",
                workspace.name
            );
        }
    }
}

/// The model source for commands that resume tasks: the configured or discovered
/// provider, or a clear "not configured" (scripted tasks carry their own script).
pub(crate) async fn model_source(config: &Config) -> anyhow::Result<ModelSource> {
    Ok(match models::find(config).await? {
        models::Found::Chosen(chosen) => ModelSource::Provider(chosen.model),
        models::Found::Nothing(message) => ModelSource::Unconfigured(message),
    })
}

/// Reads a script file named on the command line.
#[expect(
    clippy::disallowed_methods,
    reason = "the script path comes from the operator's command line, not from the model"
)]
pub(crate) fn read_script(path: &Path) -> anyhow::Result<serde_json::Value> {
    let text = std::fs::read_to_string(path)
        .map_err(|error| Exit::usage(format!("cannot read script {}: {error}", path.display())))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|error| Exit::usage(format!("{}: invalid script: {error}", path.display())))?;
    pp_model::ScriptedModel::from_value(value.clone())
        .map_err(|error| Exit::usage(format!("{}: {error}", path.display())))?;
    Ok(value)
}
