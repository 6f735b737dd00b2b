//! `pocketpilot approvals [list|show ID|approve ID [--edit JSON|@FILE]|reject ID]`:
//! works directly on the store and resumes the task in this process.

use std::sync::Arc;

use clap::Subcommand;
use pp_tasks::{Action, Caller, Decision, ModelSource, ResolveRequest, Workspace};
use pp_types::{Actor, ApprovalId, ApprovalState, TaskRecord};

use crate::acting::{self, UserArgs};
use crate::app::{App, model_source};
use crate::commands::run::{OnInterrupt, Ui, follow};
use crate::config::{Config, Flags};
use crate::live::LiveView;
use crate::output::{errln, outln};
use crate::render::{Fold, approval_card, approval_row_target, json_safe, one_line};
use crate::style::Palette;
use crate::{Exit, exit};

/// What to do.
#[derive(Debug, Subcommand)]
pub(crate) enum ApprovalsCommand {
    /// List approvals, newest first (pending by default).
    List {
        /// pending, approved, rejected, stale or cancelled.
        #[arg(long)]
        state: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = 50)]
        limit: usize,
        /// Print one JSON object: `{"approvals": […]}`.
        #[arg(long)]
        json: bool,
    },
    /// Show one approval card.
    Show {
        /// The approval id.
        id: String,
        /// Print the card as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Approve the call (optionally with edited arguments) and resume the task here.
    Approve {
        /// The approval id.
        id: String,
        /// Replacement arguments: a JSON object, or `@FILE` to read it from a file.
        #[arg(long, value_name = "JSON|@FILE")]
        edit: Option<String>,
        /// Approve only if the target is still as you saw it: the `precheck.fingerprint`
        /// of `approvals show --json` (with `--edit`, of the edited call's precheck).
        /// Otherwise nothing runs, the approval stays pending, and the exit status is 5.
        #[arg(long, value_name = "FINGERPRINT")]
        seen: Option<String>,
        /// Who decides (team mode).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Reject the call and resume the task here; the model is told.
    Reject {
        /// The approval id.
        id: String,
        /// Why, for the model and the audit ledger.
        #[arg(long)]
        reason: Option<String>,
        /// Who decides (team mode).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Print a single-use link that decides this approval from a phone: `{base}/d/{token}`
    /// (docs/remote.md). It works once, until it expires, and only while the target is
    /// as it is now; base is `[server] public_url`, else this machine's loopback address.
    Link {
        /// The approval id.
        id: String,
        /// How long the link works, in seconds (at most 86400).
        #[arg(long, value_name = "N", default_value_t = 1800)]
        ttl_secs: u64,
        /// Print one JSON object: `{"url", "expires_at"}`.
        #[arg(long)]
        json: bool,
        /// Who the link decides as (team mode: they must be allowed to decide it now and
        /// when the link is used).
        #[command(flatten)]
        who: UserArgs,
    },
    /// Revoke every link of this approval: they answer 410 from now on.
    Unlink {
        /// The approval id.
        id: String,
        /// Print one JSON object: `{"revoked": N}`.
        #[arg(long)]
        json: bool,
        /// Who revokes (team mode).
        #[command(flatten)]
        who: UserArgs,
    },
}

/// Runs an `approvals` subcommand.
pub(crate) async fn run(flags: &Flags, command: ApprovalsCommand) -> anyhow::Result<u8> {
    // Approvals belong to stored tasks, each with its own workspace.
    let flags = &Flags {
        stored_tasks_only: true,
        ..flags.clone()
    };
    match command {
        ApprovalsCommand::List { state, limit, json } => {
            let app = App::open(flags, ModelSource::Scripted, None).await?;
            let state = state
                .map(|name| {
                    ApprovalState::parse(&name)
                        .ok_or_else(|| Exit::usage(format!("unknown state `{name}`")))
                })
                .transpose()?;
            let views = app.service.approval_views_checked(state, limit).await?;
            if json {
                outln!(
                    "{}",
                    json_safe(&serde_json::json!({ "approvals": views }).to_string())
                )?;
            } else if views.is_empty() {
                outln!("no approvals")?;
            } else {
                for view in views {
                    let label = view.label.map_or("", |label| label.as_str());
                    let target = approval_row_target(&view);
                    let origin = origin_suffix(&view);
                    outln!(
                        "{}  {:<8}  {}  {} {label} {target}{origin}",
                        one_line(&view.id),
                        view.state.as_str(),
                        view.created_at,
                        one_line(&view.tool),
                    )?;
                }
            }
            Ok(exit::OK)
        }
        ApprovalsCommand::Show { id, json } => {
            let app = App::open(flags, ModelSource::Scripted, None).await?;
            let view = app.service.approval_view_checked(&ApprovalId(id)).await?;
            if json {
                outln!("{}", json_safe(&serde_json::to_string(&view)?))?;
            } else {
                outln!("{}", approval_card(&view, Palette::stdout(), Fold::Nothing))?;
            }
            Ok(exit::OK)
        }
        ApprovalsCommand::Approve {
            id,
            edit,
            seen,
            who,
        } => {
            let edited = edit.as_deref().map(parse_edit).transpose()?;
            let decision = Decided {
                decision: Decision::Approve,
                edited_arguments: edited,
                reason: None,
                seen_fingerprint: seen,
            };
            resolve(flags, &who, id, decision).await
        }
        ApprovalsCommand::Link {
            id,
            ttl_secs,
            json,
            who,
        } => link(flags, &who, id, ttl_secs, json).await,
        ApprovalsCommand::Unlink { id, json, who } => {
            let app = App::stored(flags).await?;
            let caller = who.caller(app.config.team, &app.service).await?;
            let revoked = app
                .service
                .unlink(&ApprovalId(id), &caller)
                .await
                .map_err(acting::refused)?;
            if json {
                outln!("{}", serde_json::json!({ "revoked": revoked }))?;
            } else {
                outln!("{revoked} link(s) revoked")?;
            }
            Ok(exit::OK)
        }
        ApprovalsCommand::Reject { id, reason, who } => {
            let decision = Decided {
                decision: Decision::Reject,
                edited_arguments: None,
                reason,
                seen_fingerprint: None,
            };
            resolve(flags, &who, id, decision).await
        }
    }
}

/// `  (from scheduler `invoices`)` for a task a person did not start; empty otherwise.
fn origin_suffix(view: &pp_tasks::ApprovalView) -> String {
    match (view.created_by, &view.origin) {
        (Some(Actor::Operator) | None, _) => String::new(),
        (Some(actor), Some(origin)) => {
            format!("  (from {} `{}`)", actor.as_str(), one_line(origin))
        }
        (Some(actor), None) => format!("  (from {})", actor.as_str()),
    }
}

/// `approvals link`: makes the link and prints its URL.
async fn link(
    flags: &Flags,
    who: &UserArgs,
    id: String,
    ttl_secs: u64,
    json: bool,
) -> anyhow::Result<u8> {
    let app = App::stored(flags).await?;
    let caller = who.caller(app.config.team, &app.service).await?;
    let ttl = std::time::Duration::from_secs(ttl_secs);
    let made = match app
        .service
        .create_link(&ApprovalId(id), Some(ttl), &caller)
        .await
    {
        Ok(made) => made,
        Err(pp_tasks::Error::BadRequest(message)) => {
            return Err(Exit::usage(format!("--ttl-secs: {message}")).into());
        }
        Err(error @ pp_tasks::Error::AlreadyResolved { .. }) => {
            errln!("error: {error}");
            return Ok(exit::CONFLICT);
        }
        Err(error) => return Err(acting::refused(error)),
    };
    let base = match app.config.link_base() {
        (base, true) => base,
        (base, false) => {
            errln!(
                "warning: [server] public_url is not set: this link works only on this \
                 machine ({base}); set public_url to open it from a phone (docs/remote.md)"
            );
            base
        }
    };
    let url = format!("{base}/d/{}", made.token);
    if json {
        outln!(
            "{}",
            serde_json::json!({ "url": url, "expires_at": made.expires_at })
        )?;
    } else {
        outln!("{url}")?;
    }
    Ok(exit::OK)
}

/// What the person decided on the command line.
struct Decided {
    decision: Decision,
    edited_arguments: Option<serde_json::Value>,
    reason: Option<String>,
    seen_fingerprint: Option<String>,
}

/// Resolves approval `id` for `who` (team mode: after the API's role and grant checks,
/// recording the user on the approval and its audit row) and follows the resumed task.
async fn resolve(
    flags: &Flags,
    who: &UserArgs,
    id: String,
    decided: Decided,
) -> anyhow::Result<u8> {
    let started = std::time::Instant::now();
    let config = Config::load(flags)?;
    let id = ApprovalId(id);
    // Scripted tasks carry their script; only other tasks need the configured model, so
    // look (and probe local servers) only for those.
    let (task, caller) = stored_task(flags, who, &id).await?;
    // A team task for a workspace this host does not have stores no path here: the
    // decision is recorded and carried out by a worker that has the workspace.
    if let Some(task) = task.as_ref().filter(|task| !task.workspace_path.is_empty()) {
        config.refuse_private_inside(Workspace {
            name: task.workspace.clone(),
            path: task.workspace_path.clone().into(),
        })?;
    }
    let models = if task.is_none_or(|task| task.script.is_some()) {
        ModelSource::Scripted
    } else {
        model_source(&config).await?
    };
    let live = LiveView::new(false);
    let observer: Arc<dyn pp_agent::EventSink> = live.clone();
    let app = App::with_config(config, models, Some(observer)).await?;
    let ui = Ui {
        live,
        feed: None,
        started,
        interrupt: OnInterrupt::LeavePending,
        caller: caller.clone(),
        stop: crate::interrupt::Stop::inactive(),
    };
    let request = ResolveRequest {
        decision: decided.decision,
        edited_arguments: decided.edited_arguments,
        reason: decided.reason,
        seen_fingerprint: decided.seen_fingerprint,
        actor: Actor::Operator,
        wait: true,
        via: Some(pp_types::Via::Cli),
        remote_user: None,
    };
    match app.service.resolve_for(&id, request, &caller).await {
        Ok(record) if record.state == pp_types::TaskState::Queued => {
            // Decided here, run where the files are (team mode).
            errln!(
                "decision recorded: a worker that has the workspace `{}` checks the target \
                 and runs the call (checked_on: worker)",
                record.workspace
            );
            Ok(exit::OK)
        }
        Ok(record) => follow(&app.service, record, &ui).await,
        Err(error @ pp_tasks::Error::AlreadyResolved { .. }) => {
            errln!("error: {error}");
            Ok(exit::CONFLICT)
        }
        Err(pp_tasks::Error::ChangedSinceSeen(message)) => {
            errln!("error: {message} (changed_since_seen)");
            Ok(exit::CONFLICT)
        }
        Err(pp_tasks::Error::InvalidArguments(message)) => Err(Exit::usage(format!(
            "the edited arguments were refused (the approval is still pending): {message}"
        ))
        .into()),
        Err(error) => Err(error.into()),
    }
}

/// Who decides (refused unless they may decide on the approval's task, in team mode) and
/// the approval's task, `None` for an unknown approval (resolving it then reports "not
/// found" without looking for a model).
async fn stored_task(
    flags: &Flags,
    who: &UserArgs,
    id: &ApprovalId,
) -> anyhow::Result<(Option<TaskRecord>, Caller)> {
    let app = App::stored(flags).await?;
    let caller = who.caller(app.config.team, &app.service).await?;
    let Ok(approval) = app.service.approval_view(id).await else {
        return Ok((None, caller));
    };
    let task = app.service.task(&approval.task_id).await?;
    acting::authorize(&app.service, &caller, Action::Resolve(&task)).await?;
    Ok((Some(task), caller))
}

#[expect(
    clippy::disallowed_methods,
    reason = "@FILE names the operator's own file on the command line"
)]
fn parse_edit(text: &str) -> anyhow::Result<serde_json::Value> {
    let json = match text.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|error| Exit::usage(format!("cannot read {path}: {error}")))?,
        None => text.to_owned(),
    };
    serde_json::from_str(&json)
        .map_err(|error| Exit::usage(format!("--edit is not valid JSON: {error}")).into())
}
